"""Maxout (Goodfellow et al., 2013), for the deep output of Bahdanau et al."""

import keras
from keras import ops

from kerattn import checks


@keras.saving.register_keras_serializable(package="kerattn")
class Maxout(keras.layers.Layer):
    """Maxout over groups of `pool_size` consecutive features.

    Goodfellow et al. (2013); Bahdanau et al. (2014), appendix A.2.2 use it
    in the deep output layer with `pool_size=2`:

        t_i = [max{t~_{i,2j-1}, t~_{i,2j}}]_{j=1..l}

    Args:
        pool_size: int, the features per group; the last input dimension
            must be a multiple of it.
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: `(..., pool_size * l)`.

    Returns:
        `(..., l)`.

    Example:

    >>> import numpy as np
    >>> keras.ops.convert_to_numpy(Maxout(2)(np.array([[1.0, 3.0, -2.0, -5.0]], "float32"))).tolist()
    [[3.0, -2.0]]
    """

    def __init__(self, pool_size=2, **kwargs):
        super().__init__(**kwargs)
        checks.positive_int("pool_size", pool_size)
        self.pool_size = pool_size
        self.supports_masking = True
        self.built = True

    def _check(self, shape):
        checks.min_rank("inputs", shape, 2, "(batch, ..., features)")
        dim = shape[-1]
        if dim is not None and int(dim) == 0:
            checks.fail(
                "inputs", "non-empty along its last axis", tuple(shape),
                note="`inputs` must have a last dimension of at least "
                f"pool_size={self.pool_size}.")
        if dim is not None and int(dim) % self.pool_size:
            checks.fail(
                "inputs", "shaped (batch, ..., features) with features "
                f"divisible by pool_size={self.pool_size}", tuple(shape))

    def call(self, inputs):
        self._check(inputs.shape)
        shape = ops.shape(inputs)
        groups = ops.reshape(
            inputs, tuple(shape[:-1]) + (inputs.shape[-1] // self.pool_size,
                                          self.pool_size))
        return ops.max(groups, axis=-1)

    def compute_output_shape(self, input_shape):
        self._check(input_shape)
        return tuple(input_shape[:-1]) + (input_shape[-1] // self.pool_size,)

    def get_config(self):
        config = super().get_config()
        config.update({"pool_size": self.pool_size})
        return config
