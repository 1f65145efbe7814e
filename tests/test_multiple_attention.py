"""`MultipleAttention` (several mechanisms queried at once, contexts
concatenated): TensorFlow Addons' list of mechanisms against its code in
NumPy, steps equal the pass with stateful members, `.keras` round trip,
bad input named."""

import keras
import numpy as np
import pytest

from cases import (check_keras_round_trip, lengths_mask,
                   np_masked_softmax, to_numpy)
from kerattn import layers
from kerattn.layers import (AttentionRNN, BahdanauAttention, HardMonotonicAttention,
                            LuongAttention, MultipleAttention)
from test_tfa_equivalence import sigmoid

U, E, D, V = 6, 5, 4, 9


def test_tfas_list_of_mechanisms_with_one_layer_each():
    """`AttentionWrapper(cell, [LuongAttention, BahdanauAttention],
    attention_layer_size=[3, 2])` (attention_wrapper.py, `call`: each
    mechanism queried with the cell output, `attention_i = layer_i([h;
    c_i])`, concatenated, fed back and output): its logits equal kerattn's
    with the two layers loaded into one `W_c` over `[c_1; c_2; h]` with zero
    blocks."""
    rng = np.random.default_rng(0)
    b, T, S = 3, 4, 6
    w = lambda *shape: rng.normal(scale=0.5, size=shape)   # noqa: E731
    y = w(b, T, E).astype("float32")
    memory = w(b, S, D).astype("float32")
    t_mask, s_mask = lengths_mask([2, 4, 3], T), lengths_mask([4, 6, 3], S)
    K_l, g = w(D, U), 1.3                                  # LuongAttention(scale=True)
    Q_b, K_b, v = w(U, 7), w(D, 7), w(7)                   # BahdanauAttention
    L1, L2 = w(U + D, 3), w(U + D, 2)                      # attention layers
    kern, rec, bias, out_k, out_b = w(E + 5, 4 * U), w(U, 4 * U), w(4 * U), w(5, V), w(V)

    h, c, attention = np.zeros((b, U)), np.zeros((b, U)), np.zeros((b, 5))
    ref = np.zeros((b, T, V))
    for t in range(T):
        z = np.concatenate([y[:, t], attention], -1) @ kern + h @ rec + bias
        i, f, gg, o = np.split(z, 4, -1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
        h = sigmoid(o) * np.tanh(c)
        e1 = g * np.einsum("bu,bsu->bs", h, memory @ K_l)
        e2 = (v * np.tanh(memory @ K_b + (h @ Q_b)[:, None])).sum(-1)
        a1 = np.concatenate([h, np.einsum("bs,bsd->bd", np_masked_softmax(e1, s_mask), memory)], -1) @ L1
        a2 = np.concatenate([h, np.einsum("bs,bsd->bd", np_masked_softmax(e2, s_mask), memory)], -1) @ L2
        attention = np.concatenate([a1, a2], -1)
        ref[:, t] = attention @ out_k + out_b

    decoder = AttentionRNN(U, [LuongAttention("general", scale=True), BahdanauAttention(7)],
                           cell="lstm", order="luong", attentional_units=5,
                           attentional_activation=None)
    output = keras.layers.Dense(V)
    decoder(y, memory, memory_mask=s_mask)
    output.build((None, 5))
    cell = decoder.cell.rnn_cells[0]
    for var, value in ((cell.kernel, kern), (cell.recurrent_kernel, rec), (cell.bias, bias),
                       (output.kernel, out_k), (output.bias, out_b)):
        var.assign(value)
    luong, bahdanau = decoder.attention.attentions
    luong.W_a.assign(K_l.T)
    luong.scale_factor.assign(g)
    bahdanau.W_a.assign(Q_b)
    bahdanau.U_a.assign(K_b)
    bahdanau.v_a.assign(v)
    W_c = np.zeros((2 * D + U, 5))       # rows [c_1; c_2; h]
    W_c[:D, :3], W_c[D:2 * D, 3:] = L1[U:], L2[U:]
    W_c[2 * D:, :3], W_c[2 * D:, 3:] = L1[:U], L2[:U]
    decoder.cell.attentional.kernel.assign(W_c)
    logits = to_numpy(output(decoder(y, memory, inputs_mask=t_mask, memory_mask=s_mask)))
    np.testing.assert_allclose(logits[t_mask], ref[t_mask], atol=1e-5)


@pytest.mark.parametrize("order", ["bahdanau", "luong"])
def test_stateful_members_step_and_round_trip(order, tmp_path):
    """Coverage (a cumulative history) and hard monotonic attention (its
    own modes, decoded "parallel" here in both passes) side by side: the
    context has both members' features, the weights are their mean, the
    steps equal the pass, the state is the tuple of theirs, and the
    `.keras` file gives the same outputs."""
    rng = np.random.default_rng(1)
    b, T, S = 3, 4, 6
    y = rng.normal(size=(b, T, E)).astype("float32")
    memory = rng.normal(size=(b, S, D)).astype("float32")
    t_mask, s_mask = lengths_mask([3, 4, 2], T), lengths_mask([4, 6, 5], S)
    both = MultipleAttention([BahdanauAttention(7, coverage=True),
                              HardMonotonicAttention(5, noise_std=0.0)])
    decoder = AttentionRNN(U, both, cell="gru", order=order, return_state=True)
    out, final, al = decoder(y, memory, inputs_mask=t_mask, memory_mask=s_mask,
                             return_attention_scores=True, attention_mode="parallel")
    assert decoder.cell.output_dim(D) == out.shape[-1]
    al = to_numpy(al)
    sums = al[t_mask].sum(-1)   # (1 + the monotonic member's mass, at most 1) / 2
    assert np.all(sums >= 0.5 - 1e-6) and np.all(sums <= 1.0 + 1e-6)
    cache = decoder.precompute(memory, s_mask)
    states = decoder.get_initial_state(b, cache=cache)
    assert len(states["attention"]) == 2
    for t in range(T):
        step_out, states, step_w = decoder.step(y[:, t], states, cache,
                                                attention_mode="parallel")
        real = t_mask[:, t]
        np.testing.assert_allclose(to_numpy(step_out)[real], to_numpy(out)[real, t], atol=1e-5)
        np.testing.assert_allclose(to_numpy(step_w)[real], al[real, t], atol=1e-5)
    coverage = to_numpy(final["attention"][0]["alignment"])
    assert np.all(coverage[~s_mask] == 0)
    check_keras_round_trip(AttentionRNN(U, [BahdanauAttention(7), LuongAttention("general")],
                                        cell="gru", order=order), tmp_path / "m.keras")


def test_the_layer_alone_concatenates_and_averages():
    """Called as a layer: `[c_1; c_2]` and the mean of the weights, each
    member's as it gives them alone."""
    rng = np.random.default_rng(2)
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    h = rng.normal(size=(2, 5, 4)).astype("float32")
    mask = lengths_mask([3, 5], 5)
    a, c = LuongAttention("dot"), LuongAttention("general")
    both = MultipleAttention([a, c])
    out, weights = both(q, h, value_mask=mask, return_attention_scores=True)
    out_a, w_a = a(q, h, value_mask=mask, return_attention_scores=True)
    out_c, w_c = c(q, h, value_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(out), np.concatenate(
        [to_numpy(out_a), to_numpy(out_c)], -1), atol=1e-6)
    np.testing.assert_allclose(to_numpy(weights), (to_numpy(w_a) + to_numpy(w_c)) / 2, atol=1e-6)
    assert both.context_dim(4) == 8


@pytest.mark.parametrize("make,match", [
    (lambda: MultipleAttention(LuongAttention()), "`attentions` must be a list"),
    (lambda: MultipleAttention([LuongAttention()]), "`attentions` must be a list of at least two"),
    (lambda: MultipleAttention([LuongAttention(), keras.layers.Dense(3)]), "`attentions` must be"),
    (lambda: MultipleAttention([LuongAttention(), LuongAttention()], causal=True), "`causal`"),
])
def test_bad_input_is_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_no_alignment_history_through_the_layer():
    both = MultipleAttention([BahdanauAttention(3, coverage=True), LuongAttention()])
    x = np.zeros((2, 4), "float32")
    with pytest.raises(ValueError, match="`alignment_history` must be None"):
        both(x, np.zeros((2, 5, 4), "float32"), alignment_history=np.zeros((2, 5), "float32"))
    assert layers.MultipleAttention is MultipleAttention
