"""Reverse the real (unpadded) part of each sequence."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers.attention_utils import mask_as


@keras.saving.register_keras_serializable(package="kerattn")
class ReverseSequence(keras.layers.Layer):
    """Reverse each sequence's real tokens, leaving the padding in place.

    Sutskever et al. (2014), section 3.3, feed the source sentence in
    reverse ("c b a" for "a b c"): it shortens the distance between the
    first words of the source and of the target. With right padding a plain
    flip would move the padding to the front; this layer reverses only the
    first `length` positions of each row: `[a, b, c, PAD] -> [c, b, a, PAD]`.

    Args:
        pad_id: the padding id (0) when the inputs are token ids.

    Call arguments:
        inputs: `(batch, T)` token ids, or `(batch, T, dim)` features.
        mask: optional boolean `(batch, T)`, True = real; for ids, `inputs !=
            pad_id` when None; for features, the implicit Keras mask or all
            positions.

    Returns:
        The inputs with each row's real part reversed (same shape).

    Example:

    >>> import numpy as np
    >>> keras.ops.convert_to_numpy(ReverseSequence()(np.array([[5, 6, 7, 0]]))).tolist()
    [[7, 6, 5, 0]]
    """

    def __init__(self, pad_id=0, **kwargs):
        super().__init__(**kwargs)
        checks.require(
            isinstance(pad_id, int) and not isinstance(pad_id, bool),
            "pad_id", "an int", pad_id)
        self.pad_id = pad_id
        self.supports_masking = True
        self.built = True

    def call(self, inputs, mask=None):
        checks.rank("inputs", inputs.shape, (2, 3),
                    "(batch, T) ids or (batch, T, dim) features")
        checks.mask("mask", mask, tuple(inputs.shape[:2]))
        if mask is None and len(inputs.shape) == 2:
            dtype = keras.backend.standardize_dtype(inputs.dtype)
            if "int" not in dtype:
                checks.fail(
                    "inputs", "integer token ids (batch, T), features "
                    "(batch, T, dim), or given with a `mask`", dtype,
                    note="`inputs` of rank 2 must hold integer token ids: "
                    f"padding is read from pad_id={self.pad_id}.")
        length = ops.shape(inputs)[1]
        if mask is None:
            if len(inputs.shape) == 2:
                mask = ops.not_equal(inputs, self.pad_id)
            else:
                mask = ops.ones(ops.shape(inputs)[:2], "bool")
        lengths = ops.sum(mask_as(mask, "int32"), axis=1, keepdims=True)
        positions = ops.expand_dims(ops.arange(length), 0)
        source = ops.where(positions < lengths, lengths - 1 - positions, positions)
        if len(inputs.shape) == 3:
            source = ops.expand_dims(source, -1)
        return ops.take_along_axis(inputs, source, axis=1)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"pad_id": self.pad_id})
        return config
