"""Dynamic convolution attention against NumPy written from Battenberg et
al. (2020), section 2.2: static filters `F * a_{i-1}`, dynamic filters
`G(s_i) = V_G tanh(W_G s_i + b_G)` convolved with `a_{i-1}`, the causal
beta-binomial prior `log(P * a_{i-1})`, `e = v^T tanh(U f + T g + b) + p`,
a softmax; the layer alone, inside `AttentionRNN` (full pass, step by step,
the first target row shortest), 2,000 positions under `mixed_bfloat16`,
a `.keras` round trip (the bad arguments are in
test_bad_input_suite.py)."""

import math

import keras
import numpy as np

from cases import (check_keras_round_trip, check_long_padded_pass,
                   check_steps_equal_pass, lengths_mask,
                   np_masked_softmax, to_numpy)
from kerattn.layers import AttentionRNN, DynamicConvolutionAttention
from kerattn.layers.dynamic_convolution_attention import beta_binomial
from test_attention_rnn import np_gru


def _f32(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype("float32")


def np_beta_binomial(n, a, b):
    """C(n, k) B(k + a, n - k + b) / B(a, b), B from the gamma function."""
    beta = lambda x, y: math.gamma(x) * math.gamma(y) / math.gamma(x + y)  # noqa: E731
    return np.array([math.comb(n, k) * beta(k + a, n - k + b) / beta(a, b)
                     for k in range(n + 1)])


def np_conv_centered(a, filters):
    """sum_m F_m a_{j + m - (r - 1)/2}, zeros outside: a (S,), F (r, k) -> (S, k)."""
    r = filters.shape[0]
    padded = np.pad(a, (r // 2, r // 2))
    return np.stack([padded[j:j + r] @ filters for j in range(len(a))])


def np_dca(s, a_prev, mask, w, prior):
    """One row: query s (dq,), a_{i-1} (S,), mask (S,) -> alpha (S,)."""
    f = np_conv_centered(a_prev, w["F"])                          # (S, k_s)
    G = (np.tanh(s @ w["W_G"] + w["b_G"]) @ w["V_G"]).reshape(w["k_d"], -1)
    g = np_conv_centered(a_prev, G.T)                             # (S, k_d)
    n = len(prior) - 1
    moved = np.array([sum(prior[k] * a_prev[j - k] for k in range(n + 1) if j - k >= 0)
                      for j in range(len(a_prev))])               # causal P * a
    p = np.log(np.maximum(moved, 1e-6))
    e = np.tanh(f @ w["U"] + g @ w["T"] + w["b"]) @ w["v"] + p
    return np_masked_softmax(e, mask)


def dca_weights(att):
    names = {"F": "static_kernel", "W_G": "dynamic_hidden_kernel",
             "b_G": "dynamic_hidden_bias", "V_G": "dynamic_kernel",
             "U": "static_projection", "T": "dynamic_projection", "b": "b", "v": "v"}
    w = {k: to_numpy(getattr(att, n)).astype("float64") for k, n in names.items()}
    w["k_d"] = att.dynamic_filters
    return w


def test_prior_is_the_papers_beta_binomial():
    """11 taps with (0.1, 0.9): the values the paper's filter has (0.74 to
    stay, then a slowly falling tail), against the gamma-function formula."""
    got = np.array(beta_binomial(11, 0.1, 0.9))
    np.testing.assert_allclose(got, np_beta_binomial(10, 0.1, 0.9), rtol=1e-10)
    np.testing.assert_allclose(got[:3], [0.740, 0.075, 0.042], atol=1e-3)
    assert abs(got.sum() - 1.0) < 1e-12


def _randomized(rng, att):
    att.b.assign(_f32(rng, att.units, scale=0.5))
    att.dynamic_hidden_bias.assign(_f32(rng, att.units, scale=0.5))


def test_layer_matches_numpy():
    """Two queries per row, each from its own history (garbage on padding,
    which must not reach the filters or the prior), the first row not the
    longest, a fully padded row; and the default history, one-hot at the
    first position."""
    rng = np.random.default_rng(0)
    b, T, S, dq, dv = 4, 2, 12, 5, 3
    att = DynamicConvolutionAttention(6, static_filters=3, static_width=5,
                                      dynamic_filters=2, dynamic_width=3,
                                      prior_length=4, prior_alpha=0.3, prior_beta=0.9)
    s, h = _f32(rng, b, T, dq), _f32(rng, b, S, dv)
    att(s, h)
    _randomized(rng, att)
    mask = lengths_mask([9, 12, 5, 0], S)
    history = rng.dirichlet(np.ones(S), (b, T)).astype("float32")
    dirty = np.where(mask[:, None], history, 3.0).astype("float32")
    context, alpha = att(s, h, value_mask=mask, alignment_history=dirty,
                         return_attention_scores=True)
    w, prior = dca_weights(att), np_beta_binomial(3, 0.3, 0.9)
    clean = np.where(mask[:, None], history, 0.0).astype("float64")
    ref = np.array([[np_dca(s[i, t], clean[i, t], mask[i], w, prior) for t in range(T)]
                    for i in range(b)])
    np.testing.assert_allclose(to_numpy(alpha), ref, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), np.einsum("bts,bsd->btd", ref, h),
                               atol=1e-5)
    assert np.all(to_numpy(alpha)[3] == 0) and np.all(to_numpy(context)[3] == 0)
    _, first = att(s[:, 0], h, value_mask=mask, return_attention_scores=True)
    one_hot = np.eye(S)[[0, 0, 0, 0]] * mask.any(-1, keepdims=True)
    ref = np.array([np_dca(s[i, 0], one_hot[i], mask[i], w, prior) for i in range(b)])
    np.testing.assert_allclose(to_numpy(first), ref, atol=1e-5)


def test_decoder_matches_numpy_and_steps():
    """`AttentionRNN` (Bahdanau order, GRU) against a NumPy loop that carries
    `a_{i-1}` (one-hot at first), the first target row shortest; `step()`
    equals the full pass on every real step."""
    rng = np.random.default_rng(1)
    b, T, S, units = 3, 5, 9, 8
    y, h = _f32(rng, b, T, 4), _f32(rng, b, S, 6)
    lengths = [2, 5, 4]
    t_mask, mem_mask = lengths_mask(lengths, T), lengths_mask([6, 9, 4], S)
    att = DynamicConvolutionAttention(5, static_filters=2, static_width=3,
                                      dynamic_filters=2, dynamic_width=5)
    decoder = AttentionRNN(units, att, cell="gru", order="bahdanau", return_state=True)
    decoder(y, h)
    _randomized(rng, att)
    cell = decoder.cell.rnn_cells[0]
    cell.bias.assign(_f32(rng, *cell.bias.shape))
    out, final, al = decoder(y, h, inputs_mask=t_mask, memory_mask=mem_mask,
                             return_attention_scores=True)
    gru = [to_numpy(v) for v in (cell.kernel, cell.recurrent_kernel, cell.bias)]
    w, prior = dca_weights(att), np_beta_binomial(10, 0.1, 0.9)
    state = np.zeros((b, units))
    prev = np.eye(S)[[0] * b]
    ref_out, ref_al = np.zeros((b, T, units + 6)), np.zeros((b, T, S))
    for t in range(T):
        alpha = np.array([np_dca(state[i], prev[i], mem_mask[i], w, prior)
                          for i in range(b)])
        context = np.einsum("bs,bsd->bd", alpha, h)
        new = np_gru(np.concatenate([y[:, t], context], -1), state, *gru)
        real = t_mask[:, t:t + 1]
        ref_out[:, t] = np.where(real, np.concatenate([state, context], -1), 0.0)
        ref_al[:, t] = np.where(real, alpha, 0.0)
        state, prev = np.where(real, new, state), np.where(real, alpha, prev)
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)
    np.testing.assert_allclose(to_numpy(final["attention"]["alignment"]), prev, atol=1e-5)
    check_steps_equal_pass(decoder, y, h, mem_mask, ref_out, ref_al, t_mask)


def test_long_padded_sources_under_mixed_bfloat16():
    """2,000 positions, a fully padded row, the bfloat16 policy (the shared
    check); the state stays float32 through the steps."""
    _, _, final = check_long_padded_pass(AttentionRNN(
        8, DynamicConvolutionAttention(8), cell="gru", dtype="mixed_bfloat16",
        return_state=True))
    assert keras.backend.standardize_dtype(final["attention"]["alignment"].dtype) == "float32"


def test_keras_file_round_trip(tmp_path):
    check_keras_round_trip(AttentionRNN(6, DynamicConvolutionAttention(
        4, static_filters=2, static_width=3, dynamic_filters=2, dynamic_width=3,
        prior_length=5, prior_alpha=0.2)), str(tmp_path / "model.keras"))
