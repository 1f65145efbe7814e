import keras
import numpy as np
import pytest

from cases import to_numpy
from kerattn.losses import MaskedSparseCrossentropy


def np_loss(labels, logits, eps, pad=0):
    """Mean over non-PAD tokens of (1 - eps) NLL + eps * mean_v(-log p_v)."""
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    nll = -np.take_along_axis(logp, labels[..., None], -1)[..., 0]
    per = (1 - eps) * nll + eps * (-logp.mean(-1))
    real = labels != pad
    return per[real].mean()


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_matches_numpy(eps):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((3, 5, 11)).astype("float32")
    labels = rng.integers(1, 11, (3, 5)).astype("int32")
    labels[1, 3:] = 0
    labels[2, 1:] = 0
    got = float(to_numpy(MaskedSparseCrossentropy(label_smoothing=eps)(labels,
                                                                        logits)))
    np.testing.assert_allclose(got, np_loss(labels, logits, eps), rtol=1e-5)
    if eps == 0.0:  # equals Keras' ignore_class loss
        keras_loss = keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=0)
        np.testing.assert_allclose(got, float(to_numpy(keras_loss(labels, logits))),
                                   rtol=1e-5)


def test_config_and_bad_arguments():
    loss = MaskedSparseCrossentropy(pad_id=0, label_smoothing=0.1)
    clone = MaskedSparseCrossentropy.from_config(loss.get_config())
    assert clone.label_smoothing == 0.1 and clone.pad_id == 0
    with pytest.raises(ValueError, match="`label_smoothing`"):
        MaskedSparseCrossentropy(label_smoothing=1.0)
    with pytest.raises(ValueError, match="`pad_id`"):
        MaskedSparseCrossentropy(pad_id="0")


def test_trains_with_fit():
    rng = np.random.default_rng(1)
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(12, 8, mask_zero=True)(ids)
    model = keras.Model(ids, keras.layers.Dense(12)(x))
    model.compile(optimizer=keras.optimizers.Adam(0.05),
                  loss=MaskedSparseCrossentropy(label_smoothing=0.1))
    inputs = rng.integers(1, 12, (16, 6)).astype("int32")
    inputs[:8, 4:] = 0
    labels = np.where(inputs > 0, (inputs + 1) % 12, 0).astype("int32")
    history = model.fit(inputs, labels, epochs=10, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert history.history["loss"][-1] < history.history["loss"][0]
