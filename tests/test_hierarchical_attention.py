import keras
import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import AttentionPooling, HierarchicalAttention


def np_pool(h, W, b, u_w, mask=None):
    """Yang et al. (2016), eq. 5-7: u = tanh(W h + b); alpha = softmax(u^T u_w);
    s = sum alpha h."""
    alpha = np_masked_softmax(np.tanh(h @ W + b) @ u_w, mask)
    return (alpha[..., None] * h).sum(-2), alpha


def test_pooling_matches_numpy():
    rng = np.random.default_rng(0)
    h = rng.standard_normal((3, 7, 6)).astype("float32")
    mask = lengths_mask([7, 2, 0], 7)
    layer = AttentionPooling(units=5)
    layer(h)
    layer.b.assign(rng.standard_normal(5).astype("float32"))
    s, alpha = layer(h, mask=mask, return_attention_scores=True)
    ref_s, ref_alpha = np_pool(h, *(to_numpy(w) for w in (layer.W, layer.b,
                                                           layer.u_w)), mask)
    np.testing.assert_allclose(to_numpy(alpha), ref_alpha, atol=1e-5)
    np.testing.assert_allclose(to_numpy(s), ref_s, atol=1e-5)
    assert np.all(to_numpy(s)[2] == 0)  # an empty row pools to zeros


def _doc_batch(rng):
    # Document 0: 3 sentences (lengths 4, 2, 5); document 1: one sentence of
    # 3 words and an empty sentence in the middle; document 2: empty.
    ids = np.zeros((3, 4, 5), "int32")
    for (d, s), n in {(0, 0): 4, (0, 1): 2, (0, 2): 5, (1, 0): 3, (1, 2): 2}.items():
        ids[d, s, :n] = rng.integers(1, 30, n)
    return ids


def _han(word_units=4, sentence_units=3):
    ids = keras.Input((None, None), dtype="int32")
    x = keras.layers.Embedding(30, 6, mask_zero=True)(ids)
    v, weights = HierarchicalAttention(word_units, sentence_units)(
        x, return_attention_scores=True)
    return keras.Model(ids, [v, weights["word"], weights["sentence"]])


def test_han_padding_at_both_levels():
    rng = np.random.default_rng(1)
    ids = _doc_batch(rng)
    model = _han()
    v, word, sentence = (to_numpy(x) for x in model.predict(ids, verbose=0))
    assert v.shape == (3, 6) and word.shape == (3, 4, 5) and sentence.shape == (3, 4)
    assert not np.isnan(v).any()
    # Word weights: zero on padding, sum to 1 in each real sentence.
    np.testing.assert_array_equal(word[ids == 0], 0.0)
    real = (ids > 0).any(-1)
    np.testing.assert_allclose(word.sum(-1)[real], 1.0, atol=1e-5)
    np.testing.assert_array_equal(word.sum(-1)[~real], 0.0)
    # Sentence weights: zero on empty sentences, sum to 1 per document.
    np.testing.assert_array_equal(sentence[~real], 0.0)
    np.testing.assert_allclose(sentence.sum(-1)[:2], 1.0, atol=1e-5)
    # The empty document gives zeros.
    np.testing.assert_array_equal(v[2], 0.0)
    np.testing.assert_array_equal(sentence[2], 0.0)


def test_han_extra_padding_changes_nothing():
    rng = np.random.default_rng(2)
    ids = _doc_batch(rng)
    model = _han()
    v = to_numpy(model.predict(ids, verbose=0)[0])
    padded = np.zeros((3, 6, 8), "int32")
    padded[:, :4, :5] = ids
    v2 = to_numpy(model.predict(padded, verbose=0)[0])
    np.testing.assert_allclose(v2, v, atol=1e-5)


def test_han_matches_its_parts():
    """The block equals its encoders and poolings applied by hand."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4, 5)).astype("float32")
    mask = np.ones((2, 3, 4), bool)
    mask[0, 1, 2:] = False
    mask[1, 2] = False
    han = HierarchicalAttention(word_units=3, sentence_units=2)
    v, w = han(x, mask=mask, return_attention_scores=True)
    h_it = han.word_encoder(x.reshape(6, 4, 5), mask=mask.reshape(6, 4))
    s_i, a_it = han.word_attention(h_it, mask=mask.reshape(6, 4),
                                   return_attention_scores=True)
    sent_mask = mask.any(-1)
    h_i = han.sentence_encoder(keras.ops.reshape(s_i, (2, 3, 6)), mask=sent_mask)
    ref_v, ref_a = np_pool(
        to_numpy(h_i), *(to_numpy(t) for t in (
            han.sentence_attention.W, han.sentence_attention.b,
            han.sentence_attention.u_w)), sent_mask)
    np.testing.assert_allclose(to_numpy(v), ref_v, atol=1e-5)
    np.testing.assert_allclose(to_numpy(w["sentence"]), ref_a, atol=1e-5)
    np.testing.assert_allclose(to_numpy(w["word"]),
                               to_numpy(a_it).reshape(2, 3, 4), atol=1e-6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="`units`"):
        AttentionPooling(units=0)
    with pytest.raises(ValueError, match="`word_units`"):
        HierarchicalAttention(word_units=-1)
    with pytest.raises(ValueError, match="`inputs` must have rank 4"):
        HierarchicalAttention()(np.zeros((2, 3, 4), "float32"))
    with pytest.raises(ValueError, match="`inputs` must have rank 3"):
        AttentionPooling(3)(np.zeros((2, 3), "float32"))
    with pytest.raises(ValueError, match="`mask` must have shape"):
        AttentionPooling(3)(np.zeros((2, 3, 4), "float32"),
                            mask=np.ones((2, 4), bool))
