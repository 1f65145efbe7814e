"""The coverage loss of See et al. (2017), and the same as a layer loss;
the checks and the layer that every loss on an alignment history shares."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils


def alignment_loss_inputs(alphas, weight, step_mask, location_mask):
    """The arguments of a loss on an alignment history, checked: `alphas`
    `(batch, T, S)` in float32 (a loss term: Keras adds the losses in
    float32) with padded source positions zeroed, and the location mask in
    float32 (None without one)."""
    checks.rank("alphas", getattr(alphas, "shape", ()), (3,), "(batch, T, S)")
    checks.nonnegative_number("weight", weight)
    checks.mask("step_mask", step_mask, tuple(alphas.shape[:2]))
    checks.mask("location_mask", location_mask,
                (alphas.shape[0], alphas.shape[2]))
    alphas = ops.cast(ops.convert_to_tensor(alphas), "float32")
    if location_mask is None:
        return alphas, None
    location = utils.mask_as(location_mask, "float32")
    return alphas * ops.expand_dims(location, 1), location


def coverage_loss(alphas, weight=1.0, step_mask=None, location_mask=None):
    """See, Liu and Manning (2017), eq. 12-13: the coverage loss.

        covloss_t = sum_i min(a_i^t, c_i^t),   c^t = sum_{t' < t} a^{t'}

    the attention step `t` pays again to source positions already covered,
    weighted by `lambda` and averaged over the real target steps of the
    batch (eq. 13 adds `lambda covloss_t` to each step's negative
    log-likelihood; `MaskedSparseCrossentropy` averages those over the same
    steps). It penalises attending to a word twice, which is what the
    coverage vector of `BahdanauAttention(coverage=True)` lets the model
    see; the loss is what makes it learn to use it.

    Args:
        alphas: `(batch, T, S)`, the attention weights of every step
            (`AttentionRNN(..., return_attention_scores=True)`).
        weight: `lambda` (1 in the paper).
        step_mask: optional boolean `(batch, T)`; padded steps are left out
            of the sum and of the count.
        location_mask: optional boolean `(batch, S)`; padded source
            positions are left out of the sum over `i`.

    Returns:
        A float32 scalar.

    Example:

    >>> import numpy as np
    >>> alphas = np.array([[[1.0, 0.0], [0.5, 0.5]]], "float32")
    >>> float(coverage_loss(alphas))     # (0 + min(0.5, 1) + 0) / 2 steps
    0.25
    """
    alphas, _ = alignment_loss_inputs(alphas, weight, step_mask, location_mask)
    coverage = ops.cumsum(alphas, axis=1) - alphas            # c^t, (b, T, S)
    per_step = ops.sum(ops.minimum(alphas, coverage), axis=-1)  # (b, T)
    if step_mask is None:
        return weight * ops.mean(per_step)
    keep = utils.mask_as(step_mask, "float32")
    total = ops.sum(per_step * keep)
    return weight * total / ops.maximum(ops.sum(keep), 1.0)


class AlignmentRegularization(keras.layers.Layer):
    """Adds `loss(alphas, weight, step_mask, location_mask)` to the model's
    losses and returns its input unchanged, or `passthrough` when given (a
    functional model keeps only the layers on the path to its outputs). A
    subclass sets `alignment_loss`; its docstring is the user's."""

    alignment_loss = None   # a subclass' loss function

    def __init__(self, weight=1.0, **kwargs):
        super().__init__(**kwargs)
        checks.nonnegative_number("weight", weight)
        self.weight = weight
        self.supports_masking = True

    def call(self, alphas, step_mask=None, location_mask=None,
             passthrough=None):
        self.add_loss(type(self).alignment_loss(alphas, self.weight, step_mask,
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


@keras.saving.register_keras_serializable(package="kerattn")
class CoverageRegularization(AlignmentRegularization):
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

    alignment_loss = staticmethod(coverage_loss)
