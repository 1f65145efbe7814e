"""AttentionRNN's loop applies the cells' equations itself (keras.ops on the
weights the Keras cells own): they must be Keras' own, step for step.

- The hand-applied stack (GRU `reset_after` True and False, LSTM; two
  layers) against Keras' `GRUCell` / `LSTMCell` holding the same weights.
- The hoisted token product (`project_inputs` + the fed part inside the
  loop) against the whole input row times the whole kernel.
- `step()` against the whole-sequence loop on a batch whose first row is the
  shortest, with the states kept on padded steps as the loop keeps them.
- A `mixed_bfloat16` fit: the kernels are cast to the compute dtype.

The decoders against the papers' equations in NumPy are in
`tests/test_attention_rnn.py`.
"""

import keras
import numpy as np
import pytest

from cases import lengths_mask, to_numpy
from kerattn.layers import (
    AttentionRNN,
    BahdanauAttention,
    HardVisualAttention,
    LocalAttention,
    LuongAttention,
    ScaledDotProductAttention,
    SoftVisualAttention,
)

STACKS = {
    "gru_reset_after": dict(cell="gru", reset_after=True),
    "gru_reset_before": dict(cell="gru", reset_after=False),
    "lstm": dict(cell="lstm"),
}


def _randomized(layer, rng):
    """Every weight of `layer` drawn anew (biases non-zero, so that each
    bias's place in the equations is tested)."""
    layer.set_weights([rng.normal(scale=0.5, size=w.shape).astype("float32")
                       for w in layer.get_weights()])


@pytest.mark.parametrize("name", sorted(STACKS))
def test_hand_applied_stack_equals_keras_cells(name):
    rng = np.random.default_rng(0)
    b, m, s, units = 3, 4, 5, 6
    dec = AttentionRNN(units, BahdanauAttention(5), num_layers=2,
                       **STACKS[name])
    dec(rng.normal(size=(b, 2, m)).astype("float32"),
        rng.normal(size=(b, s, 7)).astype("float32"))
    _randomized(dec, rng)
    cell = dec.cell
    x = rng.normal(size=(b, m + 7)).astype("float32")  # [y; context]
    states = [rng.normal(size=(b, units)).astype("float32")
              for _ in range(cell.num_cell_states)]
    h, new = cell.run_stack(x, states)
    # Keras' own cells, one after the other, on the same weights.
    per, inputs, expected = cell.states_per_layer, x, []
    for k, keras_cell in enumerate(cell.rnn_cells):
        inputs, out_states = keras_cell(inputs, states[k * per:(k + 1) * per])
        expected += list(out_states) if isinstance(out_states, (list, tuple)) \
            else [out_states]
    np.testing.assert_allclose(to_numpy(h), to_numpy(inputs), atol=1e-6)
    assert len(new) == len(expected) == cell.num_cell_states
    for got, want in zip(new, expected):
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-6)


@pytest.mark.parametrize("name", sorted(STACKS))
def test_hoisted_token_product_is_the_bottom_kernels_product(name):
    rng = np.random.default_rng(1)
    b, t, m = 3, 4, 5
    dec = AttentionRNN(6, BahdanauAttention(5), **STACKS[name])
    y = rng.normal(size=(b, t, m)).astype("float32")
    memory = rng.normal(size=(b, 3, 7)).astype("float32")
    dec(y, memory)
    _randomized(dec, rng)
    params = dec.cell.loop_weights()
    context = rng.normal(size=(b, 7)).astype("float32")
    got = (to_numpy(dec.cell.project_inputs(y, params))[:, 2]
           + context @ to_numpy(params["feed_kernel"]))
    bottom = dec.cell.rnn_cell
    bias = to_numpy(bottom.bias)
    bias = bias[0] if bias.ndim == 2 else bias  # reset_after: the input bias
    want = np.concatenate([y[:, 2], context], -1) @ to_numpy(bottom.kernel) + bias
    np.testing.assert_allclose(got, want, atol=1e-5)


STEP_CONFIGS = {
    "bahdanau_gru_reset_before": lambda: AttentionRNN(
        8, BahdanauAttention(5), reset_after=False),
    "bahdanau_stacked_lstm": lambda: AttentionRNN(
        8, BahdanauAttention(5), cell="lstm", num_layers=2),
    "luong_feeding_stacked_lstm": lambda: AttentionRNN(
        8, LuongAttention("general"), cell="lstm", order="luong", num_layers=2),
    "luong_parallel": lambda: AttentionRNN(
        8, LuongAttention("dot"), order="luong", input_feeding=False),
    "local_m": lambda: AttentionRNN(
        8, LocalAttention("monotonic", window=1, score="general"),
        order="luong"),
    # The other families the decoder accepts (coverage, location-sensitive,
    # monotonic and MoChA: their own test files).
    "local_p": lambda: AttentionRNN(
        8, LocalAttention("predictive", window=1, score="concat", units=5),
        order="luong"),
    "luong_concat_parallel": lambda: AttentionRNN(
        8, LuongAttention("concat", units=5), order="luong",
        input_feeding=False),
    "scaled_dot_product": lambda: AttentionRNN(
        8, ScaledDotProductAttention(), order="luong"),
    "soft_visual": lambda: AttentionRNN(
        8, SoftVisualAttention(5), cell="lstm", output_state="current"),
    "hard_visual_argmax": lambda: AttentionRNN(
        8, HardVisualAttention(5, inference="argmax"), cell="lstm",
        output_state="current"),
}


@pytest.mark.parametrize("name", sorted(STEP_CONFIGS))
def test_step_equals_full_with_the_shortest_row_first(name):
    rng = np.random.default_rng(2)
    b, t, s = 3, 5, 6
    y = rng.normal(size=(b, t, 4)).astype("float32")
    h = rng.normal(size=(b, s, 8)).astype("float32")
    t_mask = lengths_mask([2, 5, 4], t)  # row 0 is the shortest
    s_mask = lengths_mask([3, 6, 5], s)
    dec = STEP_CONFIGS[name]()
    full, al = dec(y, h, inputs_mask=t_mask, memory_mask=s_mask,
                   return_attention_scores=True)
    _randomized(dec, rng)
    full, al = dec(y, h, inputs_mask=t_mask, memory_mask=s_mask,
                   return_attention_scores=True)
    cache = dec.precompute(h, s_mask)
    states = keras.tree.map_structure(to_numpy, dec.get_initial_state(b, cache=cache))
    for step in range(t):
        out, new, w = dec.step(y[:, step], states, cache)
        keep = t_mask[:, step]
        states = keras.tree.map_structure(
            lambda n, o: np.where(keep[:, None], to_numpy(n), o), new, states)
        np.testing.assert_allclose(to_numpy(out)[keep], to_numpy(full)[keep, step],
                                   atol=1e-5)
        np.testing.assert_allclose(to_numpy(w)[keep], to_numpy(al)[keep, step],
                                   atol=1e-5)
    assert np.all(to_numpy(full)[~t_mask] == 0)



@pytest.mark.parametrize("name", ["bahdanau_stacked_lstm",
                                  "luong_feeding_stacked_lstm",
                                  "luong_parallel"])
def test_mixed_bfloat16_fit(name, mixed_bfloat16):
    rng = np.random.default_rng(3)
    src = keras.Input((None,), dtype="int32")
    tgt = keras.Input((None,), dtype="int32")
    h = keras.layers.Embedding(20, 8, mask_zero=True)(src)
    y = keras.layers.Embedding(20, 4, mask_zero=True)(tgt)
    decoder = STEP_CONFIGS[name]()
    out = decoder(y, h)
    logits = keras.layers.Dense(20, dtype="float32")(out)
    model = keras.Model([src, tgt], logits)
    assert decoder.compute_dtype == "bfloat16"
    assert decoder.cell.rnn_cell.kernel.dtype == "float32"
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x_src = rng.integers(1, 20, (8, 6)).astype("int32")
    x_src[:3, 4:] = 0  # shorter rows first
    x_tgt = rng.integers(1, 20, (8, 5)).astype("int32")
    before = [w.copy() for w in model.get_weights()]
    history = model.fit([x_src, x_tgt], np.roll(x_tgt, -1, 1), epochs=3,
                        batch_size=8, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert history.history["loss"][-1] < history.history["loss"][0]
    moved = [not np.array_equal(a, b) for a, b in zip(before, model.get_weights())]
    assert len(moved) == len(before) and all(moved)
    assert str(keras.backend.standardize_dtype(decoder(
        np.zeros((2, 3, 4), "float32"), np.zeros((2, 4, 8), "float32")).dtype)) \
        == "bfloat16"
