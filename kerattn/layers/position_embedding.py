"""Learned position embedding."""

import keras
from keras import ops

from kerattn import checks


@keras.saving.register_keras_serializable(package="kerattn")
class PositionEmbedding(keras.layers.Layer):
    """A learned position embedding (Gehring et al., 2017, section 3.1).

    One trainable vector `p_j` per position `j < sequence_length`, the
    learned alternative to the sinusoids that Vaswani et al. (2017, section
    3.5) found to perform nearly identically and that ConvS2S uses
    (`e = (w_1 + p_1, ..., w_m + p_m)`). Like keras-hub's
    `PositionEmbedding` (the tests copy its weights across), the layer
    returns the embeddings of the input's positions, shaped like the input.

    Args:
        sequence_length: int, the maximum number of positions.
        initializer: initializer of the embedding matrix.
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: `(batch, T, dim)` (or `(T, dim)`) with `start_index + T <=
            sequence_length`.
        start_index: int or scalar tensor, the position of the first step.

    Returns:
        `(batch, T, dim)`: `p_{start_index}, ..., p_{start_index + T - 1}`.

    Example:

    >>> import numpy as np
    >>> x = np.zeros((2, 10, 16), "float32")
    >>> tuple(PositionEmbedding(sequence_length=32)(x).shape)
    (2, 10, 16)
    """

    def __init__(self, sequence_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        checks.positive_int("sequence_length", sequence_length)
        self.sequence_length = sequence_length
        self.initializer = keras.initializers.get(initializer)
        self.supports_masking = True

    def build(self, inputs_shape):
        checks.rank("inputs", inputs_shape, (2, 3), "(batch, T, dim)")
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.sequence_length, inputs_shape[-1]),
            initializer=self.initializer,
            dtype=self.variable_dtype,
        )
        self.built = True

    def call(self, inputs, start_index=0):
        checks.rank("inputs", inputs.shape, (2, 3), "(batch, T, dim)")
        length = checks.known_dim(inputs.shape[-2])
        if (
            length is not None
            and isinstance(start_index, int)
            and start_index + length > self.sequence_length
        ):
            checks.fail(
                "inputs", "T positions long with start_index + T <= "
                f"sequence_length={self.sequence_length}",
                note=f"It has {length} positions from start_index="
                f"{start_index}.")
        shape = ops.shape(inputs)
        # A gather, not a slice: a slice of symbolic size T (jax.export's
        # shape polymorphism) would need T <= sequence_length proven.
        positions = ops.arange(shape[-2], dtype="int32") + start_index
        embeddings = ops.take(ops.convert_to_tensor(self.embeddings),
                              positions, axis=0)
        return ops.broadcast_to(ops.cast(embeddings, self.compute_dtype), shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "initializer": keras.initializers.serialize(self.initializer),
            }
        )
        return config
