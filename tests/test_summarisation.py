"""Summarisation data and scores: Debian descriptions -> synopses.

The loader reads a committed sample of apt's lists (tests/data/debian_lists:
41 real binary packages of bookworm, chosen to hold a source with five
binaries, an exact duplicate across two sources and near duplicates across
sources on different sides of the split). Near duplicates are checked
against every pair's word 5-gram Jaccard similarity, computed here.
"""

import itertools
import os
import re

import numpy as np
import pytest

from kerattn.datasets import (LengthBucketedBatches, WordVocabulary,
                              debian_summaries, near_duplicates)
from kerattn.recipes import summarisation

LISTS = os.path.join(os.path.dirname(__file__), "data", "debian_lists")


def five_grams(text):
    """Word 5-grams, words as runs of letters, digits and `_` (and single
    marks), lower-cased: written here, apart from the library's."""
    words = re.findall(r"\w+(?:[-'.]\w+)*|[^\w\s]", text.lower())
    if len(words) <= 5:
        return {tuple(words)}
    return {tuple(words[i:i + 5]) for i in range(len(words) - 4)}


def similarity(a, b):
    a, b = five_grams(a), five_grams(b)
    return len(a & b) / len(a | b)


def components(n, pairs):
    """Connected components (of at least two) of the graph of `pairs`."""
    group = list(range(n))

    def find(i):
        while group[i] != i:
            i = group[i]
        return i

    for i, j in pairs:
        group[max(find(i), find(j))] = min(find(i), find(j))
    out = {}
    for i in range(n):
        out.setdefault(find(i), []).append(i)
    return sorted((g for g in out.values() if len(g) > 1), key=lambda g: g[0])


def sample_texts():
    from kerattn.datasets.documents import _binary_packages, _long_description

    return [_long_description(d) for _, _, _, d in _binary_packages(LISTS)]


def test_near_duplicates_are_the_pairs_above_the_threshold():
    texts = sample_texts()
    # Variants at known distances: one word changed in a long text, and
    # one text cut in half (about 0.5).
    words = texts[0].split()
    texts += [" ".join(words[:-1] + ["changed"]), " ".join(words[: len(words) // 2])]
    expected = components(len(texts), [
        (i, j) for i, j in itertools.combinations(range(len(texts)), 2)
        if similarity(texts[i], texts[j]) >= 0.8])
    assert expected and any(len(texts) - 2 in g for g in expected)
    assert near_duplicates(texts) == expected
    assert near_duplicates(texts[:1]) == []


def test_the_set_is_split_by_source_without_duplicates():
    data = debian_summaries(LISTS, min_words=20)
    kept = [(split, e) for split in ("train", "valid", "test") for e in data[split]]
    sides = {}
    for split, e in kept:
        sides.setdefault(e["source"], set()).add(split)
    assert all(len(s) == 1 for s in sides.values()), sides
    assert len(sides["cyrus-sasl2"]) == 1   # five binaries, one side
    # No two kept descriptions are duplicates, within a side or across.
    texts = [e["text"] for _, e in kept]
    for a, b in itertools.combinations(texts, 2):
        assert similarity(a, b) < 0.8
    # Each one removed has a duplicate kept: nothing else went.
    for text in sample_texts():
        if len(text.split()) >= 20:
            assert max(similarity(text, kept_text) for kept_text in texts) >= 0.8
    report = data["report"]
    assert report["exact_duplicates"] >= 1 and report["near_duplicates"] >= 1
    assert report["packages"] == len(kept) + report["exact_duplicates"] + \
        report["near_duplicates"]
    # Each example's synopsis is its description's first line.
    libsasl = next(e for _, e in kept if e["package"] == "libsasl2-2")
    assert libsasl["summary"] == "Cyrus SASL - authentication abstraction library"
    assert libsasl["text"].startswith("This is the Cyrus SASL API implementation")
    assert 0.0 <= report["test_summaries_in_train"] <= 1.0


def test_missing_lists_name_the_apt_command(tmp_path):
    with pytest.raises(FileNotFoundError,
                       match="apt-get update -o Acquire::Languages=en"):
        debian_summaries(str(tmp_path))


def test_batches_pad_each_side_to_its_own_width():
    rng = np.random.default_rng(0)
    lengths = [(30, 3), (5, 9), (50, 2), (12, 14)]   # not the longest first
    source = np.zeros((4, 50), "int32")
    labels = np.zeros((4, 14), "int32")
    for i, (s, t) in enumerate(lengths):
        source[i, :s] = rng.integers(4, 9, s)
        labels[i, :t] = rng.integers(4, 9, t)
    batches = LengthBucketedBatches({"source_ids": source, "target_in_ids": labels},
                                    labels, batch_size=1, bucket_width=24,
                                    target_bucket_width=8, shuffle=False)
    shapes = sorted((x["source_ids"].shape[1], y.shape[1]) for x, y in batches)
    assert shapes == [(24, 16), (24, 16), (48, 8), (72, 8)]


def test_rouge_is_the_f_measure_averaged_over_pairs():
    # No word the stemmer changes: F1 = 2PR / (P + R) on unigrams and
    # bigrams; ROUGE-L on the longest common subsequence.
    scores = summarisation.rouge(["the fast parser", "a tool"],
                                 ["the json parser", "a tool"])
    p = r = 2 / 3
    assert scores["rouge1"] == pytest.approx(100 * (2 * p * r / (p + r) + 1) / 2,
                                             abs=0.01)
    assert scores["rouge2"] == pytest.approx(100 * (0 + 1) / 2, abs=0.01)
    assert scores["rougeL"] == pytest.approx(scores["rouge1"], abs=0.01)


def test_lead_baselines_and_section_7_figures():
    assert summarisation.first_sentence(
        "Foo converts bars. It is fast.\nMore.") == "Foo converts bars."
    assert summarisation.first_words("a b c d", 2) == "a b"
    vocab = WordVocabulary(["the", "parser", "for", "json"], lowercase=True)
    figures = summarisation.figures(
        vocab, ["the parser for json and yaml"],
        [["the", "yaml", "parser", "the", "yaml", "parser", "<unk>"]])
    # 6 of 7 tokens in the source; yaml twice outside the vocabulary; one
    # UNK; trigrams: (the yaml parser) repeats once of 5.
    assert figures == {"copied": round(6 / 7, 4), "oov": round(2 / 7, 4),
                       "unk": round(1 / 7, 4), "repeated_trigrams": round(1 / 5, 4),
                       "tokens_per_summary": 7.0}


def test_the_coverage_phase_starts_from_every_pointer_generator_weight():
    """`with_coverage` carries each weight over, the encoder's inner LSTMs
    included (Keras numbers them differently in each model built), and
    adds only the attention's coverage weights (eq. 11)."""
    from kerattn import zoo

    vocab = WordVocabulary(["a", "b"], lowercase=True)
    data = {"vocab": vocab}
    zoo.pointer_generator(len(vocab), copy=False, preset="tiny")   # numbering moves
    model = summarisation.build(data, "tiny")
    covered = summarisation.with_coverage(model, data, "tiny")
    mine = {v.path.split("/")[-1] + str(tuple(v.shape)): v for v in covered.weights}
    assert len(covered.weights) == len(model.weights) + 2
    by_place = dict(zip([v.path for v in model.weights],
                        [v for v in covered.weights
                         if v.path.split("/")[-1] not in ("w_c", "b")]))
    for path, variable in by_place.items():
        source = next(v for v in model.weights if v.path == path)
        np.testing.assert_array_equal(np.asarray(variable), np.asarray(source))
    assert {"w_c(16,)", "b(16,)"} <= set(mine)
