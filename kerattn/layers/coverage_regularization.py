"""The coverage loss of See et al. (2017) as a layer loss."""

import keras

from kerattn import checks
from kerattn.losses import coverage_loss


@keras.saving.register_keras_serializable(package="kerattn")
class CoverageRegularization(keras.layers.Layer):
    """Adds `kerattn.losses.coverage_loss(alphas)` to the model's losses.

    See, Liu and Manning (2017), eq. 12-13: `lambda * sum_i min(a_i^t,
    c_i^t)` averaged over the real target steps. Pass the alignment history
    `(batch, T, S)` through it in a functional model; it returns its input
    unchanged, or `passthrough` when given (a functional model keeps only
    the layers on the path to its outputs, so pass e.g. the logits through
    it when the alignments are not an output), as
    `DoublyStochasticRegularization` does for Xu et al.'s penalty.

    Args:
        weight: the loss weight `lambda` (1 in the paper).
        **kwargs: base layer keyword arguments.

    Call arguments:
        alphas: `(batch, T, S)`.
        step_mask: optional boolean `(batch, T)`, the real target steps.
        location_mask: optional boolean `(batch, S)`, the real source
            positions.
        passthrough: optional tensor to return instead of `alphas`.

    Example:

    >>> import numpy as np
    >>> reg = CoverageRegularization(weight=1.0)
    >>> _ = reg(np.full((2, 3, 4), 0.25, "float32"))
    >>> round(float(reg.losses[0]), 4)     # (0 + 4 * 0.25 + 4 * 0.25) / 3
    0.6667
    """

    def __init__(self, weight=1.0, **kwargs):
        super().__init__(**kwargs)
        checks.nonnegative_number("weight", weight)
        self.weight = weight
        self.supports_masking = True

    def call(self, alphas, step_mask=None, location_mask=None,
             passthrough=None):
        self.add_loss(coverage_loss(alphas, self.weight, step_mask,
                                    location_mask))
        return alphas if passthrough is None else passthrough

    def compute_output_spec(self, alphas, step_mask=None, location_mask=None,
                            passthrough=None):
        out = alphas if passthrough is None else passthrough
        return keras.KerasTensor(out.shape, dtype=out.dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"weight": self.weight})
        return config
