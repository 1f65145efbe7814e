import keras
import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy
from kerattn.layers import GLUConvBlock, MultiStepAttention

HALF = np.sqrt(0.5)


def np_multi_step(h, g, z, e, p, mask, scale):
    """Gehring et al. (2017), section 3.3 (+ the scaling of section 3.4).

    d_i = W_d h_i + b_d + g_i; a_ij = softmax_j(d_i . z_j);
    c_i = sum_j a_ij (z_j + e_j); output h_i + W_o c_i + b_o.
    """
    d = h @ p["Wd"] + p["bd"] + g
    if scale:
        d = d * HALF
    a = np_masked_softmax(np.einsum("bte,bse->bts", d, z), mask[:, None])
    c = a @ (z + e)
    if scale:
        c = c * np.sqrt(mask.sum(-1))[:, None, None]  # m * sqrt(1/m)
    out = h + c @ p["Wo"] + p["bo"]
    return (out * HALF if scale else out), a


@pytest.mark.parametrize("scale", [True, False])
def test_multi_step_matches_numpy(scale):
    rng = np.random.default_rng(0)
    h = rng.standard_normal((2, 5, 7)).astype("float32")
    g = rng.standard_normal((2, 5, 4)).astype("float32")
    z = rng.standard_normal((2, 6, 4)).astype("float32")
    e = rng.standard_normal((2, 6, 4)).astype("float32")
    mask = lengths_mask([6, 3], 6)
    layer = MultiStepAttention(scale=scale)
    layer(h, g, z, e)
    for w in layer.weights:
        w.assign(rng.standard_normal(w.shape).astype("float32") * 0.3)
    out, a = layer(h, g, z, e, source_mask=mask, return_attention_scores=True)
    p = dict(zip(["Wd", "bd", "Wo", "bo"], (to_numpy(w) for w in layer.weights),
                 strict=True))
    ref_out, ref_a = np_multi_step(h, g, z, e, p, mask, scale)
    np.testing.assert_allclose(to_numpy(a), ref_a, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-4)
    step = layer(h[:, 2], g[:, 2], z, e, source_mask=mask)
    np.testing.assert_allclose(to_numpy(step), ref_out[:, 2], atol=1e-4)


def np_glu_block(x, kernel, bias, k, causal, proj=None):
    """h = (A * sigmoid(B) + x) sqrt(0.5), [A B] = conv(x) (Gehring et al.)."""
    n, d2 = x.shape[1], kernel.shape[-1]
    left = k - 1 if causal else k // 2
    padded = np.pad(x, ((0, 0), (left, k - 1 - left), (0, 0)))
    y = np.stack([np.einsum("bkc,kco->bo", padded[:, i:i + k], kernel)
                  for i in range(n)], 1) + bias
    a, b = y[..., : d2 // 2], y[..., d2 // 2:]
    residual = x if proj is None else x @ proj[0] + proj[1]
    return (a / (1 + np.exp(-b)) * 1.0 + residual) * HALF


@pytest.mark.parametrize("causal", [False, True])
def test_glu_block_matches_numpy(causal):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 8, 5)).astype("float32")
    block = GLUConvBlock(6, kernel_size=3, causal=causal)
    out = to_numpy(block(x))
    w = [to_numpy(v) for v in block.weights]
    kernel, bias, proj = w[0], w[1], (w[2], w[3])
    ref = np_glu_block(x, kernel, bias, 3, causal, proj)
    np.testing.assert_allclose(out, ref, atol=1e-5)


def test_causal_decoder_has_no_leakage():
    """Changing a future target position changes no earlier output."""
    rng = np.random.default_rng(2)
    g_in = keras.Input((None, 4))
    z_in = keras.Input((None, 4))
    e_in = keras.Input((None, 4))
    h = g_in
    for i in range(3):
        h = GLUConvBlock(4, kernel_size=3, causal=True)(h)
        h = MultiStepAttention()(h, g_in, z_in, e_in)
    model = keras.Model([g_in, z_in, e_in], h)
    g = rng.standard_normal((1, 10, 4)).astype("float32")
    z = rng.standard_normal((1, 6, 4)).astype("float32")
    e = rng.standard_normal((1, 6, 4)).astype("float32")
    base = to_numpy(model.predict([g, z, e], verbose=0))
    for t in (3, 7):
        g2 = g.copy()
        g2[:, t] += 3.0
        out = to_numpy(model.predict([g2, z, e], verbose=0))
        np.testing.assert_allclose(out[:, :t], base[:, :t], atol=1e-6)
        assert np.abs(out[:, t] - base[:, t]).max() > 1e-4


def test_padding_is_zeroed_in_blocks():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 4)).astype("float32")
    mask = lengths_mask([6, 3], 6)
    block = GLUConvBlock(4, kernel_size=3)
    out = to_numpy(block(x, mask=mask))
    assert np.all(out[1, 3:] == 0)
    x2 = x.copy()
    x2[1, 3:] = 50.0  # padding content must not leak into real positions
    np.testing.assert_allclose(to_numpy(block(x2, mask=mask)), out, atol=1e-6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="`kernel_size` must be odd"):
        GLUConvBlock(4, kernel_size=4)
    with pytest.raises(ValueError, match="`filters`"):
        GLUConvBlock(0)
    x = np.zeros((2, 5, 4), "float32")
    with pytest.raises(ValueError, match="embedding size"):
        MultiStepAttention()(x, x, np.zeros((2, 6, 3), "float32"),
                             np.zeros((2, 6, 3), "float32"))
    with pytest.raises(ValueError, match="`source_mask` must have shape"):
        MultiStepAttention()(x, x, x, x, source_mask=np.ones((2, 4), bool))
    with pytest.raises(ValueError, match="`encoder_outputs` must have rank 3"):
        MultiStepAttention()(x, x, np.zeros((2, 4), "float32"), x)
