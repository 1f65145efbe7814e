"""self_attentive_classifier: the builder, its loss against NumPy, masks,
the recipe's measures of the hops, real data."""

import os

import keras
import numpy as np
import pytest

from cases import to_numpy
from kerattn import zoo
from kerattn.datasets import build_word_vocabulary, encode_documents, read_jsonl, \
    tokenize_document
from kerattn.recipes import classification

DATA = os.path.join(os.path.dirname(__file__), "data")


def _ids():
    # The longest row is not first; row 2 is all padding.
    ids = np.array([[5, 6, 7, 0, 0, 0],
                    [8, 9, 10, 11, 12, 13],
                    [0, 0, 0, 0, 0, 0],
                    [14, 15, 0, 0, 0, 0]], "int32")
    return ids


def test_padding_gets_no_weight_and_an_empty_row_gives_the_prior():
    keras.utils.set_random_seed(0)
    model = zoo.self_attentive_classifier(20, 3, preset="tiny", hops=3)
    ids = _ids()
    out = zoo.self_attentive_attention(model).predict({"token_ids": ids}, verbose=0)
    a = out["weights"]                                     # (4, 3, 6)
    assert a.shape == (4, 3, 6)
    np.testing.assert_array_equal(a[0, :, 3:], 0.0)
    np.testing.assert_array_equal(a[3, :, 2:], 0.0)
    np.testing.assert_allclose(a[[0, 1, 3]].sum(-1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(a[2], 0.0)               # no word, no weight
    p = out["probabilities"]
    assert np.all(np.isfinite(p))
    # M = 0 for the empty row: its class probabilities are what the hidden
    # and output layers give a zero vector.
    hidden, classifier = model.get_layer("hidden"), model.get_layer("classifier")
    w_h, b_h = (to_numpy(w) for w in hidden.weights)
    w_c, b_c = (to_numpy(w) for w in classifier.weights)
    logits = np.maximum(b_h, 0.0) @ w_c + b_c
    prior = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(p[2], prior, atol=1e-5)
    np.testing.assert_allclose(to_numpy(model.predict({"token_ids": ids}, verbose=0)),
                               p, atol=1e-6)


def test_the_loss_is_crossentropy_plus_the_penalty_of_eq_8():
    """`evaluate`'s loss = the class cross-entropy + penalty * mean over the
    sentences with a word of ||A A^T - I||_F^2, A read from the model and
    the penalty computed in NumPy (`classification.hop_overlap`, eq. 8)."""
    keras.utils.set_random_seed(1)
    model = zoo.self_attentive_classifier(20, 3, preset="tiny", hops=3, penalty=0.7)
    model.compile("adam", "sparse_categorical_crossentropy")
    ids = _ids()
    y = np.array([0, 2, 1, 1], "int32")
    out = zoo.self_attentive_attention(model).predict({"token_ids": ids}, verbose=0)
    p, a = out["probabilities"], out["weights"]
    crossentropy = -np.mean(np.log(p[np.arange(4), y]))
    penalty = classification.hop_overlap(a)["penalty"]   # rounded to 4 places
    a64 = a[[0, 1, 3]].astype("float64")
    exact = np.mean(((a64 @ a64.transpose(0, 2, 1) - np.eye(3)) ** 2).sum((1, 2)))
    assert abs(exact - penalty) < 1e-4
    loss = model.evaluate({"token_ids": ids}, y, batch_size=4, verbose=0)
    np.testing.assert_allclose(loss, crossentropy + 0.7 * exact, rtol=1e-4)
    off = zoo.self_attentive_classifier(20, 3, preset="tiny", hops=3, penalty=0.0)
    off.set_weights(model.get_weights())
    off.compile("adam", "sparse_categorical_crossentropy")
    np.testing.assert_allclose(off.evaluate({"token_ids": ids}, y, batch_size=4,
                                            verbose=0), crossentropy, rtol=1e-4)


def test_hop_overlap_and_flatten():
    same = np.tile(np.array([[0.2, 0.3, 0.5]]), (2, 2, 1))      # two identical hops
    assert classification.hop_overlap(same)["overlap"] == 1.0
    apart = np.array([[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]])
    assert classification.hop_overlap(apart) == {"overlap": 0.0, "penalty": 0.0}
    empty = np.concatenate([apart, np.zeros((1, 2, 3))])        # left out
    assert classification.hop_overlap(empty) == {"overlap": 0.0, "penalty": 0.0}
    docs = np.array([[[3, 4, 0], [0, 0, 0], [5, 0, 0]],
                     [[6, 7, 8], [9, 10, 11], [12, 0, 0]]])
    np.testing.assert_array_equal(classification.flatten(docs, 5),
                                  [[3, 4, 5, 0, 0], [6, 7, 8, 9, 10]])


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="`hops`"):
        zoo.self_attentive_classifier(20, 3, preset="tiny", hops=0)
    with pytest.raises(ValueError, match="`penalty`"):
        zoo.self_attentive_classifier(20, 3, preset="tiny", penalty=-1.0)
    with pytest.raises(ValueError, match="`model`"):
        classification.build({"vocab": [0] * 9, "labels": [0, 1]}, "tiny",
                             model="bahdanau_nmt")
    # `fit` names it before it reads any data.
    with pytest.raises(ValueError, match="`model`.*han_classifier"):
        classification.fit(os.path.join(DATA, "no_such_file.jsonl"),
                           model="bahdanau_nmt")


def test_overfits_a_tiny_real_slice_and_round_trip(tmp_path):
    texts, labels = read_jsonl(os.path.join(DATA, "topical10_sample.jsonl"))
    names = sorted(set(labels))
    docs = [tokenize_document(t) for t in texts]
    vocab = build_word_vocabulary(docs)
    x = classification.flatten(encode_documents(docs, vocab, 6, 30), 60)
    y = np.array([names.index(label) for label in labels], "int32")
    keras.utils.set_random_seed(0)
    model = zoo.self_attentive_classifier(len(vocab), len(names), preset="tiny",
                                          embedding_dim=16, lstm_units=8, hops=4,
                                          hidden_units=32)
    model.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit({"token_ids": x}, y, batch_size=16, epochs=25, verbose=0)
    predicted = np.argmax(to_numpy(model.predict({"token_ids": x}, verbose=0)), -1)
    assert np.mean(predicted == y) >= 0.95
    path = os.path.join(tmp_path, "sa.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(to_numpy(loaded({"token_ids": x[:5]})),
                               to_numpy(model({"token_ids": x[:5]})), atol=1e-5)
    rows = zoo.self_attentive_attention(loaded)({"token_ids": x[:2]})["weights"]
    assert tuple(rows.shape) == (2, 4, 60)
