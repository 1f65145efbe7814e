import numpy as np
import pytest

from cases import lengths_mask, to_numpy
from kerattn.layers import LocalAttention


def np_local(h_t, h_s, mode, D, W_a, value_mask, W_p=None, v_p=None, start=0):
    """Luong et al. (2015), section 3.2, in NumPy, one (t, s) at a time.

    local-m: p_t = t; local-p: p_t = S sigmoid(v_p^T tanh(W_p h_t)).
    a_t(s) = softmax over the window [p_t - D, p_t + D] of h_t^T W_a h_s,
    times exp(-(s - p_t)^2 / (2 (D/2)^2)) for local-p. The paper leaves
    local-p's D = 0 open (sigma = D/2 = 0); the layer's documented choice:
    the window holds the source position nearest p_t, min(round(p_t), S-1),
    and sigma = 1/2.
    """
    b, tq, _ = h_t.shape
    tv = h_s.shape[1]
    out = np.zeros((b, tq, tv))
    for i in range(b):
        S = value_mask[i].sum()
        for t in range(tq):
            if mode == "monotonic":
                p = float(start + t)
            else:
                p = S / (1 + np.exp(-(np.tanh(h_t[i, t] @ W_p) @ v_p)))
            if mode == "predictive" and D == 0:
                window = [min(int(np.floor(p + 0.5)), S - 1)] if S else []
            else:
                window = [s for s in range(tv)
                          if abs(s - p) <= D and value_mask[i, s]]
            if not window:
                continue
            e = np.array([h_t[i, t] @ W_a @ h_s[i, s] for s in window])
            a = np.exp(e - e.max())
            a /= a.sum()
            if mode == "predictive":
                sigma = D / 2 if D else 0.5
                a *= np.exp(-((np.array(window) - p) ** 2) / (2 * sigma ** 2))
            out[i, t, window] = a
    return out


@pytest.mark.parametrize("mode", ["monotonic", "predictive"])
@pytest.mark.parametrize("D", [0, 2, 4])
def test_matches_numpy_equation(mode, D):
    rng = np.random.default_rng(D)
    h_t = rng.standard_normal((3, 6, 5)).astype("float32")
    h_s = rng.standard_normal((3, 11, 4)).astype("float32")
    v_mask = lengths_mask([11, 7, 3], 11)
    layer = LocalAttention(mode=mode, window=D, score="general")
    out, w = layer(h_t, h_s, value_mask=v_mask, return_attention_scores=True)
    params = dict(W_a=to_numpy(layer.W_a))
    if mode == "predictive":
        # Spread p_t over the sentence: larger position-network weights.
        layer.v_p.assign(to_numpy(layer.v_p) * 4)
        out, w = layer(h_t, h_s, value_mask=v_mask, return_attention_scores=True)
        params.update(W_p=to_numpy(layer.W_p), v_p=to_numpy(layer.v_p))
    ref = np_local(h_t, h_s, mode, D, value_mask=v_mask, **params)
    if mode == "predictive":
        # Every query sees a source position (D = 0 included: its nearest),
        # so a layer that returns zeros cannot pass.
        assert np.all((ref > 0).sum(-1) >= 1)
    np.testing.assert_allclose(to_numpy(w), ref, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref @ h_s, atol=1e-5)


def test_predictive_window_zero_holds_the_nearest_position():
    # p_t placed by hand: h_t = (x, 0), W_p = I, v_p = (5, 0), so
    # p_t = S sigmoid(5 tanh(x)); p_t past S - 1/2 takes the last position.
    lengths, targets = [3, 5], [[0.2, 0.7, 1.4, 2.6, 2.95], [0.2, 0.7, 1.4, 2.6, 4.8]]
    nearest = [[0, 1, 1, 2, 2], [0, 1, 1, 3, 4]]
    ratio = np.array(targets) / np.array(lengths)[:, None]
    x = np.arctanh(np.log(ratio / (1 - ratio)) / 5)
    h_t = np.stack([x, np.zeros_like(x)], -1).astype("float32")
    h_s = np.random.default_rng(10).standard_normal((2, 6, 2)).astype("float32")
    v_mask = lengths_mask(lengths, 6)
    layer = LocalAttention(mode="predictive", window=0, score="general")
    layer(h_t, h_s, value_mask=v_mask)
    layer.W_p.assign(np.eye(2, dtype="float32"))
    layer.v_p.assign(np.array([5.0, 0.0], "float32"))
    out, w = layer(h_t, h_s, value_mask=v_mask, return_attention_scores=True)
    w = to_numpy(w)
    assert np.all((w > 0).sum(-1) == 1)
    np.testing.assert_array_equal(w.argmax(-1), nearest)
    # One position: align = 1, times the Gaussian with sigma = 1/2.
    gauss = np.exp(-((np.array(nearest) - np.array(targets)) ** 2) / 0.5)
    np.testing.assert_allclose(w.max(-1), gauss, atol=1e-5)
    ref = np_local(h_t, h_s, "predictive", 0, to_numpy(layer.W_a), v_mask,
                   W_p=to_numpy(layer.W_p), v_p=to_numpy(layer.v_p))
    np.testing.assert_allclose(w, ref, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref @ h_s, atol=1e-5)


@pytest.mark.parametrize("mode", ["monotonic", "predictive"])
def test_zero_outside_window_and_on_padding(mode):
    rng = np.random.default_rng(7)
    h_t = rng.standard_normal((2, 8, 6)).astype("float32")
    h_s = rng.standard_normal((2, 40, 6)).astype("float32")
    v_mask = lengths_mask([40, 13], 40)
    layer = LocalAttention(mode=mode, window=3, score="dot")
    _, w = layer(h_t, h_s, value_mask=v_mask, return_attention_scores=True)
    w = to_numpy(w)
    assert np.all(w[1, :, 13:] == 0)
    assert np.all((w > 0).sum(-1) <= 2 * 3 + 1)
    if mode == "monotonic":
        for t in range(8):
            outside = np.abs(np.arange(40) - t) > 3
            assert np.all(w[:, t, outside] == 0)


def test_single_step_uses_query_start():
    rng = np.random.default_rng(8)
    h_t = rng.standard_normal((2, 5, 4)).astype("float32")
    h_s = rng.standard_normal((2, 12, 4)).astype("float32")
    layer = LocalAttention(mode="monotonic", window=2, score="concat")
    full, w_full = layer(h_t, h_s, return_attention_scores=True)
    for t in range(5):
        step, w_step = layer(h_t[:, t], h_s, query_start=t,
                             return_attention_scores=True)
        np.testing.assert_allclose(to_numpy(step), to_numpy(full)[:, t], atol=1e-5)
        np.testing.assert_allclose(to_numpy(w_step), to_numpy(w_full)[:, t],
                                   atol=1e-6)
    keys = layer.project_key(h_s)
    again = layer(h_t, h_s, projected_key=keys)
    np.testing.assert_allclose(to_numpy(again), to_numpy(full), atol=1e-6)


def test_empty_source_gives_zeros():
    rng = np.random.default_rng(9)
    h_t = rng.standard_normal((2, 3, 4)).astype("float32")
    h_s = rng.standard_normal((2, 6, 4)).astype("float32")
    layer = LocalAttention(mode="predictive", window=2, score="dot")
    out, w = layer(h_t, h_s, value_mask=lengths_mask([6, 0], 6),
                   return_attention_scores=True)
    out, w = to_numpy(out), to_numpy(w)
    assert np.all(out[1] == 0) and np.all(w[1] == 0)
    assert not np.isnan(out).any()


def test_bad_arguments():
    with pytest.raises(ValueError, match="`mode`"):
        LocalAttention(mode="global")
    with pytest.raises(ValueError, match="`window`"):
        LocalAttention(window=-1)
    with pytest.raises(ValueError, match="`score`"):
        LocalAttention(score="location")
    layer = LocalAttention(window=2)
    x = np.zeros((2, 3, 4), "float32")
    with pytest.raises(ValueError, match="`attention_mask` is not supported"):
        layer(x, x, attention_mask=np.ones((2, 3, 3), bool))
    with pytest.raises(ValueError, match="`value_mask` must have shape"):
        layer(x, x, value_mask=np.ones((2, 4), bool))
