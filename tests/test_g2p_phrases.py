"""The long-form G2P test (`kerattn.recipes.g2p_phrases`): phrases built
from the committed CMUdict sample, the error rates and the alignment
failures against hand counts, and a decoded phrase's failures read through
the `Translator` as the recipe reads them."""

import os

import numpy as np
import pytest

from kerattn.datasets import cmudict_g2p
from kerattn.recipes import g2p, g2p_phrases
from kerattn.recipes.g2p_phrases import BOUNDARY, error_rates, failures

SAMPLE = os.path.join(os.path.dirname(__file__), "data", "cmudict_sample.dict")


@pytest.fixture(scope="module")
def data():
    return g2p_phrases.prepare(cmudict_g2p(path=SAMPLE), train_phrases=200,
                               test_phrases=5, test_lengths=(2, 4, 8))


def test_phrases_join_words_of_their_split_with_the_boundary_on_both_sides(data):
    splits = cmudict_g2p(path=SAMPLE)
    listed = {w: p for side in splits.values() for w, p in side}
    train_words = {w for w, _ in splits["train"]}
    test_words = {w for w, p in splits["test"] if len(p) == 1}
    lengths = set()
    for source, target in data["train_kept"]:
        words = source.split(BOUNDARY)
        prons = [p.strip() for p in target.split(f" {BOUNDARY} ")]
        assert len(words) == len(prons) and set(words) <= train_words
        assert all(p in listed[w] for w, p in zip(words, prons))
        lengths.add(len(words))
    assert lengths == {1, 2}
    for n, pairs in data["test"].items():
        assert len(pairs) == 5
        for source, target in pairs:
            words = source.split(BOUNDARY)
            assert len(words) == n and set(words) <= test_words
            assert target == f" {BOUNDARY} ".join(listed[w][0] for w in words)
    assert BOUNDARY in data["source_vocab"].stoi
    assert BOUNDARY in data["target_vocab"].stoi
    # The data seed fixes every phrase: each attention sees the same ones.
    again = g2p_phrases.prepare(cmudict_g2p(path=SAMPLE), train_phrases=200,
                                test_phrases=5, test_lengths=(2, 4, 8))
    assert again["test"] == data["test"] and again["train_kept"] == data["train_kept"]


def test_error_rates_count_words_between_boundaries_and_phonemes_without_them():
    references = ["R EH D _ W AY N _ K AE T", "L IH V"]
    hypotheses = ["R EH D _ W AY _ K AE T", "L AY V _ L IH V"]
    rates = error_rates(hypotheses, references)
    # Words: one substitution in the first (3 words); one insertion in the
    # second (1 word). Phonemes: one deletion; three insertions.
    assert rates["wer"] == pytest.approx(2 / 4)
    assert rates["per"] == pytest.approx(4 / 12)
    assert error_rates(references, references) == {"wer": 0.0, "per": 0.0}


def onehot(peaks, letters):
    """Weights with each phoneme's mass on one letter (None: on none)."""
    w = np.zeros((len(peaks), len(letters)), "float32")
    for t, p in enumerate(peaks):
        if p is not None:
            w[t, p] = 1.0
    return w


@pytest.mark.parametrize("peaks, ended, expected", [
    # "ab_cd_ef": letters 0-1 word 0, 3-4 word 1, 6-7 word 2.
    ([0, 1, 2, 3, 4, 5, 6, 7], True, (0, 0, 0)),        # in order
    ([0, 1, 6, 7], True, (1, 0, 0)),                    # word 1 jumped over
    ([0, 1, 3, 4], True, (1, 0, 0)),                    # stopped before word 2
    ([0, 3, 1, 4, 6], True, (0, 2, 0)),                 # back to 0, then to 1 again
    ([0, 1, 3, 3, 3, 3, 4, 6], True, (0, 0, 1)),        # 4 phonemes on one letter
    ([0, 1, 3, 3, 3, 4, 6], True, (0, 0, 0)),           # 3 are allowed
    ([0, 3, 6, 7], False, (0, 0, 1)),                   # no EOS: ran to the limit
    ([0, None, None, 3, 6], True, (0, 0, 0)),           # nowhere is no word
    ([None, None, None, None, None], True, (3, 0, 0)),  # a hard attention that never stops
])
def test_failures_read_skips_repeats_and_stalls_from_the_peaks(peaks, ended, expected):
    got = failures(onehot(peaks, "ab_cd_ef"), "ab_cd_ef", ended)
    assert got == dict(zip(("words", "skipped", "repeated", "stalled"), (3, *expected)))


def test_the_peak_is_the_largest_weight_and_half_a_mass_attends():
    letters = "ab_c"
    w = np.array([[0.6, 0.4, 0.0, 0.0],       # word 0
                  [0.1, 0.2, 0.0, 0.3],       # 0.6 in all: word 1
                  [0.0, 0.0, 0.0, 0.4]])      # under half: nowhere
    assert failures(w, letters, True) == {"words": 2, "skipped": 0, "repeated": 0,
                                          "stalled": 0}


def test_evaluate_decodes_every_length_and_reads_the_alignments(data):
    """An untrained model: the figures are in range and the alignments the
    recipe reads have one column a letter of each phrase."""
    import keras

    keras.utils.set_random_seed(0)
    model = g2p.build(data, "gmm", "tiny")
    sources = [s for s, _ in data["test"][4]]
    outputs, totals = g2p_phrases.decode(model, data, sources, max_length=12)
    assert len(outputs) == len(sources) and totals["phrases"] == len(sources)
    assert totals["words"] == 4 * len(sources)
    assert 0 <= totals["skipped"] <= totals["words"]
    assert totals["stalled"] <= totals["phrases"]
    result = g2p_phrases.evaluate(model, data)["by_length"]
    assert sorted(result) == ["2", "4", "8"]
    for row in result.values():
        assert row["phrases"] == 5 and row["wer"] >= 0 and 0 <= row["stalled"] <= 100


@pytest.mark.parametrize("kwargs, match", [
    ({"train_phrases": 0}, "`train_phrases`"),
    ({"test_phrases": -1}, "`test_phrases`"),
    ({"test_lengths": ()}, "`test_lengths`"),
    ({"train_lengths": (1, 0)}, "`train_lengths`"),
])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        g2p_phrases.prepare(cmudict_g2p(path=SAMPLE), **kwargs)


def test_bad_scoring_input_is_named():
    with pytest.raises(ValueError, match="`hypotheses`"):
        error_rates(["A"], ["A", "B"])
    with pytest.raises(ValueError, match="`splits\\['test'\\]`"):
        g2p_phrases.prepare({"train": [("ab", ("A B",))], "valid": [],
                             "test": [("cd", ("K D", "S D"))]})
