"""Stepwise monotonic attention against NumPy written from He, Deng and He
(2019), section 3, eq. 8 (`a_ij = a_{i-1,j} p_ij + a_{i-1,j-1} (1 -
p_{i,j-1})`) on Raffel et al.'s (2017) energy (eq. 16: `g v^T / ||v||
tanh(W s + V h + b) + r`): the alignment alone, the layer in both modes,
inside `AttentionRNN` (full pass, steps, the first target row shortest),
2,000 positions under `mixed_bfloat16`, a `.keras` round trip (the bad
arguments are in test_bad_input_suite.py)."""

import numpy as np
import pytest

from cases import (check_keras_round_trip, check_long_padded_pass, lengths_mask,
                   to_numpy)
from kerattn.layers import AttentionRNN, StepwiseMonotonicAttention, stepwise_alignment
from test_attention_rnn import np_gru


def _f32(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype("float32")


def np_stepwise(p, previous, length):
    """Eq. 8 on one row's first `length` positions, position by position;
    the last real one keeps its mass (p = 1 there); padding 0."""
    a = np.zeros_like(previous, dtype="float64")
    for j in range(length):
        stay = 1.0 if j == length - 1 else p[j]
        a[j] += previous[j] * stay
        if j + 1 < length:
            a[j + 1] += previous[j] * (1.0 - stay)
    return a


def np_energy(s, h, att):
    """Raffel et al. eq. 16 with the layer's weights."""
    en = att.energy
    W, V, v, b, g = (to_numpy(x).astype("float64") for x in (en.W_a, en.U_a, en.v_a,
                                                              en.b, en.g))
    r = float(to_numpy(att.score_bias))
    return np.tanh((s @ W)[:, None] + h @ V + b) @ (g * v / np.linalg.norm(v)) + r


def test_alignment_matches_numpy():
    rng = np.random.default_rng(0)
    b, S = 4, 7
    lengths = [5, 7, 1, 0]
    mask = lengths_mask(lengths, S)
    p = rng.uniform(0, 1, (b, S)).astype("float32")
    previous = rng.dirichlet(np.ones(S), b).astype("float32") * mask
    got = to_numpy(stepwise_alignment(p, previous, mask))
    for i in range(b):
        np.testing.assert_allclose(got[i], np_stepwise(p[i], previous[i], lengths[i]),
                                   atol=1e-6)
    np.testing.assert_allclose(got[:3].sum(-1), previous[:3].sum(-1), atol=1e-6)
    assert np.all(got[~mask] == 0)


@pytest.mark.parametrize("mode", ["parallel", "hard"])
def test_layer_matches_numpy(mode):
    """Two queries, each from its own a_{i-1} (one-hot in hard mode), the
    first row not the longest, a fully padded row."""
    rng = np.random.default_rng(1)
    b, T, S, dq, dv = 4, 2, 8, 5, 3
    att = StepwiseMonotonicAttention(6)
    s, h = _f32(rng, b, T, dq), _f32(rng, b, S, dv)
    att(s, h)
    att.energy.b.assign(_f32(rng, 6, scale=0.5))
    lengths = [6, 8, 3, 0]
    mask = lengths_mask(lengths, S)
    if mode == "hard":
        previous = np.eye(S)[rng.integers(0, 3, (b, T))].astype("float32")
    else:
        previous = rng.dirichlet(np.ones(S), (b, T)).astype("float32")
    previous = previous * mask[:, None]
    context, alpha = att(s, h, value_mask=mask, alignment_history=previous,
                         mode=mode, return_attention_scores=True)
    ref = np.zeros((b, T, S))
    for t in range(T):
        e = np_energy(s[:, t], h, att)
        p = (e >= 0).astype("float64") if mode == "hard" else 1 / (1 + np.exp(-e))
        for i in range(b):
            ref[i, t] = np_stepwise(p[i], previous[i, t], lengths[i])
    np.testing.assert_allclose(to_numpy(alpha), ref, atol=1e-5)
    np.testing.assert_allclose(to_numpy(context), np.einsum("bts,bsd->btd", ref, h),
                               atol=1e-5)
    assert np.all(to_numpy(alpha)[3] == 0)
    if mode == "hard":
        assert set(np.unique(to_numpy(alpha))) <= {0.0, 1.0}


def test_decoder_matches_numpy_in_both_modes():
    """`AttentionRNN` (Bahdanau order, GRU): the full pass (parallel mode)
    and step-by-step decoding (hard mode, its default) against NumPy loops
    from a_0 one-hot at the first position, the first target row shortest;
    steps told `attention_mode="parallel"` equal the full pass."""
    rng = np.random.default_rng(2)
    b, T, S, units = 3, 5, 7, 8
    y, h = _f32(rng, b, T, 4), _f32(rng, b, S, 6)
    lengths, sources = [2, 5, 4], [5, 7, 3]
    t_mask, mem_mask = lengths_mask(lengths, T), lengths_mask(sources, S)
    att = StepwiseMonotonicAttention(5)
    decoder = AttentionRNN(units, att, cell="gru", order="bahdanau")
    decoder(y, h)
    att.energy.b.assign(_f32(rng, 5, scale=0.5))
    cell = decoder.cell.rnn_cells[0]
    cell.bias.assign(_f32(rng, *cell.bias.shape))
    out, al = decoder(y, h, inputs_mask=t_mask, memory_mask=mem_mask,
                      return_attention_scores=True)
    gru = [to_numpy(v) for v in (cell.kernel, cell.recurrent_kernel, cell.bias)]

    def np_loop(hard):
        state, prev = np.zeros((b, units)), np.eye(S)[[0] * b]
        outs, alphas = np.zeros((b, T, units + 6)), np.zeros((b, T, S))
        for t in range(T):
            e = np_energy(state, h, att)
            p = (e >= 0).astype("float64") if hard else 1 / (1 + np.exp(-e))
            alpha = np.stack([np_stepwise(p[i], prev[i], sources[i]) for i in range(b)])
            context = np.einsum("bs,bsd->bd", alpha, h)
            new = np_gru(np.concatenate([y[:, t], context], -1), state, *gru)
            real = t_mask[:, t:t + 1]
            outs[:, t] = np.where(real, np.concatenate([state, context], -1), 0.0)
            alphas[:, t] = np.where(real, alpha, 0.0)
            state, prev = np.where(real, new, state), np.where(real, alpha, prev)
        return outs, alphas

    ref_out, ref_al = np_loop(hard=False)
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)
    hard_out, hard_al = np_loop(hard=True)
    cache = decoder.precompute(h, mem_mask)
    for mode, (ref_o, ref_a) in (("parallel", (ref_out, ref_al)),
                                 (None, (hard_out, hard_al))):
        states = decoder.get_initial_state(b, cache=cache)
        for t in range(T):
            step_out, states, step_w = decoder.step(y[:, t], states, cache,
                                                    attention_mode=mode)
            real = t_mask[:, t]
            np.testing.assert_allclose(to_numpy(step_w)[real], ref_a[real, t], atol=1e-5)
            np.testing.assert_allclose(to_numpy(step_out)[real], ref_o[real, t], atol=1e-5)


def test_long_padded_sources_under_mixed_bfloat16():
    check_long_padded_pass(AttentionRNN(8, StepwiseMonotonicAttention(4), cell="gru",
                                        dtype="mixed_bfloat16"))


def test_keras_file_round_trip(tmp_path):
    check_keras_round_trip(
        AttentionRNN(6, StepwiseMonotonicAttention(4, score_bias_init=-1.0)),
        str(tmp_path / "model.keras"))
