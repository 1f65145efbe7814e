import keras
import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import MultiHeadAttention


def np_multi_head(Q, K, V, p, mask=None):
    """Vaswani et al. (2017), section 3.2.2, in NumPy.

    head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_k)) V W_i^V;
    MultiHead = Concat(head_1..head_h) W^O.
    """
    q = np.einsum("btd,dhk->bhtk", Q, p["Wq"]) + p["bq"][:, None]
    k = np.einsum("btd,dhk->bhtk", K, p["Wk"]) + p["bk"][:, None]
    v = np.einsum("btd,dhk->bhtk", V, p["Wv"]) + p["bv"][:, None]
    e = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    w = np_masked_softmax(e, None if mask is None else mask[:, None])
    heads = w @ v  # (b, h, Tq, dv)
    out = np.einsum("bhtk,hko->bto", heads, p["Wo"]) + p["bo"]
    return out, w


def params_of(layer):
    names = ["Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo"]
    return dict(zip(names, (to_numpy(w) for w in layer.weights), strict=True))


@pytest.mark.parametrize("causal", [False, True])
def test_matches_numpy_equation(causal):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 6, 10)).astype("float32")
    mask = lengths_mask([6, 3, 5], 6)
    layer = MultiHeadAttention(num_heads=2, key_dim=4, value_dim=3, causal=causal)
    layer(x, x)
    for w in layer.weights:  # non-zero biases
        w.assign(rng.standard_normal(w.shape).astype("float32") * 0.5)
    out, w = layer(
        x, x, query_mask=mask, value_mask=mask, return_attention_scores=True
    )
    full = mask[:, :, None] & mask[:, None, :]
    if causal:
        full = full & np.tril(np.ones((6, 6), bool))[None]
    ref_out, ref_w = np_multi_head(x, x, x, params_of(layer), full)
    ref_out = ref_out * mask[:, :, None]  # padded query rows are zero
    np.testing.assert_allclose(to_numpy(w), ref_w, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)
    fused = layer(x, x, query_mask=mask, value_mask=mask)
    np.testing.assert_allclose(to_numpy(fused), ref_out, atol=1e-5)


def _copied_pair(rng, query, value, num_heads=3, key_dim=4):
    theirs = keras.layers.MultiHeadAttention(num_heads=num_heads, key_dim=key_dim)
    ours = MultiHeadAttention(num_heads=num_heads, key_dim=key_dim)
    theirs(query, value)
    ours(query, value)
    weights = [
        rng.standard_normal(w.shape).astype("float32") * 0.5
        for w in theirs.get_weights()
    ]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    return ours, theirs


@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_parity_with_keras(causal):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 7, 12)).astype("float32")
    mask = lengths_mask([7, 4, 2], 7)
    ours, theirs = _copied_pair(rng, x, x)
    ours.causal = causal
    out, w = ours(
        x, x, query_mask=mask, value_mask=mask, return_attention_scores=True
    )
    ref_out, ref_w = theirs(
        x,
        x,
        query_mask=mask,
        value_mask=mask,
        use_causal_mask=causal,
        return_attention_scores=True,
    )
    # Keras keeps outputs (a softmax over nothing) on padded query rows;
    # kerattn gives them zeros. Real rows must agree.
    np.testing.assert_allclose(
        to_numpy(out)[mask], to_numpy(ref_out)[mask], atol=1e-5
    )
    w, ref_w = np.moveaxis(to_numpy(w), 1, 2), np.moveaxis(to_numpy(ref_w), 1, 2)
    np.testing.assert_allclose(w[mask], ref_w[mask], atol=1e-5)
    assert np.all(to_numpy(out)[~mask] == 0)


def test_cross_attention_parity_with_keras():
    rng = np.random.default_rng(2)
    q = rng.standard_normal((3, 4, 12)).astype("float32")
    v = rng.standard_normal((3, 9, 8)).astype("float32")
    v_mask = lengths_mask([9, 5, 1], 9)
    ours, theirs = _copied_pair(rng, q, v, num_heads=2, key_dim=5)
    out, w = ours(q, v, value_mask=v_mask, return_attention_scores=True)
    ref_out, ref_w = theirs(q, v, value_mask=v_mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(out), to_numpy(ref_out), atol=1e-5)
    np.testing.assert_allclose(to_numpy(w), to_numpy(ref_w), atol=1e-5)
    fused = ours(q, v, value_mask=v_mask)
    np.testing.assert_allclose(to_numpy(fused), to_numpy(ref_out), atol=1e-5)


def test_single_step_equals_last_row_of_causal_self_attention():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 8)).astype("float32")
    layer = MultiHeadAttention(num_heads=2, key_dim=4, causal=True)
    full, w_full = layer(x, x, return_attention_scores=True)
    step, w_step = layer(x[:, -1], x, return_attention_scores=True)
    assert tuple(step.shape) == (2, 8) and tuple(w_step.shape) == (2, 2, 5)
    np.testing.assert_allclose(to_numpy(step), to_numpy(full)[:, -1], atol=1e-5)
    np.testing.assert_allclose(
        to_numpy(w_step), to_numpy(w_full)[:, :, -1], atol=1e-5
    )


def test_output_dim_and_no_bias():
    rng = np.random.default_rng(4)
    q = rng.standard_normal((2, 3, 6)).astype("float32")
    layer = MultiHeadAttention(num_heads=2, key_dim=4, output_dim=7, use_bias=False)
    assert tuple(layer(q, q).shape) == (2, 3, 7)
    assert len(layer.weights) == 4
