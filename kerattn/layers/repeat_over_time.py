"""Repeat a vector at every step of a sequence."""

import keras
from keras import ops

from kerattn import checks


@keras.saving.register_keras_serializable(package="kerattn")
class RepeatOverTime(keras.layers.Layer):
    """`(batch, dim)` -> `(batch, T, dim)`, with `T` taken from a sequence.

    Keras' `RepeatVector` needs `T` when the model is built; this layer
    reads it from a second input at call time, for a summary vector that
    conditions every decoder step (Cho et al., 2014: `c` in every GRU gate
    and in the output layer).

    Args:
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...); the
            layer has no weights and no options.

    Call arguments:
        vector: `(batch, dim)`.
        sequence: `(batch, T, ...)`; only its length is used.

    Returns:
        `(batch, T, dim)`.

    Example:

    >>> import numpy as np
    >>> c = np.ones((2, 4), "float32")
    >>> tuple(RepeatOverTime()(c, np.zeros((2, 7, 3), "float32")).shape)
    (2, 7, 4)
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.built = True

    def call(self, vector, sequence):
        checks.rank("vector", vector.shape, (2,), "(batch, dim)")
        checks.rank("sequence", sequence.shape, (2, 3), "(batch, T, ...)")
        checks.same("vector", vector.shape[0], "sequence", sequence.shape[0],
                    "batch size")
        shape = ops.shape(sequence)
        return ops.broadcast_to(ops.expand_dims(vector, 1),
                                (shape[0], shape[1], vector.shape[-1]))

    def compute_mask(self, vector, previous_mask=None):
        return None

    def compute_output_shape(self, vector_shape, sequence_shape):
        return (vector_shape[0], sequence_shape[1], vector_shape[-1])
