"""Lookahead convolution: a one-way encoder's state at a position, made to
see a fixed number of the positions after it (Amodei et al. 2016)."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers.attention_utils import mask_as


@keras.saving.register_keras_serializable(package="kerattn")
class LookaheadConvolution(keras.layers.Layer):
    """Each feature of position t mixed with the same feature of the next
    `lookahead` positions.

    Deep Speech 2 (Amodei et al. 2016, section 3.5, "Lookahead Convolution
    and Unidirectional Models") puts this layer over a one-way recurrent
    encoder so that a streaming model hears a little of the future at a
    fixed delay; for a sequence `h` of `d`-dimensional states and `tau =
    lookahead`:

        r_{t,i} = sum_{j=1}^{tau+1} W_{i,j} h_{t+j-1,i},   1 <= i <= d

    a depthwise (per-feature) convolution over the current and the next
    `tau` positions, with no bias and no activation, as the paper writes it.
    Positions past a sequence's end (and padded positions) count as zeros,
    so a row's last positions see the same future whether the row is
    padded in a batch or alone. The state at position `t` then depends on
    the inputs up to `t + lookahead` only: a streaming decoder may commit
    to an output attending at `t` once `t + lookahead + 1` inputs are read
    (`kerattn.decoding.StreamingDecoder` honours the model's `lookahead()`).

    `W` starts at `W_{i,1} = 1` and `W_{i,j} = 0` for `j > 1`: the layer
    starts as the identity (the one-way model it extends) and learns how
    much of the future to mix in. (The paper does not say how it
    initialises `W`.)

    Args:
        lookahead: `tau`, the number of future positions read (>= 0; 0 is a
            learned per-feature scale).

    Call arguments:
        inputs: `(batch, T, d)` states.
        mask: optional boolean `(batch, T)`, True = real (Keras' implicit
            mask when None; all positions when there is none).

    Returns:
        `(batch, T, d)`, zeros at padded positions; the mask passes through.

    Example:

    >>> import numpy as np
    >>> layer = LookaheadConvolution(1)
    >>> h = np.array([[[1.0], [2.0], [4.0], [0.0]]], "float32")
    >>> mask = np.array([[True, True, True, False]])
    >>> _ = layer(h, mask=mask)
    >>> layer.set_weights([np.array([[1.0], [0.5]], "float32")])   # (tau + 1, d)
    >>> keras.ops.convert_to_numpy(layer(h, mask=mask))[0, :, 0].tolist()
    [2.0, 4.0, 4.0, 0.0]
    """

    def __init__(self, lookahead, **kwargs):
        super().__init__(**kwargs)
        checks.nonnegative_int("lookahead", lookahead)
        self.lookahead = lookahead
        self.supports_masking = True

    def build(self, input_shape):
        checks.rank("inputs", input_shape, (3,), "(batch, T, d) states")
        d = input_shape[-1]
        checks.require(d is not None, "inputs", "a known last dimension d",
                       input_shape)
        def initializer(shape, dtype=None):   # row 0 ones, the others zeros
            first = ops.one_hot(0, shape[0], dtype=dtype)
            return ops.expand_dims(first, -1) * ops.ones(shape, dtype)

        # W as (tau + 1, d): row j weighs position t + j.
        self.kernel = self.add_weight(name="kernel", shape=(self.lookahead + 1, d),
                                      initializer=initializer)

    def call(self, inputs, mask=None):
        checks.rank("inputs", inputs.shape, (3,), "(batch, T, d) states")
        checks.mask("mask", mask, tuple(inputs.shape[:2]))
        if mask is not None:
            inputs = inputs * ops.expand_dims(mask_as(mask, inputs.dtype), -1)
        kernel = ops.cast(self.kernel, inputs.dtype)                  # (tau+1, d)
        if self.lookahead == 0:
            return inputs * kernel[0]
        padded = ops.pad(inputs, [[0, 0], [0, self.lookahead], [0, 0]])
        # depthwise_conv's output t is sum_j kernel[j] * padded[t + j] (a
        # cross-correlation): the paper's sum, read forward from t.
        out = ops.depthwise_conv(padded, ops.expand_dims(kernel, -1), strides=1,
                                 padding="valid",
                                 data_format="channels_last")
        if mask is not None:   # left padding: a padded position reads real ones
            out = out * ops.expand_dims(mask_as(mask, out.dtype), -1)
        return out

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"lookahead": self.lookahead})
        return config
