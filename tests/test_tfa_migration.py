"""examples/tfa_migration.py: the tfa.seq2seq NMT tutorial ported to kerattn.

The port's building blocks (`build_model`, `beam_translate`,
`greedy_translate`) at tiny sizes (vocabularies of 12, 8 units), on a
batch of 3 rows of different lengths whose longest row is not the first:
it trains with `model.fit`; beam search through the decoding front door
returns the shapes it documents and, at width 1, greedy's tokens; and its
first decoder step equals a NumPy reference written from the equations
(the encoder LSTM, the input-fed LSTM step, Luong's "general" or Bahdanau's
score under the source mask, the attentional vector, the output layer),
from the model's weights. Its teacher-forced logits equal a loop through
its own `step`.
"""

import importlib.util
import os

import keras
import numpy as np
import pytest
from keras import ops

from kerattn.losses import MaskedSparseCrossentropy

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "examples", "tfa_migration.py")
VOCAB, EMBED, UNITS = 12, 6, 8
BOS, EOS = 2, 3
# Rows of different lengths, the longest second (PAD = 0).
SOURCE = np.array([[4, 5, 6, 0, 0],
                   [7, 8, 9, 10, 11],
                   [5, 4, 0, 0, 0]], "int32")
TARGET_IN = np.array([[BOS, 4, 5, 0],
                      [BOS, 6, 7, 8],
                      [BOS, 9, 0, 0]], "int32")
TARGET_OUT = np.array([[4, 5, EOS, 0],
                       [6, 7, 8, EOS],
                       [9, EOS, 0, 0]], "int32")


def _script():
    spec = importlib.util.spec_from_file_location("tfa_migration", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tfa_migration = _script()


def _model(attention="luong", seed=0):
    """The port at tiny sizes, every weight redrawn (biases included), so
    that no term of the reference is zero by initialisation."""
    keras.utils.set_random_seed(seed)
    model = tfa_migration.build_model(VOCAB, VOCAB, EMBED, UNITS, attention)
    rng = np.random.default_rng(seed)
    for w in model.weights:
        w.assign(rng.normal(0.0, 0.5, w.shape).astype("float32"))
    return model


def _numpy(x):
    return np.asarray(ops.convert_to_numpy(x), "float64")


def test_the_port_trains_with_fit():
    model = _model()
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=MaskedSparseCrossentropy())
    before = _numpy(model.get_layer("decoder").weights[0])
    history = model.fit({"source_ids": SOURCE, "target_in_ids": TARGET_IN},
                        TARGET_OUT, batch_size=3, epochs=2, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)), losses
    assert losses[1] < losses[0], losses          # the same batch, twice
    assert not np.allclose(_numpy(model.get_layer("decoder").weights[0]), before)


def test_beam_search_through_the_front_door():
    model = _model()
    length, k = 5, 3
    nbest = tfa_migration.beam_translate(model, SOURCE, beam_width=k,
                                         max_length=length, num_return=k)
    shapes = {key: tuple(value.shape) for key, value in nbest.items()}
    assert shapes == {"tokens": (3, k, length), "scores": (3, k),
                      "log_probs": (3, k), "lengths": (3, k),
                      "attention": (3, k, length, SOURCE.shape[1])}
    scores = _numpy(nbest["scores"])
    assert np.all(np.diff(scores, axis=1) <= 1e-6), scores     # best first
    attention = _numpy(nbest["attention"])
    pad = np.broadcast_to((SOURCE == 0)[:, None, None, :], attention.shape)
    assert np.all(attention[pad] == 0)                         # PAD never attended
    greedy = tfa_migration.greedy_translate(model, SOURCE, max_length=length)
    beam1 = tfa_migration.beam_translate(model, SOURCE, beam_width=1,
                                         max_length=length)
    assert tuple(beam1["tokens"].shape) == (3, length)
    np.testing.assert_array_equal(_numpy(beam1["tokens"]), _numpy(greedy["tokens"]))
    np.testing.assert_allclose(_numpy(beam1["scores"]), _numpy(greedy["scores"]),
                               atol=1e-5)


# --- The reference: the equations in NumPy, float64 -----------------------

def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _lstm_step(x, h, c, kernel, recurrent, bias):
    """Keras' LSTMCell: gates i, f, c, o."""
    z = x @ kernel + h @ recurrent + bias
    i, f, g, o = np.split(z, 4, axis=-1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c), c


def _reference_first_step(weights, attention):
    """`(alpha_1 (B, S), logits_1 (B, V))` of the first target step.

    Encoder: h_s = LSTM over each row's real tokens from zero states.
    Decoder (AttentionWrapper's loop with the input fed back, a_0 = 0):
    h_1 = LSTM([E_y BOS; 0], (h_S, c_S)); alpha_1 = softmax over the real
    positions of h_1^T W_a h_s ("luong") or v^T tanh(W h_1 + U h_s)
    ("bahdanau"); a_1 = tanh(W_c [c_1; h_1]); logits = W_o a_1 + b_o.
    """
    w = {k: np.asarray(v, "float64") for k, v in weights.items()}
    batch, length = SOURCE.shape
    alphas, logits = np.zeros((batch, length)), np.zeros((batch, VOCAB))
    for b in range(batch):
        real = SOURCE[b][SOURCE[b] != 0]
        h, c = np.zeros(UNITS), np.zeros(UNITS)
        memory = []
        for token in real:
            h, c = _lstm_step(w["source_embedding/embeddings"][token], h, c,
                              w["encoder/lstm_cell/kernel"],
                              w["encoder/lstm_cell/recurrent_kernel"],
                              w["encoder/lstm_cell/bias"])
            memory.append(h)
        memory = np.stack(memory)                                # (S_b, n)
        x = np.concatenate([w["target_embedding/embeddings"][BOS], np.zeros(UNITS)])
        h1, _ = _lstm_step(x, h, c, w["decoder/lstm/kernel"],
                           w["decoder/lstm/recurrent_kernel"], w["decoder/lstm/bias"])
        if attention == "luong":
            scores = h1 @ w["decoder/attention/W_a"] @ memory.T  # (S_b,)
        else:
            scores = np.tanh(h1 @ w["decoder/attention/W_a"]
                             + memory @ w["decoder/attention/U_a"]) @ w["decoder/attention/v_a"]
        alpha = np.exp(scores - scores.max())
        alpha /= alpha.sum()
        context = alpha @ memory
        attentional = np.tanh(np.concatenate([context, h1]) @ w["decoder/attentional/kernel"])
        alphas[b, :len(real)] = alpha
        logits[b] = (attentional @ w["output_projection/kernel"]
                     + w["output_projection/bias"])
    return alphas, logits


@pytest.mark.parametrize("attention", ["luong", "bahdanau"])
def test_first_step_equals_the_numpy_equations(attention):
    model = _model(attention, seed=1)
    weights = {w.path: ops.convert_to_numpy(w) for w in model.weights}
    alpha, logits = _reference_first_step(weights, attention)
    state = model.encode(SOURCE)
    got_logits, _, got_alpha = model.step(
        ops.convert_to_tensor(np.full((3,), BOS, "int32")), state, 0)
    np.testing.assert_allclose(_numpy(got_alpha), alpha, atol=1e-5)
    np.testing.assert_allclose(_numpy(got_logits), logits, atol=1e-5)
    assert np.all(_numpy(got_alpha)[SOURCE == 0] == 0)           # exactly zero


def test_teacher_forced_logits_equal_a_loop_through_step():
    model = _model("luong", seed=2)
    forced = _numpy(model({"source_ids": SOURCE, "target_in_ids": TARGET_IN}))
    state = model.encode(SOURCE)
    real = TARGET_IN != 0
    for t in range(TARGET_IN.shape[1]):
        logits, state, _ = model.step(ops.convert_to_tensor(TARGET_IN[:, t]), state, t)
        np.testing.assert_allclose(forced[real[:, t], t], _numpy(logits)[real[:, t]],
                                   atol=1e-5)


def test_the_luong_variant_is_the_zoo_luong_nmt():
    """docs/migrating_from_tfa.md: `luong_nmt(preset="tiny", units=...,
    embedding_dim=...)` is the same model (its encoder is `encoder_1`)."""
    import kerattn

    port = _model("luong", seed=3)
    zoo = kerattn.zoo.luong_nmt(VOCAB, VOCAB, preset="tiny", units=UNITS,
                                embedding_dim=EMBED)
    weights = {w.path.replace("encoder/", "encoder_1/"): w for w in port.weights}
    assert sorted(weights) == sorted(w.path for w in zoo.weights)
    for w in zoo.weights:
        w.assign(weights[w.path])
    inputs = {"source_ids": SOURCE, "target_in_ids": TARGET_IN}
    np.testing.assert_allclose(_numpy(zoo(inputs)), _numpy(port(inputs)), atol=1e-5)


def test_the_loss_is_sequence_loss_default_reduction():
    """tfa's `sequence_loss` defaults (average across timesteps and batch):
    `sum(crossent * w) / sum(w)`, written here in NumPy."""
    rng = np.random.default_rng(4)
    logits = rng.normal(size=TARGET_OUT.shape + (VOCAB,)).astype("float32")
    weights = (rng.uniform(size=TARGET_OUT.shape) * (TARGET_OUT != 0)).astype("float32")
    log_p = logits - np.log(np.exp(logits.astype("float64")).sum(-1, keepdims=True))
    crossent = -np.take_along_axis(log_p, TARGET_OUT[..., None], -1)[..., 0]
    for w in (weights, (TARGET_OUT != 0).astype("float32")):
        expected = (crossent * w).sum() / w.sum()
        got = MaskedSparseCrossentropy()(TARGET_OUT, logits, sample_weight=w)
        np.testing.assert_allclose(float(_numpy(got)), expected, rtol=1e-5)


def test_every_kerattn_name_on_the_page_exists():
    """Each dotted `kerattn.` name of docs/migrating_from_tfa.md imports,
    each `AttentionRNN.x`-style attribute exists, and the keyword arguments
    the page gives the replacements are theirs."""
    import importlib
    import inspect
    import re

    import kerattn

    page = os.path.join(os.path.dirname(os.path.dirname(SCRIPT)), "docs",
                        "migrating_from_tfa.md")
    with open(page, encoding="utf-8") as f:
        text = f.read()
    names = set(re.findall(r"kerattn(?:\.\w+)+", text))
    assert len(names) > 20, sorted(names)
    for name in sorted(names):
        parts = name.split(".")
        obj, k = None, len(parts)
        while obj is None:
            try:
                obj = importlib.import_module(".".join(parts[:k]))
            except ImportError:
                k -= 1
        for attr in parts[k:]:
            assert hasattr(obj, attr), f"{name}: no {attr!r}"
            obj = getattr(obj, attr)
    classes = {"AttentionRNN": kerattn.layers.AttentionRNN,
               "AttentionRNNCell": kerattn.layers.AttentionRNNCell,
               "GenerativeModel": kerattn.zoo.GenerativeModel}
    for cls, attr in set(re.findall(r"\b(AttentionRNN|AttentionRNNCell|"
                                    r"GenerativeModel)\.(\w+)", text)):
        assert hasattr(classes[cls], attr), f"{cls}.{attr}"
    keywords = {
        kerattn.layers.AttentionRNN: ["cell", "order", "input_feeding",
                                      "attentional_units", "num_layers",
                                      "attentional_layer"],
        kerattn.layers.AttentionRNN.call: ["memory_mask", "initial_state",
                                           "return_attention_scores",
                                           "attention_mode"],
        kerattn.layers.BaseAttention.call: ["value_mask", "return_attention_scores"],
        kerattn.layers.BahdanauAttention: ["units", "normalize", "kernel_initializer"],
        kerattn.layers.LuongAttention: ["score", "scale"],
        kerattn.layers.HardMonotonicAttention: ["units", "energy", "scale", "noise_std",
                                                "seed", "score_bias_init"],
        kerattn.layers.monotonic_alignment: ["p_choose", "previous", "mode"],
        kerattn.decoding.generate: ["strategy", "max_length", "num_return"],
        kerattn.decoding.beam_search: ["beam_width", "length_penalty",
                                       "coverage_penalty", "min_length",
                                       "no_repeat_ngram_size", "num_return"],
        kerattn.decoding.sample: ["temperature", "seed", "top_k", "top_p"],
        kerattn.losses.MaskedSparseCrossentropy: ["label_smoothing"],
    }
    for function, expected in keywords.items():
        parameters = inspect.signature(function).parameters
        missing = [k for k in expected if k not in parameters]
        assert not missing, f"{function.__qualname__}: no {missing}"
