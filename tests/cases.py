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
