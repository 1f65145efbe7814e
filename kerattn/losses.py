"""Losses for the zoo: masked sparse cross-entropy with label smoothing,
See et al.'s coverage loss and MILk's latency loss."""

import keras
from keras import ops

from kerattn import checks
# Defined beside its layer, `CoverageRegularization` (as Xu et al.'s penalty
# is beside `DoublyStochasticRegularization`); public here, with the losses.
from kerattn.layers.coverage_regularization import coverage_loss
from kerattn.layers.latency_regularization import latency_loss

__all__ = ["MaskedSparseCrossentropy", "coverage_loss", "latency_loss"]


@keras.saving.register_keras_serializable(package="kerattn")
class MaskedSparseCrossentropy(keras.losses.Loss):
    """Token cross-entropy that ignores PAD, with optional label smoothing.

        loss_t = (1 - eps) (-log p(y_t)) + eps * mean_v (-log p(v))

    averaged over the real (non-PAD) target tokens of the batch, the
    "label smoothing of value eps = 0.1" of Vaswani et al. (2017, section
    5.4) when `label_smoothing=0.1` (Keras' `SparseCategoricalCrossentropy`
    has `ignore_class` but no label smoothing).

    With `from_log_probs=True` the predictions are log-probabilities
    already, `loss_t = -log P(y_t)`: the output of a copying model
    (`kerattn.zoo.pointer_generator`, See et al. 2017, eq. 6 with eq. 9's
    `P(w)`), whose labels are ids of its extended vocabulary. They are read
    as they are (no softmax, no clipping), so a log-probability that is
    finite gives a finite loss.

    Args:
        pad_id: the label that is ignored (the vocabulary's `pad_id`).
        label_smoothing: float in [0, 1); 0 with `from_log_probs=True` (an
            extended vocabulary's unused ids have probability 0).
        from_logits: whether predictions are logits (True for the zoo);
            False means probabilities. Not read with `from_log_probs=True`.
        from_log_probs: whether predictions are log-probabilities.
        name: the loss name.

    Example:

    >>> import numpy as np
    >>> loss = MaskedSparseCrossentropy(label_smoothing=0.1)
    >>> value = loss(np.array([[5, 0]]), np.zeros((1, 2, 8), "float32"))
    >>> log_p = np.log(np.full((1, 2, 4), 0.25, "float32"))
    >>> round(float(MaskedSparseCrossentropy(from_log_probs=True)(
    ...     np.array([[2, 0]]), log_p)), 4)                   # -log 0.25
    1.3863
    """

    def __init__(self, pad_id=0, label_smoothing=0.0, from_logits=True,
                 from_log_probs=False, name="masked_sparse_crossentropy",
                 **kwargs):
        kwargs.setdefault("reduction", "mean_with_sample_weight")
        super().__init__(name=name, **kwargs)
        checks.require(
            isinstance(pad_id, int) and not isinstance(pad_id, bool),
            "pad_id", "an int", pad_id)
        checks.rate("label_smoothing", label_smoothing)
        checks.boolean("from_log_probs", from_log_probs)
        checks.require(
            not (from_log_probs and label_smoothing), "label_smoothing",
            "0 with from_log_probs=True (the mean over an extended "
            "vocabulary would count its ids of probability 0)",
            label_smoothing)
        self.pad_id = pad_id
        self.label_smoothing = label_smoothing
        self.from_logits = from_logits
        self.from_log_probs = from_log_probs

    def __call__(self, y_true, y_pred, sample_weight=None):
        weights = ops.cast(ops.not_equal(ops.convert_to_tensor(y_true),
                                         self.pad_id), "float32")
        if sample_weight is not None:
            weights = weights * ops.cast(sample_weight, "float32")
        return super().__call__(y_true, y_pred, sample_weight=weights)

    def call(self, y_true, y_pred):
        y_pred = ops.cast(y_pred, "float32")
        if self.from_log_probs:
            log_probs = y_pred
        elif self.from_logits:
            log_probs = ops.log_softmax(y_pred, axis=-1)
        else:
            log_probs = ops.log(ops.clip(y_pred, 1e-7, 1.0))
        labels = ops.cast(y_true, "int32")
        nll = -ops.take_along_axis(log_probs, ops.expand_dims(labels, -1),
                                   axis=-1)[..., 0]
        if self.label_smoothing:
            smooth = -ops.mean(log_probs, axis=-1)
            nll = (1.0 - self.label_smoothing) * nll + self.label_smoothing * smooth
        return nll

    def get_config(self):
        config = super().get_config()
        config.update({"pad_id": self.pad_id,
                       "label_smoothing": self.label_smoothing,
                       "from_logits": self.from_logits,
                       "from_log_probs": self.from_log_probs})
        return config
