"""`LocationSensitiveAttention(previous_steps=w)` against a NumPy
transcription of ESPnet's 2-D location attention
(`espnet/nets/pytorch_backend/rnn/attentions.py`, `AttLoc2D.forward`: a
`Conv2d(1, C, (att_win, 2 aconv_filts + 1), padding=(0, aconv_filts),
bias=False)` over the last `att_win` weights, oldest row first,
`mlp_att`, the additive energy scaled by 2 before the softmax, and the
window shifted by one row a step), its torch weights mapped as the layer's
docstring says: the layer alone, steps carrying the window, inside
`AttentionRNN` (full pass equals steps), padding, long sources under
`mixed_bfloat16`, a `.keras` round trip."""

import numpy as np
import pytest

from cases import (check_keras_round_trip, check_long_padded_pass,
                   check_steps_equal_pass, lengths_mask,
                   to_numpy)
from kerattn.layers import AttentionRNN, LocationSensitiveAttention


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype("float32")


# --- NumPy, transcribed from ESPnet's AttLoc2D (torch layouts) ---------------

def espnet_loc2d(enc, mask, dec_z, att_prev, w, scaling=2.0):
    """`AttLoc2D.forward` for `att_prev` `(B, att_win, T)` (row 0 the
    oldest): returns `(c, weights, the shifted window)`."""
    conv_w = w["conv"]                                 # (C, 1, att_win, width)
    C, _, win, width = conv_w.shape
    pad = (width - 1) // 2
    T = att_prev.shape[-1]
    x = np.pad(att_prev.astype("float64"), ((0, 0), (0, 0), (pad, pad)))
    att_conv = np.stack([np.einsum("bhr,chr->bc", x[:, :, t:t + width], conv_w[:, 0])
                         for t in range(T)], axis=1)   # (B, T, C)
    att_conv = att_conv @ w["mlp_att"].T               # (B, T, att_dim)
    pre = enc @ w["mlp_enc"].T + w["mlp_enc_b"]        # (B, T, att_dim)
    dec = (dec_z @ w["mlp_dec"].T)[:, None]            # (B, 1, att_dim)
    e = (np.tanh(att_conv + pre + dec) @ w["gvec"].T)[..., 0] + w["gvec_b"]
    e = np.where(mask, scaling * e, -np.inf)
    e = np.exp(e - e.max(-1, keepdims=True))
    weights = e / e.sum(-1, keepdims=True)
    c = np.einsum("bt,btd->bd", weights, enc)
    return c, weights, np.concatenate([att_prev, weights[:, None]], 1)[:, 1:]


def espnet_weights(rng, eprojs, dunits, att_dim, chans, win, width):
    return {"mlp_enc": _f32(rng, att_dim, eprojs), "mlp_enc_b": _f32(rng, att_dim),
            "mlp_dec": _f32(rng, att_dim, dunits), "mlp_att": 0.5 * _f32(rng, att_dim, chans),
            "conv": _f32(rng, chans, 1, win, width), "gvec": _f32(rng, 1, att_dim),
            "gvec_b": _f32(rng, 1)}


def port(attention, w):
    """The docstring's mapping (ESPnet's `AttLoc` names, the 2-D kernel)."""
    attention.W_a.assign(w["mlp_dec"].T)
    attention.U_a.assign(w["mlp_enc"].T)
    attention.b.assign(w["mlp_enc_b"])
    attention.v_a.assign(w["gvec"][0])     # gvec's bias: the same at every frame
    attention.location_kernel.assign(w["conv"][:, 0].transpose(2, 1, 0))
    attention.location_projection.assign(w["mlp_att"].T)


def loc2d(att_dim=5, chans=3, width=3, win=3):
    return LocationSensitiveAttention(att_dim, filters=chans, kernel_size=width,
                                      previous_steps=win, sharpening=2.0)


def test_layer_and_steps_equal_espnet_attloc2d():
    """Three steps from ESPnet's uniform start (given as the window), the
    first row not the longest, a fully padded row: each step's context and
    weights equal ESPnet's, and the window the steps carry (oldest first)
    is ESPnet's shifted `att_prev`; the empty row stays zeros."""
    rng = np.random.default_rng(0)
    b, T, eprojs, dunits, att_dim, chans, win, width = 4, 7, 6, 5, 5, 3, 3, 5
    enc, mask = _f32(rng, b, T, eprojs), lengths_mask([5, 7, 3, 0], T)
    attention = loc2d(att_dim, chans, width, win)
    attention(_f32(rng, b, dunits), enc)
    w = espnet_weights(rng, eprojs, dunits, att_dim, chans, win, width)
    port(attention, w)
    assert attention.alignment_state == "previous-3+previous-2+previous"
    real = mask.any(-1)
    uniform = np.where(mask, 1.0 / np.maximum(mask.sum(-1, keepdims=True), 1), 0.0)
    window = np.repeat(uniform[:, None], win, 1).astype("float32")   # (B, win, T)
    ref_window = window[real]
    for step in range(3):
        dec_z = _f32(rng, b, dunits)
        context, weights = attention(dec_z, enc, value_mask=mask,
                                     alignment_history=tuple(window[:, k] for k in range(win)),
                                     return_attention_scores=True)
        context, weights = to_numpy(context), to_numpy(weights)
        ref_c, ref_w, ref_window = espnet_loc2d(enc[real], mask[real], dec_z[real],
                                                ref_window, w)
        np.testing.assert_allclose(weights[real], ref_w, atol=1e-5, err_msg=f"step {step}")
        np.testing.assert_allclose(context[real], ref_c, atol=1e-5)
        assert np.all(weights[~real] == 0) and np.all(context[~real] == 0)
        window = np.concatenate([window, weights[:, None]], 1)[:, 1:]
    # The step protocol shifts the same window along.
    cache = {"values": enc, "keys": attention.project_key(enc), "mask": mask}
    state = attention.initial_state(cache, b)
    assert sorted(state) == ["previous", "previous-2", "previous-3"]
    assert all(np.all(to_numpy(v) == 0) for v in state.values())   # ours: zeros
    start = {name: uniform.astype("float32") for name in state}    # ESPnet's
    queries = [_f32(rng, b, dunits) for _ in range(3)]
    ref_window = np.repeat(uniform[real][:, None], win, 1)
    state = start
    for q in queries:
        context, weights, state = attention.step(q, cache, state)
        ref_c, ref_w, ref_window = espnet_loc2d(enc[real], mask[real], q[real],
                                                ref_window, w)
        np.testing.assert_allclose(to_numpy(weights)[real], ref_w, atol=1e-5)
        np.testing.assert_allclose(to_numpy(context)[real], ref_c, atol=1e-5)
        carried = np.stack([to_numpy(state[n]) for n in
                            ("previous-3", "previous-2", "previous")], 1)
        np.testing.assert_allclose(carried[real], ref_window, atol=1e-5)


def test_decoder_full_pass_equals_its_steps():
    """`AttentionRNN` with a 3-step window: the full pass (the first target
    row shortest, source padding) equals `step()` from the initial state on
    every real step, and the final state holds the last three weights."""
    rng = np.random.default_rng(1)
    b, T, S, units = 3, 5, 6, 8
    y, memory = _f32(rng, b, T, 4), _f32(rng, b, S, 6)
    t_mask, mem_mask = lengths_mask([2, 5, 4], T), lengths_mask([4, 6, 3], S)
    decoder = AttentionRNN(units, loc2d(5, 3, 3, 3), cell="gru", order="bahdanau",
                           return_state=True)
    out, final, al = decoder(y, memory, inputs_mask=t_mask, memory_mask=mem_mask,
                             return_attention_scores=True)
    out, al = to_numpy(out), to_numpy(al)
    check_steps_equal_pass(decoder, y, memory, mem_mask, out, al, t_mask)
    last = np.array([2, 5, 4]) - 1
    rows = np.arange(b)
    for k, name in enumerate(("previous", "previous-2", "previous-3")):
        expected = np.where((last - k >= 0)[:, None], al[rows, np.maximum(last - k, 0)], 0.0)
        np.testing.assert_allclose(to_numpy(final["attention"][name]), expected,
                                   atol=1e-5, err_msg=name)


def test_long_padded_sources_under_mixed_bfloat16():
    check_long_padded_pass(AttentionRNN(8, loc2d(4, 2, 31, 3), cell="gru",
                                        dtype="mixed_bfloat16"))


def test_keras_file_round_trip(tmp_path):
    config = check_keras_round_trip(AttentionRNN(6, loc2d(4, 2, 3, 2)),
                                     str(tmp_path / "model.keras"))
    assert config["previous_steps"] == 2


def test_window_with_the_cumulative_channel():
    """`previous_steps` with both channels: the window first, then the
    cumulative weights, as the kernel's input channels."""
    attention = LocationSensitiveAttention(4, filters=2, kernel_size=3, previous_steps=2,
                                           channels=("previous", "cumulative"))
    attention(np.zeros((1, 3), "float32"), np.zeros((1, 5, 4), "float32"))
    assert tuple(attention.location_kernel.shape) == (3, 3, 2)
    assert attention.alignment_state == "previous-2+previous+cumulative"


@pytest.mark.parametrize("kwargs, match", [
    ({"previous_steps": 0}, "`previous_steps`"),
    ({"previous_steps": 2, "channels": ("cumulative",)}, "`previous_steps`"),
    ({"previous_steps": 1.5}, "`previous_steps`"),
])
def test_bad_windows_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LocationSensitiveAttention(4, **kwargs)
