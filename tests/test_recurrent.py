"""kerattn's `GRU` / `LSTM` (the encoder's loop) against Keras' own layers.

The reference is Keras' `keras.layers.GRU` / `LSTM` / `Bidirectional` with
the same weights (random, not the initial ones), on every backend:
outputs, last output and states, with masks whose first row is the
shortest, masks with a hole in a row and a fully padded row (the fused
path refuses those), `go_backwards`, both `zero_output_for_mask` settings,
given initial states, both GRU forms; stacked and two-way encoders; the
gradients (one SGD step with learning rate 1 moves each weight by minus its
gradient). On torch, the fused kernel against the generic loop, and which of
the two ran.
"""

import itertools

import keras
import numpy as np
import pytest

from cases import to_numpy
from kerattn.layers import GRU, LSTM
from kerattn.layers.recurrent import FastRecurrentLoop

TORCH = keras.backend.backend() == "torch"
T, D, U = 6, 4, 5
LENGTHS = [2, 6, 4]           # the shortest row first


def masks():
    right = np.arange(T)[None] < np.array(LENGTHS)[:, None]
    holes = right.copy()
    holes[1, 2] = False
    empty = right.copy()
    empty[2] = False
    return {"none": None, "right": right, "holes": holes, "empty_row": empty}


def inputs(seed=0):
    return np.random.default_rng(seed).normal(size=(3, T, D)).astype("float32")


def share_random_weights(a, b, seed):
    """The same random weights (not the initial ones) in `a` and `b`."""
    rng = np.random.default_rng(seed)
    weights = [rng.normal(scale=0.5, size=w.shape).astype("float32")
               for w in a.get_weights()]
    a.set_weights(weights)
    b.set_weights(weights)
    return weights


def padded_ids(rng):
    """Token ids `(3, T)` padded to `LENGTHS`, the shortest row first."""
    ids = rng.integers(1, 9, (3, T)).astype("int32")
    ids[np.arange(T)[None] >= np.array(LENGTHS)[:, None]] = 0
    return ids


def pair(kind, seed=1, **kwargs):
    """A kerattn layer and Keras' own, built, holding the same random weights."""
    ours, keras_cls = {"gru": (GRU, keras.layers.GRU),
                       "gru_v1": (GRU, keras.layers.GRU),
                       "lstm": (LSTM, keras.layers.LSTM)}[kind]
    if kind == "gru_v1":
        kwargs["reset_after"] = False
    a, b = ours(U, **kwargs), keras_cls(U, **kwargs)
    a(inputs()), b(inputs())
    share_random_weights(a, b, seed)
    return a, b


def assert_same(ours, theirs, atol):
    ours = ours if isinstance(ours, (list, tuple)) else [ours]
    theirs = theirs if isinstance(theirs, (list, tuple)) else [theirs]
    assert len(ours) == len(theirs)
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(to_numpy(x), to_numpy(y), atol=atol, rtol=0)


@pytest.mark.parametrize("kind,go_backwards,zero_output", list(itertools.product(
    ["gru", "gru_v1", "lstm"], [False, True], [False, True])))
def test_equals_keras_layer(kind, go_backwards, zero_output):
    # The fused kernel's sums run in another order: 1e-5 where it runs.
    atol = 1e-5 if TORCH and kind != "gru_v1" else 1e-6
    x = inputs()
    for return_sequences in (True, False):
        a, b = pair(kind, return_sequences=return_sequences, return_state=True,
                    go_backwards=go_backwards, zero_output_for_mask=zero_output)
        rng = np.random.default_rng(2)
        states = [rng.normal(size=(3, U)).astype("float32")
                  for _ in range(2 if kind == "lstm" else 1)]
        for (name, mask), initial in itertools.product(masks().items(),
                                                       (None, states)):
            got = a(x, mask=mask, initial_state=initial)
            want = b(x, mask=mask, initial_state=initial)
            assert_same(got, want, atol)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_two_way_and_stacked_encoders_equal_keras(kind):
    ours, keras_cls = (GRU, keras.layers.GRU) if kind == "gru" else (LSTM, keras.layers.LSTM)

    def encoder(cls):
        keras.backend.clear_session()      # the same automatic names
        ids = keras.Input((None,), dtype="int32")
        x = keras.layers.Embedding(9, D, mask_zero=True)(ids)
        x = keras.layers.Bidirectional(cls(U, return_sequences=True))(x)
        out, *states = cls(U, return_sequences=True, return_state=True,
                           go_backwards=True)(x)
        return keras.Model(ids, [out, *states])

    a, b = encoder(ours), encoder(keras_cls)
    share_random_weights(a, b, 4)
    ids = padded_ids(np.random.default_rng(4))
    assert_same(a(ids), b(ids), 1e-5 if TORCH else 1e-6)
    assert [w.path for w in a.weights] == [w.path for w in b.weights]


@pytest.mark.parametrize("kind", ["gru", "gru_v1", "lstm"])
def test_gradients_equal_keras(kind):
    """One SGD step (learning rate 1) moves every weight by its gradient."""
    ours, keras_cls = (LSTM, keras.layers.LSTM) if kind == "lstm" else (GRU, keras.layers.GRU)
    kwargs = {"reset_after": False} if kind == "gru_v1" else {}

    def model(cls):
        ids = keras.Input((None,), dtype="int32")
        x = keras.layers.Embedding(9, D, mask_zero=True)(ids)
        x = keras.layers.Bidirectional(cls(U, return_sequences=True, **kwargs))(x)
        m = keras.Model(ids, keras.layers.Dense(3)(x))
        m.compile(optimizer=keras.optimizers.SGD(1.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m

    a, b = model(ours), model(keras_cls)
    weights = share_random_weights(a, b, 5)
    rng = np.random.default_rng(5)
    ids = padded_ids(rng)
    labels = rng.integers(0, 3, (3, T))
    a.train_on_batch(ids, labels)
    b.train_on_batch(ids, labels)
    moved = [not np.allclose(w, v) for w, v in zip(weights, b.get_weights())]
    assert all(moved)
    for w, got, want in zip(weights, a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(got - w, want - w, atol=1e-5, rtol=0)


def test_the_keras_loop_runs_where_no_fast_path_applies(monkeypatch):
    calls = []
    keras_loop = keras.layers.GRU.inner_loop

    def counted(self, *args, **kwargs):
        calls.append(self.name)
        return keras_loop(self, *args, **kwargs)

    monkeypatch.setattr(keras.layers.GRU, "inner_loop", counted)
    x = inputs()
    GRU(U, recurrent_dropout=0.5, name="recurrent_dropout")(x)
    GRU(U, name="plain")(x)
    # JAX keeps Keras' loop for every layer (kerattn/layers/recurrent.py).
    assert calls == (["recurrent_dropout", "plain"]
                     if keras.backend.backend() == "jax" else ["recurrent_dropout"])


def test_input_dropout_is_one_mask_a_sequence():
    """Keras draws the input dropout mask once per sequence: with constant
    inputs, dropped features stay dropped at every step, so a layer whose
    kernel reads one feature sees it at every step or at none."""
    layer = GRU(1, dropout=0.5, return_sequences=True, seed=3)
    x = np.ones((64, T, 1), "float32")
    layer(x)
    layer.set_weights([np.array([[0.0, 0.0, 5.0]], "float32"),   # z = r = 1/2
                       np.zeros((1, 3), "float32"), np.zeros((2, 3), "float32")])
    trained = to_numpy(layer(x, training=True))[..., 0]
    kept = trained[:, 0] != 0.0
    assert 0 < kept.sum() < 64
    # A row whose input is dropped never moves from h = 0.
    np.testing.assert_array_equal(trained[~kept], 0.0)
    assert np.all(trained[kept] > 0.4)
    assert np.all(to_numpy(layer(x)) > 0.4)          # inference drops nothing


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_mixed_bfloat16(kind, mixed_bfloat16):
    a, _ = pair(kind, return_sequences=True)
    x = inputs()
    mask = masks()["right"]
    out = a(x, mask=mask)
    assert str(keras.backend.standardize_dtype(out.dtype)) == "bfloat16"
    keras.config.set_dtype_policy("float32")
    b, _ = pair(kind, return_sequences=True)
    np.testing.assert_allclose(to_numpy(ops_float(out)), to_numpy(b(x, mask=mask)),
                               atol=0.05)


def ops_float(x):
    return keras.ops.cast(x, "float32")


def test_saved_and_loaded(tmp_path):
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(9, D, mask_zero=True)(ids)
    x = keras.layers.Bidirectional(GRU(U, return_sequences=True))(x)
    model = keras.Model(ids, LSTM(U)(x))
    data = np.array([[1, 2, 0, 0], [3, 4, 5, 6]], "int32")
    path = str(tmp_path / "m.keras")
    model.save(path)
    again = keras.saving.load_model(path)
    assert type(again.layers[2].forward_layer) is GRU
    assert type(again.layers[3]) is LSTM
    assert_same(again(data), model(data), 0)


@pytest.mark.skipif(not TORCH, reason="the fused kernel is torch's")
@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_fused_kernel_equals_the_generic_loop_and_runs_where_it_applies(kind, monkeypatch):
    from kerattn.layers import torch_recurrent

    ran = []
    fused = torch_recurrent.fused_loop

    def counted(layer, *args):
        out = fused(layer, *args)
        ran.append(layer.name)
        return out

    monkeypatch.setattr(torch_recurrent, "fused_loop", counted)
    x = inputs()
    for (name, mask), back, zero in itertools.product(
            masks().items(), (False, True), (False, True)):
        a, _ = pair(kind, return_sequences=True, go_backwards=back,
                    zero_output_for_mask=zero)
        states = [np.zeros((3, U), "float32")] * (2 if kind == "lstm" else 1)
        ran.clear()
        generic = a._scan_loop(x, states, mask)
        got = a.inner_loop(x, states, mask)
        assert ran == ([a.name] if name in ("none", "right") else [])
        assert_same(list(got[:2]) + list(got[2]),
                    list(generic[:2]) + list(generic[2]), 1e-5)


def test_the_mixin_is_the_only_override():
    """The classes are Keras' with the mixin's `inner_loop` and argument
    checks, nothing more."""
    for ours, theirs in ((GRU, keras.layers.GRU), (LSTM, keras.layers.LSTM)):
        assert ours.__mro__[1:3] == (FastRecurrentLoop, theirs)
        assert [k for k in vars(ours) if not k.startswith("__")] == []
