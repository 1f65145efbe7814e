"""HAN classifier: the builder, masks at both levels, weights, real data."""

import os

import keras
import numpy as np
import pytest

from cases import to_numpy, zero_weights
from kerattn import zoo
from kerattn.datasets import (
    build_word_vocabulary,
    encode_documents,
    read_jsonl,
    tokenize_document,
    write_jsonl,
)
from kerattn.datasets.documents import (
    _long_description,
    debian_descriptions,
    debian_topical10,
    split_sentences,
)

DATA = os.path.join(os.path.dirname(__file__), "data")
SMALL = dict(embedding_dim=16, word_units=8, sentence_units=8, attention_units=12)


@pytest.fixture(scope="module")
def sample():
    texts, labels = read_jsonl(os.path.join(DATA, "topical10_sample.jsonl"))
    names = sorted(set(labels))
    docs = [tokenize_document(t) for t in texts]
    vocab = build_word_vocabulary(docs)
    x = encode_documents(docs, vocab, max_sentences=6, max_words=30)
    y = np.array([names.index(label) for label in labels], "int32")
    return docs, vocab, x, y, names


# --- data ---------------------------------------------------------------------


def test_sentences_words_and_ids():
    text = "Foo is a tool, e.g. for bars. It runs fast!\nSecond paragraph here"
    assert split_sentences(text) == ["Foo is a tool, e.g. for bars.", "It runs fast!",
                                     "Second paragraph here"]
    doc = tokenize_document(text)
    assert doc[0] == ["foo", "is", "a", "tool", ",", "e.g", ".", "for", "bars", "."]
    vocab = build_word_vocabulary([doc])
    ids = encode_documents([doc, doc[:1]], vocab, max_sentences=2, max_words=4)
    assert ids.shape == (2, 2, 4)
    assert np.all(ids[1, 1] == 0) and np.all(ids[0, 1] > 0)  # padded sentence
    with pytest.raises(ValueError, match="`max_words` must be a positive int"):
        encode_documents([doc], vocab, 2, 0)


def test_jsonl_round_trip_and_errors(tmp_path):
    path = os.path.join(tmp_path, "d.jsonl")
    write_jsonl([{"text": "a b", "stars": 4}, {"text": "c", "stars": 1}], path)
    assert read_jsonl(path, label_key="stars") == (["a b", "c"], [4, 1])
    with pytest.raises(ValueError, match="needs the keys 'text' and 'label'"):
        read_jsonl(path)


def _write_lists(directory):
    """A tiny apt lists directory: plain-text Packages and Translation-en."""
    packages = """Package: libfoo1
Source: foo
Section: libs
Description-md5: aaa

Package: foo
Section: utils
Description-md5: bbb

Package: foo-doc
Source: foo
Section: doc
Description-md5: ccc

Package: bar-game
Section: games
Description-md5: ddd

Package: baz
Source: baz (1.0-1)
Section: net
Description-md5: eee
"""
    translations = """Package: libfoo1
Description-md5: aaa
Description-en: foo library
 Shared library of foo.

Package: foo
Description-md5: bbb
Description-en: the foo tool
 Foo converts bars.
 .
 It is fast.

Package: foo-doc
Description-md5: ccc
Description-en: foo docs
 Documentation for foo.

Package: bar-game
Description-md5: ddd
Description-en: a game
 Jump over things.

Package: baz
Description-md5: eee
Description-en: baz client
 Talks to servers.
"""
    with open(os.path.join(directory, "x_main_binary-amd64_Packages"), "w") as f:
        f.write(packages)
    with open(os.path.join(directory, "x_main_i18n_Translation-en"), "w") as f:
        f.write(translations)


def test_debian_builder_one_description_per_source(tmp_path):
    _write_lists(str(tmp_path))
    docs = {d["source"]: d for d in debian_descriptions(str(tmp_path))}
    assert set(docs) == {"foo", "bar-game", "baz"}
    # The binary named like the source wins over libfoo1 / foo-doc.
    assert docs["foo"]["package"] == "foo" and docs["foo"]["label"] == "utils"
    assert docs["foo"]["text"] == "Foo converts bars.\nIt is fast."
    assert docs["baz"]["label"] == "net"  # "Source: baz (1.0-1)" parsed
    data = debian_topical10(str(tmp_path), sections=("utils", "games"))
    labels = sorted(e["label"] for k in ("train", "valid", "test") for e in data[k])
    assert labels == ["games", "utils"] and data["labels"] == ["utils", "games"]


def test_debian_builder_missing_lists_names_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt-get update -o Acquire::Languages=en"):
        debian_topical10(str(tmp_path))


def test_long_description_paragraphs():
    text = "synopsis\n First line\n continues.\n .\n Second."
    assert _long_description(text) == "First line continues.\nSecond."


# --- the builder ------------------------------------------------------------------


def test_shapes_weights_and_masks_at_both_levels(sample):
    _, vocab, x, _, names = sample
    model = zoo.han_classifier(len(vocab), len(names), **SMALL)
    probs = to_numpy(model({"document_ids": x[:4]}))
    assert probs.shape == (4, len(names))
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)
    weights = zoo.han_attention(model)({"document_ids": x[:4]})
    word, sentence = to_numpy(weights["word_weights"]), to_numpy(weights["sentence_weights"])
    np.testing.assert_allclose(to_numpy(weights["probabilities"]), probs, rtol=1e-5)
    real_words, real_sentences = x[:4] > 0, (x[:4] > 0).any(-1)
    assert np.all(word[~real_words] == 0) and np.all(sentence[~real_sentences] == 0)
    np.testing.assert_allclose(word.sum(-1)[real_sentences], 1.0, rtol=1e-5)
    np.testing.assert_allclose(sentence.sum(-1), 1.0, rtol=1e-5)
    # More padding at both levels changes nothing.
    padded = np.zeros((4, x.shape[1] + 2, x.shape[2] + 5), "int32")
    padded[:, : x.shape[1], : x.shape[2]] = x[:4]
    np.testing.assert_allclose(to_numpy(model({"document_ids": padded})), probs,
                               atol=1e-5)
    # A fully padded document gives the bias's class prior, never NaN.
    empty = to_numpy(model({"document_ids": np.zeros((1, 3, 4), "int32")}))
    assert np.all(np.isfinite(empty))
    bias = to_numpy(model.get_layer("classifier").bias)
    np.testing.assert_allclose(empty[0], np.exp(bias) / np.exp(bias).sum(), rtol=1e-5)


def test_paper_defaults_and_bad_arguments():
    with zero_weights():
        model = zoo.han_classifier()
    encoder = model.get_layer("encoder")
    assert (encoder.word_units, encoder.sentence_units, encoder.attention_units) == (
        50, 50, 100)
    assert model.get_layer("embedding").output_dim == 200
    with pytest.raises(ValueError, match="`num_classes` must be a positive integer"):
        zoo.han_classifier(100, 0)
    with pytest.raises(ValueError, match="`dropout` must be in"):
        zoo.han_classifier(100, 3, dropout=1.5)
    with pytest.raises(ValueError, match="han_classifier model"):
        zoo.han_attention(zoo.aoa_reader(10, embedding_dim=4, units=2))


def test_overfits_a_tiny_real_slice_and_round_trip(sample, tmp_path):
    _, vocab, x, y, names = sample
    keras.utils.set_random_seed(0)
    model = zoo.han_classifier(len(vocab), len(names), **SMALL)
    model.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit({"document_ids": x}, y, batch_size=16, epochs=25, verbose=0)
    predicted = np.argmax(to_numpy(model.predict({"document_ids": x}, verbose=0)), -1)
    assert np.mean(predicted == y) >= 0.95
    path = os.path.join(tmp_path, "han.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(to_numpy(loaded({"document_ids": x[:5]})),
                               to_numpy(model({"document_ids": x[:5]})), atol=1e-5)
    weights = zoo.han_attention(loaded)({"document_ids": x[:2]})
    assert tuple(weights["word_weights"].shape) == x[:2].shape
