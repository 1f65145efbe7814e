"""A trained model as a folder: the model and what it needs to be used.

Whatever trains a model (`examples/fit.py`, each recipe's `fit`) saves a
*run folder*, and `load_run` gives it back ready to use:

    run = kerattn.load_run("outputs/fit/bahdanau_nmt")
    run.translator()(["File not found"])             # Translator
    run.streaming_decoder().feed("pho")               # a g2p-streaming run
    run.labels                                        # a classifier's names

The layout (format 1), every file in the folder itself:

    run.json             {"format": 2, "task": ..., "model": "model.keras",
                          "vocabularies": {"source": "source_vocab.json", ...},
                          "labels": [...] or null,
                          "search": {"beam_width": 4, ...}}
    model.keras          the model (`kerattn.load_model` reads it)
    vocab.json           the one vocabulary's `to_json()` (or
    source_vocab.json, target_vocab.json, for two)
    results.json, attention.png   what `examples/fit.py` adds beside them

The folder is untrusted input, as a `.keras` file is: `run.json` is
bounded JSON of exactly these keys, its file names plain names inside the
folder (no path, no link), the model goes through `kerattn.load_model`'s
checks, each vocabulary through `vocabulary_from_json` (JSON only, nothing
evaluated), the labels must be strings or numbers, and `search` a few
named options of plain values; anything else is a ValueError naming the
file. Format 1 is the same without `search` (a run written before it
existed): it loads with none; a run without a search is still written so.
"""

import json
import os

from kerattn import checks
from kerattn.saving import atomic_path, load_model

FORMAT = 2   # 1: the same without `search` (still read)
RUN_FILE = "run.json"
MODEL_FILE = "model.keras"
TASKS = ("translation", "summarisation", "g2p", "captioning", "classification",
         "reading")
MAX_RUN_JSON = 1 << 20          # bytes of run.json (labels included)
_KEYS = {"format", "task", "model", "vocabularies", "labels", "search"}
# The vocabularies a run may name: a pair, or one shared.
_VOCABULARIES = ({"source", "target"}, {"vocab"})


def _label(x):
    """A label name: a string or a number (a file's star ratings)."""
    return isinstance(x, (str, int, float)) and not isinstance(x, bool)


class Run:
    """A trained model with its vocabularies (and a classifier's labels).

    Args:
        model: the trained Keras model.
        task: one of `TASKS`.
        vocabularies: `{name: vocabulary}`: "source" and "target" for
            translation and G2P, "vocab" for one shared vocabulary
            (summarisation, captioning, classification, reading).
        labels: a classifier's label names (strings, or numbers such as
            star ratings), in the order of its outputs.
        search: how the recipe decoded the model it scored (`beam_width`,
            `min_length`, `length_penalty`, ...: `kerattn.decoding.
            translator.SEARCH_OPTIONS`): the default search of
            `translator()`, so that a reloaded run writes what was scored.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> vocab = WordVocabulary.build(["a b c"])
    >>> run = Run(kerattn.zoo.bahdanau_nmt(len(vocab), len(vocab),
    ...                                    preset="tiny"), "translation",
    ...           {"source": vocab, "target": vocab})
    >>> run.translator(max_length=4)(["a b"]) is not None
    True
    """

    def __init__(self, model, task, vocabularies=None, labels=None, search=None):
        from kerattn.decoding.translator import search_options

        checks.one_of("task", task, TASKS)
        self.search = search_options("search", search)
        vocabularies = dict(vocabularies or {})
        checks.require(set(vocabularies) in _VOCABULARIES, "vocabularies",
                       "{'source': ..., 'target': ...} or {'vocab': ...}",
                       sorted(vocabularies))
        for name, vocab in vocabularies.items():
            checks.vocabulary(f"vocabularies[{name!r}]", vocab, ("to_json",))
        if labels is not None:
            labels = list(labels)
            checks.require(all(map(_label, labels)), "labels",
                           "a list of label names (strings or numbers)",
                           labels[:3])
        self.model, self.task = model, task
        self.vocabularies, self.labels = vocabularies, labels

    def __repr__(self):
        return (f"Run(task={self.task!r}, model={self.model.name!r}, "
                f"vocabularies={sorted(self.vocabularies)})")

    @property
    def source_vocab(self):
        return self.vocabularies.get("source", self.vocabularies.get("vocab"))

    @property
    def target_vocab(self):
        return self.vocabularies.get("target", self.vocabularies.get("vocab"))

    def translator(self, **options):
        """A `kerattn.decoding.Translator` over this run (translation,
        summarisation, G2P), searching as the run's `search` says;
        `options` are its own (`max_length`, `search`, ...)."""
        from kerattn.decoding import Translator

        checks.require(self.task in ("translation", "summarisation", "g2p"),
                       "task", "translation, summarisation or g2p for a "
                       "Translator", self.task)
        return Translator(self.model, self.source_vocab, self.target_vocab,
                          **dict({"search": self.search}, **options))

    def captioner(self, **options):
        """A `kerattn.decoding.Captioner` over a captioning run."""
        from kerattn.decoding import Captioner

        checks.require(self.task == "captioning", "task",
                       "captioning for a Captioner", self.task)
        return Captioner(self.model, self.target_vocab, **options)

    def streaming_decoder(self, **options):
        """A `kerattn.decoding.StreamingDecoder` over a G2P run whose model
        can stream (`model.can_stream()`: `fit.py g2p --size g2p-streaming`,
        with a hard monotonic attention or `--wait-k`)."""
        from kerattn.decoding import StreamingDecoder

        checks.require(self.task == "g2p", "task",
                       "g2p for a StreamingDecoder", self.task)
        return StreamingDecoder(self.model, self.source_vocab,
                                self.target_vocab, **options)

    def save(self, folder):
        """Write the run into `folder` (created if needed): the model, each
        vocabulary and `run.json`, each file written whole or not at all
        (`atomic_path`); `run.json` last. Returns `folder`."""
        os.makedirs(folder, exist_ok=True)
        # A save that stops half way must not leave the old description
        # naming a mix of old and new files: it goes first, and comes last.
        if os.path.lexists(os.path.join(folder, RUN_FILE)):
            os.remove(os.path.join(folder, RUN_FILE))
        names = {}
        for name, vocab in sorted(self.vocabularies.items()):
            names[name] = "vocab.json" if name == "vocab" else f"{name}_vocab.json"
            with atomic_path(os.path.join(folder, names[name])) as path, \
                    open(path, "w", encoding="utf-8") as f:
                f.write(vocab.to_json())
        with atomic_path(os.path.join(folder, MODEL_FILE)) as path:
            self.model.save(path)
        record = {"format": FORMAT if self.search else 1, "task": self.task,
                  "model": MODEL_FILE, "vocabularies": names,
                  "labels": self.labels}
        if self.search:
            record["search"] = self.search
        with atomic_path(os.path.join(folder, RUN_FILE)) as path, \
                open(path, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
        return folder


def _member(folder, name, what):
    """`folder/name` for a plain file name written in run.json."""
    where = os.path.join(folder, RUN_FILE)
    checks.require(
        isinstance(name, str) and name and os.path.basename(name) == name
        and name not in (".", "..") and "\\" not in name, where,
        f"a plain file name inside the folder for {what}", name)
    path = os.path.join(folder, name)
    checks.require(os.path.isfile(path) and not os.path.islink(path)
                   and os.stat(path).st_nlink == 1, where,
                   f"{what} {name!r}: a regular file in the folder (not a "
                   "link)", note=f"{path} is missing, a link or not a "
                   "regular file.")
    return path


def _read(path, limit):
    """At most `limit` characters of the UTF-8 file `path`; more, or bytes
    that do not decode, are a ValueError naming it."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(limit + 1)
    except UnicodeDecodeError as error:
        checks.fail(path, "UTF-8 text", note=str(error))
    checks.require(len(text) <= limit, path, f"at most {limit:,} characters")
    return text


def load_run(folder, compile=False):
    """Load a run folder written by `Run.save` (or `examples/fit.py`).

    Args:
        folder: the run folder.
        compile: restore the optimizer state too (`kerattn.load_model`), to
            train on; False loads for use.

    Returns:
        A `Run`: `model`, `task`, `vocabularies`, `labels`, and
        `translator()`, `captioner()`, `streaming_decoder()`.

    Raises:
        ValueError: naming the file, for a folder that is not a run (no or
            bad `run.json`), a file name that leaves the folder or is a
            link, a model `kerattn.load_model` refuses, or a vocabulary
            `vocabulary_from_json` refuses.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> vocab = WordVocabulary.build(["File not found"])
    >>> model = kerattn.zoo.bahdanau_nmt(len(vocab), len(vocab), preset="tiny")
    >>> _ = Run(model, "translation", {"source": vocab, "target": vocab}).save("run")
    >>> run = load_run("run")
    >>> run.task, sorted(run.vocabularies)
    ('translation', ['source', 'target'])
    >>> len(run.translator(max_length=4)(["File not found"]))
    1
    """
    from kerattn.datasets.text_codec import (MAX_VOCABULARY_JSON,
                                             vocabulary_from_json)

    checks.require(isinstance(folder, (str, os.PathLike)) and os.path.isdir(folder),
                   "folder", "a run folder (written by Run.save or "
                   "examples/fit.py)", folder)
    folder = os.fspath(folder)
    where = os.path.join(folder, RUN_FILE)
    text = _read(_member(folder, RUN_FILE, "the run's description"),
                 MAX_RUN_JSON)
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as error:
        checks.fail(where, "JSON (a run's description)",
                    note=f"It does not parse: {error}.")
    checks.require(isinstance(record, dict), where, "a JSON object (a run's "
                   "description)", type(record).__name__)
    checks.require(record.get("format") in (1, FORMAT), where,
                   f"format 1 or {FORMAT} (this kerattn's)", record.get("format"))
    if record["format"] == 1:
        record.setdefault("search", {})   # format 1: no search
    checks.require(set(record) == _KEYS, where,
                   f"a JSON object with exactly the keys {sorted(_KEYS)}",
                   sorted(record))
    checks.require(record["task"] in TASKS, where, f"a task among {TASKS}",
                   record["task"])
    names = record["vocabularies"]
    checks.require(
        isinstance(names, dict) and set(names) in _VOCABULARIES
        and len(set(map(str, names.values()))) == len(names), where,
        "`vocabularies` as {'source': file, 'target': file} or {'vocab': "
        "file}, each file once", names)
    labels = record["labels"]
    checks.require(labels is None or (isinstance(labels, list) and all(
        map(_label, labels))), where,
        "`labels` null or a list of label names (strings or numbers)",
        type(labels).__name__)
    vocabularies = {}
    for name, file in names.items():
        vocab_path = _member(folder, file, f"the vocabulary {name!r}")
        text = _read(vocab_path, MAX_VOCABULARY_JSON)
        try:
            vocabularies[name] = vocabulary_from_json(text)
        except ValueError as error:
            checks.fail(vocab_path, "a vocabulary's JSON", note=str(error))
    from kerattn.decoding.translator import search_options

    search = search_options(f"{where}: search", record["search"])
    model = load_model(_member(folder, record["model"], "the model"),
                       compile=compile)
    return Run(model, record["task"], vocabularies, labels, search)
