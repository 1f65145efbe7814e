import keras
import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import LuongAttention


def np_luong_scores(score, h_t, h_s, params):
    """Luong et al. (2015), section 3.1, in NumPy.

    dot:      h_t^T h_s
    general:  h_t^T W_a h_s
    concat:   v_a^T tanh(W_a [h_t; h_s])
    location: a_t = softmax(W_a h_t) (one logit per source position)
    """
    if score == "dot":
        return np.einsum("bqd,bkd->bqk", h_t, h_s)
    if score == "general":
        W_a = params["W_a"]  # (query_dim, key_dim)
        return np.einsum("bqi,ij,bkj->bqk", h_t, W_a, h_s)
    if score == "concat":
        W_a, v_a = params["W_a"], params["v_a"]  # (dq + dk, units), (units,)
        tq, tv = h_t.shape[1], h_s.shape[1]
        pairs = np.concatenate(
            [
                np.repeat(h_t[:, :, None], tv, axis=2),
                np.repeat(h_s[:, None], tq, axis=1),
            ],
            axis=-1,
        )  # [h_t; h_s] for every (t, s)
        return np.tanh(pairs @ W_a) @ v_a
    if score == "location":
        return (h_t @ params["W_a"])[:, :, : h_s.shape[1]]
    raise AssertionError(score)


@pytest.mark.parametrize("score", ["dot", "general", "concat", "location"])
@pytest.mark.parametrize("scale", [False, True])
def test_matches_numpy_equation(score, scale):
    rng = np.random.default_rng(0)
    dq = 4 if score == "dot" else 6
    h_t = rng.standard_normal((3, 5, dq)).astype("float32")
    h_s = rng.standard_normal((3, 7, 4)).astype("float32")
    q_mask = lengths_mask([5, 5, 2], 5)
    v_mask = lengths_mask([7, 2, 4], 7)
    kwargs = {"max_length": 10} if score == "location" else {}
    if score == "concat":
        kwargs["units"] = 3
    layer = LuongAttention(score=score, scale=scale, **kwargs)
    layer(h_t, h_s)
    if scale:
        layer.scale_factor.assign(1.7)
    out, w = layer(
        h_t, h_s, query_mask=q_mask, value_mask=v_mask, return_attention_scores=True
    )
    params = {
        name: to_numpy(getattr(layer, name))
        for name in ("W_a", "v_a")
        if hasattr(layer, name)
    }
    e = np_luong_scores(score, h_t, h_s, params) * (1.7 if scale else 1.0)
    ref_w = np_masked_softmax(e, q_mask[:, :, None] & v_mask[:, None, :])
    np.testing.assert_allclose(to_numpy(w), ref_w, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_w @ h_s, atol=1e-5)


@pytest.mark.parametrize("score", ["general", "concat"])
def test_precomputed_keys_single_step(score):
    rng = np.random.default_rng(1)
    h_t = rng.standard_normal((2, 6)).astype("float32")
    h_s = rng.standard_normal((2, 5, 4)).astype("float32")
    layer = LuongAttention(score=score)
    out = layer(h_t, h_s)
    keys = layer.project_key(h_s)
    out2 = layer(h_t, h_s, projected_key=keys)
    np.testing.assert_allclose(to_numpy(out2), to_numpy(out), atol=1e-6)
    params = {
        name: to_numpy(getattr(layer, name))
        for name in ("W_a", "v_a")
        if hasattr(layer, name)
    }
    ref_w = np_masked_softmax(np_luong_scores(score, h_t[:, None], h_s, params))
    np.testing.assert_allclose(to_numpy(out), (ref_w @ h_s)[:, 0], atol=1e-5)


def test_location_cut_to_source_length():
    rng = np.random.default_rng(2)
    h_t = rng.standard_normal((2, 3, 4)).astype("float32")
    layer = LuongAttention(score="location", max_length=12)
    for tv in (4, 9, 12):
        h_s = rng.standard_normal((2, tv, 4)).astype("float32")
        _, w = layer(h_t, h_s, return_attention_scores=True)
        assert tuple(w.shape) == (2, 3, tv)
        ref = np_masked_softmax((h_t @ to_numpy(layer.W_a))[:, :, :tv])
        np.testing.assert_allclose(to_numpy(w), ref, atol=1e-5)


@pytest.mark.parametrize("scale", [False, True])
def test_dot_parity_with_keras_attention(scale):
    """LuongAttention("dot") is keras.layers.Attention (use_scale too)."""
    rng = np.random.default_rng(3)
    h_t = rng.standard_normal((3, 5, 4)).astype("float32")
    h_s = rng.standard_normal((3, 7, 4)).astype("float32")
    q_mask = lengths_mask([5, 3, 1], 5)
    v_mask = lengths_mask([7, 2, 6], 7)
    ours = LuongAttention("dot", scale=scale)
    theirs = keras.layers.Attention(use_scale=scale)
    ours(h_t, h_s)
    theirs([h_t, h_s])
    if scale:
        ours.scale_factor.assign(0.6)
        theirs.scale.assign(0.6)
    out, w = ours(
        h_t, h_s, query_mask=q_mask, value_mask=v_mask, return_attention_scores=True
    )
    ref_out, ref_w = theirs(
        [h_t, h_s], mask=[q_mask, v_mask], return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(out), to_numpy(ref_out), atol=1e-5)
    np.testing.assert_allclose(
        to_numpy(w)[q_mask], to_numpy(ref_w)[q_mask], atol=1e-5
    )
