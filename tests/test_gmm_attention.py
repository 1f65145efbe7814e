"""GMM attention against NumPy written from the papers: Graves (2013),
section 5.1, eq. 46-51 (the soft window: `phi(t, u) = sum_k alpha_k
exp(-beta_k (kappa_k - u)^2)`, `kappa_t = kappa_{t-1} + exp(kappa^)`,
positions `u = 1 .. U`), and Battenberg et al. (2020), section 2.1's table
of variants (normalised mixtures, softmax weights, softplus offsets and
widths); the layer alone on several queries, inside `AttentionRNN` (full
pass, step by step, the first target row shortest), padding, 2,000
positions under `mixed_bfloat16`, a `.keras` round trip and beam search
carrying the means (the bad arguments are in test_bad_input_suite.py)."""

import math

import numpy as np
import pytest

from cases import (check_keras_round_trip, check_long_padded_pass,
                   check_steps_equal_pass, lengths_mask,
                   to_numpy)
from kerattn.layers import AttentionRNN, GMMAttention
from test_attention_rnn import np_gru


def _f32(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype("float32")


def softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_parameters(s, weights, variant, units):
    """The network (eq. 48 without a hidden layer; Battenberg's MLP with
    one) and the table: `(w, offset, sigma)` `(b, K)` each, float64."""
    x = s.astype("float64")
    if units is not None:
        W, b1, V, b2 = weights
        x = np.tanh(x @ W + b1)
    else:
        V, b2 = weights
    raw = x @ V + b2
    K = raw.shape[-1] // 3
    w_hat, d_hat, o_hat = raw[..., :K], raw[..., K:2 * K], raw[..., 2 * K:]
    if variant == "v0":                 # Graves: alpha, exp offsets, beta
        return np.exp(w_hat), np.exp(d_hat), np.sqrt(np.exp(-o_hat) / 2)
    if variant.startswith("v1"):
        return np_softmax(w_hat), np.exp(d_hat), np.sqrt(np.exp(o_hat))
    return np_softmax(w_hat), softplus(d_hat), softplus(o_hat)


def np_window(w, kappa, sigma, variant, length):
    """phi(u) at u = 1 .. length: Graves' unnormalised bumps for v0,
    otherwise the normalised Gaussian densities of the mixture."""
    u = np.arange(1, length + 1)[None, :, None]
    if variant == "v0":
        beta = 1.0 / (2.0 * sigma ** 2)         # = exp(beta^), eq. 50
        return (w[:, None] * np.exp(-beta[:, None] * (kappa[:, None] - u) ** 2)).sum(-1)
    density = np.exp(-(u - kappa[:, None]) ** 2 / (2 * sigma[:, None] ** 2)) / (
        np.sqrt(2 * np.pi) * sigma[:, None])
    return (w[:, None] * density).sum(-1)


def layer_weights(attention):
    names = (["hidden_kernel", "hidden_bias"] if attention.units else []) + [
        "output_kernel", "output_bias"]
    return [to_numpy(getattr(attention, n)).astype("float64") for n in names]


def np_steps(queries, h, mask, q_mask, weights, variant, units, mean0=None):
    """Several queries in turn, each moving the means (a padded query does
    not move them and attends nowhere)."""
    b, T, _ = queries.shape
    kappa = np.zeros((b, weights[-1].shape[0] // 3)) if mean0 is None else mean0
    alphas, means = [], []
    for t in range(T):
        w, offset, sigma = np_parameters(queries[:, t], weights, variant, units)
        kappa = kappa + np.where(q_mask[:, t:t + 1], offset, 0.0)   # eq. 51
        phi = np.where(mask, np_window(w, kappa, sigma, variant, h.shape[1]), 0.0)
        alphas.append(np.where(q_mask[:, t:t + 1], phi, 0.0))
        means.append(kappa)
    alpha = np.stack(alphas, 1)
    return np.einsum("bts,bsd->btd", alpha, h), alpha, np.stack(means, 1)


@pytest.mark.parametrize("variant,units", [
    ("v0", None), ("v1", 6), ("v1b", 6), ("v2", None), ("v2b", 6)])
def test_layer_matches_numpy(variant, units):
    """Three queries per row, the means from `initial_mean`, query and
    source padding (the first row not the longest), a fully padded row."""
    rng = np.random.default_rng(0)
    b, T, S, dq, dv, K = 4, 3, 9, 5, 4, 3
    s, h = _f32(rng, b, T, dq, scale=0.5), _f32(rng, b, S, dv)
    mask = lengths_mask([6, 9, 4, 0], S)
    q_mask = lengths_mask([2, 3, 3, 3], T)
    mean0 = rng.uniform(0, 2, (b, K)).astype("float32")
    attention = GMMAttention(K, units=units, variant=variant)
    attention(s, h)
    attention.output_bias.assign(to_numpy(attention.output_bias)
                                 + _f32(rng, 3 * K, scale=0.3))
    if units:
        attention.hidden_bias.assign(_f32(rng, units, scale=0.3))
    context, alpha, mean = attention(s, h, value_mask=mask, query_mask=q_mask,
                                     initial_mean=mean0, return_attention_scores=True,
                                     return_mean=True)
    ref_context, ref_alpha, ref_mean = np_steps(
        s, h, mask, q_mask, layer_weights(attention),
        variant, units, mean0.astype("float64"))
    np.testing.assert_allclose(to_numpy(alpha), ref_alpha, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(to_numpy(context), ref_context, atol=1e-5, rtol=1e-5)
    real = np.broadcast_to(q_mask[:, :, None], ref_mean.shape)
    np.testing.assert_allclose(to_numpy(mean)[real], ref_mean[real], atol=1e-5, rtol=1e-5)
    assert np.all(to_numpy(alpha)[3] == 0) and np.all(to_numpy(context)[3] == 0)


def test_the_b_variants_start_where_they_say():
    """Before training (zero kernels), "v1b" and "v2b" move every bump
    `initial_offset` positions a step, `initial_scale` wide; the defaults
    are softplus(1) and softplus(10)."""
    for variant in ("v1b", "v2b"):
        attention = GMMAttention(2, units=None, variant=variant,
                                 kernel_initializer="zeros", initial_offset=0.7,
                                 initial_scale=3.0)
        attention(np.zeros((1, 1, 3), "float32"), np.zeros((1, 5, 2), "float32"))
        w, offset, sigma = (to_numpy(x) for x in attention.mixture_parameters(
            np.zeros((1, 1, 3), "float32")))
        np.testing.assert_allclose(offset, 0.7, rtol=1e-5)
        np.testing.assert_allclose(sigma, 3.0, rtol=1e-5)
        np.testing.assert_allclose(w, 0.5, rtol=1e-6)
    default = GMMAttention(1, units=None, kernel_initializer="zeros")
    default(np.zeros((1, 1, 3), "float32"), np.zeros((1, 5, 2), "float32"))
    _, offset, sigma = (to_numpy(x) for x in default.mixture_parameters(
        np.zeros((1, 1, 3), "float32")))
    np.testing.assert_allclose([offset.item(), sigma.item()],
                               [softplus(1.0), softplus(10.0)], rtol=1e-5)


def np_gmm_decoder(y, h, mem_mask, t_mask, units, gru, weights, variant, att_units):
    """A Bahdanau-order GRU decoder (query s_{i-1}) carrying the means; a
    padded target step keeps every state and outputs zeros."""
    b, T, _ = y.shape
    s = np.zeros((b, units))
    kappa = np.zeros((b, weights[-1].shape[0] // 3))
    outs, alphas = [], []
    for t in range(T):
        real = t_mask[:, t:t + 1]
        w, offset, sigma = np_parameters(s, weights, variant, att_units)
        moved = kappa + offset
        alpha = np.where(mem_mask, np_window(w, moved, sigma, variant, h.shape[1]), 0.0)
        context = np.einsum("bs,bsd->bd", alpha, h)
        new = np_gru(np.concatenate([y[:, t], context], -1), s, *gru)
        outs.append(np.where(real, np.concatenate([s, context], -1), 0.0))
        alphas.append(np.where(real, alpha, 0.0))
        s = np.where(real, new, s)
        kappa = np.where(real, moved, kappa)
    return np.stack(outs, 1), np.stack(alphas, 1), kappa


def test_decoder_matches_numpy_and_steps():
    """`AttentionRNN` with GMM attention (v2b) against the NumPy decoder, the
    first target row shortest, source padding; the final state's means;
    `step()` equals the full pass on every real step."""
    rng = np.random.default_rng(1)
    b, T, S, units = 3, 5, 8, 8
    y, h = _f32(rng, b, T, 4), _f32(rng, b, S, 6)
    lengths = [2, 5, 4]
    t_mask, mem_mask = lengths_mask(lengths, T), lengths_mask([5, 8, 3], S)
    decoder = AttentionRNN(units, GMMAttention(2, units=5), cell="gru",
                           order="bahdanau", return_state=True)
    decoder(y, h)
    attention, cell = decoder.attention, decoder.cell.rnn_cells[0]
    cell.bias.assign(_f32(rng, *cell.bias.shape))
    attention.hidden_bias.assign(_f32(rng, 5, scale=0.3))
    out, final, al = decoder(y, h, inputs_mask=t_mask, memory_mask=mem_mask,
                             return_attention_scores=True)
    gru = [to_numpy(v) for v in (cell.kernel, cell.recurrent_kernel, cell.bias)]
    ref_out, ref_al, kappa = np_gmm_decoder(
        y, h, mem_mask, t_mask, units, gru, layer_weights(attention), "v2b", 5)
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)
    np.testing.assert_allclose(to_numpy(final["attention"]["mean"]), kappa, atol=1e-5)
    check_steps_equal_pass(decoder, y, h, mem_mask, ref_out, ref_al, t_mask)


def test_long_padded_sources_under_mixed_bfloat16():
    """2,000 positions, a fully padded row, the bfloat16 policy: finite,
    padding 0, the empty row zeros, and the means (float32) past 1,000
    exact enough to place the bump: a mean moved to 1,500.5 puts its
    weight on positions 1,500 and 1,501 (j = 1 .. S)."""
    rng = np.random.default_rng(2)
    S = 2000
    attention = GMMAttention(1, units=None, variant="v2b", initial_scale=0.5,
                             kernel_initializer="zeros", dtype="mixed_bfloat16")
    mask = lengths_mask([1800, 2000, 0], S)
    query = _f32(rng, 3, 4)
    # Zero kernels: every step moves by `initial_offset` exactly.
    mean0 = np.full((3, 1), 1500.5 - attention.initial_offset, "float32")
    context, alpha = attention(query, _f32(rng, 3, S, 6), value_mask=mask,
                               initial_mean=mean0, return_attention_scores=True)
    alpha = to_numpy(alpha).astype("float32")
    assert np.all(np.isfinite(alpha)) and np.all(np.isfinite(to_numpy(context).astype("float32")))
    assert np.all(alpha[~mask] == 0) and np.all(alpha[2] == 0)
    top = np.argsort(alpha[0])[-2:] + 1      # positions j, counted from 1
    assert sorted(top.tolist()) == [1500, 1501]
    check_long_padded_pass(AttentionRNN(8, GMMAttention(2, units=4), cell="gru",
                                        dtype="mixed_bfloat16"), sums_to_one=False)


def test_keras_file_round_trip(tmp_path):
    config = check_keras_round_trip(
        AttentionRNN(6, GMMAttention(2, units=4, variant="v1b", initial_offset=0.8)),
        str(tmp_path / "model.keras"))
    assert config["variant"] == "v1b" and math.isclose(config["initial_offset"], 0.8)
