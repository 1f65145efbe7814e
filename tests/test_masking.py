"""Masks on every attention layer: padding, empty rows, implicit masks, dtypes."""

import keras
import numpy as np
import pytest

from cases import ALL_CASES, SINGLE_HEAD_CASES, lengths_mask, to_numpy

CASES = sorted(ALL_CASES)


def _inputs(name, rng, batch=3, tq=4, tv=7, dtype="float32"):
    _, dq, dv = ALL_CASES[name]
    q = rng.standard_normal((batch, tq, dq)).astype(dtype)
    v = rng.standard_normal((batch, tv, dv)).astype(dtype)
    return q, v


def _weights_per_query(w):
    """(batch, Tq, Tv) from either layout; heads folded into the batch."""
    w = to_numpy(w).astype("float32")
    if w.ndim == 4:
        w = w.reshape(-1, *w.shape[2:])
    return w


@pytest.mark.parametrize("name", CASES)
def test_padded_keys_get_exactly_zero_weight(name):
    rng = np.random.default_rng(0)
    q, v = _inputs(name, rng)
    v_mask = lengths_mask([7, 3, 5], 7)
    layer = ALL_CASES[name][0]()
    out, w = layer(q, v, value_mask=v_mask, return_attention_scores=True)
    w_np = to_numpy(w)
    heads = w_np.ndim == 4
    mask = v_mask[:, None, None, :] if heads else v_mask[:, None, :]
    mask = np.broadcast_to(mask, w_np.shape)
    assert np.all(w_np[~mask] == 0.0)
    np.testing.assert_allclose(w_np.sum(-1), 1.0, atol=1e-5)
    # Changing padded values does not change the output.
    v2 = v.copy()
    v2[~v_mask] = 100.0
    out2 = layer(q, v2, value_mask=v_mask)
    np.testing.assert_allclose(to_numpy(out2), to_numpy(out), atol=1e-5)


@pytest.mark.parametrize("name", CASES)
def test_fully_masked_rows_are_zero_not_nan(name):
    rng = np.random.default_rng(1)
    q, v = _inputs(name, rng)
    v_mask = lengths_mask([7, 0, 5], 7)  # example 1: an empty source
    q_mask = lengths_mask([4, 4, 2], 4)  # example 2: two padded queries
    layer = ALL_CASES[name][0]()
    for scores in (True, False):
        result = layer(
            q,
            v,
            query_mask=q_mask,
            value_mask=v_mask,
            return_attention_scores=scores,
        )
        out = to_numpy(result[0] if scores else result)
        assert not np.isnan(out).any()
        assert np.all(out[1] == 0)
        assert np.all(out[2, 2:] == 0)
        assert np.abs(out[0]).sum() > 0
        if scores:
            w = to_numpy(result[1])
            assert not np.isnan(w).any()
            assert np.all(w[1] == 0)


@pytest.mark.parametrize("name", CASES)
def test_gradients_finite_with_empty_rows(name):
    rng = np.random.default_rng(2)
    q, v = _inputs(name, rng)
    v_mask = lengths_mask([7, 0, 5], 7)
    layer = ALL_CASES[name][0]()
    inputs = keras.Input(q.shape[1:]), keras.Input(v.shape[1:])
    mask_in = keras.Input((7,), dtype="bool")
    # Trainable layers on both sides, so gradients pass through attention.
    query = keras.layers.Dense(q.shape[-1])(inputs[0])
    value = keras.layers.Dense(v.shape[-1])(inputs[1])
    out = layer(query, value, value_mask=mask_in)
    model = keras.Model([*inputs, mask_in], out)
    model.compile(optimizer="sgd", loss="mse")
    target = np.ones(model.output_shape[1:], "float32")[None].repeat(3, 0)
    model.fit([q, v, v_mask], target, epochs=1, verbose=0, batch_size=3)
    for w in model.weights:
        assert np.all(np.isfinite(to_numpy(w))), w.path


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", CASES)
def test_low_precision_masking_constant(name, dtype):
    rng = np.random.default_rng(3)
    q, v = _inputs(name, rng)
    v_mask = lengths_mask([7, 0, 2], 7)
    layer = ALL_CASES[name][0]()
    layer.__init__(**{**layer.get_config(), "dtype": dtype})
    out, w = layer(
        keras.ops.cast(q, dtype),
        keras.ops.cast(v, dtype),
        value_mask=v_mask,
        return_attention_scores=True,
    )
    assert keras.backend.standardize_dtype(out.dtype) == dtype
    out, w = to_numpy(keras.ops.cast(out, "float32")), _weights_per_query(w)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(w))
    assert np.all(out[1] == 0)
    w = w.reshape(3, -1, 7)  # heads (if any) folded into the query axis
    assert np.all(w[2][:, 2:] == 0)
    np.testing.assert_allclose(w[0].sum(-1), 1.0, atol=2e-2)


@pytest.mark.parametrize("name", CASES)
def test_implicit_keras_mask_from_embedding(name):
    """Embedding(mask_zero=True) masks flow in without explicit masks."""
    _, dq, dv = ALL_CASES[name]
    q_ids = keras.Input((None,), dtype="int32")
    v_ids = keras.Input((None,), dtype="int32")
    q = keras.layers.Embedding(20, dq, mask_zero=True)(q_ids)
    v = keras.layers.Embedding(20, dv, mask_zero=True)(v_ids)
    layer = ALL_CASES[name][0]()
    out, w = layer(q, v, return_attention_scores=True)
    model = keras.Model([q_ids, v_ids], [out, w])
    src = np.array([[3, 4, 5, 6, 0, 0], [7, 0, 0, 0, 0, 0]], "int32")
    tgt = np.array([[1, 2, 0], [4, 5, 6]], "int32")
    out, w = (to_numpy(x) for x in model.predict([tgt, src], verbose=0))
    w = w if w.ndim == 3 else w[:, 0]
    assert np.all(w[0, :, 4:] == 0) and np.all(w[1, :, 1:] == 0)
    assert np.all(w[0, 2] == 0) and np.all(out[0, 2] == 0)  # padded query
    np.testing.assert_allclose(w[1].sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("name", sorted(SINGLE_HEAD_CASES))
def test_causal_masks_future(name):
    rng = np.random.default_rng(4)
    _, dq, _ = ALL_CASES[name]
    x = rng.standard_normal((2, 5, dq)).astype("float32")
    layer = ALL_CASES[name][0]()
    layer.causal = True
    _, w = layer(x, x, return_attention_scores=True)
    w = to_numpy(w)
    assert np.all(w[:, np.triu(np.ones((5, 5), bool), k=1)] == 0)


# --- One mask rule (Keras'): nonzero attends, whatever the dtype -------------

def _halves(mask):
    """The same mask as floats: 0.5 where it attends, 0 where it does not."""
    return np.where(mask, 0.5, 0.0).astype("float32")


@pytest.mark.parametrize("name", CASES)
def test_a_float_mask_of_one_half_attends(name):
    """Keras' rule (`keras.layers.Attention`): only 0 masks, so a float mask
    of 0.5 gives the boolean mask's output and weights."""
    rng = np.random.default_rng(3)
    q, v = _inputs(name, rng)
    v_mask = lengths_mask([4, 7, 2], 7)
    q_mask = lengths_mask([3, 4, 1], 4)
    layer = ALL_CASES[name][0]()
    want, w_want = layer(q, v, query_mask=q_mask, value_mask=v_mask,
                         return_attention_scores=True)
    got, w_got = layer(q, v, query_mask=_halves(q_mask),
                       value_mask=_halves(v_mask), return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-6)
    np.testing.assert_allclose(to_numpy(w_got), to_numpy(w_want), atol=1e-6)


def _keras_attention_rule(q, v, v_mask):
    """`keras.layers.Attention` on the float mask: the rule's reference."""
    out = keras.layers.Attention()([q, v], mask=[None, v_mask])
    return to_numpy(out)


def test_keras_own_attention_reads_one_half_as_attend():
    rng = np.random.default_rng(4)
    q, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))
    v_mask = lengths_mask([5, 2], 5)
    np.testing.assert_allclose(_keras_attention_rule(q, v, _halves(v_mask)),
                               _keras_attention_rule(q, v, v_mask), atol=1e-6)


@pytest.mark.parametrize("cell, order", [("gru", "bahdanau"), ("lstm", "luong")])
def test_attention_rnn_reads_masks_by_the_same_rule(cell, order):
    from kerattn.layers import AttentionRNN, BahdanauAttention

    rng = np.random.default_rng(5)
    y = rng.standard_normal((3, 4, 5)).astype("float32")
    memory = rng.standard_normal((3, 6, 8)).astype("float32")
    m_mask, y_mask = lengths_mask([2, 6, 4], 6), lengths_mask([4, 1, 3], 4)
    layer = AttentionRNN(8, BahdanauAttention(5), cell=cell, order=order)
    want = layer(y, memory, inputs_mask=y_mask, memory_mask=m_mask)
    got = layer(y, memory, inputs_mask=_halves(y_mask),
                memory_mask=_halves(m_mask))
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), atol=1e-6)


def test_convs2s_layers_read_masks_by_the_same_rule():
    from kerattn.layers import GLUConvBlock, MultiStepAttention

    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 6, 8)).astype("float32")
    mask = lengths_mask([6, 2, 4], 6)
    block = GLUConvBlock(8, 3)
    np.testing.assert_allclose(to_numpy(block(x, mask=_halves(mask))),
                               to_numpy(block(x, mask=mask)), atol=1e-6)
    h, g = (rng.standard_normal((3, 4, 8)).astype("float32") for _ in range(2))
    z, e = (rng.standard_normal((3, 6, 8)).astype("float32") for _ in range(2))
    attention = MultiStepAttention()
    want = attention(h, g, z, e, source_mask=mask, return_attention_scores=True)
    got = attention(h, g, z, e, source_mask=_halves(mask),
                    return_attention_scores=True)
    assert len(got) == len(want) == 2   # outputs and scores
    for a, b in zip(got, want):
        np.testing.assert_allclose(to_numpy(a), to_numpy(b), atol=1e-6)


def test_reverse_sequence_and_the_penalty_read_masks_by_the_same_rule():
    from kerattn.layers import ReverseSequence, doubly_stochastic_penalty

    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 5, 2)).astype("float32")
    mask = lengths_mask([5, 2, 3], 5)
    layer = ReverseSequence()
    np.testing.assert_allclose(to_numpy(layer(x, mask=_halves(mask))),
                               to_numpy(layer(x, mask=mask)))
    alphas = rng.uniform(0, 1, (3, 5, 4)).astype("float32")
    locations = lengths_mask([4, 3, 1], 4)
    want = doubly_stochastic_penalty(alphas, step_mask=mask,
                                     location_mask=locations)
    got = doubly_stochastic_penalty(alphas, step_mask=_halves(mask),
                                    location_mask=_halves(locations))
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=1e-6)
