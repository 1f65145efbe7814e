"""`AttentionRNN` with any Keras RNN cell (the general path): a stacked
LSTM + GRU cell and a `SimpleRNNCell` against NumPy, step equals the full
pass, `.keras` round trip, bad input named."""

import keras
import numpy as np
import pytest

from cases import (check_keras_round_trip, check_steps_equal_pass, lengths_mask,
                   np_masked_softmax, to_numpy)
from kerattn.layers import AttentionRNN, BahdanauAttention
from test_attention_rnn import np_gru, np_lstm

U, E, D = 6, 5, 4


def stacked():
    return keras.layers.StackedRNNCells(
        [keras.layers.LSTMCell(U), keras.layers.GRUCell(U)])


def np_decoder(y, memory, s_mask, t_mask, cell, att, W_c, feeding):
    """Luong's order (Luong et al. 2015, section 3) over a stacked LSTM +
    GRU (Keras' cells: `np_lstm`, `np_gru`), Bahdanau's score `v^T tanh(W_a
    h_t + U_a h_s)`, `h~_t = W_c [c_t; h_t]` (no activation), input feeding
    of `h~_{t-1}`; padded target steps keep the state and output zeros."""
    (lk, lr, lb), (gk, gr, gb) = cell
    W_a, U_a, v_a = att
    b, T = y.shape[:2]
    h1, c1, h2 = np.zeros((b, U)), np.zeros((b, U)), np.zeros((b, U))
    feed = np.zeros((b, W_c.shape[1]))
    outs = np.zeros((b, T, W_c.shape[1]))
    alphas = np.zeros((b, T, memory.shape[1]))
    for t in range(T):
        x = np.concatenate([y[:, t], feed], -1) if feeding else y[:, t]
        n_h1, n_c1 = np_lstm(x, h1, c1, lk, lr, lb)
        n_h2 = np_gru(n_h1, h2, gk, gr, gb)
        e = (np.tanh((n_h2 @ W_a)[:, None] + memory @ U_a) * v_a).sum(-1)
        alpha = np_masked_softmax(e, s_mask)
        context = np.einsum("bs,bsd->bd", alpha, memory)
        h_tilde = np.concatenate([context, n_h2], -1) @ W_c
        real = t_mask[:, t:t + 1]
        h1, c1, h2 = (np.where(real, n, o) for n, o in ((n_h1, h1), (n_c1, c1), (n_h2, h2)))
        feed = np.where(real, h_tilde, feed)
        outs[:, t] = np.where(real, h_tilde, 0.0)
        alphas[:, t] = np.where(real, alpha, 0.0)
    return outs, alphas


@pytest.mark.parametrize("feeding", [True, False])
def test_stacked_cell_matches_numpy_and_steps(feeding):
    """A `StackedRNNCells([LSTMCell, GRUCell])`, with and without input
    feeding (without: the parallel form): the full pass equals NumPy, the
    steps equal the pass, and the final state holds the three state
    vectors `[h1, c1, h2]`."""
    rng = np.random.default_rng(0)
    b, T, S = 3, 4, 6
    y = rng.normal(size=(b, T, E)).astype("float32")
    memory = rng.normal(size=(b, S, D)).astype("float32")
    t_mask, s_mask = lengths_mask([2, 4, 3], T), lengths_mask([4, 6, 3], S)
    decoder = AttentionRNN(U, BahdanauAttention(7), cell=stacked(), order="luong",
                           input_feeding=feeding, attentional_units=5,
                           attentional_activation=None, return_state=True)
    out, final, al = decoder(y, memory, inputs_mask=t_mask, memory_mask=s_mask,
                             return_attention_scores=True)
    lstm, gru = decoder.cell.keras_cell.cells
    cell = [[to_numpy(w) for w in c.weights] for c in (lstm, gru)]
    att = decoder.attention
    ref_out, ref_al = np_decoder(
        y, memory, s_mask, t_mask, cell,
        [to_numpy(w) for w in (att.W_a, att.U_a, att.v_a)],
        to_numpy(decoder.cell.attentional.kernel), feeding)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    assert [tuple(s.shape) for s in final["cells"]] == [(b, U)] * 3
    assert decoder.parallel == (not feeding)
    check_steps_equal_pass(decoder, y, memory, s_mask, out, al, t_mask)


def test_simple_rnn_cell_and_its_initial_state():
    """A `SimpleRNNCell` (one state vector): `h_t = tanh(x W + h U + b)`
    from the given initial state, `[h_t; c_t]` without the attentional
    layer."""
    rng = np.random.default_rng(1)
    b, T, S = 2, 3, 5
    y = rng.normal(size=(b, T, E)).astype("float32")
    memory = rng.normal(size=(b, S, D)).astype("float32")
    h0 = rng.normal(size=(b, U)).astype("float32")
    decoder = AttentionRNN(U, BahdanauAttention(7), cell=keras.layers.SimpleRNNCell(U),
                           order="luong", input_feeding=False, attentional_layer=False)
    out = to_numpy(decoder(y, memory, initial_state=[h0]))
    W, R, bias = (to_numpy(w) for w in decoder.cell.keras_cell.weights)
    att = decoder.attention
    W_a, U_a, v_a = (to_numpy(w) for w in (att.W_a, att.U_a, att.v_a))
    h = h0
    for t in range(T):
        h = np.tanh(y[:, t] @ W + h @ R + bias)
        alpha = np_masked_softmax((np.tanh((h @ W_a)[:, None] + memory @ U_a) * v_a).sum(-1))
        ref = np.concatenate([h, np.einsum("bs,bsd->bd", alpha, memory)], -1)
        np.testing.assert_allclose(out[:, t], ref, atol=1e-5)


def test_keras_file_round_trip(tmp_path):
    """The cell is saved in the decoder's config and its weights with it."""
    decoder = AttentionRNN(U, BahdanauAttention(7), cell=stacked(), order="luong")
    check_keras_round_trip(decoder, tmp_path / "d.keras")
    config = decoder.get_config()
    assert config["cell"]["class_name"] == "StackedRNNCells"
    again = AttentionRNN.from_config(config)
    assert again.cell_type == "keras" and len(again.cell.keras_cell.cells) == 2


@pytest.mark.parametrize("kwargs,match", [
    (dict(cell=keras.layers.Dense(6), order="luong"), "`cell` must be one of"),
    (dict(cell=keras.layers.GRUCell(U)), "`order` must be 'luong' with a Keras cell"),
    (dict(cell=keras.layers.GRUCell(U), order="luong", num_layers=2), "`num_layers` must be 1"),
    (dict(cell=keras.layers.GRUCell(8), order="luong"), "`units` must be the cell's output size, 8"),
])
def test_bad_cells_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AttentionRNN(U, BahdanauAttention(7), **kwargs)
