import keras
import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy, check_steps_equal_pass
from kerattn.layers import (
    AttentionRNN,
    BahdanauAttention,
    LocalAttention,
    LuongAttention,
)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_gru(x, h, kernel, recurrent, bias):
    """Keras' GRUCell (reset_after=True), gates ordered z, r, h."""
    u = h.shape[-1]
    xz = x @ kernel + bias[0]
    inner = h @ recurrent + bias[1]
    z = sigmoid(xz[:, :u] + inner[:, :u])
    r = sigmoid(xz[:, u:2 * u] + inner[:, u:2 * u])
    hh = np.tanh(xz[:, 2 * u:] + r * inner[:, 2 * u:])
    return z * h + (1 - z) * hh


def np_bahdanau_decoder(y, h_enc, mask, W_a, U_a, v_a, cell, s0=None,
                        t_mask=None):
    """Bahdanau et al. (2014), section 3.1 and appendix A:

    e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j); c_i = sum_j alpha_ij h_j;
    s_i = cell(y_{i-1}, c_i, s_{i-1}); output [s_{i-1}; c_i].

    A padded target step (`t_mask` False) keeps s and outputs zeros.
    """
    b, t, _ = y.shape
    s = np.zeros((b, W_a.shape[0])) if s0 is None else s0
    t_mask = np.ones((b, t), bool) if t_mask is None else t_mask
    keys = h_enc @ U_a
    outs, alignments = [], []
    for i in range(t):
        e = np.tanh((s @ W_a)[:, None] + keys) @ v_a
        alpha = np_masked_softmax(e, mask)
        c = np.einsum("bs,bsd->bd", alpha, h_enc)
        real = t_mask[:, i:i + 1]
        outs.append(np.where(real, np.concatenate([s, c], -1), 0.0))
        s = np.where(real, cell(y[:, i], c, s), s)
        alignments.append(np.where(real, alpha, 0.0))
    return np.stack(outs, 1), np.stack(alignments, 1)


def np_luong_decoder(y, h_enc, mask, W_a, W_c, stack, feeding, states=None,
                     t_mask=None, window=None, wait=None, activation=np.tanh):
    """Luong et al. (2015), eq. 5 + "general" score + input feeding (3.3):

    h_t = stack(h_{t-1}, [y_t; h~_{t-1}]); a_t = softmax(h_t^T W_a h_s);
    c_t = sum a_t h_s; h~_t = tanh(W_c [c_t; h_t]).

    `stack(x, states) -> (top h, new states)`; `states` zeros of one GRU
    when None. A padded target step keeps the states and h~ and outputs
    zeros. `activation=None`: `h~_t = W_c [c_t; h_t]` (TensorFlow Addons'
    `AttentionWrapper._compute_attention`, `attention_layer` a `Dense`
    without activation). `window=D`: local-m (section 3.2), the softmax over the source
    positions `|s - t| <= D` alone, `t` each row's own count of real steps.
    `wait=(k, r)`: a wait-k schedule (Ma et al. 2019, with a rate): step
    `t` attends to the first `k + floor(r t)` source positions alone.
    """
    b, t, _ = y.shape
    states = [np.zeros((b, W_a.shape[0]))] if states is None else states
    t_mask = np.ones((b, t), bool) if t_mask is None else t_mask
    feed = np.zeros((b, W_c.shape[1]))
    outs, alignments = [], []
    for i in range(t):
        x = np.concatenate([y[:, i], feed], -1) if feeding else y[:, i]
        h, new_states = stack(x, states)
        e = np.einsum("bq,qk,bsk->bs", h, W_a, h_enc)
        step_mask = mask
        if window is not None:
            row_t = t_mask[:, :i].sum(1)[:, None]          # each row's own t
            near = np.abs(np.arange(h_enc.shape[1])[None] - row_t) <= window
            step_mask = mask & near
        if wait is not None:
            row_t = t_mask[:, :i].sum(1)[:, None]
            reads = wait[0] + np.floor(np.float32(wait[1]) * row_t.astype("float32"))
            step_mask = step_mask & (np.arange(h_enc.shape[1])[None] < reads)
        a = np_masked_softmax(e, step_mask)
        c = np.einsum("bs,bsd->bd", a, h_enc)
        real = t_mask[:, i:i + 1]
        out = np.concatenate([c, h], -1) @ W_c
        out = out if activation is None else activation(out)
        states = [np.where(real, n, o) for n, o in zip(new_states, states)]
        feed = np.where(real, out, feed)
        outs.append(np.where(real, out, 0.0))
        alignments.append(np.where(real, a, 0.0))
    return np.stack(outs, 1), np.stack(alignments, 1)


def np_gru_stack(gru):
    """One Keras GRU (`np_gru`) as a `stack` of `np_luong_decoder`."""
    def stack(x, states):
        h = np_gru(x, states[0], *gru)
        return h, [h]
    return stack


def _data(rng, b=3, t=5, s=7, dy=4, dh=6):
    y = rng.standard_normal((b, t, dy)).astype("float32")
    h = rng.standard_normal((b, s, dh)).astype("float32")
    return y, h, lengths_mask([s, 4, 2][:b], s)


def test_bahdanau_order_matches_numpy():
    rng = np.random.default_rng(0)
    y, h, mask = _data(rng)
    dec = AttentionRNN(8, BahdanauAttention(5), cell="gru", order="bahdanau")
    out, al = dec(y, h, memory_mask=mask, return_attention_scores=True)
    att, gru = dec.attention, dec.cell.rnn_cell
    gru_w = [to_numpy(w) for w in (gru.kernel, gru.recurrent_kernel, gru.bias)]
    ref_out, ref_al = np_bahdanau_decoder(
        y, h, mask, to_numpy(att.W_a), to_numpy(att.U_a), to_numpy(att.v_a),
        lambda y_i, c, s: np_gru(np.concatenate([y_i, c], -1), s, *gru_w))
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)


@pytest.mark.parametrize("activation", ["tanh", None])
@pytest.mark.parametrize("feeding", [True, False])
def test_luong_order_matches_numpy(feeding, activation):
    rng = np.random.default_rng(1)
    y, h, mask = _data(rng)
    dec = AttentionRNN(8, LuongAttention("general"), order="luong",
                       input_feeding=feeding, attentional_units=6,
                       attentional_activation=activation)
    assert dec.parallel == (not feeding)
    out, al = dec(y, h, memory_mask=mask, return_attention_scores=True)
    gru = dec.cell.rnn_cell
    gru_w = [to_numpy(w) for w in (gru.kernel, gru.recurrent_kernel, gru.bias)]
    ref_out, ref_al = np_luong_decoder(
        y, h, mask, to_numpy(dec.attention.W_a),
        to_numpy(dec.cell.attentional.kernel), np_gru_stack(gru_w), feeding,
        activation=np.tanh if activation else None)
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)
    if activation is None:   # not tanh of the same: the option is read
        assert np.abs(np.tanh(ref_out) - ref_out).max() > 1e-3
        again = AttentionRNN.from_config(dec.get_config())
        assert again.get_config()["attentional_activation"] is None


CONFIGS = {
    "bahdanau_gru": lambda: AttentionRNN(8, BahdanauAttention(5)),
    "bahdanau_lstm": lambda: AttentionRNN(8, BahdanauAttention(5), cell="lstm"),
    "luong_feeding_lstm": lambda: AttentionRNN(
        8, LuongAttention("concat"), cell="lstm", order="luong"),
    "luong_parallel": lambda: AttentionRNN(
        8, LuongAttention("dot"), order="luong", input_feeding=False),
    "luong_tfa_no_activation": lambda: AttentionRNN(
        8, LuongAttention("general"), order="luong", attentional_activation=None),
    "local_m": lambda: AttentionRNN(
        8, LocalAttention("monotonic", window=1, score="general"), order="luong"),
    "bahdanau_stacked": lambda: AttentionRNN(8, BahdanauAttention(5),
                                             num_layers=2),
    "luong_stacked_lstm": lambda: AttentionRNN(
        8, LuongAttention("general"), cell="lstm", order="luong", num_layers=3),
    "luong_stacked_parallel": lambda: AttentionRNN(
        8, LuongAttention("general"), cell="lstm", order="luong", num_layers=2,
        input_feeding=False),
    "local_p": lambda: AttentionRNN(
        8, LocalAttention("predictive", window=2), order="luong",
        input_feeding=False),
    "local_p_wait_k": lambda: AttentionRNN(
        8, LocalAttention("predictive", window=2), order="luong",
        input_feeding=False, wait_k=2, wait_rate=1.5),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_step_by_step_equals_full_sequence(name):
    rng = np.random.default_rng(2)
    y, h, mask = _data(rng, dh=8)
    dec = CONFIGS[name]()
    init = [rng.standard_normal((3, 8)).astype("float32")
            for _ in range(dec.cell.num_cell_states)]
    full, al = dec(y, h, memory_mask=mask, initial_state=init,
                   return_attention_scores=True)
    cache = dec.precompute(h, mask)
    states = dec.get_initial_state(3, init)
    outs, weights = [], []
    for t in range(y.shape[1]):
        out, states, w = dec.step(y[:, t], states, cache)
        outs.append(to_numpy(out))
        weights.append(to_numpy(w))
    np.testing.assert_allclose(np.stack(outs, 1), to_numpy(full), atol=1e-5)
    np.testing.assert_allclose(np.stack(weights, 1), to_numpy(al), atol=1e-5)
    assert np.all(np.stack(weights, 1)[~np.broadcast_to(mask[:, None], al.shape)]
                  == 0)


def test_final_state_and_target_padding():
    rng = np.random.default_rng(3)
    y, h, mask = _data(rng)
    dec = AttentionRNN(8, BahdanauAttention(5), return_state=True)
    t_mask = lengths_mask([5, 3, 1], 5)
    out, final, al = dec(y, h, inputs_mask=t_mask, memory_mask=mask,
                         return_attention_scores=True)
    out, al = to_numpy(out), to_numpy(al)
    assert np.all(out[~t_mask] == 0) and np.all(al[~t_mask] == 0)
    # The final state is the state after each example's last real step.
    short = AttentionRNN(8, BahdanauAttention(5), return_state=True)
    short(y[:1, :1], h[:1])
    short.set_weights(dec.get_weights())
    _, final_short = short(y[2:3, :1], h[2:3], memory_mask=mask[2:3])
    np.testing.assert_allclose(to_numpy(final["cells"][0])[2],
                               to_numpy(final_short["cells"][0])[0],
                               atol=1e-5)


def test_the_step_count_is_exact_past_256_under_mixed_bfloat16():
    """Each row's step count (the position a local or wait-k attention
    reads) is float32 whatever the policy: under mixed_bfloat16 a count in
    bfloat16 would stop at 256 (256 + 1 rounds to 256). 300 target steps,
    the second row padded after 290."""
    rng = np.random.default_rng(11)
    y = rng.normal(size=(2, 300, 2)).astype("float32")
    h = rng.normal(size=(2, 3, 4)).astype("float32")
    try:
        keras.config.set_dtype_policy("mixed_bfloat16")
        dec = AttentionRNN(4, LuongAttention(), return_state=True)
        _, final = dec(y, h, inputs_mask=lengths_mask([300, 290], 300))
    finally:
        keras.config.set_dtype_policy("float32")
    assert keras.backend.standardize_dtype(final["step"].dtype) == "float32"
    assert to_numpy(final["step"])[:, 0].tolist() == [300.0, 290.0]


@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("name", ["bahdanau_gru", "luong_feeding_lstm",
                                  "luong_parallel"])
def test_trains_with_fit(name, jit_compile):
    if jit_compile and keras.backend.backend() == "torch":
        # torch.compile of Keras' RNN loop graph-breaks at every step and
        # takes minutes to compile here; the torch backend trains eagerly
        # (jit_compile="auto" resolves to eager on torch).
        pytest.skip("jit_compile=True means torch.compile on torch; see comment")
    rng = np.random.default_rng(4)
    src = keras.Input((None,), dtype="int32")
    tgt = keras.Input((None,), dtype="int32")
    h = keras.layers.Embedding(20, 8, mask_zero=True)(src)
    y = keras.layers.Embedding(20, 6, mask_zero=True)(tgt)
    out = CONFIGS[name]()(y, h)
    logits = keras.layers.Dense(20)(out)
    model = keras.Model([src, tgt], logits)
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=jit_compile)
    x_src = rng.integers(1, 20, (16, 7)).astype("int32")
    x_src[:8, 5:] = 0
    x_tgt = rng.integers(1, 20, (16, 6)).astype("int32")
    y_tgt = np.roll(x_tgt, -1, axis=1)
    history = model.fit([x_src, x_tgt], y_tgt, epochs=8, batch_size=16, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < losses[0]


def test_bad_arguments():
    with pytest.raises(ValueError, match="`attention` must be a single-head"):
        AttentionRNN(8, keras.layers.Dense(3))
    with pytest.raises(ValueError, match="`cell`"):
        AttentionRNN(8, BahdanauAttention(4), cell="rnn")
    with pytest.raises(ValueError, match="`order`"):
        AttentionRNN(8, BahdanauAttention(4), order="vaswani")
    with pytest.raises(ValueError, match="`units`"):
        AttentionRNN(0, BahdanauAttention(4))
    dec = AttentionRNN(8, BahdanauAttention(4))
    y, h = np.zeros((2, 3, 4), "float32"), np.zeros((2, 5, 6), "float32")
    with pytest.raises(ValueError, match="`memory` must have rank 3"):
        dec(y, np.zeros((2, 6), "float32"))
    with pytest.raises(ValueError, match="`memory_mask` must have shape"):
        dec(y, h, memory_mask=np.ones((2, 4), bool))
    with pytest.raises(ValueError, match="`initial_state` must be a list of 1"):
        dec(y, h, initial_state=[np.zeros((2, 8), "float32")] * 2)


def test_output_state_current_is_the_new_state():
    """`output_state="current"` outputs `[s_i; c_i]`: the state after step i
    is what "previous" outputs at step i + 1; the contexts are the same."""
    rng = np.random.default_rng(0)
    y = rng.normal(size=(2, 5, 4)).astype("float32")
    h = rng.normal(size=(2, 6, 8)).astype("float32")
    prev = AttentionRNN(7, BahdanauAttention(5), cell="lstm")
    cur = AttentionRNN(7, BahdanauAttention(5), cell="lstm", output_state="current")
    out_prev = to_numpy(prev(y, h))
    cur(y, h)
    for a, b in zip(prev.weights, cur.weights, strict=True):
        b.assign(a)
    out_cur = to_numpy(cur(y, h))
    np.testing.assert_allclose(out_cur[:, :-1, :7], out_prev[:, 1:, :7], atol=1e-5)
    np.testing.assert_allclose(out_cur[:, :, 7:], out_prev[:, :, 7:], atol=1e-5)
    config = cur.get_config()
    assert config["output_state"] == "current"
    assert AttentionRNN.from_config(config).output_state == "current"
    with pytest.raises(ValueError, match="`output_state` must be"):
        AttentionRNN(7, BahdanauAttention(5), output_state="next")
    with pytest.raises(ValueError, match="needs a HardVisualAttention"):
        prev(y, h, return_attention_samples=True)


def _attention_kinds():
    from kerattn.layers import HardVisualAttention, SoftVisualAttention

    return {
        "bahdanau": lambda: BahdanauAttention(5),
        "luong_dot": lambda: LuongAttention("dot"),
        "luong_general": lambda: LuongAttention("general"),
        "luong_concat": lambda: LuongAttention("concat", units=5),
        "luong_location": lambda: LuongAttention("location", max_length=7),
        "local_m": lambda: LocalAttention("monotonic", window=1, score="general"),
        "local_p": lambda: LocalAttention("predictive", window=2, score="general"),
        "soft_visual": lambda: SoftVisualAttention(5),
        "hard_visual": lambda: HardVisualAttention(5, seed=0),
    }


ROW_CASES = [(kind, order, feeding)
             for kind in sorted(_attention_kinds())
             for order, feeding in (("bahdanau", False), ("luong", True),
                                    ("luong", False))]


@pytest.mark.parametrize("kind,order,feeding", ROW_CASES)
def test_each_row_decodes_as_if_alone(kind, order, feeding):
    """The shortest row first, with target and memory masks: every row of the
    batch gets what it gets alone, for every attention kind, order and
    feeding rule. (A local-m that centres every row's window on row 0's
    step count fails here: that count stops once row 0's target ends.)"""
    rng = np.random.default_rng(7)
    b, t, s = 3, 6, 7
    inputs = rng.normal(size=(b, t, 4)).astype("float32")
    memory = rng.normal(size=(b, s, 8 if "dot" in kind else 6)).astype("float32")
    target_lengths, source_lengths = [2, 4, 6], [3, 7, 5]  # row 0 ends first
    inputs_mask = lengths_mask(target_lengths, t)
    memory_mask = lengths_mask(source_lengths, s)
    layer = AttentionRNN(8, _attention_kinds()[kind](), cell="lstm", order=order,
                         input_feeding=feeding, num_layers=2)
    out, weights = layer(inputs, memory, inputs_mask=inputs_mask,
                         memory_mask=memory_mask, return_attention_scores=True)
    out, weights = to_numpy(out), to_numpy(weights)
    for row in range(b):
        t_len, s_len = target_lengths[row], source_lengths[row]
        alone, alone_w = layer(inputs[row: row + 1, :t_len],
                               memory[row: row + 1, :s_len],
                               return_attention_scores=True)
        np.testing.assert_allclose(out[row, :t_len], to_numpy(alone)[0], atol=1e-5)
        np.testing.assert_allclose(weights[row, :t_len, :s_len],
                                   to_numpy(alone_w)[0], atol=1e-5)
        assert np.all(out[row, t_len:] == 0) and np.all(weights[row, t_len:] == 0)
        assert np.all(weights[row, :, s_len:] == 0)


def test_local_m_window_follows_each_rows_own_step():
    """local-m's p_t is each row's own t: with row 0's target ended, row 1's
    window keeps moving (its weights are 0 outside [t - D, t + D])."""
    rng = np.random.default_rng(0)
    layer = AttentionRNN(6, LocalAttention("monotonic", window=0, score="general"),
                         cell="gru", order="luong", input_feeding=True)
    inputs = rng.normal(size=(2, 5, 3)).astype("float32")
    memory = rng.normal(size=(2, 6, 4)).astype("float32")
    _, weights = layer(inputs, memory, inputs_mask=lengths_mask([1, 5], 5),
                       return_attention_scores=True)
    # Window 0: all weight on source position t, for every real step of row 1.
    np.testing.assert_allclose(to_numpy(weights)[1], np.eye(5, 6), atol=1e-6)


# --- The papers' own cells: Bahdanau's GRU, Luong's LSTM stack ----------------

def _masked_data(rng, dy=4, dh=6):
    """Target (3, 5, dy) and memory (3, 7, dh) with masks whose first row is
    not the longest: target lengths 3, 5, 4; source lengths 5, 7, 3."""
    y, h, _ = _data(rng, dy=dy, dh=dh)
    return y, h, lengths_mask([3, 5, 4], 5), lengths_mask([5, 7, 3], 7)


def _randomize_biases(rng, cells):
    """Non-zero biases (Keras initialises them to zeros or ones)."""
    for cell in cells:
        cell.bias.assign(rng.standard_normal(cell.bias.shape).astype("float32"))


def paper_gru_params(cell, dy):
    """Bahdanau et al.'s decoder GRU (appendix A.2.2) from a Keras GRUCell
    with `reset_after=False` whose input is [y; c] (dy features of y).

    Keras' kernel columns are in the gate order z, r, h; its rows are W (for
    y) then C (for c). Keras' z weighs the old state (s = z s_prev + (1 - z)
    s~), the paper's the new one: the paper's z is 1 - Keras' z, so its W_z,
    U_z, C_z and bias are Keras' negated. The paper omits biases; Keras'
    one bias vector is kept as b_z, b_r, b.
    """
    assert not cell.reset_after
    K, R, bias = (to_numpy(w) for w in (cell.kernel, cell.recurrent_kernel,
                                        cell.bias))
    u = R.shape[0]
    z, r, h = (slice(i * u, (i + 1) * u) for i in range(3))
    W, C = K[:dy], K[dy:]
    return dict(W_z=-W[:, z], U_z=-R[:, z], C_z=-C[:, z], b_z=-bias[z],
                W_r=W[:, r], U_r=R[:, r], C_r=C[:, r], b_r=bias[r],
                W=W[:, h], U=R[:, h], C=C[:, h], b=bias[h])


def np_bahdanau_gru(y, c, s, p):
    """Bahdanau et al. (2014), appendix A.2.2 (y already embedded, E y):

    z_i = sigmoid(W_z y_{i-1} + U_z s_{i-1} + C_z c_i + b_z)
    r_i = sigmoid(W_r y_{i-1} + U_r s_{i-1} + C_r c_i + b_r)
    s~_i = tanh(W y_{i-1} + U (r_i * s_{i-1}) + C c_i + b)
    s_i = (1 - z_i) * s_{i-1} + z_i * s~_i
    """
    z = sigmoid(y @ p["W_z"] + s @ p["U_z"] + c @ p["C_z"] + p["b_z"])
    r = sigmoid(y @ p["W_r"] + s @ p["U_r"] + c @ p["C_r"] + p["b_r"])
    s_new = np.tanh(y @ p["W"] + (r * s) @ p["U"] + c @ p["C"] + p["b"])
    return (1 - z) * s + z * s_new


def np_lstm(x, h, c, kernel, recurrent, bias):
    """Keras' LSTMCell, gates ordered i, f, c, o (the LSTM of Luong et al.,
    2015, after Zaremba et al., 2015):

    i, f, o = sigmoid(.), c~ = tanh(.) of x W + h U + b;
    c' = f * c + i * c~; h' = o * tanh(c').
    """
    i, f, g, o = np.split(x @ kernel + h @ recurrent + bias, 4, axis=-1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def np_lstm_stack(layers):
    """A stack of LSTMs as a `stack` of `np_luong_decoder`: the states are
    [h, c] layer by layer; each layer's h is the next one's input."""
    def stack(x, states):
        new = []
        for k, weights in enumerate(layers):
            h, c = np_lstm(x, states[2 * k], states[2 * k + 1], *weights)
            new += [h, c]
            x = h
        return x, new
    return stack


def test_bahdanau_order_papers_gru_matches_numpy():
    """`order="bahdanau"`, `reset_after=False` against appendix A's GRU with
    the context fed into every gate, a given s_0 and target padding."""
    rng = np.random.default_rng(5)
    y, h, t_mask, mask = _masked_data(rng)
    s0 = rng.standard_normal((3, 8)).astype("float32")
    dec = AttentionRNN(8, BahdanauAttention(5), cell="gru", order="bahdanau",
                       reset_after=False)
    dec(y, h)
    gru = dec.cell.rnn_cells[0]
    _randomize_biases(rng, [gru])
    out, al = dec(y, h, inputs_mask=t_mask, memory_mask=mask, initial_state=[s0],
                  return_attention_scores=True)
    att, params = dec.attention, paper_gru_params(gru, dy=y.shape[-1])
    ref_out, ref_al = np_bahdanau_decoder(
        y, h, mask, to_numpy(att.W_a), to_numpy(att.U_a), to_numpy(att.v_a),
        lambda y_i, c, s: np_bahdanau_gru(y_i, c, s, params), s0=s0,
        t_mask=t_mask)
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)


def test_luong_order_lstm_stack_matches_numpy():
    """`order="luong"`, two LSTM layers, input feeding (h~_{t-1} into the
    bottom layer, attention on the top one), given initial states and
    target padding, against NumPy."""
    rng = np.random.default_rng(6)
    y, h, t_mask, mask = _masked_data(rng)
    init = [rng.standard_normal((3, 8)).astype("float32") for _ in range(4)]
    dec = AttentionRNN(8, LuongAttention("general"), cell="lstm", order="luong",
                       num_layers=2, input_feeding=True, attentional_units=6)
    dec(y, h)
    cells = dec.cell.rnn_cells
    _randomize_biases(rng, cells)
    out, al = dec(y, h, inputs_mask=t_mask, memory_mask=mask, initial_state=init,
                  return_attention_scores=True)
    lstms = [[to_numpy(w) for w in (cell.kernel, cell.recurrent_kernel, cell.bias)]
             for cell in cells]
    ref_out, ref_al = np_luong_decoder(
        y, h, mask, to_numpy(dec.attention.W_a),
        to_numpy(dec.cell.attentional.kernel), np_lstm_stack(lstms),
        feeding=True, states=list(init), t_mask=t_mask)
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)


def test_local_m_decoder_matches_numpy():
    """`order="luong"` with local-m (window D = 1, "general" score), a
    2-layer LSTM stack and input feeding, target padding with the shortest
    row first: against the NumPy decoder with the window at each row's own
    step (Luong et al. 2015, section 3.2)."""
    rng = np.random.default_rng(9)
    y, h, t_mask, mask = _masked_data(rng)
    dec = AttentionRNN(8, LocalAttention("monotonic", window=1, score="general"),
                       cell="lstm", order="luong", num_layers=2,
                       input_feeding=True, attentional_units=6)
    dec(y, h)
    cells = dec.cell.rnn_cells
    _randomize_biases(rng, cells)
    out, al = dec(y, h, inputs_mask=t_mask, memory_mask=mask,
                  return_attention_scores=True)
    lstms = [[to_numpy(w) for w in (cell.kernel, cell.recurrent_kernel, cell.bias)]
             for cell in cells]
    zeros = [np.zeros((3, 8)) for _ in range(4)]
    ref_out, ref_al = np_luong_decoder(
        y, h, mask, to_numpy(dec.attention.W_a),
        to_numpy(dec.cell.attentional.kernel), np_lstm_stack(lstms),
        feeding=True, states=zeros, t_mask=t_mask, window=1)
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)


def test_hard_attention_decoder_matches_numpy():
    """Show, attend and tell's decoder (Xu et al. 2015): `order="bahdanau"`,
    an LSTM, `output_state="current"` ([h_t; z_t], eq. 7) and hard attention
    at inference with `inference="argmax"`:

    e_ti = w^T tanh(W_h h_{t-1} + W_a a_i + b); alpha_t = softmax(e_t);
    z_t = beta_t a_{argmax alpha_t}, beta_t = sigmoid(W_beta h_{t-1} + b_beta);
    (h_t, c_t) = LSTM([y_{t-1}; z_t], h_{t-1}, c_{t-1}).

    Target padding with the shortest row first; the samples are the argmax
    one-hots."""
    from kerattn.layers import HardVisualAttention

    rng = np.random.default_rng(10)
    y, a, t_mask, mask = _masked_data(rng)
    dec = AttentionRNN(8, HardVisualAttention(5, inference="argmax", seed=0),
                       cell="lstm", order="bahdanau", output_state="current")
    dec(y, a)
    _randomize_biases(rng, dec.cell.rnn_cells)
    att = dec.attention
    att.b.assign(rng.normal(size=att.b.shape).astype("float32"))
    att.b_beta.assign(rng.normal(size=att.b_beta.shape).astype("float32"))
    out, al, samples = dec(y, a, inputs_mask=t_mask, memory_mask=mask,
                           return_attention_scores=True,
                           return_attention_samples=True, training=False)
    W_h, W_a, b, w, W_beta, b_beta = (to_numpy(v) for v in (
        att.W_h, att.W_a, att.b, att.w, att.W_beta, att.b_beta))
    lstm = [to_numpy(v) for v in (dec.cell.rnn_cell.kernel,
                                  dec.cell.rnn_cell.recurrent_kernel,
                                  dec.cell.rnn_cell.bias)]
    h = c = np.zeros((3, 8))
    outs, alphas, ones = [], [], []
    for t in range(y.shape[1]):
        e = np.tanh((h @ W_h)[:, None] + a @ W_a + b) @ w
        alpha = np_masked_softmax(e, mask)
        one_hot = np.eye(a.shape[1])[alpha.argmax(-1)]
        beta = sigmoid(h @ W_beta + b_beta)
        z = (one_hot[:, :, None] * a).sum(1) * beta
        h_new, c_new = np_lstm(np.concatenate([y[:, t], z], -1), h, c, *lstm)
        real = t_mask[:, t:t + 1]
        outs.append(np.where(real, np.concatenate([h_new, z], -1), 0.0))
        alphas.append(np.where(real, alpha, 0.0))
        ones.append(np.where(real, one_hot, 0.0))
        h, c = np.where(real, h_new, h), np.where(real, c_new, c)
    np.testing.assert_allclose(to_numpy(al), np.stack(alphas, 1), atol=1e-5)
    np.testing.assert_array_equal(to_numpy(samples), np.stack(ones, 1))
    np.testing.assert_allclose(to_numpy(out), np.stack(outs, 1), atol=1e-5)


def np_state_and_context_decoder(y, h_enc, mask, t_mask, stack, states, score):
    """Luong's order without input feeding and without W_c, the decoder of
    See et al. (2017), section 2.1:

    s_t = stack(s_{t-1}, y_t); a^t = softmax(score(s_t, c^t));
    h*_t = sum_i a^t_i h_i; output [s_t; h*_t]; c^{t+1} = c^t + a^t.

    `score(query, coverage) -> (b, S)` (coverage, eq. 11, zeros at first).
    A padded target step keeps the states and the coverage and outputs
    zeros.
    """
    b, t, _ = y.shape
    coverage = np.zeros(mask.shape)
    outs, alignments = [], []
    for i in range(t):
        s, new_states = stack(y[:, i], states)
        a = np_masked_softmax(score(s, coverage), mask)
        context = np.einsum("bs,bsd->bd", a, h_enc)
        real = t_mask[:, i:i + 1]
        states = [np.where(real, n, o) for n, o in zip(new_states, states)]
        coverage = np.where(real, coverage + a, coverage)
        outs.append(np.where(real, np.concatenate([s, context], -1), 0.0))
        alignments.append(np.where(real, a, 0.0))
    return np.stack(outs, 1), np.stack(alignments, 1)


@pytest.mark.parametrize("kind", ["general", "coverage"])
def test_luong_state_and_context_matches_numpy(kind):
    """`order="luong", attentional_layer=False, input_feeding=False`
    outputs `[h_t; c_t]`: an LSTM with given initial states, target and
    source padding (the first rows not the longest), against NumPy. The
    "general" score runs the parallel form, coverage (See et al.'s eq. 11)
    the loop; `step()` equals the full pass on every real step; no `W_c`;
    the config round trips."""
    rng = np.random.default_rng(11)
    y, h, t_mask, mask = _masked_data(rng, dh=5)
    init = [rng.standard_normal((3, 8)).astype("float32") for _ in range(2)]
    attention = (LuongAttention("general") if kind == "general"
                 else BahdanauAttention(6, coverage=True))
    dec = AttentionRNN(8, attention, cell="lstm", order="luong",
                       input_feeding=False, attentional_layer=False)
    dec(y, h)
    assert dec.parallel == (kind == "general")
    assert dec.cell.attentional is None
    assert not any("attentional" in w.path for w in dec.weights)
    _randomize_biases(rng, dec.cell.rnn_cells)
    att = dec.attention
    if kind == "coverage":
        for v in (att.b, att.w_c):
            v.assign(rng.standard_normal(v.shape).astype("float32"))
    out, al = dec(y, h, inputs_mask=t_mask, memory_mask=mask, initial_state=init,
                  return_attention_scores=True)
    out, al = to_numpy(out), to_numpy(al)
    assert out.shape == (3, 5, 8 + 5)

    lstm = [[to_numpy(w) for w in (dec.cell.rnn_cell.kernel,
                                   dec.cell.rnn_cell.recurrent_kernel,
                                   dec.cell.rnn_cell.bias)]]
    if kind == "general":
        W_a = to_numpy(att.W_a)

        def score(s, coverage):
            return np.einsum("bq,qk,bsk->bs", s, W_a, h)
    else:
        W, U, v, b, w_c = (to_numpy(x) for x in (att.W_a, att.U_a, att.v_a,
                                                 att.b, att.w_c))

        def score(s, coverage):  # v^T tanh(W_s s_t + W_h h_i + w_c c_i + b)
            return np.tanh((s @ W)[:, None] + h @ U + coverage[..., None] * w_c
                           + b) @ v
    ref_out, ref_al = np_state_and_context_decoder(
        y, h, mask, t_mask, np_lstm_stack(lstm), list(init), score)
    np.testing.assert_allclose(al, ref_al, atol=1e-5)
    np.testing.assert_allclose(out, ref_out, atol=1e-5)

    check_steps_equal_pass(dec, y, h, mask, out, al, t_mask, initial_state=init)

    config = dec.get_config()
    assert config["attentional_layer"] is False
    again = AttentionRNN.from_config(config)
    again(y, h)
    again.set_weights(dec.get_weights())
    np.testing.assert_allclose(
        to_numpy(again(y, h, inputs_mask=t_mask, memory_mask=mask,
                       initial_state=init)), out, atol=1e-6)


def test_attentional_layer_false_refuses_what_needs_h_tilde():
    """`attentional_units` sizes `h~_t`: without the attentional layer it is
    refused (input feeding then feeds back the context); "bahdanau" ignores
    the flag (it has no such layer) and takes no `step_output`."""
    att = LuongAttention("general")
    with pytest.raises(ValueError, match="`attentional_units` must be None"):
        AttentionRNN(8, att, order="luong", input_feeding=False,
                     attentional_units=6, attentional_layer=False)
    with pytest.raises(ValueError, match="`attentional_layer` must be a bool"):
        AttentionRNN(8, att, order="luong", attentional_layer="no")
    with pytest.raises(ValueError, match="`step_output` must be None for order='bahdanau'"):
        AttentionRNN(8, BahdanauAttention(5), step_output="cell")
    with pytest.raises(ValueError, match="`step_output` must be one of"):
        AttentionRNN(8, att, order="luong", step_output="context")
    feeding = AttentionRNN(8, att, order="luong", attentional_layer=False)
    assert feeding.cell.feeds and feeding.cell.feed_dim(5) == 5
    bahdanau = AttentionRNN(8, BahdanauAttention(5), attentional_layer=False)
    assert bahdanau.get_config()["attentional_layer"] is False
    assert "step_output" not in bahdanau.get_config()   # older files lack it


# --- A wait-k schedule (Ma et al. 2019) ----------------------------------------


@pytest.mark.parametrize("feeding", [True, False])
def test_wait_k_decoder_matches_numpy(feeding):
    """`wait_k=2, wait_rate=1.5`: step t attends to the first 2 + floor(1.5 t)
    source positions alone (each row's own t), in the loop (input feeding)
    and without it (a loop either way); target padding with the shortest row first,
    against the NumPy decoder. One step at a time gives the same, and the
    schedule survives `get_config`."""
    rng = np.random.default_rng(11)
    y, h, t_mask, mask = _masked_data(rng)
    dec = AttentionRNN(8, LuongAttention("general"), cell="lstm", order="luong",
                       input_feeding=feeding, attentional_units=6, wait_k=2,
                       wait_rate=1.5)
    assert not dec.parallel   # the loop narrows each row's own step
    assert [dec.reads(t) for t in range(5)] == [2, 3, 5, 6, 8]
    dec(y, h)
    _randomize_biases(rng, dec.cell.rnn_cells)
    out, al = (to_numpy(a) for a in dec(y, h, inputs_mask=t_mask, memory_mask=mask,
                                         return_attention_scores=True))
    lstm = [[to_numpy(w) for w in (c.kernel, c.recurrent_kernel, c.bias)]
            for c in dec.cell.rnn_cells]
    ref_out, ref_al = np_luong_decoder(
        y, h, mask, to_numpy(dec.attention.W_a),
        to_numpy(dec.cell.attentional.kernel), np_lstm_stack(lstm),
        feeding=feeding, states=[np.zeros((3, 8)) for _ in range(2)],
        t_mask=t_mask, wait=(2, 1.5))
    np.testing.assert_allclose(al, ref_al, atol=1e-5)
    np.testing.assert_allclose(out, ref_out, atol=1e-5)
    assert np.all(al[:, 0, 2:] == 0) and np.any(al[:, 1, 2] > 0)   # it grows
    everywhere, _ = np_luong_decoder(   # the check can fail: no schedule differs
        y, h, mask, to_numpy(dec.attention.W_a),
        to_numpy(dec.cell.attentional.kernel), np_lstm_stack(lstm),
        feeding=feeding, states=[np.zeros((3, 8)) for _ in range(2)],
        t_mask=t_mask)
    assert not np.allclose(everywhere, ref_out, atol=1e-3)

    check_steps_equal_pass(dec, y, h, mask, out, al, t_mask)

    again = AttentionRNN.from_config(dec.get_config())
    assert (again.wait_k, again.wait_rate) == (2, 1.5)
    again(y, h)
    again.set_weights(dec.get_weights())
    np.testing.assert_allclose(
        to_numpy(again(y, h, inputs_mask=t_mask, memory_mask=mask)), out, atol=1e-6)
