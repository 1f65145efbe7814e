"""The latency loss of MILk (Arivazhagan et al., 2019), and the same as a layer loss."""

import keras
from keras import ops

from kerattn.layers import attention_utils as utils
from kerattn.layers.coverage_regularization import (AlignmentRegularization,
                                                    alignment_loss_inputs)


def latency_loss(alphas, weight=1.0, step_mask=None, location_mask=None):
    """The differentiable average lagging of a monotonic attention's stops.

    Arivazhagan et al. (2019), "Monotonic Infinite Lookback Attention for
    Simultaneous Machine Translation", latency-augmented training: the
    expected alignment `alpha_ij` of training (the probability that output
    `i` stops at source position `j`) gives each output an expected delay

        g_i = sum_j j alpha_ij + (1 - sum_j alpha_ij) |x|

    (positions from 1, `j` = the inputs read once it stops there; the mass
    that stops nowhere has read the whole source, `|x|` real positions),
    and the loss adds `lambda` times Cherry and Foster's (2019)
    differentiable average lagging of those delays,

        g'_1 = g_1,   g'_i = max(g_i, g'_{i-1} + |x| / |y|)
        DAL  = 1/|y| sum_i (g'_i - (i - 1) |x| / |y|)

    computed in the closed form `g'_i - (i - 1) d = max_{k <= i} (g_k -
    (k - 1) d)` (the recursion unrolled), one `(T, T)` mask and a max, no
    loop. `g'` lets an output that waits be followed by outputs that do not
    wait again, so the loss rewards stopping early, not emitting fast. It
    is averaged over the rows with at least one real target step. MILk
    adds `lambda C(g)` to a sentence's negative log-likelihood; the zoo's
    cross-entropy is a mean over tokens, so the same pull on the stops
    takes a `lambda` about MILk's divided by the mean target length. A
    lookahead of `L` inputs (`LookaheadConvolution`) delays an output by
    up to `L` more (capped at the source's end), left out. In a model, the
    term is in the validation loss too (Keras adds a model's losses in
    evaluation): early stopping on it weighs the latency as training does.

    Args:
        alphas: `(batch, T, S)`, a monotonic attention's expected alignment
            at every step (`AttentionRNN(..., return_attention_scores=True)`
            over `HardMonotonicAttention`, in training's "parallel" mode).
        weight: `lambda`.
        step_mask: optional boolean `(batch, T)`, the real target steps
            (real steps first; `|y|` is their count).
        location_mask: optional boolean `(batch, S)`, the real source
            positions (real positions first; `|x|` is their count).

    Returns:
        A float32 scalar; 0 for a batch without a real step.

    Example:

    >>> import numpy as np
    >>> reads_all = np.array([[[0.0, 1.0], [0.0, 1.0]]], "float32")
    >>> float(latency_loss(reads_all))  # g = (2, 2), g' = (2, 3): (2 + 2) / 2
    2.0
    >>> streams = np.array([[[1.0, 0.0], [0.0, 1.0]]], "float32")
    >>> float(latency_loss(streams))    # g = g' = (1, 2): (1 + 1) / 2
    1.0
    """
    alphas, location = alignment_loss_inputs(alphas, weight, step_mask,
                                             location_mask)
    shape = ops.shape(alphas)
    steps, sources = shape[1], shape[2]
    if location is None:
        source_length = ops.cast(ops.full((shape[0],), sources), "float32")
    else:
        source_length = ops.sum(location, axis=-1)                   # |x|, (b,)
    if step_mask is None:
        keep = ops.ones((shape[0], steps), "float32")
    else:
        keep = utils.mask_as(step_mask, "float32")
    target_length = ops.sum(keep, axis=-1)                           # |y|, (b,)
    positions = ops.cast(ops.arange(1, sources + 1), "float32")      # j
    stopped = ops.sum(alphas, axis=-1)                               # (b, T)
    delay = (ops.sum(alphas * positions, axis=-1)
             + ops.maximum(1.0 - stopped, 0.0) * source_length[:, None])  # g_i
    rate = source_length / ops.maximum(target_length, 1.0)           # |x| / |y|
    index = ops.cast(ops.arange(steps), "float32")                   # i - 1
    behind = delay - index * rate[:, None]                           # g_k - (k-1) d
    earlier = ops.greater_equal(ops.arange(steps)[:, None],
                                ops.arange(steps)[None, :])          # k <= i
    lagging = ops.max(ops.where(earlier[None], behind[:, None, :], -1e30),
                      axis=-1)                                       # (b, T)
    per_row = ops.sum(lagging * keep, axis=-1) / ops.maximum(target_length, 1.0)
    rows = ops.cast(target_length > 0, "float32")
    return weight * ops.sum(per_row * rows) / ops.maximum(ops.sum(rows), 1.0)


@keras.saving.register_keras_serializable(package="kerattn")
class LatencyRegularization(AlignmentRegularization):
    """Adds `kerattn.losses.latency_loss(alphas)` to the model's losses.

    MILk's latency-augmented training (Arivazhagan et al., 2019): `lambda`
    times the differentiable average lagging of the expected delays that a
    monotonic attention's expected alignment gives. A hard monotonic
    attention trained on the likelihood alone may learn to read the whole
    input before its first output (nothing in the likelihood rewards
    stopping early); this term does. Used as `CoverageRegularization` is:
    pass the alignment history `(batch, T, S)` through it in a functional
    model, with `passthrough` when the alignments are not an output.

    Args:
        weight: the loss weight `lambda`.
        **kwargs: base layer keyword arguments.

    Call arguments:
        alphas: `(batch, T, S)`.
        step_mask: optional boolean `(batch, T)`, the real target steps.
        location_mask: optional boolean `(batch, S)`, the real source
            positions.
        passthrough: optional tensor to return instead of `alphas`.

    Example:

    >>> import numpy as np
    >>> reg = LatencyRegularization(weight=0.1)
    >>> _ = reg(np.array([[[0.0, 1.0], [0.0, 1.0]]], "float32"))
    >>> round(float(reg.losses[0]), 4)     # 0.1 * 2
    0.2
    """

    alignment_loss = staticmethod(latency_loss)
