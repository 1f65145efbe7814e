"""The papers' own choices where they differ from Keras defaults, each
checked against NumPy or a parameter count: the GRU of Cho et al. and
Bahdanau et al. (`reset_after=False`), the Transformer's tied embeddings,
and Luong et al.'s reversed source, uniform initialisation and dropout
between layers."""

import keras
import numpy as np
import pytest

from cases import to_numpy
from kerattn import zoo
from kerattn.layers import AttentionRNN, LuongAttention


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_gru(x, h, kernel, recurrent, bias, reset_after):
    """Cho et al. (2014), eqs. 5-8, over `x` `(B, T, d)`; Keras' gate order
    (z, r, h~) and its `h = z h_prev + (1 - z) h~`. `reset_after` is Keras'
    cuDNN form: `r * (U h + b_U)` instead of `U (r * h)`."""
    n = h.shape[-1]
    b_in, b_rec = (bias[0], bias[1]) if reset_after else (bias, np.zeros_like(bias))
    for t in range(x.shape[1]):
        xw = x[:, t] @ kernel + b_in
        z = sigmoid(xw[:, :n] + h @ recurrent[:, :n] + b_rec[:n])
        r = sigmoid(xw[:, n:2 * n] + h @ recurrent[:, n:2 * n] + b_rec[n:2 * n])
        if reset_after:
            candidate = np.tanh(xw[:, 2 * n:] + r * (h @ recurrent[:, 2 * n:]
                                                     + b_rec[2 * n:]))
        else:
            candidate = np.tanh(xw[:, 2 * n:] + (r * h) @ recurrent[:, 2 * n:])
        h = z * h + (1 - z) * candidate
    return h


@pytest.mark.parametrize("reset_after", [False, True])
def test_attention_rnn_gru_is_the_papers_gru(reset_after):
    """The decoder's GRU, run by AttentionRNN's own loop, against NumPy."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 4)).astype("float32")
    memory = rng.standard_normal((3, 6, 7)).astype("float32")
    h0 = rng.standard_normal((3, 8)).astype("float32")
    # Luong's order without input feeding: the recurrence ignores attention.
    layer = AttentionRNN(8, LuongAttention("general"), cell="gru", order="luong",
                         input_feeding=False, reset_after=reset_after,
                         return_state=True)
    _, states = layer(x, memory, initial_state=[h0])
    cell = layer.cell.rnn_cells[0]
    bias = to_numpy(cell.bias)
    assert bias.shape == ((2, 24) if reset_after else (24,))
    bias = bias + rng.standard_normal(bias.shape).astype("float32")
    cell.bias.assign(bias)          # nonzero biases: b_U is where forms differ
    _, states = layer(x, memory, initial_state=[h0])
    want = numpy_gru(x.astype("float64"), h0.astype("float64"),
                     to_numpy(cell.kernel), to_numpy(cell.recurrent_kernel),
                     bias, reset_after)
    np.testing.assert_allclose(to_numpy(states["cells"][0]), want, atol=1e-5)


@pytest.mark.parametrize("name", ["bahdanau_nmt", "cho_encoder_decoder"])
def test_paper_gru_drops_one_bias_vector_per_gru(name):
    """`reset_after=False` has one bias vector (3n) per GRU, not two:
    bahdanau_nmt has three GRUs (two encoder directions and the decoder),
    cho_encoder_decoder two."""
    builder = getattr(zoo, name)
    keras_gru = builder(40, 50, preset="tiny", reset_after=True)
    paper_gru = builder(40, 50, preset="tiny", reset_after=False)
    n = zoo.presets(name)["tiny"]["units"]
    grus = {"bahdanau_nmt": 3, "cho_encoder_decoder": 2}[name]
    assert keras_gru.count_params() - paper_gru.count_params() == grus * 3 * n
    assert zoo.presets(name)["paper"]["reset_after"] is False
    source = np.array([[5, 6, 0, 0], [7, 8, 9, 4]], "int32")   # shortest first
    target = np.array([[2, 5, 0], [2, 6, 7]], "int32")
    logits = paper_gru({"source_ids": source, "target_in_ids": target})
    state = paper_gru.encode(source, max_length=3)
    for t in range(3):
        step, state, _ = paper_gru.step(target[:, t], state, t)
        np.testing.assert_allclose(to_numpy(step)[1], to_numpy(logits)[1, t],
                                   atol=1e-4)


@pytest.mark.parametrize("tie", ["target", "all"])
def test_tied_transformer_embeddings(tie):
    """Section 3.4: the pre-softmax weights are the target embedding (logits
    `y E^T`, checked in NumPy); "all" also embeds the source with it."""
    v, d = 30, 16
    untied = zoo.transformer_nmt(v, v, preset="tiny", tie_embeddings="none")
    tied = zoo.transformer_nmt(v, v, preset="tiny", tie_embeddings=tie)
    saved = v * d + v if tie == "target" else 2 * v * d + v
    assert untied.count_params() - tied.count_params() == saved
    source = np.array([[5, 6, 0, 0], [7, 8, 9, 4]], "int32")
    target = np.array([[2, 5, 0], [2, 6, 7]], "int32")
    inputs = {"source_ids": source, "target_in_ids": target}
    top = keras.Model(tied.inputs, tied.get_layer("decoder_1").output)
    embedding = to_numpy(tied.get_layer("target_embedding").embedding.embeddings)
    np.testing.assert_allclose(to_numpy(tied(inputs)),
                               to_numpy(top(inputs)) @ embedding.T, atol=1e-4)
    names = {layer.name for layer in tied.layers}
    assert "output_projection" not in names
    assert ("source_embedding" in names) == (tie == "target")
    state = tied.encode(source, max_length=3)
    for t in range(3):
        step, state, _ = tied.step(target[:, t], state, t)
        np.testing.assert_allclose(to_numpy(step)[1], to_numpy(tied(inputs))[1, t],
                                   atol=1e-4)


def test_tied_embeddings_check_their_vocabularies():
    with pytest.raises(ValueError, match="tie_embeddings"):
        zoo.transformer_nmt(30, 40, preset="tiny", tie_embeddings="all")
    with pytest.raises(ValueError, match="tie_embeddings"):
        zoo.transformer_nmt(30, 30, preset="tiny", tie_embeddings="both")
    # The paper preset ties the target's matrices, also when the two sizes
    # are equal (two separate vocabularies of one size are not one joint
    # vocabulary): "all" is asked for by name.
    for sizes in ((30, 40), (30, 30)):
        model = zoo.transformer_nmt(*sizes, preset="paper", num_layers=1,
                                    d_model=16, num_heads=2, ff_dim=16)
        names = {layer.name for layer in model.layers}
        assert "source_embedding" in names and "output_projection" not in names
        assert (model.get_layer("source_embedding").weights[0].path
                != model.get_layer("target_embedding").weights[0].path)


def test_luong_reversed_source_reads_the_source_backwards():
    """`reverse_source=True` is the plain model fed the reversed source, with
    the attention weights put back in source order."""
    reversed_model = zoo.luong_nmt(30, 40, preset="tiny", num_layers=2,
                                   reverse_source=True)
    plain = zoo.luong_nmt(30, 40, preset="tiny", num_layers=2)
    plain.set_weights(reversed_model.get_weights())
    source = np.array([[5, 6, 0, 0], [7, 8, 9, 4], [10, 11, 12, 0]], "int32")
    flipped = np.array([[6, 5, 0, 0], [4, 9, 8, 7], [12, 11, 10, 0]], "int32")
    target = np.array([[2, 5, 0], [2, 6, 7], [2, 8, 9]], "int32")
    np.testing.assert_allclose(
        to_numpy(reversed_model({"source_ids": source, "target_in_ids": target})),
        to_numpy(plain({"source_ids": flipped, "target_in_ids": target})),
        atol=1e-5)
    a, b = reversed_model.encode(source, 3), plain.encode(flipped, 3)
    _, _, weights = reversed_model.step(target[:, 0], a, 0)
    _, _, plain_weights = plain.step(target[:, 0], b, 0)
    weights, plain_weights = to_numpy(weights), to_numpy(plain_weights)
    for row, length in enumerate((2, 4, 3)):
        np.testing.assert_allclose(weights[row, :length],
                                   plain_weights[row, :length][::-1], atol=1e-5)
        assert np.all(weights[row, length:] == 0)


def test_luong_embeddings_initializer():
    """"normal" draws both embeddings from N(0, 1) and wins over
    `initializer_range` for them only; any Keras initializer passes through;
    None takes `initializer_range`'s uniform(-r, r); anything else is a
    ValueError naming the argument."""
    def embeddings(model):
        return [to_numpy(model.get_layer(name).embeddings)
                for name in ("source_embedding", "target_embedding")]

    normal = zoo.luong_nmt(300, 400, preset="tiny", embedding_dim=32,
                           initializer_range=0.1, embeddings_initializer="normal")
    for values in embeddings(normal):
        assert abs(values.std() - 1.0) < 0.05 and abs(values.mean()) < 0.05
    kernel = to_numpy(normal.get_layer("encoder_1").cell.kernel)
    assert np.abs(kernel).max() <= 0.1
    zeros = zoo.luong_nmt(300, 400, preset="tiny", embeddings_initializer="zeros")
    assert all(np.all(values == 0) for values in embeddings(zeros))
    uniform = zoo.luong_nmt(300, 400, preset="tiny", embedding_dim=32,
                            initializer_range=0.1)
    for values in embeddings(uniform):
        assert np.abs(values).max() <= 0.1
        assert abs(values.std() - 0.1 / np.sqrt(3)) < 0.005
    with pytest.raises(ValueError, match="embeddings_initializer"):
        zoo.luong_nmt(30, 40, preset="tiny", embeddings_initializer="bogus")


def test_luong_uniform_initialisation_and_layer_dropout():
    model = zoo.luong_nmt(30, 40, preset="tiny", num_layers=2, units=32,
                          initializer_range=0.1, layer_dropout=True, dropout=0.3)
    for weight in model.weights:
        values = to_numpy(weight)
        if weight.path.endswith("bias"):
            continue
        assert np.abs(values).max() <= 0.1, weight.path
        if values.size > 500:   # uniform(-0.1, 0.1): std 0.1 / sqrt(3)
            assert abs(values.std() - 0.1 / np.sqrt(3)) < 0.01, weight.path
    # Biases keep Keras' initialisation (the LSTM forget gate starts at 1).
    bias = to_numpy(model.get_layer("encoder_1").cell.bias)
    assert np.all(bias[32:64] == 1.0)
    assert model.get_layer("layer_dropout").rate == 0.3
    plain = zoo.luong_nmt(30, 40, preset="tiny", num_layers=2, units=32,
                          dropout=0.3)
    plain.set_weights(model.get_weights())
    inputs = {"source_ids": np.array([[5, 6, 0], [7, 8, 9]], "int32"),
              "target_in_ids": np.array([[2, 5, 0], [2, 6, 7]], "int32")}
    np.testing.assert_allclose(to_numpy(model(inputs)), to_numpy(plain(inputs)),
                               atol=1e-6)   # dropout is off at inference
    with pytest.raises(ValueError, match="initializer_range"):
        zoo.luong_nmt(30, 40, preset="tiny", initializer_range=-0.1)
    with pytest.raises(ValueError, match="reverse_source"):
        zoo.luong_nmt(30, 40, preset="tiny", reverse_source="yes")


def test_luong_forget_gate_bias():
    """`forget_bias` sets the forget slice `[n:2n]` of every LSTM bias
    (Keras' gate order `[i, f, c, o]`): both directions of the
    bidirectional first layer, the second encoder layer and the decoder's
    two cells; the other gates keep Keras' zeros. The paper preset starts it
    at 0 (uniform(-0.1, 0.1) for every parameter), the CPU presets at
    Keras' 1."""
    from kerattn.zoo.model import set_forget_bias

    model = zoo.luong_nmt(30, 40, preset="tiny", num_layers=2, units=16,
                          embedding_dim=8, bidirectional_encoder=True,
                          forget_bias=0.5)
    first = model.get_layer("encoder_1")
    cells = [first.forward_layer.cell, first.backward_layer.cell,
             model.get_layer("encoder_2").cell,
             *model.get_layer("decoder").cell.rnn_cells]
    for cell in cells:
        n = cell.units
        want = np.zeros(4 * n, "float32")
        want[n:2 * n] = 0.5
        np.testing.assert_array_equal(to_numpy(cell.bias), want)
    assert set_forget_bias(model, 0.5) == len(cells) == 5
    # The forget gate at the first step of a cell with zero weights and
    # zero state, by hand: c_1 = f * c_0 + i * g = 0 + sigmoid(0) * tanh(0);
    # with c_0 = 1 instead, c_1 = sigmoid(b_f) (NumPy's).
    cell = cells[2]
    weights = [np.zeros(w.shape, "float32") for w in cell.weights[:2]]
    cell.set_weights(weights + [to_numpy(cell.bias)])
    x = np.zeros((1, cell.units), "float32")
    _, (h1, c1) = cell(x, [np.zeros((1, cell.units), "float32"),
                           np.ones((1, cell.units), "float32")])
    np.testing.assert_allclose(to_numpy(c1), 1 / (1 + np.exp(-0.5)) * np.ones((1, 16)),
                               rtol=1e-6)
    plain = zoo.luong_nmt(30, 40, preset="tiny", num_layers=2, units=16,
                          embedding_dim=8)
    bias = to_numpy(plain.get_layer("encoder_1").cell.bias)
    assert np.all(bias[16:32] == 1.0) and np.all(bias[:16] == 0.0)
    presets = zoo.presets("luong_nmt")
    assert presets["paper"]["forget_bias"] == 0.0
    assert all(presets[p]["forget_bias"] == 1.0 for p in ("tiny", "small", "base"))
    with pytest.raises(ValueError, match="forget_bias"):
        zoo.luong_nmt(30, 40, preset="tiny", forget_bias="one")


def test_tied_transformer_trains_with_its_target_mask():
    """The tied logits keep the target's `(B, T)` mask (not one made of the
    decoder's features): `fit` runs and PAD positions do not count."""
    from kerattn.losses import MaskedSparseCrossentropy

    model = zoo.transformer_nmt(30, 30, preset="tiny", tie_embeddings="all")
    inputs = {"source_ids": np.array([[5, 6, 0, 0], [7, 8, 9, 4]], "int32"),
              "target_in_ids": np.array([[2, 5, 0], [2, 6, 7]], "int32")}
    targets = np.array([[5, 3, 0], [6, 7, 3]], "int32")
    model.compile("adam", MaskedSparseCrossentropy(pad_id=0))
    history = model.fit(inputs, targets, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    logits = model.get_layer("target_embedding")(
        keras.ops.ones((2, 3, 16)), reverse=True)
    assert tuple(logits.shape) == (2, 3, 30)


def test_luong_bidirectional_encoder():
    """`bidirectional_encoder=True`: the first layer reads both ways with
    units / 2 cells a direction, so each annotation depends on the words on
    both sides (with the reversed source, one way reads only the words from
    its own to the end); the decoder starts from the two directions' last
    states, concatenated; step by step equals the full pass."""
    def build(bi):
        return zoo.luong_nmt(30, 40, preset="tiny", num_layers=2, units=16,
                             embedding_dim=8, reverse_source=True,
                             bidirectional_encoder=bi)

    bi, uni = build(True), build(False)
    # Parameters: 2 x 4 (n/2)(e + n/2 + 1) instead of 4 n (e + n + 1).
    first = bi.get_layer("encoder_1")
    assert sum(int(np.prod(w.shape)) for w in first.weights) == 2 * 4 * 8 * (8 + 8 + 1)
    assert (bi.count_params() - uni.count_params()
            == 2 * 4 * 8 * (8 + 8 + 1) - 4 * 16 * (8 + 16 + 1))
    source = np.array([[5, 6, 7, 0], [7, 8, 9, 4], [10, 11, 12, 13]], "int32")
    changed = source.copy()
    changed[:, 0] = 20                                  # the first word
    for model, depends in ((bi, True), (uni, False)):
        h = to_numpy(model.encode(source, 3)["cache"]["values"])
        h2 = to_numpy(model.encode(changed, 3)["cache"]["values"])
        # The last word's annotation (position 2, 3, 3) and the first word.
        last = np.stack([h[0, 2] - h2[0, 2], h[1, 3] - h2[1, 3], h[2, 3] - h2[2, 3]])
        assert (np.abs(last).max() > 1e-4) == depends
    states = bi.encode(source, 3)["states"]
    fwd_bwd = first(bi.get_layer("source_embedding")(
        bi.get_layer("reverse_source")(source)),
        mask=source != 0)
    np.testing.assert_allclose(
        to_numpy(states["cells"][0]),
        np.concatenate([to_numpy(fwd_bwd[1]), to_numpy(fwd_bwd[3])], -1), atol=1e-6)
    target = np.array([[2, 5, 0], [2, 6, 7], [2, 8, 9]], "int32")
    full = to_numpy(bi({"source_ids": source, "target_in_ids": target}))
    state = bi.encode(source, 3)
    for t in range(3):
        logits, state, _ = bi.step(target[:, t], state, t)
        keep = target[:, t] != 0
        np.testing.assert_allclose(to_numpy(logits)[keep], full[keep, t], atol=1e-5)
    with pytest.raises(ValueError, match="`units`"):
        zoo.luong_nmt(30, 40, preset="tiny", units=15, bidirectional_encoder=True)
