"""A run folder (`kerattn.runs`): saved, loaded back ready to use, and
refused when tampered with; the split of a user's file by a hash."""

import json
import os
import random

import numpy as np
import pytest

import kerattn
from kerattn.datasets import SymbolVocabulary, WordVocabulary, read_cmudict, tsv_pairs
from kerattn.recipes.common import FitResult, split
from kerattn.runs import Run, load_run

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def _translation_run():
    source = WordVocabulary.build(["File not found", "Permission denied"])
    target = WordVocabulary.build(["Fichier introuvable", "Permission refusée"])
    model = kerattn.zoo.bahdanau_nmt(len(source), len(target), preset="tiny")
    return Run(model, "translation", {"source": source, "target": target})


def test_a_run_round_trips_and_translates_the_same(tmp_path):
    run = _translation_run()
    folder = run.save(str(tmp_path / "run"))
    assert sorted(os.listdir(folder)) == ["model.keras", "run.json",
                                          "source_vocab.json", "target_vocab.json"]
    loaded = load_run(folder)
    assert loaded.task == "translation" and loaded.labels is None
    assert loaded.source_vocab.itos == run.source_vocab.itos
    assert loaded.target_vocab.itos == run.target_vocab.itos
    texts = ["File not found", "Permission denied found"]
    assert (loaded.translator(max_length=5)(texts)
            == run.translator(max_length=5)(texts))
    with pytest.raises(ValueError, match="`task` must be captioning"):
        loaded.captioner()


def test_a_run_decodes_with_the_search_it_was_scored_with(tmp_path, monkeypatch):
    """A run's `search` (as the summarisation recipe writes it) survives the
    folder and is what its translator searches with, calls and export
    alike; a call's own arguments win; a run.json of format 1 (written
    before `search` existed) loads with none."""
    from kerattn.decoding import Translator
    from kerattn.decoding.generate import Generator

    run = _translation_run()
    search = {"beam_width": 3, "min_length": 2, "length_penalty": "average",
              "max_length": 5}
    folder = Run(run.model, run.task, run.vocabularies, search=search).save(
        str(tmp_path / "run"))
    loaded = load_run(folder)
    assert loaded.search == search
    seen, generate = [], Generator.__call__

    def spy(self, inputs, max_length=50, strategy="greedy", **options):
        seen.append(dict(options, max_length=max_length, strategy=strategy))
        return generate(self, inputs, max_length, strategy, **options)

    monkeypatch.setattr(Generator, "__call__", spy)
    texts = ["Permission denied found", "File not found"]
    plain = Translator(run.model, run.source_vocab, run.target_vocab)
    assert loaded.translator()(texts) == plain(texts, **search)
    assert seen[0]["strategy"] == "beam" and seen[0]["max_length"] == 5
    assert {k: seen[0][k] for k in ("beam_width", "min_length", "length_penalty")} \
        == {"beam_width": 3, "min_length": 2, "length_penalty": "average"}
    overridden = loaded.translator()(texts, beam_width=1, min_length=0,
                                     length_penalty=0.0, max_length=3)
    assert seen[-1]["beam_width"] == 1 and seen[-1]["max_length"] == 3
    assert overridden == plain(texts, max_length=3)
    # A default minimum longer than a call's maximum is cut to it.
    loaded.translator()(texts, max_length=1)
    assert seen[-1]["min_length"] == 1
    with open(os.path.join(folder, "run.json")) as f:
        record = json.load(f)
    assert record["format"] == 2
    del record["search"]
    record["format"] = 1   # as an older kerattn wrote it
    _write(folder, "run.json", json.dumps(record))
    assert load_run(folder).search == {}


def test_labels_and_one_vocabulary(tmp_path):
    """Label names as a file gave them: strings, or numbers (star ratings);
    saving again over a run replaces it whole."""
    vocab = WordVocabulary.build(["a b c"])
    model = kerattn.zoo.bahdanau_nmt(len(vocab), len(vocab), preset="tiny")
    Run(model, "classification", {"vocab": vocab}, [1, 5]).save(str(tmp_path))
    assert load_run(str(tmp_path)).labels == [1, 5]
    Run(model, "classification", {"vocab": vocab}, ["spam", "ham"]).save(
        str(tmp_path))
    loaded = load_run(str(tmp_path))
    assert loaded.labels == ["spam", "ham"]
    assert sorted(loaded.vocabularies) == ["vocab"]
    assert os.path.exists(tmp_path / "vocab.json")


def test_a_fit_result_unpacks_as_four_and_carries_the_run():
    run = _translation_run()
    result = FitResult(run.model, {"epochs": 1}, {"bleu": 1.0}, None, run)
    model, summary, results, draw = result
    assert model is run.model and result.run is run and draw is None


TAMPERED = {
    "a path out of the folder": (
        lambda f: _edit(f, vocabularies={"source": "../source_vocab.json",
                                         "target": "target_vocab.json"}),
        "a plain file name inside the folder"),
    "an absolute path": (
        lambda f: _edit(f, model="/etc/passwd"),
        "a plain file name inside the folder"),
    "a link": (lambda f: _link(f), "not a link"),
    "an unknown key": (lambda f: _edit(f, code="print(1)"),
                       "exactly the keys"),
    "not JSON": (lambda f: _write(f, "run.json", "{'format': 1"), "JSON"),
    "a task it does not know": (lambda f: _edit(f, task="shell"), "a task among"),
    "labels that are not names": (lambda f: _edit(f, labels=[[1], {"x": 2}, True]),
                                  "`labels` null or a list of label names"),
    "a vocabulary that is not one": (
        lambda f: _write(f, "source_vocab.json", '{"tokens": [1], "x": 2}'),
        "a vocabulary's JSON"),
    "a model that is not a .keras file": (
        lambda f: _write(f, "model.keras", "not a zip"), "model.keras"),
    "a newer format": (lambda f: _edit(f, format=3), "format 1 or 2"),
    "a search option of the wrong kind": (
        lambda f: _edit(f, search={"min_length": "4"}), r"search\['min_length'\]"),
    "a beam no machine holds": (
        lambda f: _edit(f, search={"beam_width": 10 ** 7}), r"search\['beam_width'\]"),
    "a search option it does not know": (
        lambda f: _edit(f, search={"beam_width": 2, "step_fn": "os.system"}),
        "search.*search options among"),
    "a search value that is not plain": (
        lambda f: _edit(f, search={"beam_width": [2]}),
        r"search\['beam_width'\]` must be an int in"),
    "a vocabulary it does not take": (
        lambda f: _edit(f, vocabularies={"source": "source_vocab.json",
                                         "target": "target_vocab.json",
                                         "extra": "target_vocab.json"}),
        "each file once"),
    "one file for both vocabularies": (
        lambda f: _edit(f, vocabularies={"source": "source_vocab.json",
                                         "target": "source_vocab.json"}),
        "each file once"),
    "a hard link": (lambda f: _hard_link(f), "a link"),
    "a vocabulary that is not UTF-8": (
        lambda f: open(os.path.join(f, "source_vocab.json"), "wb").write(b"\xff\xfe{"),
        "UTF-8 text"),
}


def _edit(folder, **changes):
    path = os.path.join(folder, "run.json")
    with open(path) as f:
        record = json.load(f)
    record.update(changes)
    _write(folder, "run.json", json.dumps(record))


def _write(folder, name, text):
    with open(os.path.join(folder, name), "w") as f:
        f.write(text)


def _hard_link(folder):
    target = os.path.join(folder, "elsewhere.json")
    os.link(os.path.join(folder, "source_vocab.json"), target)


def _link(folder):
    target = os.path.join(folder, "elsewhere.json")
    os.replace(os.path.join(folder, "source_vocab.json"), target)
    os.symlink(target, os.path.join(folder, "source_vocab.json"))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    return _translation_run().save(str(tmp_path_factory.mktemp("run") / "run"))


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_tampered_folder_is_refused(case, saved, tmp_path):
    import shutil

    folder = str(tmp_path / "copy")
    shutil.copytree(saved, folder)
    tamper, message = TAMPERED[case]
    tamper(folder)
    with pytest.raises(ValueError, match=message):
        load_run(folder)


def test_not_a_run_folder(tmp_path):
    with pytest.raises(ValueError, match="`folder` must be a run folder"):
        load_run(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="run.json"):
        load_run(str(tmp_path))


# --- the split of a user's file --------------------------------------------

def _shuffled_copy(path, tmp_path, keep_first=0):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    head, rest = lines[:keep_first], lines[keep_first:]
    random.Random(0).shuffle(rest)
    copy = tmp_path / os.path.basename(path)
    copy.write_text("\n".join(head + rest) + "\n", encoding="utf-8")
    return str(copy)


def test_shuffling_a_data_file_leaves_the_test_split_unchanged(tmp_path):
    """`--data` files (a TSV of pairs, a word list): the same test set
    whatever the order of their lines, and `--max-test` draws the same
    examples."""
    tsv = os.path.join(DATA, "gettext_fr_sample.tsv")
    a, b = split(tsv_pairs(tsv)), split(tsv_pairs(_shuffled_copy(tsv, tmp_path)))
    assert a == b and len(a["test"]) >= 1
    assert a["test"][:5] == b["test"][:5]
    words = os.path.join(DATA, "cmudict_sample.dict")

    def g2p_split(path):   # the g2p recipe's rule, cmudict_g2p's
        return split(list(read_cmudict(path).items()), key=lambda w: w[0],
                     valid_share=0.05, test_share=0.05)

    # The same words on each side (a word's alternatives come in file order).
    assert ({k: [w for w, _ in v] for k, v in g2p_split(words).items()}
            == {k: [w for w, _ in v] for k, v in g2p_split(
                _shuffled_copy(words, tmp_path)).items()})
    assert sorted(w for w, _ in g2p_split(words)["test"]) == sorted(
        w for w, _ in kerattn.datasets.cmudict_g2p(path=words)["test"])


def test_a_sorted_file_does_not_give_a_sorted_test_set():
    """An alphabetical word list no longer tests on its last letters."""
    words = [f"{chr(97 + i % 26)}word{i}" for i in range(200)]
    test = split(words)["test"]
    assert len({w[0] for w in test}) > 5


def test_a_users_test_file_is_the_test_split_and_never_trained_on(tmp_path):
    """`--test-data` (`split(..., test=)`, `split_with_test`): the test
    split is the test file's examples, whole, in the order of their hashes
    (so `--max-test` draws the same ones whatever the file's order); the
    training file gives training and validation by `split`'s rule; an
    example of it with a test key is left out of both, with a warning that
    counts them. A test file of nothing, or a training file of one key,
    is a ValueError naming its argument."""
    pairs = tsv_pairs(os.path.join(DATA, "gettext_fr_sample.tsv"))
    # the test file: 12 pairs of the training file and 3 new ones
    test = pairs[100:112] + [("never seen", "jamais vu"), ("x y", "x y"),
                             ("a new source", "une source nouvelle")]
    with pytest.warns(UserWarning, match=r"^12 examples of the training data "
                      r"are also in the test data .*left out of training"):
        parts = split(pairs, test=test)
    assert sorted(parts["test"]) == sorted(test)
    with pytest.warns(UserWarning):
        assert split(pairs, test=test[::-1]) == parts
    test_keys = {source for source, _ in test}
    trained = parts["train"] + parts["valid"]
    assert not test_keys & {source for source, _ in trained}
    assert sorted(trained) == sorted(p for p in pairs if p[0] not in test_keys)
    # validation: the keys `split` would hold out for validation and test
    # with valid_share 0.1 and no test share, of the kept ones
    kept = [p for p in pairs if p[0] not in test_keys]
    assert parts["valid"] == split(kept, valid_share=0.1, test_share=0.0,
                                   held_out=("valid",))["valid"]
    many = split([(f"source {i}", "target") for i in range(1000)],
                 test=[("another", "autre")])
    assert 70 <= len(many["valid"]) <= 130 and len(many["test"]) == 1
    # A test file apart from the training file: no warning.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert split(pairs[:50], test=pairs[60:70])["test"] == split(
            pairs[:50], test=pairs[60:70][::-1])["test"]
    with pytest.raises(ValueError, match="`test_data` must be a file of at least 1"):
        split(pairs, test=[])
    with pytest.raises(ValueError, match="`data` must be a file of at least 2 "
                       "distinct examples"):
        split([pairs[0], pairs[0]], test=pairs[5:6])
    # A CBT file's (by position): its last 10% validates, the test file tests.
    from kerattn.recipes.common import split_in_order

    assert split_in_order(list(range(20)), test=["q"]) == {
        "train": list(range(18)), "valid": [18, 19], "test": ["q"]}
    with pytest.raises(ValueError, match="`test_data` must be a file"):
        split_in_order(list(range(20)), test=[])


@pytest.mark.parametrize("recipe", ["translation", "summarisation", "g2p",
                                    "classification", "reading"])
def test_a_test_file_without_a_training_file_is_refused(recipe):
    """A recipe's `fit(data=None, test_data=...)` would train and test on
    this machine's data and never read the test file: a ValueError, before
    anything loads."""
    import importlib

    module = importlib.import_module(f"kerattn.recipes.{recipe}")
    args = ("bahdanau_nmt",) if recipe == "translation" else ()
    with pytest.raises(ValueError, match="`test_data` must be a test file "
                       "beside `data`"):
        module.fit(*args, test_data="mine.tsv")


def test_a_small_file_still_holds_out_one_example_each():
    """Each split gets a key, whatever the hashes (a share of 0 or 1 sends
    every key to one side first); a key's examples stay together; fewer
    than 3 distinct keys is a ValueError."""
    for shares in ((0.1, 0.1), (0.0, 0.0), (0.5, 0.5)):
        parts = split(["a", "b", "c", "c"], valid_share=shares[0],
                      test_share=shares[1])
        assert all(len(parts[k]) >= 1 for k in ("train", "valid", "test"))
        assert sorted(sum(parts.values(), [])) == ["a", "b", "c", "c"]
        assert any(p.count("c") == 2 for p in parts.values())
    with pytest.raises(ValueError, match="3 distinct"):
        split(["a", "a", "a", "b"])
    symbols = SymbolVocabulary.build(["ab"], separator="")
    assert len(symbols) > 4
    np.testing.assert_array_equal(
        kerattn.datasets.pad_ids([[5, 6], [7]], pad_id=1), [[5, 6], [7, 1]])


# --- data files: one rule -------------------------------------------------------

def test_skipped_lines_are_counted_and_named(tmp_path):
    """A pair with an empty side is skipped with a warning that counts it and
    names its line; a byte-order mark does not stay in the first text."""
    path = tmp_path / "pairs.tsv"
    path.write_bytes("\ufeffGo.\tVa !\n\tnothing\nHi.\t\nBye.\tSalut.\n".encode("utf-8"))
    with pytest.warns(UserWarning, match=r"pairs\.tsv: skipped 2 lines \(an empty "
                      r"side: nothing to learn or score\): lines 2, 3"):
        pairs = tsv_pairs(str(path))
    assert pairs == [("Go.", "Va !"), ("Bye.", "Salut.")]
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text('{"text": "a b", "label": 1}\n{"text": " ", "label": 2}\n')
    with pytest.warns(UserWarning, match=r"docs\.jsonl: skipped 1 line .*: line 2"):
        texts, labels = kerattn.datasets.read_jsonl(str(jsonl))
    assert texts == ["a b"] and labels == [1]


def test_cmudict_comments_and_arpabet_in_either_case(tmp_path):
    """cmudict-0.7b's `;;;` lines are comments; lower-case ARPAbet is read as
    ARPAbet (stress stripped, upper-cased); a file in another phone set is
    kept as written, every line alike (tones keep their digits, and `h m m`
    stays lower-case beside `m a1`)."""
    path = tmp_path / "words.dict"
    path.write_text(";;; # CMUdict  --  Major Version: 0.07\n"
                    "fish f ih1 sh\nread R EH1 D\n", encoding="utf-8")
    assert read_cmudict(str(path)) == {"fish": ("F IH SH",), "read": ("R EH D",)}
    assert read_cmudict(str(path), stress=True)["fish"] == ("F IH1 SH",)
    tones = tmp_path / "tones.dict"
    tones.write_text("hmm h m m\nma m a1\n", encoding="utf-8")
    assert read_cmudict(str(tones)) == {"hmm": ("h m m",), "ma": ("m a1",)}


def test_a_utf16_file_still_reads(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("Go.\tVa !\nHi.\tSalut !\n", encoding="utf-16")
    assert tsv_pairs(str(path), encoding="utf-16") == [("Go.", "Va !"),
                                                        ("Hi.", "Salut !")]
