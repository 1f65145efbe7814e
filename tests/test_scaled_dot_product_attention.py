import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import ScaledDotProductAttention


def np_sdpa(Q, K, V, mask=None):
    """Vaswani et al. (2017), eq. 1: softmax(Q K^T / sqrt(d_k)) V."""
    w = np_masked_softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), mask)
    return w @ V, w


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scores", [False, True])
def test_self_attention_matches_numpy(causal, scores):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 6, 8)).astype("float32")
    mask = lengths_mask([6, 4, 1], 6)
    layer = ScaledDotProductAttention(causal=causal)
    result = layer(
        x, x, query_mask=mask, value_mask=mask, return_attention_scores=scores
    )
    full = mask[:, :, None] & mask[:, None, :]
    if causal:
        full = full & np.tril(np.ones((6, 6), bool))[None]
    ref_out, ref_w = np_sdpa(x, x, x, full)
    out = result[0] if scores else result
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)
    if scores:
        np.testing.assert_allclose(to_numpy(result[1]), ref_w, atol=1e-5)


def test_cross_attention_separate_key_value():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 3, 8)).astype("float32")
    k = rng.standard_normal((2, 9, 8)).astype("float32")
    v = rng.standard_normal((2, 9, 5)).astype("float32")
    v_mask = lengths_mask([9, 4], 9)
    layer = ScaledDotProductAttention()
    out, w = layer(q, v, key=k, value_mask=v_mask, return_attention_scores=True)
    ref_out, ref_w = np_sdpa(q, k, v, v_mask[:, None, :])
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)
    np.testing.assert_allclose(to_numpy(w), ref_w, atol=1e-5)
    fused = layer(q, v, key=k, value_mask=v_mask)  # Dk != Dv: explicit path
    np.testing.assert_allclose(to_numpy(fused), ref_out, atol=1e-5)


def test_fused_path_equals_explicit_path():
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 4, 8)).astype("float32")
    v = rng.standard_normal((2, 10, 8)).astype("float32")
    v_mask = lengths_mask([10, 0], 10)  # second example has no key at all
    layer = ScaledDotProductAttention(causal=True)
    fused = to_numpy(layer(q, v, value_mask=v_mask))
    explicit, w = layer(q, v, value_mask=v_mask, return_attention_scores=True)
    np.testing.assert_allclose(fused, to_numpy(explicit), atol=1e-5)
    assert np.all(fused[1] == 0) and not np.isnan(fused).any()
    # Causal with Tq < Tv is aligned at the end: query i sees j <= i + 6.
    assert np.all(to_numpy(w)[0][np.triu(np.ones((4, 10), bool), k=7)] == 0)
    assert np.all(to_numpy(w)[0, -1] > 0)


def test_single_decoder_step_sees_whole_cache():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 8)).astype("float32")
    cache = rng.standard_normal((2, 5, 8)).astype("float32")
    layer = ScaledDotProductAttention(causal=True)
    out, w = layer(q, cache, return_attention_scores=True)
    ref_out, ref_w = np_sdpa(q[:, None], cache, cache)
    np.testing.assert_allclose(to_numpy(out), ref_out[:, 0], atol=1e-5)
    np.testing.assert_allclose(to_numpy(w), ref_w[:, 0], atol=1e-5)


def test_custom_scale():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 8)).astype("float32")
    out = ScaledDotProductAttention(scale=0.1)(x, x)
    w = np_masked_softmax(x @ np.swapaxes(x, 1, 2) * 0.1)
    np.testing.assert_allclose(to_numpy(out), w @ x, atol=1e-5)
