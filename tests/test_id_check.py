"""Token ids out of range arriving through `tf.data` stop `fit`, `evaluate`
and `predict` with a ValueError on every backend (`ZooModel.checked_dataset`);
the model keeps its weights, and good data pass through unchanged."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import kerattn
from kerattn.losses import MaskedSparseCrossentropy

VOCAB = 30


def _model():
    model = kerattn.zoo.bahdanau_nmt(VOCAB, VOCAB, preset="tiny")
    model.compile("adam", MaskedSparseCrossentropy())
    return model


@pytest.fixture(scope="module")
def model():
    """One compiled model for the cases that call `fit`: tracing its
    training step is most of their time on TensorFlow (about 8 CPU-s), and
    a model stopped by a bad batch must serve the next case as if new."""
    return _model()


def _data(bad_row=None, bad_value=VOCAB, which="source_ids"):
    rng = np.random.default_rng(0)
    x = {"source_ids": rng.integers(1, VOCAB, (12, 5)).astype("int32"),
         "target_in_ids": rng.integers(1, VOCAB, (12, 4)).astype("int32")}
    x["source_ids"][0, 3:] = 0        # the first row is not the longest
    y = rng.integers(1, VOCAB, (12, 4)).astype("int32")
    if bad_row is not None:
        x[which][bad_row, 1] = bad_value
    return x, y


def _dataset(x, y, with_targets=True):
    data = (x, y) if with_targets else x
    return tf.data.Dataset.from_tensor_slices(data).batch(4)


@pytest.mark.parametrize("bad_row, bad_value, which", [
    (0, VOCAB, "source_ids"),          # the first batch
    (9, VOCAB + 5, "source_ids"),      # a later batch
    (6, -1, "target_in_ids"),          # negative, in the other input
])
def test_an_id_out_of_range_stops_every_call(model, bad_row, bad_value,
                                             which):
    good_x, good_y = _data()
    before = keras.ops.convert_to_numpy(model.predict(good_x, verbose=0))
    x, y = _data(bad_row, bad_value, which)
    message = rf"`{which}` must be token ids in \[0, {VOCAB}\).*tf.data"
    with pytest.raises(ValueError, match=message):
        model.fit(_dataset(x, y), epochs=1, verbose=0)
    with pytest.raises(ValueError, match=message):
        model.evaluate(_dataset(x, y), verbose=0)
    with pytest.raises(ValueError, match=message):
        model.predict(_dataset(x, y, with_targets=False), verbose=0)
    # The model keeps its weights (Keras' JAX trainer empties them while it
    # runs), and trains on good data afterwards.
    after = keras.ops.convert_to_numpy(model.predict(good_x, verbose=0))
    if bad_row == 0:     # stopped before any step: nothing changed
        np.testing.assert_allclose(after, before, atol=1e-6)
    assert np.all(np.isfinite(after))
    history = model.fit(_dataset(good_x, good_y), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_the_validation_dataset_is_checked_too(model):
    x, y = _data(5, VOCAB, "target_in_ids")
    good_x, good_y = _data()
    with pytest.raises(ValueError, match=r"`target_in_ids` must be token ids"):
        model.fit(_dataset(good_x, good_y), validation_data=_dataset(x, y),
                  epochs=1, verbose=0)


def test_good_data_pass_through_unchanged():
    model = _model()
    x, y = _data()
    plain = list(_dataset(x, y).as_numpy_iterator())
    checked = list(model.checked_dataset(_dataset(x, y)).as_numpy_iterator())
    assert len(plain) == len(checked) == 3
    for (px, py), (cx, cy) in zip(plain, checked):
        np.testing.assert_array_equal(py, cy)
        for name in px:
            np.testing.assert_array_equal(px[name], cx[name])


def test_a_model_without_token_inputs_is_left_alone():
    inputs = keras.Input((3,), name="features")
    model = kerattn.zoo.model.ZooModel({"features": inputs},
                                       keras.layers.Dense(2)(inputs))
    dataset = tf.data.Dataset.from_tensor_slices(
        {"features": np.ones((4, 3), "float32")}).batch(2)
    assert model.checked_dataset(dataset) is dataset
