"""AoA reader: the CBT format, KJV cloze construction, baselines, the builder."""

import os

import keras
import numpy as np
import pytest

from cases import np_masked_softmax, to_numpy, zero_weights
from kerattn import zoo
from kerattn.datasets import (
    baseline_accuracy,
    bigram_baseline,
    cloze_vocabulary,
    encode_cloze,
    most_frequent_baseline,
    read_cbt,
    write_cbt,
)
from kerattn.datasets import cloze
from kerattn.losses import MaskedSparseCrossentropy

DATA = os.path.join(os.path.dirname(__file__), "data")
SAMPLE = os.path.join(DATA, "kjv_cloze_sample.txt")


@pytest.fixture(scope="module")
def questions():
    return read_cbt(SAMPLE)


# --- the CBT format and the questions ---------------------------------------------


def test_cbt_round_trip_and_invariants(questions, tmp_path):
    assert len(questions) == 31
    for q in questions:
        assert len(q["context"]) == 20 and len(q["candidates"]) == 10
        assert q["answer"] in q["candidates"]
        assert q["query"].split(" ").count("XXXXX") == 1
        assert q["answer"] in " ".join(q["context"]).split(" ")
    path = os.path.join(tmp_path, "copy.txt")
    write_cbt(questions, path)
    assert read_cbt(path) == questions
    with open(SAMPLE) as a, open(path) as b:
        assert a.read() == b.read()


def test_cbt_reader_errors(tmp_path):
    path = os.path.join(tmp_path, "bad.txt")
    with open(path, "w") as f:
        f.write("1 context\n2 query XXXXX\tanswer\n")
    with pytest.raises(ValueError, match="a question line is"):
        read_cbt(path)
    with open(path, "w") as f:
        f.write("context without number\n")
    with pytest.raises(ValueError, match="starts with its number"):
        read_cbt(path)


def test_kjv_builder_on_a_fake_bible(tmp_path, monkeypatch):
    wordnet = os.path.join(tmp_path, "wordnet")
    os.makedirs(wordnet)
    nouns = ["ox", "ass", "tent", "field", "stone", "cup", "sheep", "camel", "king",
             "altar", "gate", "river"]
    names = ["Abram", "Lot", "Sarai", "Hagar", "Isaac", "Nahor", "Laban", "Milcah",
             "Terah", "Haran", "Jacob", "Esau"]
    preps = ["unto", "upon", "into", "over", "under", "before", "after", "with",
             "from", "toward", "beside", "against"]
    entries = {"noun": nouns + ["run", "well"], "verb": ["smite", "go", "run"],
               "adj": ["good"], "adv": ["well"]}
    for pos, words in entries.items():
        with open(os.path.join(wordnet, f"index.{pos}"), "w") as f:
            f.write("  1 license header line\n")
            f.writelines(f"{w} {pos[0]} 1 0\n" for w in sorted(words))
    verses = []
    for book in ("Genesis", "Mark"):
        for v in range(40):
            verses.append((book, 1, v + 1,
                           f"And {names[v % 12]} set the {nouns[(v * 5) % 12]} "
                           f"{preps[(v * 7) % 12]} {names[(v + 5) % 12]} ."))
    monkeypatch.setattr(cloze, "read_kjv", lambda root: verses)
    splits = cloze.kjv_cloze("unused", wordnet_dir=wordnet, valid_books=(),
                             test_books=("Mark",))
    assert splits["train"] and splits["test"] and not splits["valid"]
    assert {q["book"] for q in splits["test"]} == {"Mark"}
    kinds = {q["kind"] for q in splits["train"]}
    assert {"names", "nouns", "prepositions"} <= kinds
    for q in splits["train"] + splits["test"]:
        assert len(q["candidates"]) == 10 and q["answer"] in q["candidates"]
        assert q["answer"] in " ".join(q["context"]).split(" ")
        if q["kind"] == "names":
            assert all(c in names for c in q["candidates"])
        if q["kind"] == "nouns":
            assert all(c in nouns for c in q["candidates"])
        # The answer's slot is blanked, nothing else changed.
        book = [v[3] for v in verses if v[0] == q["book"]]
        assert q["query"].replace("XXXXX", q["answer"]) in book
        assert all(c in book for c in q["context"])


def test_word_kinds_follow_semcor_counts(tmp_path):
    """Nouns and verbs by the share of SemCor-tagged senses (cntlist.rev),
    counted through the lemma a form inflects; untagged words fall back to
    WordNet listing them under one part of speech only."""
    wordnet = os.path.join(tmp_path, "wordnet")
    os.makedirs(wordnet)
    entries = {"noun": ["water", "waters", "love", "say", "tent"],
               "verb": ["water", "love", "say", "beget", "go"],
               "adj": [], "adv": []}
    for pos, words in entries.items():
        with open(os.path.join(wordnet, f"index.{pos}"), "w") as f:
            f.writelines(f"{w} {pos[0]} 1 0\n" for w in sorted(words))
    with open(os.path.join(wordnet, "verb.exc"), "w") as f:
        f.write("said say\nwent go\nbegat beget\n")
    # sense key, sense number, tagged count (1 noun, 2 verb)
    counts = [("water%1:27:00::", 50), ("water%2:30:00::", 5), ("waters%1:17:00::", 1),
              ("love%1:12:00::", 10), ("love%2:37:00::", 10),
              ("say%2:32:00::", 99), ("say%1:07:00::", 1), ("go%2:38:00::", 80),
              ("tent%1:06:00::", 3)]
    with open(os.path.join(wordnet, "cntlist.rev"), "w") as f:
        f.writelines(f"{key} 1 {n}\n" for key, n in counts)
    text = "and he said the waters went over the tent and begat love and water"
    verses = [("Genesis", 1, 1, text)]
    kinds = cloze.word_kinds(verses, wordnet)
    # said: say 99 of 100 verb; went: go 80 of 80; waters: water 50 noun of
    # 55; tent: 3 of 3 noun; love: half and half, neither; begat: untagged,
    # beget a verb only.
    assert kinds["verbs"] == {"said", "went", "begat"}
    assert kinds["nouns"] == {"waters", "water", "tent"}
    assert not {"he", "and", "the"} & (kinds["nouns"] | kinds["verbs"])
    # At a 0.95 share, "water" (50 of 55 as a noun) is of no kind.
    assert "water" not in cloze.word_kinds(verses, wordnet, pos_share=0.95)["nouns"]
    # Without cntlist.rev: WordNet's only-one-part-of-speech rule ("say"
    # is listed as a noun too, so "said" is of no kind).
    os.remove(os.path.join(wordnet, "cntlist.rev"))
    kinds = cloze.word_kinds(verses, wordnet)
    assert kinds["nouns"] == {"tent", "waters"} and kinds["verbs"] == {"begat", "went"}


def test_baselines_on_hand_made_questions():
    q = {"context": ["the ox and the ass", "the ox ate", "an ass ate the ox"],
         "query": "the XXXXX ate grass", "answer": "ass",
         "candidates": ["ox", "ass", "cup"]}
    assert most_frequent_baseline(q) == "ox"  # 3 times
    # Bigrams "the ox" (3) + "ox ate" (1) beat "the ass" (1) + "ass ate" (1).
    assert bigram_baseline(q) == "ox"
    q2 = dict(q, query="an XXXXX ate")
    assert bigram_baseline(q2) == "ass"  # "an ass" and "ass ate"
    accuracy = baseline_accuracy([dict(q, kind="nouns"), dict(q2, kind="nouns")],
                                 bigram_baseline)
    assert accuracy == {"nouns": 0.5, "all": 0.5}


# --- the builder ----------------------------------------------------------------------


def np_aoa(h_doc, h_query, d_mask, q_mask):
    """Cui et al. (2017), eq. 5-9, in NumPy."""
    m = h_doc @ h_query.T
    pair = d_mask[:, None] & q_mask[None, :]
    alpha = np_masked_softmax(m.T, pair.T).T          # over the document
    beta_t = np_masked_softmax(m, pair)               # over the query
    beta = beta_t[d_mask].mean(0)
    return alpha @ beta


def test_reader_against_numpy_with_padding(questions):
    vocab = cloze_vocabulary(questions)
    arrays = encode_cloze(questions[:3], vocab, max_document=60)
    model = zoo.aoa_reader(len(vocab), embedding_dim=8, units=6, dropout=0.0)
    x = {k: arrays[k] for k in ("document_ids", "query_ids", "candidate_ids")}
    probs = to_numpy(model(x))
    assert probs.shape == arrays["candidate_ids"].shape
    get = model.get_layer
    for i in range(3):
        d_ids, q_ids = x["document_ids"][i], x["query_ids"][i]
        h_doc = to_numpy(get("document_encoder")(get("embedding")(d_ids[None])))[0]
        h_query = to_numpy(get("query_encoder")(get("embedding")(q_ids[None])))[0]
        s = np_aoa(h_doc, h_query, d_ids > 0, q_ids > 0)
        expected = [(s * (d_ids == c)).sum() for c in x["candidate_ids"][i]]
        np.testing.assert_allclose(probs[i], expected, rtol=1e-4, atol=1e-6)
    # Extra padding of the document, query and candidates changes nothing.
    wide = {k: np.pad(v, ((0, 0), (0, 7))) for k, v in x.items()}
    wide_probs = to_numpy(model(wide))
    np.testing.assert_allclose(wide_probs[:, : probs.shape[1]], probs, atol=1e-5)
    assert np.all(wide_probs[:, probs.shape[1]:] == 0)  # padded candidates
    assert np.all(probs.sum(-1) <= 1 + 1e-5)
    weights = zoo.aoa_attention(model)(x)
    np.testing.assert_allclose(to_numpy(weights["probabilities"]), probs, rtol=1e-5)
    np.testing.assert_allclose(to_numpy(weights["s"]).sum(-1), 1.0, rtol=1e-5)


def test_paper_defaults_and_bad_arguments():
    with zero_weights():
        model = zoo.aoa_reader()
    assert model.get_layer("embedding").output_dim == 384
    assert model.get_layer("document_encoder").forward_layer.units == 256
    with pytest.raises(ValueError, match="`units` must be a positive integer"):
        zoo.aoa_reader(100, units=0)
    with pytest.raises(ValueError, match="aoa_reader model"):
        zoo.aoa_attention(zoo.han_classifier(10, 2, embedding_dim=4, word_units=2,
                                             sentence_units=2, attention_units=2))


def test_overfits_a_tiny_real_slice_and_round_trip(questions, tmp_path):
    # The last 5 context verses (short documents keep the RNNs cheap on
    # every backend), where the answer still occurs in them.
    short = [dict(q, context=q["context"][-5:]) for q in questions]
    short = [q for q in short if q["answer"] in " ".join(q["context"]).split(" ")]
    short = short[:12]
    assert len(short) == 12
    vocab = cloze_vocabulary(short)
    arrays = encode_cloze(short, vocab)
    x = {k: arrays[k] for k in ("document_ids", "query_ids", "candidate_ids")}
    keras.utils.set_random_seed(0)
    model = zoo.aoa_reader(len(vocab), embedding_dim=32, units=32, dropout=0.0)
    model.compile(keras.optimizers.Adam(1e-2, clipnorm=5.0),
                  MaskedSparseCrossentropy(pad_id=-1, from_logits=False))
    model.fit(x, arrays["answer_index"], batch_size=12, epochs=40, verbose=0)
    predicted = np.argmax(to_numpy(model.predict(x, verbose=0)), -1)
    assert np.mean(predicted == arrays["answer_index"]) >= 0.9
    path = os.path.join(tmp_path, "aoa.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), atol=1e-5)


def test_cloze_batches_predict_in_order_with_free_width():
    """Sorted (unshuffled) batches of several widths predict on every backend.

    Keras' TensorFlow adapter reads its signature off the first two batches;
    when they have the same width, a wider later batch fails ("yielded an
    element of shape (128, 450) where an element of shape (None, 400) was
    expected"), so the batches put two widths first (`free_first_width`).
    """
    from kerattn.recipes.reading import ClozeBatches

    rng = np.random.default_rng(0)
    lengths = [10] * 8 + [120] * 4          # widths 50, 50, 120 once sorted
    docs = np.zeros((12, 120), "int32")
    for row, n in enumerate(lengths):
        docs[row, :n] = rng.integers(4, 30, n)
    arrays = {"document_ids": docs,
              "query_ids": rng.integers(4, 30, (12, 5)).astype("int32"),
              "candidate_ids": docs[:, :3].copy(),
              "answer_index": np.zeros(12, "int32")}
    batches = ClozeBatches(arrays, 4, shuffle=False)
    widths = [batches[i][0]["document_ids"].shape[1] for i in range(len(batches))]
    assert sorted(widths) == [50, 50, 120] and widths[0] != widths[1]
    model = zoo.aoa_reader(30, embedding_dim=8, units=4)
    probabilities = model.predict(batches, verbose=0)
    order = np.concatenate(batches.batches)
    assert sorted(order.tolist()) == list(range(12))
    direct = model.predict({k: v for k, v in arrays.items() if k != "answer_index"},
                           verbose=0)
    np.testing.assert_allclose(probabilities, direct[order], atol=1e-5)
