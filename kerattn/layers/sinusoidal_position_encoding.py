"""Sinusoidal position encoding (Vaswani et al., 2017)."""

import keras
from keras import ops

from kerattn import checks


@keras.saving.register_keras_serializable(package="kerattn")
class SinusoidalPositionEncoding(keras.layers.Layer):
    """The fixed sinusoidal position encoding of Vaswani et al. (2017).

    "Attention Is All You Need", section 3.5:

        PE(pos, 2i)     = sin(pos / 10000^(2i / d_model))
        PE(pos, 2i + 1) = cos(pos / 10000^(2i / d_model))

    The layer returns the encoding (to be added to the embeddings), shaped
    like its input. This is the computation of keras-hub's
    `SinePositionEncoding` (the tests check that), written here with
    `keras.ops` so the core of kerattn does not depend on keras-hub.

    Args:
        max_wavelength: float, the base (10000 in the paper).
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: `(batch, T, d_model)` (or `(T, d_model)`); only its shape and
            dtype are used.
        start_index: int or scalar tensor, the position of the first step
            (for incremental decoding).

    Returns:
        The encoding, of the shape and dtype of `inputs`.

    Example:

    >>> import numpy as np
    >>> x = np.zeros((2, 10, 16), "float32")
    >>> pe = SinusoidalPositionEncoding()(x)
    >>> tuple(pe.shape)
    (2, 10, 16)
    """

    def __init__(self, max_wavelength=10000.0, **kwargs):
        super().__init__(**kwargs)
        checks.positive_number("max_wavelength", max_wavelength)
        self.max_wavelength = max_wavelength
        self.supports_masking = True
        self.built = True

    def call(self, inputs, start_index=0):
        checks.rank("inputs", inputs.shape, (2, 3), "(batch, T, d_model)")
        checks.require(
            not (isinstance(start_index, int) and start_index < 0),
            "start_index", ">= 0", start_index)
        shape = ops.shape(inputs)
        length, dim = shape[-2], shape[-1]
        positions = ops.cast(ops.arange(length) + start_index, "float32")
        channels = ops.arange(dim)
        # 2i for both channel 2i and 2i + 1.
        even = ops.cast(channels - channels % 2, "float32")
        timescales = ops.power(
            ops.cast(self.max_wavelength, "float32"),
            -even / ops.cast(dim, "float32"),
        )
        angles = ops.expand_dims(positions, 1) * ops.expand_dims(timescales, 0)
        is_cos = ops.expand_dims(ops.equal(channels % 2, 1), 0)
        encoding = ops.where(is_cos, ops.cos(angles), ops.sin(angles))
        encoding = ops.cast(encoding, self.compute_dtype)
        return ops.broadcast_to(encoding, shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"max_wavelength": self.max_wavelength})
        return config
