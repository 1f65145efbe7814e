"""Location-sensitive attention over several history channels, against a
NumPy transcription of NVIDIA's tacotron2 (`model.py`: `LocationLayer`,
`Attention.get_alignment_energies` / `forward`, and `Decoder.decode`, which
concatenates `[attention_weights, attention_weights_cum]` and adds each
step's weights to the cumulative ones), its torch weights mapped as the
layer's docstring says: the layer alone, inside `AttentionRNN` (full pass
and step by step), padding, long sources under `mixed_bfloat16`, a
`.keras` round trip (the arguments refused are in
test_bad_input_suite.py)."""

import numpy as np

from cases import (check_keras_round_trip, check_long_padded_pass,
                   check_steps_equal_pass, lengths_mask,
                   to_numpy)
from kerattn.layers import AttentionRNN, LocationSensitiveAttention
from test_attention_rnn import np_gru


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype("float32")


# --- NumPy, transcribed from NVIDIA/tacotron2 model.py (torch layouts) --------

def nvidia_location_layer(weights_cat, conv_w, dense_w):
    """`LocationLayer.forward`: `Conv1d(2, k, r, padding=(r - 1) / 2,
    bias=False)` over `(B, 2, T)`, transposed, then `Linear(k, units,
    bias=False)`. `conv_w` `(k, 2, r)`, `dense_w` `(units, k)`."""
    _, _, r = conv_w.shape
    pad = (r - 1) // 2
    x = np.pad(weights_cat.astype("float64"), ((0, 0), (0, 0), (pad, pad)))
    T = weights_cat.shape[-1]
    conv = np.stack([np.einsum("bcr,kcr->bk", x[:, :, t:t + r], conv_w)
                     for t in range(T)], axis=1)            # (B, T, k)
    return conv @ dense_w.T                                 # (B, T, units)


def nvidia_attention(query, memory, weights_cat, mask, w):
    """`Attention.forward`: energies `v(tanh(query_layer(q) +
    location_layer(cat) + memory_layer(memory)))`, `-inf` where masked, a
    softmax over the memory, the weighted sum. No bias anywhere."""
    processed_query = (query @ w["query"].T)[:, None]        # (B, 1, units)
    processed_memory = memory @ w["memory"].T                # (B, T, units)
    location = nvidia_location_layer(weights_cat, w["conv"], w["dense"])
    energies = (np.tanh(processed_query + location + processed_memory)
                @ w["v"].T)[..., 0]
    energies = np.where(mask, energies, -np.inf)
    e = np.exp(energies - energies.max(-1, keepdims=True))
    weights = e / e.sum(-1, keepdims=True)
    return np.einsum("bt,btd->bd", weights, memory), weights


def nvidia_weights(rng, query_dim, memory_dim, units, k, r):
    return {"query": _f32(rng, units, query_dim), "memory": _f32(rng, units, memory_dim),
            "v": _f32(rng, 1, units), "conv": _f32(rng, k, 2, r),
            "dense": 0.5 * _f32(rng, units, k)}


def port(attention, w):
    """The docstring's mapping from the torch weights to ours."""
    attention.W_a.assign(w["query"].T)
    attention.U_a.assign(w["memory"].T)
    attention.v_a.assign(w["v"][0])
    attention.location_kernel.assign(w["conv"].transpose(2, 1, 0))
    attention.location_projection.assign(w["dense"].T)


def tacotron(units=5, filters=3, kernel_size=3, **kwargs):
    return LocationSensitiveAttention(
        units, filters=filters, kernel_size=kernel_size, use_bias=False,
        channels=("previous", "cumulative"), **kwargs)


def test_layer_equals_nvidia_attention():
    """One step from a previous and a cumulative history (the first row
    not the longest; garbage on padding, which must not reach the
    convolution), against NVIDIA's `Attention`; a fully padded row gives
    zeros (NVIDIA's softmax over `-inf` alone would give NaN)."""
    rng = np.random.default_rng(0)
    b, T, dq, dm, units, k, r = 4, 7, 6, 5, 5, 3, 5
    query, memory = _f32(rng, b, dq), _f32(rng, b, T, dm)
    mask = lengths_mask([5, 7, 3, 0], T)
    attention = tacotron(units, k, r)
    attention(query, memory)
    assert not hasattr(attention, "b")
    w = nvidia_weights(rng, dq, dm, units, k, r)
    port(attention, w)
    prev = rng.uniform(0, 1, (b, T)).astype("float32")
    cum = (prev + rng.uniform(0, 2, (b, T))).astype("float32")
    dirty = [np.where(mask, x, 7.0).astype("float32") for x in (prev, cum)]
    context, weights = attention(query, memory, value_mask=mask,
                                 alignment_history=tuple(dirty),
                                 return_attention_scores=True)
    context, weights = to_numpy(context), to_numpy(weights)
    clean = np.stack([np.where(mask, prev, 0.0), np.where(mask, cum, 0.0)], 1)
    real = mask.any(-1)
    ref_context, ref_weights = nvidia_attention(
        query[real], memory[real], clean[real], mask[real], w)
    np.testing.assert_allclose(weights[real], ref_weights, atol=1e-5)
    np.testing.assert_allclose(context[real], ref_context, atol=1e-5)
    assert np.all(weights[~mask] == 0)
    assert np.all(weights[~real] == 0) and np.all(context[~real] == 0)


def np_tacotron_decoder(y, memory, mem_mask, t_mask, units, gru, w):
    """A Bahdanau-order GRU decoder whose attention is NVIDIA's, its history
    carried as `Decoder.decode` carries it: `cat = [previous, cumulative]`
    (zeros at first), then `previous = weights`, `cumulative += weights`.
    A padded target step keeps every state and outputs zeros."""
    b, T, _ = y.shape
    s = np.zeros((b, units))
    prev = np.zeros(mem_mask.shape)
    cum = np.zeros(mem_mask.shape)
    outs, alphas = [], []
    for t in range(T):
        real = t_mask[:, t:t + 1]
        context, alpha = nvidia_attention(s, memory, np.stack([prev, cum], 1),
                                          mem_mask, w)
        new = np_gru(np.concatenate([y[:, t], context], -1), s, *gru)
        outs.append(np.where(real, np.concatenate([s, context], -1), 0.0))
        alphas.append(np.where(real, alpha, 0.0))
        s = np.where(real, new, s)
        prev = np.where(real, alpha, prev)
        cum = np.where(real, cum + alpha, cum)
    return np.stack(outs, 1), np.stack(alphas, 1), prev, cum


def test_decoder_carries_both_channels():
    """`AttentionRNN` with the two-channel attention against the NumPy
    decoder (the first target row shortest, source padding); the final
    state holds both histories; `step()` from the initial state equals the
    full pass on every real step."""
    rng = np.random.default_rng(1)
    b, T, S, units = 3, 5, 6, 8
    y, memory = _f32(rng, b, T, 4), _f32(rng, b, S, 6)
    lengths = [2, 5, 4]
    t_mask, mem_mask = lengths_mask(lengths, T), lengths_mask([4, 6, 3], S)
    decoder = AttentionRNN(units, tacotron(5, 3, 3), cell="gru", order="bahdanau",
                           return_state=True)
    decoder(y, memory)
    w = nvidia_weights(rng, units, 6, 5, 3, 3)
    port(decoder.attention, w)
    cell = decoder.cell.rnn_cells[0]
    cell.bias.assign(_f32(rng, *cell.bias.shape))
    out, final, al = decoder(y, memory, inputs_mask=t_mask, memory_mask=mem_mask,
                             return_attention_scores=True)
    gru = [to_numpy(v) for v in (cell.kernel, cell.recurrent_kernel, cell.bias)]
    ref_out, ref_al, prev, cum = np_tacotron_decoder(
        y, memory, mem_mask, t_mask, units, gru, w)
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)
    np.testing.assert_allclose(to_numpy(final["attention"]["previous"]), prev, atol=1e-5)
    np.testing.assert_allclose(to_numpy(final["attention"]["cumulative"]), cum, atol=1e-5)
    check_steps_equal_pass(decoder, y, memory, mem_mask, ref_out, ref_al, t_mask)


def test_long_padded_sources_under_mixed_bfloat16():
    """2,000 source positions, one row fully padded, the bfloat16 policy: a
    decoder pass stays finite, padding gets no weight, the empty row
    zeros; each real row's weights sum to 1 (to bfloat16's precision)."""
    check_long_padded_pass(AttentionRNN(8, tacotron(4, 2, 31), cell="gru",
                                        dtype="mixed_bfloat16"))


def test_keras_file_round_trip(tmp_path):
    """The two-channel decoder after `.keras` save and load: the same
    outputs, the channels and the bias kept."""
    config = check_keras_round_trip(AttentionRNN(6, tacotron(4, 2, 3)),
                                    str(tmp_path / "model.keras"))
    assert config["channels"] == ["previous", "cumulative"] and not config["use_bias"]


def test_an_older_config_still_loads():
    """A config written before `channels` (with `cumulative`) builds the
    same one-channel attention."""
    old = {"units": 4, "filters": 2, "kernel_size": 3, "cumulative": True,
           "sharpening": 1.0, "smoothing": False, "normalize": False}
    attention = LocationSensitiveAttention.from_config(old)
    assert attention.channels == ("cumulative",) and attention.alignment_state == "cumulative"
