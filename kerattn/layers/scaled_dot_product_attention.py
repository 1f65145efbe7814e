"""Scaled dot-product attention (Vaswani et al., 2017)."""

import math

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.base_attention import BaseAttention


@keras.saving.register_keras_serializable(package="kerattn")
class ScaledDotProductAttention(BaseAttention):
    """Scaled dot-product attention of Vaswani et al. (2017), eq. 1.

    "Attention Is All You Need", section 3.2.1:

        Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

    No weights. When neither the weights nor training-time dropout are
    asked for, the layer runs the fused `keras.ops.dot_product_attention`
    kernel; `return_attention_scores=True` (or active dropout) takes the
    explicit path with the same result.

    Args:
        causal: bool; if True, query `i` attends only to keys `j <= i`
            (the decoder's masked self-attention). With `Tq != Tv` the mask
            is aligned at the end, so a single decoder step over a cache of
            past keys sees them all.
        dropout: float in [0, 1), dropout on the attention weights.
        scale: optional float replacing `1 / sqrt(d_k)`.
        **kwargs: base layer keyword arguments.

    Call arguments, Returns: see `kerattn.layers.BaseAttention`; `query` and
    `key` (or `value`) must have the same last dimension `d_k`.

    Example:

    >>> import numpy as np
    >>> x = np.random.rand(2, 6, 8).astype("float32")
    >>> out, w = ScaledDotProductAttention(causal=True)(
    ...     x, x, return_attention_scores=True)
    >>> tuple(out.shape), tuple(w.shape)
    ((2, 6, 8), (2, 6, 6))
    """

    def __init__(self, causal=False, dropout=0.0, scale=None, **kwargs):
        super().__init__(dropout=dropout, causal=causal, **kwargs)
        checks.number("scale", scale, 0.0, low_open=True, allow_none=True)
        self.scale = scale

    def _validate_shapes(self, query_shape, value_shape, key_shape=None):
        super()._validate_shapes(query_shape, value_shape, key_shape)
        key_shape = value_shape if key_shape is None else key_shape
        checks.same("query", query_shape[-1], "key", key_shape[-1],
                    "last dimension d_k (`value` if no key)")

    def _scale(self, query):
        if self.scale is not None:
            return float(self.scale)
        return 1.0 / math.sqrt(int(query.shape[-1]))

    def _calculate_scores(self, query, key):
        scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))
        return scores * ops.cast(self._scale(query), scores.dtype)

    def _compute_attention(
        self, query, key, value, mask, training, return_attention_scores
    ):
        # One head: (batch, T, dim) -> (batch, T, 1, dim) for the fused op.
        result = utils.dot_product_attention(
            ops.expand_dims(query, 2),
            ops.expand_dims(key, 2),
            ops.expand_dims(value, 2),
            mask=mask,
            scale=self._scale(query),
            dropout_layer=self._dropout_layer,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        if not return_attention_scores:
            return ops.squeeze(result, 2), None
        output, weights = result
        return ops.squeeze(output, 2), ops.squeeze(weights, 1)

    def get_config(self):
        config = super().get_config()
        config.update({"scale": self.scale})
        return config
