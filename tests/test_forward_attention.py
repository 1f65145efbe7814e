"""Forward attention against NumPy written from Zhang, Ling and Dai (2018),
section 3: algorithm 1 (`a^_t(n) = (a_{t-1}(n) + a_{t-1}(n-1)) y_t(n)`,
normalised) and algorithm 2 (the transition agent `u`, the paper's on the
move term, ESPnet's `AttForwardTA` on the stay term), with `y_t` the
location-sensitive softmax (Chorowski et al. 2015, eq. 8-9) of the previous
forward weights; the layer alone, inside `AttentionRNN` (full pass, steps,
the first target row shortest), 2,000 positions under `mixed_bfloat16`, a
`.keras` round trip (the bad arguments are in test_bad_input_suite.py)."""

import keras
import numpy as np
import pytest

from cases import (check_keras_round_trip, check_long_padded_pass,
                   check_steps_equal_pass, lengths_mask,
                   np_masked_softmax, to_numpy)
from kerattn.layers import AttentionRNN, ForwardAttention
from test_attention_rnn import np_gru


def _f32(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype("float32")


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_y(s, h, a_prev, mask, w):
    """Chorowski eq. 8-9: f = F * a_{t-1} ("same", zeros outside), e = v^T
    tanh(W s + V h + U f + b), y = softmax over the real positions."""
    r = w["F"].shape[0]
    padded = np.pad(a_prev, (r // 2, r // 2))
    f = np.stack([np.einsum("m,mk->k", padded[j:j + r], w["F"][:, 0])
                  for j in range(len(a_prev))])
    e = np.tanh(s @ w["W"] + h @ w["V"] + f @ w["U"] + w["b"]) @ w["v"]
    return np_masked_softmax(e, mask)


def np_forward_step(s, h, a_prev, u_prev, mask, w, agent):
    """One step of algorithm 1 / 2 for one row: (a_t, c_t, u_t)."""
    y = np_y(s, h, a_prev, mask, w)
    shifted = np.concatenate([[0.0], a_prev[:-1]])
    if agent is None:
        hat = (a_prev + shifted) * y
    elif agent == "move":
        hat = ((1 - u_prev) * a_prev + u_prev * shifted) * y
    else:
        hat = (u_prev * a_prev + (1 - u_prev) * shifted) * y
    hat = np.where(mask, hat, 0.0)
    a = hat / hat.sum() if hat.sum() > 0 else hat
    c = a @ h
    u = None
    if agent is not None:
        u = sigmoid(np.concatenate([c, s]) @ w["w_u"] + w["b_u"])[0]
    return a, c, u


def weights_of(att):
    w = {k: to_numpy(getattr(att, n)).astype("float64") for k, n in (
        ("W", "W_a"), ("V", "U_a"), ("v", "v_a"), ("b", "b"),
        ("F", "location_kernel"), ("U", "location_projection"))}
    if att.transition_agent:
        w["w_u"] = to_numpy(att.agent_kernel).astype("float64")
        w["b_u"] = to_numpy(att.agent_bias).astype("float64")
    return w


@pytest.mark.parametrize("agent", [None, "move", "stay"])
def test_layer_matches_numpy(agent):
    """Two queries, each from its own a_{t-1} and u_{t-1}, the first row not
    the longest (garbage on padding), a fully padded row."""
    rng = np.random.default_rng(0)
    b, T, S, dq, dv = 4, 2, 8, 5, 3
    att = ForwardAttention(6, filters=2, kernel_size=3, transition_agent=agent)
    s, h = _f32(rng, b, T, dq), _f32(rng, b, S, dv)
    att(s, h)
    att.b.assign(_f32(rng, 6, scale=0.5))
    lengths = [6, 8, 3, 0]
    mask = lengths_mask(lengths, S)
    previous = rng.dirichlet(np.ones(S), (b, T)).astype("float32")
    u = rng.uniform(0.1, 0.9, (b, T)).astype("float32")
    dirty = np.where(mask[:, None], previous, 4.0).astype("float32")
    context, alpha, state = att(s, h, value_mask=mask, alignment_history=dirty,
                                agent=u if agent else None,
                                return_attention_scores=True, return_state=True)
    w, clean = weights_of(att), np.where(mask[:, None], previous, 0.0)
    for i in range(3):
        for t in range(T):
            a, c, u_next = np_forward_step(s[i, t], h[i], clean[i, t], u[i, t], mask[i],
                                           w, agent)
            np.testing.assert_allclose(to_numpy(alpha)[i, t], a, atol=1e-5)
            np.testing.assert_allclose(to_numpy(context)[i, t], c, atol=1e-5)
            if agent:
                np.testing.assert_allclose(to_numpy(state["agent"])[i, t], u_next,
                                           atol=1e-5)
    assert np.all(to_numpy(alpha)[3] == 0) and np.all(to_numpy(context)[3] == 0)


@pytest.mark.parametrize("agent", [None, "move"])
def test_decoder_matches_numpy_and_steps(agent):
    """`AttentionRNN` (Bahdanau order, GRU) against the NumPy loop from a_0
    one-hot at the first position and u_0 = 0.5, the first target row
    shortest; `step()` equals the full pass on every real step."""
    rng = np.random.default_rng(1)
    b, T, S, units = 3, 5, 7, 8
    y, h = _f32(rng, b, T, 4), _f32(rng, b, S, 6)
    lengths, sources = [2, 5, 4], [5, 7, 3]
    t_mask, mem_mask = lengths_mask(lengths, T), lengths_mask(sources, S)
    att = ForwardAttention(5, filters=2, kernel_size=3, transition_agent=agent)
    decoder = AttentionRNN(units, att, cell="gru", order="bahdanau", return_state=True)
    decoder(y, h)
    att.b.assign(_f32(rng, 5, scale=0.5))
    cell = decoder.cell.rnn_cells[0]
    cell.bias.assign(_f32(rng, *cell.bias.shape))
    out, final, al = decoder(y, h, inputs_mask=t_mask, memory_mask=mem_mask,
                             return_attention_scores=True)
    gru = [to_numpy(v) for v in (cell.kernel, cell.recurrent_kernel, cell.bias)]
    w = weights_of(att)
    state, prev, u = np.zeros((b, units)), np.eye(S)[[0] * b], np.full(b, 0.5)
    ref_out, ref_al = np.zeros((b, T, units + 6)), np.zeros((b, T, S))
    for t in range(T):
        steps = [np_forward_step(state[i], h[i], prev[i], u[i], mem_mask[i], w, agent)
                 for i in range(b)]
        alpha = np.stack([x[0] for x in steps])
        context = np.stack([x[1] for x in steps])
        new = np_gru(np.concatenate([y[:, t], context], -1), state, *gru)
        real = t_mask[:, t:t + 1]
        ref_out[:, t] = np.where(real, np.concatenate([state, context], -1), 0.0)
        ref_al[:, t] = np.where(real, alpha, 0.0)
        state, prev = np.where(real, new, state), np.where(real, alpha, prev)
        if agent:
            u = np.where(real[:, 0], [x[2] for x in steps], u)
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)
    np.testing.assert_allclose(to_numpy(final["attention"]["alignment"]), prev, atol=1e-5)
    if agent:
        np.testing.assert_allclose(to_numpy(final["attention"]["agent"])[:, 0], u,
                                   atol=1e-5)
    check_steps_equal_pass(decoder, y, h, mem_mask, ref_out, ref_al, t_mask)


def test_long_padded_sources_under_mixed_bfloat16():
    """The shared check, then: two steps reach position 2 at most, and the
    state (weights and agent) stays float32."""
    _, al, final = check_long_padded_pass(AttentionRNN(
        8, ForwardAttention(4, filters=2, kernel_size=5, transition_agent="move"),
        cell="gru", dtype="mixed_bfloat16", return_state=True))
    assert np.all(al[:2, 1, 3:] == 0)
    for name in ("alignment", "agent"):
        assert keras.backend.standardize_dtype(final["attention"][name].dtype) == "float32"


def test_keras_file_round_trip(tmp_path):
    config = check_keras_round_trip(
        AttentionRNN(6, ForwardAttention(4, filters=2, kernel_size=3,
                                         transition_agent="stay")),
        str(tmp_path / "model.keras"))
    assert config["transition_agent"] == "stay"


def test_no_nan_when_the_scores_put_their_mass_far_from_the_alignment():
    """The recursion's product of two probabilities: with the scores'
    softmax one-hot far from where `a_{t-1}` is (a sharpening of 1e4), the
    paper's `a^ / sum a^` is 0 / 0 in float32, and a tiny sum gives an
    infinite gradient. The layer reaches only the positions `a_{t-1}`
    moves to, as the limit of the equation: finite weights that sum to 1
    over them, finite gradients (this was NaN within an epoch of
    zoo/g2p_phrases)."""
    from test_probability_fn import _grad

    rng = np.random.default_rng(0)
    layer = ForwardAttention(4, filters=2, kernel_size=3, sharpening=1e4)
    q = rng.standard_normal((2, 5)).astype("float32")
    v = (5 * rng.standard_normal((2, 9, 3))).astype("float32")
    history = np.zeros((2, 9), "float32")
    history[:, 0] = 1.0                          # a_{t-1} at the first position
    _, w = layer(q, v, alignment_history=history, return_attention_scores=True)
    w = to_numpy(w)
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
    assert np.all(w[:, 2:] == 0)                 # only stay (0) or move (1)
    values = keras.ops.convert_to_tensor(v)
    grad = _grad(lambda x: keras.ops.sum(layer(x, values, alignment_history=history)), q)
    assert np.all(np.isfinite(to_numpy(grad)))
