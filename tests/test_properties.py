"""Property-based tests (hypothesis) of every attention layer, on each backend.

Every example runs one layer on each shape of a small fixed set (one
position alone, more queries than values, more values than queries) with
random values and random padding masks (all-masked rows and, for HAN, whole
empty documents included), in each dtype (float32, float16, bfloat16). JAX
compiles each eager op once per shape: with a few fixed shapes the layers
share their compiles, where a new shape per example compiled every op again.
For every example and shape: weights >= 0; summing to 1 over the unmasked
positions (0 for a row with nothing to attend to; local-p's Gaussian window
makes its sum <= 1 instead, eq. 10 of Luong et al.); exactly 0 on padding;
no NaN or Inf; and the output inside the convex hull of the values (it
equals the weights times the values, checked in NumPy, for the layers that
return a weighted sum).
`derandomize=True`: the same examples on every run, so CI is reproducible.
"""

import keras
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cases import to_numpy
from kerattn import layers

EXAMPLES = 4  # per layer and dtype; tests/README.md says so
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
DTYPES = ["float32", "float16", "bfloat16"]
TOL = {"float32": 1e-5, "float16": 2e-2, "bfloat16": 4e-2}


# (batch, queries, values): every example draws values and masks for each.
# One position alone; more queries than values (local-m's windows past the
# end); more values than queries, at the longest length local attention and
# Luong's location scores (max_length=6) take.
SHAPES = [(1, 1, 1), (2, 4, 3), (3, 2, 6)]
# (batch, sentences, words) for HAN, the same way.
HAN_SHAPES = [(1, 1, 1), (2, 3, 2), (3, 2, 4)]
DIM = 4


@st.composite
def problem(draw, batch, tq, tv):
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    mask = rng.random((batch, tv)) < draw(st.sampled_from([0.5, 0.8, 1.0]))
    if draw(st.booleans()):
        mask[0] = False  # a row with nothing to attend to
    scale = draw(st.sampled_from([0.1, 1.0, 5.0]))
    q = (rng.standard_normal((batch, tq, DIM)) * scale).astype("float32")
    v = (rng.standard_normal((batch, tv, DIM)) * scale).astype("float32")
    return q, v, mask


def problems():
    """One (queries, values, value mask) per shape of `SHAPES`."""
    return st.tuples(*(problem(*shape) for shape in SHAPES))


def _np(x):
    return to_numpy(keras.ops.cast(x, "float32")).astype("float64")


def _check_weights(w, mask, dtype, sums_to_one=True):
    """`w` (B, [H,] Tq, Tv) against the value mask (B, Tv)."""
    tol = TOL[dtype]
    assert np.all(np.isfinite(w))
    assert np.all(w >= -tol)
    m = mask[:, None, :] if w.ndim == 3 else mask[:, None, None, :]
    assert np.all(np.where(m, 0.0, w) == 0.0), "weight on padding"
    sums = w.sum(-1)
    has_any = m.any(-1)
    assert np.all(np.where(has_any, True, sums == 0.0)), "empty row not zero"
    if sums_to_one:
        np.testing.assert_allclose(sums[np.broadcast_to(has_any, sums.shape)], 1.0,
                                   atol=tol * 4)
    else:
        assert np.all(sums <= 1.0 + tol * 4)


def _check_output(out, w, v, mask, dtype):
    """out = w @ v, and inside the hull of the unmasked values."""
    tol = TOL[dtype] * (1 + np.abs(v).max())
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, np.einsum("bqk,bkd->bqd", w, v), atol=tol * 4)
    for b in range(v.shape[0]):
        if not mask[b].any():
            assert np.all(out[b] == 0.0)
            continue
        low, high = v[b][mask[b]].min(0), v[b][mask[b]].max(0)
        # A weighted sum whose weights sum to <= 1 (local-p) lies in the hull
        # of the values and 0: widen the box to include 0.
        low, high = np.minimum(low, 0.0), np.maximum(high, 0.0)
        assert np.all(out[b] >= low - tol * 4) and np.all(out[b] <= high + tol * 4)


SINGLE = {
    "bahdanau": (lambda d: layers.BahdanauAttention(5, dtype=d), True),
    "luong_dot": (lambda d: layers.LuongAttention("dot", dtype=d), True),
    "luong_general": (lambda d: layers.LuongAttention("general", dtype=d), True),
    "luong_concat": (lambda d: layers.LuongAttention("concat", units=5, dtype=d), True),
    "luong_location": (lambda d: layers.LuongAttention("location", max_length=6, dtype=d),
                       True),
    "scaled_dot_product": (lambda d: layers.ScaledDotProductAttention(dtype=d), True),
    "local_m": (lambda d: layers.LocalAttention("monotonic", 1, dtype=d), False),
    "local_p": (lambda d: layers.LocalAttention("predictive", 1, dtype=d), False),
    "soft_visual": (lambda d: layers.SoftVisualAttention(5, gating=False, dtype=d), True),
    "hard_visual": (lambda d: layers.HardVisualAttention(5, gating=False, seed=0, dtype=d),
                    True),
}


def _cast(x, dtype):
    return keras.ops.cast(x, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_head_attention(name, dtype):
    make, sums_to_one = SINGLE[name]

    @SETTINGS
    @given(problems())
    def check(drawn):
        layer = make(dtype)
        for q, v, mask in drawn:
            out, w = layer(_cast(q, dtype), _cast(v, dtype), value_mask=mask,
                           return_attention_scores=True)
            w, out = _np(w), _np(out)
            vv = _np(_cast(v, dtype))
            _check_weights(w, mask, dtype, sums_to_one)
            # local-m's window may hold only padding while the row has
            # tokens: it then sums to 0, as the paper's restricted softmax
            # gives.
            _check_output(out, w, vv, mask, dtype)

    check()


@pytest.mark.parametrize("dtype", DTYPES)
def test_multi_head_attention(dtype):
    @SETTINGS
    @given(problems())
    def check(drawn):
        layer = layers.MultiHeadAttention(2, 3, dtype=dtype)
        for q, v, mask in drawn:
            out, w = layer(_cast(q, dtype), _cast(v, dtype), value_mask=mask,
                           return_attention_scores=True)
            _check_weights(_np(w), mask, dtype)
            assert np.all(np.isfinite(_np(out)))

    check()


@pytest.mark.parametrize("dtype", DTYPES)
def test_restricted_self_attention(dtype):
    # One window per shape (it sets the shape of the gathered keys, so it is
    # not drawn): wider than a row of one; the diagonal alone on a row of 3;
    # a band narrower than a row of 6.
    @SETTINGS
    @given(problems())
    def check(drawn):
        for window, (_, v, mask) in zip((2, 0, 2), drawn, strict=True):
            layer = layers.RestrictedSelfAttention(window, num_heads=2, dtype=dtype)
            out, w = layer(_cast(v, dtype), mask=mask, return_attention_scores=True)
            w = _np(w)  # (B, H, n, n): query rows that are padding may attend too
            assert np.all(np.isfinite(w)) and np.all(w >= -TOL[dtype])
            keys = np.broadcast_to(mask[:, None, None, :], w.shape)
            assert np.all(np.where(keys, 0.0, w) == 0.0)
            n = v.shape[1]
            band = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]) <= window
            assert np.all(np.where(band, 0.0, w) == 0.0), "weight outside the window"
            sums = w.sum(-1)
            reachable = (keys & band).any(-1)
            query = np.broadcast_to(mask[:, None, :], sums.shape)  # padded queries: 0
            np.testing.assert_allclose(sums[reachable & query], 1.0,
                                       atol=TOL[dtype] * 4)
            assert np.all(sums[~reachable | ~query] == 0.0)
            assert np.all(np.isfinite(_np(out)))

    check()


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_pooling(dtype):
    @SETTINGS
    @given(problems())
    def check(drawn):
        layer = layers.AttentionPooling(5, dtype=dtype)
        for _, v, mask in drawn:
            pooled, alpha = layer(_cast(v, dtype), mask=mask,
                                  return_attention_scores=True)
            alpha, pooled = _np(alpha)[:, None, :], _np(pooled)[:, None, :]
            _check_weights(alpha, mask, dtype)
            _check_output(pooled, alpha, _np(_cast(v, dtype)), mask, dtype)

    check()


@pytest.mark.parametrize("dtype", DTYPES)
def test_hierarchical_attention(dtype):
    """Word weights per sentence, sentence weights per document; empty
    sentences and whole empty documents get zeros, never NaN."""
    policy = "float32" if dtype == "float32" else f"mixed_{dtype}"
    draws = st.tuples(st.integers(0, 2**16), st.booleans())

    @SETTINGS
    @given(st.tuples(*(draws for _ in HAN_SHAPES)))
    def check(draws):
        layer = layers.HierarchicalAttention(3, 2, dtype=policy)
        for (batch, sentences, words), (seed, empty_document) in zip(HAN_SHAPES, draws,
                                                                     strict=True):
            rng = np.random.default_rng(seed)
            x = rng.standard_normal((batch, sentences, words, DIM)).astype("float32")
            mask = rng.random((batch, sentences, words)) < 0.7
            if empty_document:
                mask[0] = False
            v, weights = layer(_cast(x, dtype), mask=mask, return_attention_scores=True)
            assert np.all(np.isfinite(_np(v)))
            word, sentence = _np(weights["word"]), _np(weights["sentence"])
            _check_weights(word.reshape(batch * sentences, 1, words),
                           mask.reshape(batch * sentences, words), dtype)
            _check_weights(sentence[:, None, :], mask.any(-1), dtype)

    check()


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_over_attention(dtype):
    @SETTINGS
    @given(problems(), st.integers(0, 2**16))
    def check(drawn, seed):
        layer = layers.AttentionOverAttention(dtype=dtype)
        rng = np.random.default_rng(seed)
        for q, d, d_mask in drawn:
            q_mask = rng.random(q.shape[:2]) < 0.8
            s, weights = layer(_cast(d, dtype), _cast(q, dtype), document_mask=d_mask,
                               query_mask=q_mask, return_attention_scores=True)
            s = _np(s)
            empty = ~d_mask.any(-1) | ~q_mask.any(-1)
            _check_weights(s[:, None, :], d_mask & ~empty[:, None], dtype)

    check()


@pytest.mark.parametrize("dtype", DTYPES)
def test_multi_step_attention(dtype):
    @SETTINGS
    @given(problems())
    def check(drawn):
        layer = layers.MultiStepAttention(dtype=dtype)
        for q, v, mask in drawn:
            out, w = layer(_cast(q, dtype), _cast(q, dtype), _cast(v, dtype),
                           _cast(v, dtype), source_mask=mask,
                           return_attention_scores=True)
            _check_weights(_np(w), mask, dtype)
            assert np.all(np.isfinite(_np(out)))

    check()
