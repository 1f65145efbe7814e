"""Shared helpers of the test suite: NumPy references and layer cases."""

import contextlib

import keras
import numpy as np
import pytest

from kerattn import layers


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)


def _initializer_classes(cls=keras.initializers.Initializer):
    yield cls
    for sub in cls.__subclasses__():
        yield from _initializer_classes(sub)


@contextlib.contextmanager
def zero_weights():
    """Every weight built inside starts at zero: no `Initializer` runs.

    For the structure tests that build a model at its paper's size only to
    read its sizes: the initializers were most of their time (an orthogonal
    initializer's QR factorisation of each 1000 x 4000 recurrent kernel,
    and on JAX a compile for each new shape). Every subclass of
    `keras.initializers.Initializer` defined when the block starts
    returns NumPy zeros of the shape and dtype asked for, until the block
    ends (a plain function given as an initializer still runs)."""
    def zeros(self, shape, dtype=None, **kwargs):
        return np.zeros(shape, dtype or keras.config.floatx())

    with pytest.MonkeyPatch.context() as patch:
        for cls in set(_initializer_classes()):
            patch.setattr(cls, "__call__", zeros)
        yield


def np_masked_softmax(scores, mask=None):
    """Softmax over the last axis; masked positions 0, empty rows all 0."""
    if mask is None:
        mask = np.ones(scores.shape, bool)
    mask = np.broadcast_to(mask, scores.shape)
    e = np.where(mask, scores.astype(np.float64), -np.inf)
    top = e.max(-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    w = np.where(mask, np.exp(e - top), 0.0)
    total = w.sum(-1, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0)


def lengths_mask(lengths, maxlen):
    return np.arange(maxlen)[None, :] < np.asarray(lengths)[:, None]


def random_inputs(rng, batch=3, tq=5, tv=7, dq=6, dv=6, dtype="float32"):
    q = rng.standard_normal((batch, tq, dq)).astype(dtype)
    v = rng.standard_normal((batch, tv, dv)).astype(dtype)
    return q, v


# name -> (factory, query_dim, value_dim); every single-head attention layer
# of the library with the input sizes it accepts.
SINGLE_HEAD_CASES = {
    "bahdanau": (lambda: layers.BahdanauAttention(units=5), 6, 4),
    "bahdanau_normalized": (
        lambda: layers.BahdanauAttention(units=5, normalize=True),
        6,
        4,
    ),
    "luong_dot": (lambda: layers.LuongAttention("dot"), 4, 4),
    "luong_general": (lambda: layers.LuongAttention("general"), 6, 4),
    "luong_concat": (lambda: layers.LuongAttention("concat", units=5), 6, 4),
    "luong_location": (
        lambda: layers.LuongAttention("location", max_length=9),
        6,
        4,
    ),
    "scaled_dot_product": (lambda: layers.ScaledDotProductAttention(), 4, 4),
}

ALL_CASES = dict(SINGLE_HEAD_CASES)
ALL_CASES["multi_head"] = (
    lambda: layers.MultiHeadAttention(num_heads=2, key_dim=3),
    6,
    4,
)


# --- Shared checks of the recurrent decoders' attentions ----------------------

def check_long_padded_pass(decoder, sums_to_one=True, length=2000, seed=2):
    """One `AttentionRNN` pass over `length` source positions (rows of 1,500,
    `length` and 0 real positions; 2, 3 and 3 target steps): every output
    and weight finite, padding and the empty row weightless, and (with
    `sums_to_one`) each real row's weights summing to 1 at its first two
    steps, to bfloat16's precision. Returns `(outputs, weights, final
    state or None)` as float32 NumPy (the state as the decoder gives it)."""
    rng = np.random.default_rng(seed)
    mask = lengths_mask([1500, length, 0], length)
    result = decoder(rng.standard_normal((3, 3, 4)).astype("float32"),
                     rng.standard_normal((3, length, 6)).astype("float32"),
                     inputs_mask=lengths_mask([2, 3, 3], 3), memory_mask=mask,
                     return_attention_scores=True)
    out, final, weights = (result if len(result) == 3
                           else (result[0], None, result[1]))
    out, weights = (to_numpy(x).astype("float32") for x in (out, weights))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    assert np.all(weights[~np.broadcast_to(mask[:, None], weights.shape)] == 0)
    assert np.all(weights[2] == 0)
    if sums_to_one:
        np.testing.assert_allclose(weights[:2, :2].sum(-1), 1.0, atol=2e-2)
    return out, weights, final


def check_steps_equal_pass(decoder, inputs, memory, memory_mask, outputs, weights,
                           inputs_mask=None, initial_state=None, atol=1e-5):
    """`decoder.step()` from `get_initial_state`, one target step at a time,
    equals `outputs` and `weights` (`(batch, T, ...)`: the full pass's, or
    a NumPy reference) on every real step of `inputs_mask` (every step when
    None). Returns the states after each step."""
    outputs, weights = to_numpy(outputs), to_numpy(weights)
    batch, steps = inputs.shape[:2]
    real = (np.ones((batch, steps), bool) if inputs_mask is None
            else np.asarray(inputs_mask, bool))
    cache = decoder.precompute(memory, memory_mask)
    states = decoder.get_initial_state(batch, initial_state, cache)
    seen = []
    for t in range(steps):
        step_out, states, step_w = decoder.step(inputs[:, t], states, cache)
        rows = real[:, t]
        np.testing.assert_allclose(to_numpy(step_out)[rows], outputs[rows, t],
                                   atol=atol, err_msg=f"output at step {t}")
        np.testing.assert_allclose(to_numpy(step_w)[rows], weights[rows, t],
                                   atol=atol, err_msg=f"weights at step {t}")
        seen.append(states)
    return seen


def check_keras_round_trip(decoder, path, seed=3):
    """A functional model around `decoder` (inputs of 3 features, a memory
    of 5 and its mask) gives the same outputs after `.keras` save and load,
    and its attention's config survives `from_config`. Returns that
    config."""
    rng = np.random.default_rng(seed)
    y_in, m_in = keras.Input((None, 3)), keras.Input((None, 5))
    mask_in = keras.Input((None,), dtype="bool")
    model = keras.Model([y_in, m_in, mask_in],
                        decoder(y_in, m_in, memory_mask=mask_in))
    x = [rng.standard_normal((2, 4, 3)).astype("float32"),
         rng.standard_normal((2, 6, 5)).astype("float32"), lengths_mask([3, 6], 6)]
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(to_numpy(model(x)), to_numpy(loaded(x)), atol=1e-6)
    config = decoder.attention.get_config()
    assert type(decoder.attention).from_config(config).get_config() == config
    assert type(loaded.layers[-1].attention) is type(decoder.attention)
    return config


def check_beam_carries_attention_state(attention, seed=4, boost=3.0, width=8,
                                       max_length=5, check=True):
    """A pure beam as wide as every prefix over a tiny GRU decoder whose
    logits read `attention`'s context (its weights scaled by `boost`, so
    that its state moves the scores): each hypothesis gets the score of
    the model run along that sequence alone, so each took its parent's
    attention state with it; and a search that leaves the attention's
    state out of the reorder (each row keeping the state of the hypothesis
    that was there before) scores some of them wrong."""
    from kerattn.decoding import beam_search

    rng = np.random.default_rng(seed)
    keras.utils.set_random_seed(seed)
    vocab, S, BOS, EOS, PAD = 5, 6, 1, 2, 0
    decoder = layers.AttentionRNN(6, attention, cell="gru")
    embed = (2.0 * rng.standard_normal((vocab, 3))).astype("float32")
    memory = (3.0 * rng.standard_normal((1, S, 5))).astype("float32")
    decoder(embed[None, :2], memory)
    # Every weight drawn here, not by the backend: the same model on each.
    attention_ids = {id(v) for v in decoder.attention.trainable_variables}
    for variable in decoder.trainable_variables:
        scale = boost if id(variable) in attention_ids else 0.5
        variable.assign((scale * rng.standard_normal(tuple(variable.shape)))
                        .astype(keras.backend.standardize_dtype(variable.dtype)))
    readout = (2.0 * rng.standard_normal((6 + 5, vocab))).astype("float32")
    cache = decoder.precompute(memory)
    # EOS made unlikely: the best hypotheses are long ones, whose late
    # steps read the state of their own earlier steps.
    eos_unlikely = keras.ops.convert_to_tensor(
        np.where(np.arange(vocab) == EOS, -3.0, 0.0).astype("float32"))

    def step(tokens, state, index):
        out, new, _ = decoder.step(keras.ops.take(embed, tokens, axis=0),
                                   state["states"], state["cache"])
        return (keras.ops.matmul(out, readout) + eos_unlikely,
                {"cache": state["cache"], "states": new}, None)

    def start():
        return {"cache": cache, "states": decoder.get_initial_state(1, cache=cache)}

    def score_alone(seq):
        state, total, previous = start(), 0.0, BOS
        for token in seq:
            logits, state, _ = step(np.array([previous]), state, 0)
            logits = to_numpy(logits)[0].astype("float64")
            logits[[PAD, BOS]] = -np.inf
            top = logits.max()
            total += logits[token] - top - np.log(np.exp(logits - top).sum())
            previous = token
        return total

    def scores_and_errors(step_fn, first, invariant=()):
        out = beam_search(step_fn, first, 1, BOS, EOS, PAD, beam_width=width,
                          max_length=max_length, length_penalty=0.0,
                          num_return=width, beam_invariant=invariant)
        tokens, lengths = to_numpy(out["tokens"])[0], to_numpy(out["lengths"])[0]
        scores = to_numpy(out["log_probs"])[0]
        return [abs(scores[k] - score_alone(tuple(tokens[k, :lengths[k]])))
                for k in range(width)]

    right = scores_and_errors(step, start())

    def split_step(tokens, state, index):
        logits, new, _ = step(tokens, {"cache": state["cache"], "states": {
            **state["states"], "attention": state["attention"]}}, index)
        states = dict(new["states"])
        return logits, {"cache": state["cache"], "states": states,
                        "attention": states.pop("attention")}, None

    states = dict(start()["states"])
    first = {"cache": cache, "states": states, "attention": states.pop("attention")}
    wrong = scores_and_errors(split_step, first, ("attention",))
    if not check:
        return right, wrong
    np.testing.assert_allclose(right, 0.0, atol=1e-4)
    assert max(wrong) > 1e-3, wrong
