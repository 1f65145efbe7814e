"""Shared helpers of the test suite: NumPy references and layer cases."""

import keras
import numpy as np

from kerattn import layers


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)


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
