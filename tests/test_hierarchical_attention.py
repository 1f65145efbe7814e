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


def paper_gru(cell):
    """The paper's GRU parameters (Yang et al. 2016, eq. 1-4) of a Keras GRU
    cell (`reset_after=True`; kernel columns in Keras' gate order z, r, h).

    Keras' update gate weighs the old state (h = z h_prev + (1 - z) h~), the
    paper's the new one, so the paper's z is 1 - Keras' z: W_z, U_z, b_z are
    Keras' negated. Keras' bias is (input, recurrent); the recurrent one of
    h~ sits inside the reset, r * (U_h h + c_h), a term the paper leaves out.
    """
    assert cell.reset_after
    K, R, (b_in, b_rec) = (to_numpy(w) for w in (cell.kernel,
                                                   cell.recurrent_kernel,
                                                   cell.bias))
    u = R.shape[0]
    z, r, h = (slice(i * u, (i + 1) * u) for i in range(3))
    return dict(W_z=-K[:, z], U_z=-R[:, z], b_z=-(b_in[z] + b_rec[z]),
                W_r=K[:, r], U_r=R[:, r], b_r=b_in[r] + b_rec[r],
                W_h=K[:, h], U_h=R[:, h], b_h=b_in[h], c_h=b_rec[h])


def np_gru(x, mask, p, backwards=False):
    """Yang et al. (2016), eq. 1-4, over each row of `x` (batch, T, d); a
    masked step leaves the state as it is. Returns h_t (batch, T, units)."""
    sigmoid = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731
    b, T, _ = x.shape
    out = np.zeros((b, T, p["U_z"].shape[0]))
    for i in range(b):
        h = np.zeros(p["U_z"].shape[0])
        for t in (reversed(range(T)) if backwards else range(T)):
            if mask[i, t]:
                z = sigmoid(x[i, t] @ p["W_z"] + h @ p["U_z"] + p["b_z"])  # eq. 2
                r = sigmoid(x[i, t] @ p["W_r"] + h @ p["U_r"] + p["b_r"])  # eq. 4
                h_new = np.tanh(x[i, t] @ p["W_h"]                         # eq. 3
                                + r * (h @ p["U_h"] + p["c_h"]) + p["b_h"])
                h = (1 - z) * h + z * h_new                                 # eq. 1
            out[i, t] = h
    return out


def np_bigru(x, mask, encoder):
    """h = [forward GRU; backward GRU] (eq. 5 and 8)."""
    return np.concatenate([
        np_gru(x, mask, paper_gru(encoder.forward_layer.cell)),
        np_gru(x, mask, paper_gru(encoder.backward_layer.cell), backwards=True),
    ], -1)


def np_han(x, mask, han):
    """Yang et al. (2016), eq. 1-10: word encoder and attention per
    sentence, sentence encoder and attention per document."""
    b, n, w, d = x.shape
    pool = lambda layer: [to_numpy(t) for t in (layer.W, layer.b, layer.u_w)]  # noqa: E731
    words = mask.reshape(b * n, w)
    h_it = np_bigru(x.reshape(b * n, w, d), words, han.word_encoder)  # eq. 5
    s_i, alpha_it = np_pool(h_it, *pool(han.word_attention), words)  # eq. 6-7
    sentences = mask.any(-1)
    h_i = np_bigru(s_i.reshape(b, n, -1), sentences, han.sentence_encoder)  # eq. 8
    v, alpha_i = np_pool(h_i, *pool(han.sentence_attention), sentences)  # eq. 9-10
    return v, alpha_it.reshape(b, n, w), alpha_i


def test_han_matches_numpy_equations():
    """The block against eq. 1-10 in NumPy with the layer's weights."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 5, 3)).astype("float32")
    # Words per sentence. Document 0 is shorter than document 1, which has
    # an empty sentence in the middle; document 2 is empty.
    mask = np.stack([lengths_mask(n, 5) for n in
                     ([2, 3, 0, 0], [4, 0, 5, 1], [0, 0, 0, 0])])
    han = HierarchicalAttention(word_units=3, sentence_units=2)
    han.build(x.shape)
    for encoder in (han.word_encoder, han.sentence_encoder):
        for cell in (encoder.forward_layer.cell, encoder.backward_layer.cell):
            cell.bias.assign(rng.standard_normal(cell.bias.shape).astype("float32"))
    for pooling in (han.word_attention, han.sentence_attention):
        pooling.b.assign(rng.standard_normal(pooling.b.shape).astype("float32"))
    v, w = han(x, mask=mask, return_attention_scores=True)
    ref_v, ref_word, ref_sentence = np_han(x, mask, han)
    assert np.abs(ref_v[:2]).min() > 0 and np.all(ref_v[2] == 0)
    np.testing.assert_allclose(to_numpy(w["word"]), ref_word, atol=1e-5)
    np.testing.assert_allclose(to_numpy(w["sentence"]), ref_sentence, atol=1e-5)
    np.testing.assert_allclose(to_numpy(v), ref_v, atol=1e-5)


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
