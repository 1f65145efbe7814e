"""`probability_fn` of `BahdanauAttention` and `LuongAttention` (TensorFlow
Addons' argument): hardmax and sparsemax against NumPy written from their
definitions (sparsemax: Martins and Astudillo 2016, Algorithm 1, a loop
over the sorted scores), with padding, a fully padded row, ties,
gradients, inside `AttentionRNN` (step equals full pass), configs, bad
input."""

import keras
import numpy as np
import pytest

from cases import lengths_mask, to_numpy, check_steps_equal_pass
from kerattn.layers import (AttentionRNN, BahdanauAttention,
                            LocationSensitiveAttention, LuongAttention)
from kerattn.layers import attention_utils as utils


def np_sparsemax(z):
    """Martins and Astudillo (2016), Algorithm 1, for one vector."""
    ordered = sorted(z, reverse=True)
    k_z, running = 0, 0.0
    for k, value in enumerate(ordered, start=1):
        running += value
        if 1 + k * value > running:
            k_z, support_sum = k, running
    tau = (support_sum - 1) / k_z
    return np.maximum(np.asarray(z) - tau, 0.0)


def np_normalize(scores, mask, fn):
    out = np.zeros_like(scores, dtype="float64")
    for index in np.ndindex(scores.shape[:-1]):
        real = mask[index[0]]
        if not real.any():
            continue
        z = scores[index][real].astype("float64")
        if fn == "hardmax":
            w = np.eye(len(z))[np.argmax(z)]
        else:
            w = np_sparsemax(z)
        out[index][real] = w
    return out


@pytest.mark.parametrize("fn", ["hardmax", "sparsemax"])
def test_the_weights_equal_numpy(fn):
    rng = np.random.default_rng(0)
    scores = (2 * rng.standard_normal((4, 3, 6))).astype("float32")
    scores[2, 1, :2] = 5.0                        # a tie: the first wins
    mask = lengths_mask([4, 6, 3, 0], 6)[:, None, :]
    got = to_numpy(utils.normalize(scores, mask, fn))
    want = np_normalize(scores, mask[:, 0], fn)
    np.testing.assert_allclose(got, want, atol=1e-6)
    real = mask[:, 0].any(-1)
    np.testing.assert_allclose(got[real].sum(-1), 1.0, atol=1e-6)
    assert np.all(got[~real] == 0) and np.all(got[np.broadcast_to(~mask, got.shape)] == 0)
    if fn == "sparsemax":   # sparse: some real positions exactly 0
        assert np.any((got == 0) & np.broadcast_to(mask, got.shape))


def test_sparsemax_gradient_is_finite_and_matches_the_jacobian():
    """Martins and Astudillo's eq. 13: d sparsemax / dz = diag(s) - s s^T / |S|
    on the support S (`s` its indicator); padding and an empty row give
    zeros, never NaN."""
    z = np.array([[1.2, 0.9, -1.0, 0.3, 2.0]], "float32")
    mask = np.array([[True, True, True, True, False]])
    up = np.array([[0.3, -1.0, 2.0, 0.5, 1.0]], "float32")
    up_t = keras.ops.convert_to_tensor(up)
    grad = to_numpy(_grad(lambda x: keras.ops.sum(utils.masked_sparsemax(x, mask) * up_t), z))
    p = np_sparsemax(z[0, :4])
    s = (p > 0).astype("float64")
    jac = np.diag(s) - np.outer(s, s) / s.sum()
    np.testing.assert_allclose(grad[0, :4], up[0, :4] @ jac, atol=1e-5)
    assert grad[0, 4] == 0
    empty = _grad(lambda x: keras.ops.sum(utils.masked_sparsemax(x, ~mask[:, :1].repeat(5, 1))), z)
    assert np.all(np.isfinite(to_numpy(empty)))


def _grad(fn, x):
    backend = keras.backend.backend()
    if backend == "jax":
        import jax
        return jax.grad(fn)(x)
    if backend == "tensorflow":
        import tensorflow as tf
        x = tf.convert_to_tensor(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.gradient(y, x)
    import torch
    x = torch.tensor(x, requires_grad=True)
    fn(x).backward()
    return x.grad.detach()


@pytest.mark.parametrize("fn", ["hardmax", "sparsemax"])
@pytest.mark.parametrize("make", [lambda fn: BahdanauAttention(5, probability_fn=fn),
                                  lambda fn: LuongAttention("general", probability_fn=fn)],
                         ids=["bahdanau", "luong"])
def test_layers_and_the_decoder_use_it(make, fn):
    """The layer's weights are the chosen function of its softmax-free
    scores (the same layer with "softmax" gives the scores' softmax); in
    `AttentionRNN` the full pass equals the steps; the config keeps it."""
    rng = np.random.default_rng(1)
    q, v = rng.standard_normal((3, 4, 6)).astype("float32"), \
        rng.standard_normal((3, 7, 6)).astype("float32")
    mask = lengths_mask([5, 7, 2], 7)
    layer = make(fn)
    _, weights = layer(q, v, value_mask=mask, return_attention_scores=True)
    key = layer.project_key(v) if hasattr(layer, "project_key") else v
    scores = to_numpy(layer._calculate_scores(keras.ops.convert_to_tensor(q), key))
    np.testing.assert_allclose(to_numpy(weights), np_normalize(scores, mask, fn), atol=1e-5)
    config = layer.get_config()
    assert config["probability_fn"] == fn
    assert type(layer).from_config(config).probability_fn == fn
    decoder = AttentionRNN(8, make(fn), order="luong")
    y = rng.standard_normal((3, 4, 3)).astype("float32")
    t_mask = lengths_mask([2, 4, 3], 4)
    out, al = decoder(y, v, inputs_mask=t_mask, memory_mask=mask,
                      return_attention_scores=True)
    check_steps_equal_pass(decoder, y, v, mask, out, al, t_mask)


def test_softmax_configs_are_as_before():
    """The default writes no `probability_fn` (files saved before it load
    the same, and write the same)."""
    assert "probability_fn" not in BahdanauAttention(4).get_config()
    assert "probability_fn" not in LuongAttention("dot").get_config()


@pytest.mark.parametrize("make, match", [
    (lambda: BahdanauAttention(4, probability_fn="argmax"), "`probability_fn`"),
    (lambda: LuongAttention("dot", probability_fn=None), "`probability_fn`"),
    (lambda: LocationSensitiveAttention(4, probability_fn="sparsemax"), "`probability_fn`"),
])
def test_bad_choices_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()
