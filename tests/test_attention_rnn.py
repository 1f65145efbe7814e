import keras
import numpy as np
import pytest

from cases import lengths_mask, np_masked_softmax, to_numpy
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


def np_bahdanau_decoder(y, h_enc, mask, W_a, U_a, v_a, gru):
    """Bahdanau et al. (2014), section 3.1 and appendix A:

    e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j); c_i = sum_j alpha_ij h_j;
    s_i = GRU(s_{i-1}, [y_{i-1}; c_i]); output [s_{i-1}; c_i].
    """
    b, t, _ = y.shape
    s = np.zeros((b, W_a.shape[0]))
    keys = h_enc @ U_a
    outs, alignments = [], []
    for i in range(t):
        e = np.tanh((s @ W_a)[:, None] + keys) @ v_a
        alpha = np_masked_softmax(e, mask)
        c = np.einsum("bs,bsd->bd", alpha, h_enc)
        outs.append(np.concatenate([s, c], -1))
        s = np_gru(np.concatenate([y[:, i], c], -1), s, *gru)
        alignments.append(alpha)
    return np.stack(outs, 1), np.stack(alignments, 1)


def np_luong_decoder(y, h_enc, mask, W_a, W_c, gru, feeding):
    """Luong et al. (2015), eq. 5 + "general" score + input feeding (3.3):

    h_t = GRU(h_{t-1}, [y_t; h~_{t-1}]); a_t = softmax(h_t^T W_a h_s);
    c_t = sum a_t h_s; h~_t = tanh(W_c [c_t; h_t]).
    """
    b, t, _ = y.shape
    h = np.zeros((b, W_a.shape[0]))
    feed = np.zeros((b, W_c.shape[1]))
    outs, alignments = [], []
    for i in range(t):
        x = np.concatenate([y[:, i], feed], -1) if feeding else y[:, i]
        h = np_gru(x, h, *gru)
        e = np.einsum("bq,qk,bsk->bs", h, W_a, h_enc)
        a = np_masked_softmax(e, mask)
        c = np.einsum("bs,bsd->bd", a, h_enc)
        feed = np.tanh(np.concatenate([c, h], -1) @ W_c)
        outs.append(feed)
        alignments.append(a)
    return np.stack(outs, 1), np.stack(alignments, 1)


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
        y, h, mask, to_numpy(att.W_a), to_numpy(att.U_a), to_numpy(att.v_a), gru_w)
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)


@pytest.mark.parametrize("feeding", [True, False])
def test_luong_order_matches_numpy(feeding):
    rng = np.random.default_rng(1)
    y, h, mask = _data(rng)
    dec = AttentionRNN(8, LuongAttention("general"), order="luong",
                       input_feeding=feeding, attentional_units=6)
    assert dec.parallel == (not feeding)
    out, al = dec(y, h, memory_mask=mask, return_attention_scores=True)
    gru = dec.cell.rnn_cell
    gru_w = [to_numpy(w) for w in (gru.kernel, gru.recurrent_kernel, gru.bias)]
    ref_out, ref_al = np_luong_decoder(
        y, h, mask, to_numpy(dec.attention.W_a),
        to_numpy(dec.cell.attentional.kernel), gru_w, feeding)
    np.testing.assert_allclose(to_numpy(al), ref_al, atol=1e-5)
    np.testing.assert_allclose(to_numpy(out), ref_out, atol=1e-5)


CONFIGS = {
    "bahdanau_gru": lambda: AttentionRNN(8, BahdanauAttention(5)),
    "bahdanau_lstm": lambda: AttentionRNN(8, BahdanauAttention(5), cell="lstm"),
    "luong_feeding_lstm": lambda: AttentionRNN(
        8, LuongAttention("concat"), cell="lstm", order="luong"),
    "luong_parallel": lambda: AttentionRNN(
        8, LuongAttention("dot"), order="luong", input_feeding=False),
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
    np.testing.assert_allclose(to_numpy(final[0])[2], to_numpy(final_short[0])[0],
                               atol=1e-5)


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
    feeding rule. (Regression: local-m used to centre every row's window on
    row 0's step count, which stops once row 0's target ends.)"""
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
