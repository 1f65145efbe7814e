"""Documents for classification: the Debian "topical-10" set and JSON lines.

`debian_topical10()` builds a real topical classification set from Debian's
package lists (long package descriptions labelled with the package's
Section) (docs/data.md):

- `Packages` gives each binary package its Section, Source and
  Description-md5; `Translation-en` gives the long description (joined on
  Description-md5). Both are read with `apt-helper cat-file` (lz4).
- One description per *source* package (libfoo, libfoo-dev and libfoo-doc
  share sentences across sections and would leak the label): the binary
  package named like the source if there is one, else the shortest name.
- Sections utils, science, net, devel, admin, games, x11, sound, misc, text.
- A fixed split by a hash of the source package's name (80/10/10).

`read_jsonl` / `write_jsonl` read and write `{"text": ..., "label": ...}`
lines, the shape of the Yelp / IMDB sets of Yang et al. (2016).
`split_sentences`, `split_words` and `encode_documents` turn texts into the
`(documents, sentences, words)` id arrays a HAN reads.
"""

import collections
import glob
import hashlib
import json
import os
import re
import subprocess

import numpy as np

from kerattn import checks
from kerattn.datasets.padding import pad_ids
from kerattn.datasets.textfile import Skipped, numbered_lines

TOPICAL10 = ("utils", "science", "net", "devel", "admin", "games", "x11",
             "sound", "misc", "text")
LISTS_DIR = "/var/lib/apt/lists"
_APT_HELPER = "/usr/lib/apt/apt-helper"


def _read_list(path):
    """The text of an apt list file (lz4, gz, xz or plain)."""
    if path.endswith((".lz4", ".gz", ".xz", ".bz2", ".zst")):
        return subprocess.run([_APT_HELPER, "cat-file", path], check=True,
                              capture_output=True, text=True).stdout
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _stanzas(text):
    """deb822 stanzas as dicts (continuation lines kept with their newlines)."""
    for block in text.split("\n\n"):
        fields, key = {}, None
        for line in block.split("\n"):
            if line.startswith((" ", "\t")) and key:
                fields[key] += "\n" + line
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields:
            yield fields


def _long_description(description):
    """The text after the synopsis; " ." lines separate paragraphs."""
    lines = description.split("\n")[1:]
    paragraphs, current = [], []
    for line in lines:
        line = line[1:] if line.startswith(" ") else line
        if line.strip() == ".":
            paragraphs.append(" ".join(current))
            current = []
        else:
            current.append(line.strip())
    paragraphs.append(" ".join(current))
    return "\n".join(p for p in paragraphs if p)


def _split_of(name, valid_share=0.1, test_share=0.1):
    bucket = int(hashlib.md5(name.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    if bucket < test_share:
        return "test"
    if bucket < test_share + valid_share:
        return "valid"
    return "train"


def _binary_packages(lists_dir=LISTS_DIR):
    """Every binary package of apt's lists that has an English description.

    Reads the `Packages` lists (each package's Section and Source) and the
    `Translation-en` lists (the descriptions), joined on
    `Description-md5`.

    Args:
        lists_dir: apt's list directory.

    Returns:
        A list of `(source, package, section, description)` tuples in list
        order; `description` is the raw `Description-en` field (the
        synopsis, then the long description's lines).

    Raises:
        FileNotFoundError: when the lists (with English descriptions) are
            not there; the message gives the `apt-get update` command.
    """
    if not isinstance(lists_dir, (str, os.PathLike)):
        checks.fail("lists_dir", "a directory path", lists_dir)
    packages = sorted(glob.glob(os.path.join(lists_dir, "*_Packages*")))
    translations = sorted(glob.glob(os.path.join(lists_dir, "*_Translation-en*")))
    if not packages or not translations:
        raise FileNotFoundError(
            f"`lists_dir`={lists_dir!r} has no apt package lists with English "
            f"descriptions (need *_Packages and *_i18n_Translation-en). "
            "Fetch them with: apt-get update -o Acquire::Languages=en"
        )
    descriptions = {}
    for path in translations:
        for fields in _stanzas(_read_list(path)):
            if "Description-md5" in fields and "Description-en" in fields:
                descriptions[fields["Description-md5"]] = fields["Description-en"]
    rows = []
    for path in packages:
        for fields in _stanzas(_read_list(path)):
            name = fields.get("Package")
            section = fields.get("Section", "").split("/")[-1]
            md5 = fields.get("Description-md5")
            if not name or md5 not in descriptions:
                continue
            source = fields.get("Source", name).split(" ")[0]
            rows.append((source, name, section, descriptions[md5]))
    return rows


def debian_descriptions(lists_dir=LISTS_DIR):
    """Every source package's long description, unlabelled or not.

    Reads apt's `Packages` lists (for each package's Section) and the
    English `Translation-en` lists (the long descriptions), joined on
    `Description-md5`, keeping one binary package per source package.

    Args:
        lists_dir: apt's list directory.

    Returns:
        A list of dicts with `text`, `label` (the chosen binary package's
        Section), `package`, `source` and `split` (the fixed hash split), one
        per source package, sorted by source name.

    Raises:
        FileNotFoundError: when the lists (with English descriptions) are
            not there; the message gives the `apt-get update` command.

    Example:

    >>> # after: apt-get update -o Acquire::Languages=en
    >>> documents = debian_descriptions()  # doctest: +SKIP
    >>> sorted(documents[0])  # doctest: +SKIP
    ['label', 'package', 'source', 'split', 'text']
    """
    by_source = collections.defaultdict(list)
    for source, name, section, description in _binary_packages(lists_dir):
        by_source[source].append((name, section, description))
    documents = []
    for source in sorted(by_source):
        # The binary package named like the source, else the shortest name.
        candidates = sorted(set(by_source[source]),
                            key=lambda c: (c[0] != source, len(c[0]), c[0]))
        name, section, description = candidates[0]
        text = _long_description(description)
        if text:
            documents.append({"text": text, "label": section, "package": name,
                              "source": source, "split": _split_of(source)})
    return documents


def debian_topical10(lists_dir=LISTS_DIR, sections=TOPICAL10):
    """The Debian package-description classification set.

    Args:
        lists_dir: apt's list directory.
        sections: the Debian sections to keep (the labels, in this order).

    Returns:
        A dict `{"train": [...], "valid": [...], "test": [...],
        "labels": list(sections)}`; each example is a dict with `text`,
        `label` (the section), `package` and `source`.

    Raises:
        FileNotFoundError: when the lists (with English descriptions) are
            not there; the message gives the `apt-get update` command.

    Example:

    >>> # after: apt-get update -o Acquire::Languages=en
    >>> data = debian_topical10()  # doctest: +SKIP
    >>> len(data["train"]), data["labels"][:3]  # doctest: +SKIP
    (7100, ['utils', 'science', 'net'])
    """
    checks.require(not isinstance(sections, str)
                   and all(isinstance(s, str) for s in sections), "sections",
                   "a list of Debian section names", sections)
    checks.require(len(set(sections)) >= 2, "sections", "a list of at least two "
                   "sections (the classes)", sections)
    wanted = set(sections)
    splits = {"train": [], "valid": [], "test": []}
    for doc in debian_descriptions(lists_dir):
        if doc["label"] in wanted:
            doc = dict(doc)
            splits[doc.pop("split")].append(doc)
    splits["labels"] = list(sections)
    return splits


# --- JSON lines --------------------------------------------------------------


def write_jsonl(examples, path):
    """Write `{"text", "label", ...}` dicts, one JSON object per line.

    Args:
        examples: dicts (e.g. the examples of `debian_topical10`).
        path: the file to write (UTF-8).

    Example:

    >>> write_jsonl([{"text": "A game.", "label": "games"}], "docs.jsonl")
    >>> read_jsonl("docs.jsonl")
    (['A game.'], ['games'])
    """
    with open(path, "w", encoding="utf-8") as handle:
        for example in examples:
            handle.write(json.dumps(example, ensure_ascii=False) + "\n")


def read_jsonl(path, text_key="text", label_key="label"):
    """Read `(text, label)` pairs from a JSON-lines file.

    Each line is an object with a text and a label field (the shape of the
    Yelp and IMDB review sets: `{"text": "...", "stars": 4}` reads with
    `label_key="stars"`).

    Args:
        path: the file.
        text_key, label_key: the fields to read.

    Returns:
        `(texts, labels)`, two lists.

    Raises:
        ValueError: a line that is not a JSON object with both keys and a
            string text, or a byte that does not decode (its `file:line`
            named), or a file without examples. A line with an empty text
            is skipped and counted in a warning; a byte-order mark is
            removed (`kerattn.datasets.textfile`).

    Example:

    >>> write_jsonl([{"text": "Great food.", "stars": 5}], "reviews.jsonl")
    >>> read_jsonl("reviews.jsonl", label_key="stars")
    (['Great food.'], [5])
    """
    texts, labels = [], []
    skipped = Skipped(path)
    for number, line in numbered_lines(path, what="a JSON-lines file"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            checks.bad_file(path, f"not a JSON line ({error}).", line=number)
        if not isinstance(record, dict):
            checks.bad_file(path, "each line must be a JSON object; got "
                            f"{type(record).__name__}.", line=number)
        if text_key not in record or label_key not in record:
            checks.bad_file(
                path, f"each line needs the keys {text_key!r} and "
                f"{label_key!r} (`text_key`, `label_key`); got {sorted(record)}.",
                line=number)
        if not isinstance(record[text_key], str):
            checks.bad_file(path, f"{text_key!r} must be a string; got "
                            f"{type(record[text_key]).__name__}.", line=number)
        if not record[text_key].strip():
            skipped.add(f"an empty {text_key!r}: nothing to classify", number)
            continue
        texts.append(record[text_key])
        labels.append(record[label_key])
    skipped.report()
    if not texts:
        checks.bad_file(path, "no example in the file.")
    return texts, labels


# --- sentences, words, ids ---------------------------------------------------

# A sentence ends at . ! ? (then a space and an upper-case letter, a digit
# or an opening quote/bracket), or at a paragraph break. Abbreviations such
# as "e.g." and "i.e." are followed by a lower-case word and do not split.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_WORD = re.compile(r"\w+(?:[-'.]\w+)*|[^\w\s]")


def split_sentences(text):
    """Split a text into sentences (paragraph breaks always split)."""
    sentences = []
    for paragraph in text.split("\n"):
        sentences += [s.strip() for s in _SENTENCE_END.split(paragraph) if s.strip()]
    return sentences


def split_words(sentence, lowercase=True):
    """Words and punctuation marks of a sentence."""
    return _WORD.findall(sentence.lower() if lowercase else sentence)


def tokenize_document(text, lowercase=True):
    """A document as a list of sentences, each a list of words.

    A sentence ends at `.`, `!` or `?` followed by a capital, digit or
    quote, or at a line break; words and punctuation marks are tokens.

    Args:
        text: the document.
        lowercase: lower-case the words.

    Returns:
        A list of sentences, each a list of word strings.

    Example:

    >>> tokenize_document("A fast game. Kill the aliens! By Kenta Cho.")
    [['a', 'fast', 'game', '.'], ['kill', 'the', 'aliens', '!'], ['by', 'kenta', 'cho', '.']]
    """
    return [split_words(s, lowercase) for s in split_sentences(text)]


def build_word_vocabulary(documents, min_count=1, max_size=None):
    """A `WordVocabulary` (PAD = 0, UNK = 1) from tokenised documents.

    Args:
        documents: documents as `tokenize_document` returns them.
        min_count: keep words seen at least this often.
        max_size: optional cap on the vocabulary size (specials included).

    Returns:
        A lower-casing `WordVocabulary`, words by frequency.

    Example:

    >>> docs = [tokenize_document("A game. A fast game.")]
    >>> build_word_vocabulary(docs, min_count=2).itos
    ['<pad>', '<unk>', '<s>', '</s>', '.', 'a', 'game']
    """
    from kerattn.datasets.vocabulary import WordVocabulary

    counts = collections.Counter(
        w for doc in documents for sentence in doc for w in sentence)
    ranked = sorted((w for w, c in counts.items() if c >= min_count),
                    key=lambda w: (-counts[w], w))
    if max_size is not None:
        ranked = ranked[: max_size - 4]
    return WordVocabulary(ranked, lowercase=True)


def encode_documents(documents, vocab, max_sentences, max_words):
    """Tokenised documents -> int32 ids `(n, max_sentences, max_words)`.

    Longer documents keep their first sentences, longer sentences their
    first words; PAD (0) fills the rest at both levels.

    Args:
        documents: documents as `tokenize_document` returns them.
        vocab: a `WordVocabulary` (unknown words get its UNK id).
        max_sentences, max_words: the shape of each document.

    Returns:
        An int32 array `(len(documents), max_sentences, max_words)`, the
        input of `kerattn.zoo.han_classifier`.

    Example:

    >>> docs = [tokenize_document("A game. A fast game.")]
    >>> encode_documents(docs, build_word_vocabulary(docs), 3, 4)[0]
    array([[5, 6, 4, 0],
           [5, 7, 6, 4],
           [0, 0, 0, 0]], dtype=int32)
    """
    checks.positive_int("max_sentences", max_sentences)
    checks.positive_int("max_words", max_words)
    checks.require(hasattr(vocab, "stoi") and hasattr(vocab, "pad_id"), "vocab",
                   "a kerattn.datasets.WordVocabulary", type(vocab).__name__)
    checks.require(not isinstance(documents, str) and not any(
        isinstance(doc, str) or any(isinstance(s, str) for s in doc)
        for doc in documents), "documents",
        "tokenised: a list of documents, each a list of sentences, each a list "
        "of words (see `tokenize_document`)")
    ids = np.full((len(documents), max_sentences, max_words), vocab.pad_id, "int32")
    for d, doc in enumerate(documents):
        rows = [[vocab.stoi.get(w, vocab.unk_id) for w in sentence[:max_words]]
                for sentence in doc[:max_sentences]]
        if rows:
            ids[d, :len(rows)] = pad_ids(rows, max_words, vocab.pad_id)
    return ids
