"""Restricted (windowed) self-attention (Vaswani et al., 2017, Table 1)."""

import math

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils


@keras.saving.register_keras_serializable(package="kerattn")
class RestrictedSelfAttention(keras.layers.Layer):
    """Multi-head self-attention restricted to a neighbourhood of size r.

    "Attention Is All You Need" (Vaswani et al., 2017), section 4 and the
    last row of Table 1: each position attends only to the `r` positions
    on each side of it (`j in [i - r, i + r]`, or `[i - r, i]` when causal),
    which costs `O(r n d)` instead of `O(n^2 d)`:

        head_h(i) = sum_{|j - i| <= r} softmax_j(q_i . k_j / sqrt(d_k)) v_j

    with the projections of multi-head attention (`W^Q`, `W^K`, `W^V`,
    `W^O`). The layer gathers each position's window of keys and values;
    it never builds an `n x n` matrix, so time and memory grow linearly in
    `n` (see `benchmarks/`). Only `return_attention_scores=True` scatters
    the window weights into a dense `(batch, heads, n, n)` array.

    Args:
        window: int `r >= 0`, the neighbourhood on each side.
        num_heads: int, the number of heads.
        key_dim: int, the size of each head; `dim // num_heads` when None.
        causal: bool, attend to `[i - r, i]` only.
        dropout: float in [0, 1), dropout on the attention weights.
        use_bias: bool, biases in the projections.
        kernel_initializer, bias_initializer: initializers.
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: `(batch, n, dim)`.
        mask: optional boolean `(batch, n)`, True = real position; the
            implicit Keras mask is used when None.
        return_attention_scores: bool, also return the weights.
        training: bool, whether dropout is active.

    Returns:
        `(batch, n, dim)`, and with `return_attention_scores=True` the
        weights `(batch, num_heads, n, n)`, zero outside each window.

    Example:

    >>> import numpy as np
    >>> x = np.random.rand(2, 50, 16).astype("float32")
    >>> tuple(RestrictedSelfAttention(window=4, num_heads=2)(x).shape)
    (2, 50, 16)
    """

    def __init__(
        self,
        window,
        num_heads=1,
        key_dim=None,
        causal=False,
        dropout=0.0,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        checks.nonnegative_int("window", window)
        checks.positive_int("num_heads", num_heads)
        checks.positive_int("key_dim", key_dim, allow_none=True)
        checks.rate("dropout", dropout)
        for name, flag in (("causal", causal), ("use_bias", use_bias)):
            checks.boolean(name, flag)
        self.window = window
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.causal = causal
        self.dropout = dropout
        self.use_bias = use_bias
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True
        self._dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="attention_dropout"
        )

    def build(self, inputs_shape):
        checks.rank("inputs", inputs_shape, (3,), "(batch, n, dim)")
        dim = inputs_shape[-1]
        key_dim = self.key_dim or dim // self.num_heads
        checks.require(
            key_dim >= 1, "num_heads",
            f"<= the input size {dim}, or `key_dim` given", self.num_heads,
            note="Each head needs at least one feature.")
        if self.key_dim is None and dim is not None and dim % self.num_heads:
            checks.fail(
                "num_heads", f"a divisor of the input size {dim}, or "
                "`key_dim` given", self.num_heads,
                note="Each head gets dim / num_heads features.")
        self._head_dim = key_dim

        def dense(equation, out, bias, name):
            layer = keras.layers.EinsumDense(
                equation,
                output_shape=out,
                bias_axes=bias if self.use_bias else None,
                kernel_initializer=self.kernel_initializer,
                bias_initializer=self.bias_initializer,
                dtype=self.dtype_policy,
                name=name,
            )
            layer.supports_masking = True
            return layer

        heads = (None, self.num_heads, key_dim)
        self.query_dense = dense("abc,cde->abde", heads, "de", "query")
        self.key_dense = dense("abc,cde->abde", heads, "de", "key")
        self.value_dense = dense("abc,cde->abde", heads, "de", "value")
        self.output_dense = dense("abcd,cde->abe", (None, dim), "e",
                                  "attention_output")
        for layer in (self.query_dense, self.key_dense, self.value_dense):
            layer.build(inputs_shape)
        self.output_dense.build(
            (inputs_shape[0], inputs_shape[1], self.num_heads, key_dim)
        )
        self.built = True

    def window_positions(self, length):
        """`(n, W)` key positions of each query, and their validity."""
        offsets = ops.arange(-self.window, (0 if self.causal else self.window) + 1)
        positions = ops.expand_dims(ops.arange(length), 1) + offsets
        valid = ops.logical_and(positions >= 0, positions < length)
        return ops.clip(positions, 0, length - 1), valid

    def call(self, inputs, mask=None, return_attention_scores=False, training=None):
        checks.rank("inputs", inputs.shape, (3,), "(batch, n, dim)")
        checks.nonempty("inputs", inputs)
        checks.mask(
            "mask", mask, (checks.static_dim(inputs, 0), checks.static_dim(inputs, 1))
        )
        batch, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        q = self.query_dense(inputs)  # (b, n, h, d)
        k = self.key_dense(inputs)
        v = self.value_dense(inputs)

        positions, valid = self.window_positions(length)  # (n, W)
        positions = ops.broadcast_to(positions, (batch,) + tuple(ops.shape(positions)))
        k_w = utils.gather_positions(k, positions)  # (b, n, W, h, d)
        v_w = utils.gather_positions(v, positions)
        valid = ops.broadcast_to(ops.expand_dims(valid, 0), ops.shape(positions))
        if mask is not None:
            mask = ops.cast(mask, "bool")
            valid = ops.logical_and(valid, utils.gather_positions(mask, positions))
            valid = ops.logical_and(valid, ops.expand_dims(mask, -1))

        scores = ops.einsum("bnhd,bnwhd->bhnw", q, k_w)
        scores = scores * ops.cast(1.0 / math.sqrt(self._head_dim), scores.dtype)
        valid = ops.expand_dims(valid, 1)  # (b, 1, n, W)
        weights = utils.masked_softmax(scores, valid)
        dropped = self._dropout_layer(weights, training=training)
        context = ops.einsum("bhnw,bnwhd->bnhd", dropped, v_w)
        output = self.output_dense(context)
        if mask is not None:
            output = ops.where(ops.expand_dims(mask, -1), output,
                               ops.zeros_like(output))
        if return_attention_scores:
            dense = utils.scatter_positions(
                weights, ops.expand_dims(positions, 1), length
            )
            return output, dense
        return output

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False,
                            training=None):
        checks.rank("inputs", inputs.shape, (3,), "(batch, n, dim)")
        output = keras.KerasTensor(inputs.shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return output
        b, n = inputs.shape[0], inputs.shape[1]
        return output, keras.KerasTensor((b, self.num_heads, n, n),
                                         dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "window": self.window,
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "causal": self.causal,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config
