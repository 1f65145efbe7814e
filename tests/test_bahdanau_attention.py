import keras
import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import BahdanauAttention


def np_bahdanau(s, h, W_a, U_a, v_a, mask=None, g=None, b=None):
    """Bahdanau et al. (2014), eq. 6 / appendix A.1.2, in NumPy.

    e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j); alpha = softmax_j(e);
    c_i = sum_j alpha_ij h_j.
    """
    hidden = (s @ W_a)[:, :, None, :] + (h @ U_a)[:, None, :, :]
    if b is not None:  # weight-normalised variant
        hidden = hidden + b
        v_a = g * v_a / np.sqrt(np.sum(v_a**2))
    e = np.tanh(hidden) @ v_a  # (batch, Tq, Tv)
    alpha = np_masked_softmax(e, mask)
    return alpha @ h, alpha


@pytest.mark.parametrize("normalize", [False, True])
def test_matches_numpy_equation(normalize):
    rng = np.random.default_rng(0)
    s = rng.standard_normal((3, 4, 6)).astype("float32")
    h = rng.standard_normal((3, 7, 5)).astype("float32")
    value_mask = lengths_mask([7, 3, 5], 7)
    layer = BahdanauAttention(units=8, normalize=normalize)
    out, w = layer(s, h, value_mask=value_mask, return_attention_scores=True)
    if normalize:
        # Move g and b away from their initial values.
        layer.g.assign(0.7)
        layer.b.assign(rng.standard_normal(8).astype("float32"))
        out, w = layer(s, h, value_mask=value_mask, return_attention_scores=True)
    params = dict(
        W_a=to_numpy(layer.W_a), U_a=to_numpy(layer.U_a), v_a=to_numpy(layer.v_a)
    )
    if normalize:
        params.update(g=to_numpy(layer.g), b=to_numpy(layer.b))
    ref_out, ref_w = np_bahdanau(s, h, mask=value_mask[:, None, :], **params)
    np.testing.assert_allclose(to_numpy(w), ref_w, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)


def test_single_step_and_precomputed_keys():
    rng = np.random.default_rng(1)
    s_prev = rng.standard_normal((2, 6)).astype("float32")
    h = rng.standard_normal((2, 5, 4)).astype("float32")
    layer = BahdanauAttention(units=3)
    out, w = layer(s_prev, h, return_attention_scores=True)
    assert tuple(out.shape) == (2, 4) and tuple(w.shape) == (2, 5)
    keys = layer.project_key(h)  # U_a h_j, once per source
    out2, w2 = layer(s_prev, h, projected_key=keys, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(out2), to_numpy(out), atol=1e-6)
    ref_out, ref_w = np_bahdanau(
        s_prev[:, None],
        h,
        to_numpy(layer.W_a),
        to_numpy(layer.U_a),
        to_numpy(layer.v_a),
    )
    np.testing.assert_allclose(to_numpy(w), ref_w[:, 0], atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out[:, 0], atol=1e-5)


def test_separate_key_and_value():
    rng = np.random.default_rng(2)
    s = rng.standard_normal((2, 3, 6)).astype("float32")
    k = rng.standard_normal((2, 5, 4)).astype("float32")
    v = rng.standard_normal((2, 5, 9)).astype("float32")
    layer = BahdanauAttention(units=3)
    out, w = layer(s, v, key=k, return_attention_scores=True)
    hidden = (s @ to_numpy(layer.W_a))[:, :, None] + (k @ to_numpy(layer.U_a))[
        :, None
    ]
    ref_w = np_masked_softmax(np.tanh(hidden) @ to_numpy(layer.v_a))
    np.testing.assert_allclose(to_numpy(w), ref_w, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_w @ v, atol=1e-5)


def test_parity_with_keras_additive_attention():
    """Where the two coincide: Keras' AdditiveAttention has no W_a / U_a.

    With query = s W_a, key = h U_a and its `use_scale` vector = v_a, Keras'
    score sum(scale * tanh(q + k)) is Bahdanau's v_a^T tanh(W_a s + U_a h).
    Differences: kerattn projects the query and key itself (so their sizes
    may differ), has the weight-normalised variant, and zeroes the weights
    of masked query rows.
    """
    rng = np.random.default_rng(3)
    s = rng.standard_normal((3, 4, 6)).astype("float32")
    h = rng.standard_normal((3, 7, 5)).astype("float32")
    q_mask = lengths_mask([4, 2, 3], 4)
    v_mask = lengths_mask([7, 3, 5], 7)
    ours = BahdanauAttention(units=8)
    out, w = ours(
        s, h, query_mask=q_mask, value_mask=v_mask, return_attention_scores=True
    )
    W_a, U_a, v_a = (to_numpy(x) for x in (ours.W_a, ours.U_a, ours.v_a))
    theirs = keras.layers.AdditiveAttention(use_scale=True)
    q, k = s @ W_a, h @ U_a
    theirs([q, h, k])
    theirs.scale.assign(v_a)
    ref_out, ref_w = theirs(
        [q, h, k], mask=[q_mask, v_mask], return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(out), to_numpy(ref_out), atol=1e-5)
    valid = q_mask  # Keras keeps a softmax on padded query rows; we zero them.
    np.testing.assert_allclose(
        to_numpy(w)[valid], to_numpy(ref_w)[valid], atol=1e-5
    )
    assert np.all(to_numpy(w)[~valid] == 0)
