import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import RestrictedSelfAttention


def np_restricted(x, p, r, causal, mask):
    """Vaswani et al. (2017), Table 1 "restricted": multi-head attention where
    position i sees j with |i - j| <= r (j <= i as well when causal)."""
    n = x.shape[1]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    band = np.abs(i - j) <= r
    if causal:
        band &= j <= i
    full = band[None] & mask[:, None, :] & mask[:, :, None]
    q = np.einsum("btd,dhk->bhtk", x, p["Wq"]) + p["bq"][:, None]
    k = np.einsum("btd,dhk->bhtk", x, p["Wk"]) + p["bk"][:, None]
    v = np.einsum("btd,dhk->bhtk", x, p["Wv"]) + p["bv"][:, None]
    w = np_masked_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]),
                          full[:, None])
    out = np.einsum("bhtk,hko->bto", w @ v, p["Wo"]) + p["bo"]
    return out * mask[:, :, None], w


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("r", [0, 1, 3])
def test_matches_numpy_equation(causal, r):
    rng = np.random.default_rng(r)
    x = rng.standard_normal((3, 9, 8)).astype("float32")
    mask = lengths_mask([9, 6, 1], 9)
    layer = RestrictedSelfAttention(window=r, num_heads=2, causal=causal)
    layer(x)
    for w in layer.weights:
        w.assign(rng.standard_normal(w.shape).astype("float32") * 0.5)
    out, w = layer(x, mask=mask, return_attention_scores=True)
    names = ["Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo"]
    p = dict(zip(names, (to_numpy(v) for v in layer.weights), strict=True))
    ref_out, ref_w = np_restricted(x, p, r, causal, mask)
    np.testing.assert_allclose(to_numpy(w), ref_w, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)
    plain = layer(x, mask=mask)
    np.testing.assert_allclose(to_numpy(plain), ref_out, atol=1e-5)


def test_causal_output_ignores_future():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 12, 4)).astype("float32")
    layer = RestrictedSelfAttention(window=3, causal=True)
    base = to_numpy(layer(x))
    x2 = x.copy()
    x2[:, 7:] += 5.0
    changed = to_numpy(layer(x2))
    np.testing.assert_allclose(changed[:, :7], base[:, :7], atol=1e-6)
    assert np.abs(changed[:, 7:] - base[:, 7:]).max() > 1e-3


def test_long_sequence_runs_without_quadratic_matrix():
    # 4096 positions with r = 8: an n x n float32 matrix per head would be
    # 64 MiB; the windowed layer holds n * (2r + 1) scores. Shapes only here,
    # the linear growth is measured in benchmarks/.
    x = np.random.default_rng(6).standard_normal((1, 4096, 8)).astype("float32")
    out = RestrictedSelfAttention(window=8, num_heads=2)(x)
    assert tuple(out.shape) == (1, 4096, 8)
    assert np.isfinite(to_numpy(out)).all()


def test_bad_arguments():
    with pytest.raises(ValueError, match="`window`"):
        RestrictedSelfAttention(window=-2)
    with pytest.raises(ValueError, match="`num_heads`"):
        RestrictedSelfAttention(window=2, num_heads=0)
    with pytest.raises(ValueError, match="`inputs` must have rank 3"):
        RestrictedSelfAttention(window=2)(np.zeros((2, 4), "float32"))
    with pytest.raises(ValueError, match=r"`num_heads` must be <= the input size 4.*received 8"):
        RestrictedSelfAttention(window=2, num_heads=8)(np.zeros((1, 4, 4), "float32"))
    with pytest.raises(ValueError, match="`mask` must have shape"):
        RestrictedSelfAttention(window=2)(np.zeros((1, 4, 4), "float32"),
                                          mask=np.ones((1, 5), bool))
