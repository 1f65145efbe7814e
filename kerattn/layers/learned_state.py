"""A learned vector as every row's initial recurrent state."""

import keras
from keras import ops

from kerattn import checks


@keras.saving.register_keras_serializable(package="kerattn")
class LearnedInitialState(keras.layers.Layer):
    """`(batch, ...)` -> `(batch, units)`: one learned vector for every row.

    A decoder's initial state that does not depend on the input: only the
    input's batch size is read. Show, Attend and Tell starts its LSTM from
    the mean annotation (`tanh(f_init(mean_i a_i))`), from which the decoder
    can read the whole caption without attending; a learned constant
    (`trainable=True`) or zeros (`trainable=False`) leaves the attention as
    the only way to the image.

    Args:
        units: the state's size.
        initializer: the vector's initializer ("zeros").
        **kwargs: base layer keyword arguments (`trainable=False` keeps the
            vector at its initial value).

    Call arguments:
        inputs: any tensor whose first axis is the batch.

    Returns:
        `(batch, units)`, the vector repeated over the batch.

    Example:

    >>> import numpy as np
    >>> layer = LearnedInitialState(3, initializer="ones")
    >>> keras.ops.convert_to_numpy(layer(np.zeros((2, 5), "float32")))
    array([[1., 1., 1.],
           [1., 1., 1.]], dtype=float32)
    """

    def __init__(self, units, initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        checks.positive_int("units", units)
        self.units = units
        self.initializer = keras.initializers.get(initializer)

    def build(self, input_shape):
        self.state = self.add_weight(name="state", shape=(self.units,),
                                     initializer=self.initializer)

    def call(self, inputs):
        checks.min_rank("inputs", inputs.shape, 1, "(batch, ...)")
        batch = ops.shape(inputs)[0]
        state = ops.cast(self.state, self.compute_dtype)
        return ops.broadcast_to(ops.expand_dims(state, 0), (batch, self.units))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.units)

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "initializer":
                       keras.initializers.serialize(self.initializer)})
        return config
