"""`RecurrentLocationAttention` against a NumPy transcription of ESPnet's
location-aware recurrent attention (`espnet/nets/pytorch_backend/rnn/
attentions.py`, `AttLocRec.forward`: `Conv2d(1, C, (1, 2 aconv_filts + 1),
bias=False)` over the previous weights, ReLU, a max over the frames,
`LSTMCell(C, att_dim, bias=False)`, its new `h` added to the additive
energy, scaled by 2 before the softmax), its torch weights mapped as the
layer's docstring says: the layer alone, the steps carrying the weights
and the LSTM's state, inside `AttentionRNN` (full pass equals steps),
padding, long sources under `mixed_bfloat16`, a `.keras` round trip, the
zoo's table, bad input."""

import numpy as np
import pytest

from cases import (check_keras_round_trip, check_long_padded_pass,
                   check_steps_equal_pass, lengths_mask,
                   to_numpy)
from kerattn import zoo
from kerattn.layers import AttentionRNN, RecurrentLocationAttention


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype("float32")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# --- NumPy, transcribed from ESPnet's AttLocRec (torch layouts) --------------

def espnet_locrec(enc, mask, dec_z, att_prev, att_h, att_c, w, scaling=2.0):
    """`AttLocRec.forward` on the real frames of each row (ESPnet pools over
    the padded frames too; a batch of one length each has none): returns
    `(c, weights, (att_h, att_c))`."""
    conv_w = w["conv"]                                  # (C, 1, 1, width)
    width = conv_w.shape[-1]
    pad = (width - 1) // 2
    out_c, out_w, out_h, out_m = [], [], [], []
    for row in range(len(enc)):
        n = int(mask[row].sum())
        a = np.pad(att_prev[row, :n].astype("float64"), (pad, pad))
        conv = np.stack([conv_w[:, 0, 0] @ a[t:t + width] for t in range(n)])  # (n, C)
        pooled = np.maximum(conv, 0.0).max(0)                                     # (C,)
        gates = w["w_ih"] @ pooled + w["w_hh"] @ att_h[row]          # (4 att_dim,)
        i, f, g, o = np.split(gates, 4)
        cell = _sigmoid(f) * att_c[row] + _sigmoid(i) * np.tanh(g)
        hidden = _sigmoid(o) * np.tanh(cell)
        pre = enc[row, :n] @ w["mlp_enc"].T + w["mlp_enc_b"]
        dec = w["mlp_dec"] @ dec_z[row]
        e = np.tanh(hidden + pre + dec) @ w["gvec"][0] + w["gvec_b"][0]
        e = np.exp(scaling * e - (scaling * e).max())
        weights = np.zeros(enc.shape[1])
        weights[:n] = e / e.sum()
        out_c.append(weights[:n] @ enc[row, :n])
        out_w.append(weights)
        out_h.append(hidden)
        out_m.append(cell)
    return (np.stack(out_c), np.stack(out_w), (np.stack(out_h), np.stack(out_m)))


def espnet_weights(rng, eprojs, dunits, att_dim, chans, width):
    return {"mlp_enc": _f32(rng, att_dim, eprojs), "mlp_enc_b": _f32(rng, att_dim),
            "mlp_dec": _f32(rng, att_dim, dunits), "conv": _f32(rng, chans, 1, 1, width),
            "w_ih": 0.5 * _f32(rng, 4 * att_dim, chans),
            "w_hh": 0.5 * _f32(rng, 4 * att_dim, att_dim),
            "gvec": _f32(rng, 1, att_dim), "gvec_b": _f32(rng, 1)}


def port(attention, w):
    attention.W_a.assign(w["mlp_dec"].T)
    attention.U_a.assign(w["mlp_enc"].T)
    attention.b.assign(w["mlp_enc_b"])
    attention.v_a.assign(w["gvec"][0])
    attention.location_kernel.assign(w["conv"][:, 0, 0].T[:, None, :])
    attention.lstm_kernel.assign(w["w_ih"].T)
    attention.lstm_recurrent_kernel.assign(w["w_hh"].T)


def locrec(att_dim=5, chans=3, width=3):
    return RecurrentLocationAttention(att_dim, filters=chans, kernel_size=width,
                                      sharpening=2.0)


def test_steps_equal_espnet_attlocrec():
    """Three steps from ESPnet's start (uniform weights, a zero LSTM state),
    the first row not the longest, garbage on padding, a fully padded row:
    each step's weights, context and LSTM state equal ESPnet's; the empty
    row gives zeros; the layer alone with the same tuple gives the step's
    weights."""
    rng = np.random.default_rng(0)
    b, T, eprojs, dunits, att_dim, chans, width = 4, 7, 6, 5, 5, 3, 5
    enc, mask = _f32(rng, b, T, eprojs), lengths_mask([5, 7, 3, 0], T)
    attention = locrec(att_dim, chans, width)
    attention(_f32(rng, b, dunits), enc)
    w = espnet_weights(rng, eprojs, dunits, att_dim, chans, width)
    port(attention, w)
    real = mask.any(-1)
    uniform = np.where(mask, 1.0 / np.maximum(mask.sum(-1, keepdims=True), 1), 0.0)
    cache = {"values": enc, "keys": attention.project_key(enc), "mask": mask}
    first = attention.initial_state(cache, b)
    assert sorted(first) == ["alignment", "c", "h"]
    assert all(np.all(to_numpy(v) == 0) for v in first.values())
    zeros = np.zeros((b, att_dim), "float32")
    state = {"alignment": np.where(mask, uniform, 9.0).astype("float32"),  # garbage on padding
             "h": zeros, "c": zeros}
    ref_prev, ref_h, ref_c = uniform[real], zeros[real], zeros[real]
    for step in range(3):
        q = _f32(rng, b, dunits)
        alone = attention(q, enc, value_mask=mask, return_attention_scores=True,
                          alignment_history=(state["alignment"], state["h"], state["c"]))
        context, weights, state = attention.step(q, cache, state)
        ref_ctx, ref_w, (ref_h, ref_c) = espnet_locrec(
            enc[real], mask[real], q[real], ref_prev, ref_h, ref_c, w)
        msg = f"step {step}"
        np.testing.assert_allclose(to_numpy(weights)[real], ref_w, atol=1e-5, err_msg=msg)
        np.testing.assert_allclose(to_numpy(context)[real], ref_ctx, atol=1e-5, err_msg=msg)
        np.testing.assert_allclose(to_numpy(state["h"])[real], ref_h, atol=1e-5, err_msg=msg)
        np.testing.assert_allclose(to_numpy(state["c"])[real], ref_c, atol=1e-5, err_msg=msg)
        np.testing.assert_allclose(to_numpy(alone[1]), to_numpy(weights), atol=1e-6)
        assert np.all(to_numpy(weights)[~real] == 0)
        assert np.all(to_numpy(context)[~real] == 0)
        ref_prev = ref_w


def test_decoder_full_pass_equals_its_steps():
    """`AttentionRNN` (the first target row shortest, source padding): the
    full pass equals `step()` from the initial state on every real step;
    the final state carries the last weights and the LSTM's state."""
    rng = np.random.default_rng(1)
    b, T, S, units = 3, 5, 6, 8
    y, memory = _f32(rng, b, T, 4), _f32(rng, b, S, 6)
    lengths = [2, 5, 4]
    t_mask, mem_mask = lengths_mask(lengths, T), lengths_mask([4, 6, 3], S)
    decoder = AttentionRNN(units, locrec(5, 3, 3), cell="gru", order="bahdanau",
                           return_state=True)
    out, final, al = decoder(y, memory, inputs_mask=t_mask, memory_mask=mem_mask,
                             return_attention_scores=True)
    out, al = to_numpy(out), to_numpy(al)
    seen = check_steps_equal_pass(decoder, y, memory, mem_mask, out, al, t_mask)
    hs = [to_numpy(states["attention"]["h"]) for states in seen]
    rows = np.arange(b)
    last = np.array(lengths) - 1
    np.testing.assert_allclose(to_numpy(final["attention"]["alignment"]),
                               al[rows, last], atol=1e-5)
    np.testing.assert_allclose(to_numpy(final["attention"]["h"]),
                               np.stack(hs, 1)[rows, last], atol=1e-5)


def test_long_padded_sources_under_mixed_bfloat16():
    check_long_padded_pass(AttentionRNN(8, locrec(4, 2, 31), cell="gru",
                                        dtype="mixed_bfloat16"))


def test_keras_file_round_trip(tmp_path):
    config = check_keras_round_trip(AttentionRNN(6, locrec(4, 2, 3)),
                                    str(tmp_path / "model.keras"))
    assert config["filters"] == 2 and config["sharpening"] == 2.0


def test_in_the_zoo_table():
    model = zoo.bahdanau_nmt(20, 20, attention="recurrent-location", preset="tiny",
                             attention_options={"filters": 3})
    layer = model.get_layer("decoder").attention
    assert type(layer) is RecurrentLocationAttention and layer.filters == 3
    luong = zoo.luong_nmt(20, 20, attention="recurrent-location", preset="tiny")
    x = {"source_ids": np.array([[5, 6, 0, 0], [5, 6, 7, 8]], "int32"),
         "target_in_ids": np.array([[1, 4, 0], [1, 4, 5]], "int32")}
    assert np.isfinite(to_numpy(luong(x))).all()


@pytest.mark.parametrize("kwargs, match", [
    ({"filters": 0}, "`filters`"),
    ({"kernel_size": 4}, "`kernel_size`"),
    ({"sharpening": 0.0}, "`sharpening`"),
])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RecurrentLocationAttention(4, **kwargs)


def test_a_bad_history_is_named():
    attention = locrec(4, 2, 3)
    with pytest.raises(ValueError, match="`alignment_history`"):
        attention(np.zeros((2, 3), "float32"), np.zeros((2, 5, 4), "float32"),
                  alignment_history=(np.zeros((2, 5), "float32"),))
