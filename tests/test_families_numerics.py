"""Second-wave layers in float16 / bfloat16, with fully masked rows."""

import keras
import numpy as np
import pytest

from cases import lengths_mask, to_numpy
from kerattn import layers


def _f(x, dtype):
    return keras.ops.cast(x, dtype)


def _mixed(dtype):
    return "float32" if dtype == "float32" else f"mixed_{dtype}"


def _check(out, empty_index):
    out = to_numpy(keras.ops.cast(out, "float32"))
    assert np.all(np.isfinite(out))
    assert np.all(out[empty_index] == 0)
    return out


CASES = {
    "local_m": lambda d, q, v, m: layers.LocalAttention(
        "monotonic", 2, dtype=d)(q, v, value_mask=m),
    "local_p": lambda d, q, v, m: layers.LocalAttention(
        "predictive", 2, dtype=d)(q, v, value_mask=m),
    "soft_visual": lambda d, q, v, m: layers.SoftVisualAttention(
        3, gating=False, dtype=d)(q, v, value_mask=m),
    "hard_visual": lambda d, q, v, m: layers.HardVisualAttention(
        3, gating=False, dtype=d, seed=0)(q, v, value_mask=m, training=True),
    "aoa": lambda d, q, v, m: layers.AttentionOverAttention(dtype=d)(
        v, q, document_mask=m),
    "multi_step": lambda d, q, v, m: layers.MultiStepAttention(dtype=d)(
        q * 0, q, v, v, source_mask=m),
    "pooling": lambda d, q, v, m: layers.AttentionPooling(3, dtype=d)(v, mask=m),
    "restricted": lambda d, q, v, m: layers.RestrictedSelfAttention(
        2, dtype=d)(v, mask=m),
    # Recurrent layers under the mixed policy (float32 variables), as users
    # run them: Keras' orthogonal initializer of the recurrent kernel needs a
    # QR decomposition that no backend offers in float16 / bfloat16.
    "attention_rnn": lambda d, q, v, m: layers.AttentionRNN(
        4, layers.BahdanauAttention(3), dtype=_mixed(d))(q, v, memory_mask=m)[
        ..., 4:],  # the context part: zero for an empty source
}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_empty_rows_are_zero_and_finite(name, dtype):
    rng = np.random.default_rng(0)
    q = _f(rng.standard_normal((2, 3, 4)).astype("float32"), dtype)
    v = _f(rng.standard_normal((2, 6, 4)).astype("float32"), dtype)
    m = lengths_mask([6, 0], 6)  # example 1 has nothing to attend to
    out = CASES[name](dtype, q, v, m)
    assert keras.backend.standardize_dtype(out.dtype) == dtype
    out = _check(out, 1)
    assert np.abs(out[0]).sum() > 0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_han_low_precision_empty_document(dtype):
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype("float32")
    mask = np.ones((2, 3, 4), bool)
    mask[1] = False
    # Mixed policy: see the comment on "attention_rnn" above.
    v = layers.HierarchicalAttention(3, 2, dtype=_mixed(dtype))(
        _f(x, dtype), mask=mask)
    assert keras.backend.standardize_dtype(v.dtype) == dtype
    _check(v, 1)
