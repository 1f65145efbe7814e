"""Multi-head attention (Vaswani et al., 2017)."""

import math

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils


@keras.saving.register_keras_serializable(package="kerattn")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention of Vaswani et al. (2017), section 3.2.2.

    "Attention Is All You Need":

        MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O
        head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)
        Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

    The projections are `EinsumDense` layers laid out as in
    `keras.layers.MultiHeadAttention` (`query`, `key`, `value`,
    `attention_output`, each a kernel and a bias), so weights copy across
    with `set_weights(keras_layer.get_weights())`. The attention itself runs
    the fused `keras.ops.dot_product_attention` kernel unless the weights
    are asked for or dropout is active; `_compute_attention` is the one place
    to override.

    With `max_relative_position=k`, the relative position representations
    of Shaw, Uszkoreit and Vaswani (2018, "Self-Attention with Relative
    Position Representations", section 3): learned `a^K_ij`, `a^V_ij` of the
    clipped distance `clip(j - i, -k, k)` (`2k + 1` vectors each, shared by
    the heads), and

        e_ij = q_i (k_j + a^K_ij)^T / sqrt(d_k)
        z_i = sum_j alpha_ij (v_j + a^V_ij)

    computed as their section 3.3 does: the relative terms are products of
    the queries (or the weights) with one `(Tq, Tv, d)` tensor of relative
    embeddings shared by the batch and the heads, so no `(batch, heads, Tq,
    Tv, d)` tensor is formed. The query at row `t` sits at position `Tv - Tq
    + t` (aligned at the end, as the causal mask is: a step over a key/value
    cache is the last position), or where `attend(..., query_positions=)`
    says. The fused kernel cannot add the relative terms: with the option
    on, the attention runs the explicit path; off, nothing changes.

    Differences from `keras.layers.MultiHeadAttention`: masked query rows
    (and rows with no attendable key) give zero output and zero weights, not
    a softmax over nothing; `causal=True` is a constructor argument and is
    aligned at the end when `Tq != Tv` (one decoder step over a key/value
    cache sees every cached key).

    Args:
        num_heads: int, the number of heads `h`.
        key_dim: int, the size `d_k` of each head's query and key.
        value_dim: int, the size `d_v` of each head's value; `key_dim` when
            None.
        dropout: float in [0, 1), dropout on the attention weights.
        use_bias: bool, whether the projections have biases.
        output_dim: int, the size of the output; the query size when None.
        causal: bool, causal masking (decoder self-attention).
        max_relative_position: None, or int `k >= 1`: Shaw et al.'s
            relative position representations, distances clipped to
            `[-k, k]` (16 in their translation experiments).
        kernel_initializer, bias_initializer: initializers of the
            projections (and of the relative embeddings).
        kernel_regularizer, bias_regularizer: optional regularizers.
        **kwargs: base layer keyword arguments.

    Call arguments:
        query: `(batch, Tq, query_dim)`, or `(batch, query_dim)` for one step.
        value: `(batch, Tv, value_dim)`.
        key: optional `(batch, Tv, key_dim)`; `value` when None.
        query_mask: optional boolean `(batch, Tq)` (`(batch,)` for one step),
            True = real position; taken from `query`'s Keras mask if None.
        value_mask: optional boolean `(batch, Tv)`; from `value`'s Keras mask
            if None.
        attention_mask: optional boolean `(batch, Tq, Tv)`; ANDed with the
            others.
        return_attention_scores: bool; if True return `(output, weights)`.
        training: bool, whether dropout is active.

    Returns:
        `output` of shape `(batch, Tq, output_dim)` (`(batch, output_dim)`
        for one step), and with `return_attention_scores=True` the weights
        `(batch, num_heads, Tq, Tv)` (`(batch, num_heads, Tv)` for one step).

    Example:

    >>> import numpy as np
    >>> x = np.random.rand(2, 5, 16).astype("float32")
    >>> memory = np.random.rand(2, 9, 16).astype("float32")
    >>> mha = MultiHeadAttention(num_heads=4, key_dim=8)
    >>> out, w = mha(x, memory, return_attention_scores=True)
    >>> tuple(out.shape), tuple(w.shape)
    ((2, 5, 16), (2, 4, 5, 9))
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        use_bias=True,
        output_dim=None,
        causal=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        max_relative_position=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        checks.positive_int("num_heads", num_heads)
        checks.positive_int("key_dim", key_dim)
        checks.positive_int("value_dim", value_dim, allow_none=True)
        checks.positive_int("output_dim", output_dim, allow_none=True)
        checks.rate("dropout", dropout)
        for name, flag in (("use_bias", use_bias), ("causal", causal)):
            checks.boolean(name, flag)
        checks.positive_int("max_relative_position", max_relative_position,
                            allow_none=True)
        self.max_relative_position = max_relative_position
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim or key_dim
        self.dropout = dropout
        self.use_bias = use_bias
        self.output_dim = output_dim
        self.causal = causal
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.supports_masking = True
        self._dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="attention_dropout"
        )

    def _validate_shapes(self, query_shape, value_shape, key_shape=None):
        checks.rank(
            "query",
            query_shape,
            (2, 3),
            "(batch, Tq, query_dim), or (batch, query_dim) for one step",
        )
        checks.rank("value", value_shape, (3,), "(batch, Tv, value_dim)")
        checks.same(
            "query", query_shape[0], "value", value_shape[0], "batch size"
        )
        if key_shape is not None:
            checks.rank("key", key_shape, (3,), "(batch, Tv, key_dim)")
            checks.same(
                "key", key_shape[1], "value", value_shape[1], "length Tv"
            )
            checks.same(
                "key", key_shape[0], "value", value_shape[0], "batch size"
            )
        built = getattr(self, "_dims", None)
        if built:
            key_shape = value_shape if key_shape is None else key_shape
            for name, shape in (
                ("query", query_shape),
                ("value", value_shape),
                ("key", key_shape),
            ):
                checks.same(
                    name,
                    shape[-1],
                    f"the {name} size this layer was built with",
                    built[name],
                    "last dimension",
                )

    def _dense(self, equation, output_shape, bias_axes, name):
        dense = keras.layers.EinsumDense(
            equation,
            output_shape=output_shape,
            bias_axes=bias_axes if self.use_bias else None,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            kernel_regularizer=self.kernel_regularizer,
            bias_regularizer=self.bias_regularizer,
            dtype=self.dtype_policy,
            name=name,
        )
        # Masks are handled by this layer; let them pass the projections.
        dense.supports_masking = True
        return dense

    def build(self, query_shape, value_shape, key_shape=None):
        self._validate_shapes(query_shape, value_shape, key_shape)
        key_shape = value_shape if key_shape is None else key_shape
        query_3d = (query_shape[0], None, query_shape[-1])
        heads = self.num_heads
        # (batch, T, dim) -> (batch, T, heads, head_dim)
        self.query_dense = self._dense(
            "abc,cde->abde", (None, heads, self.key_dim), "de", "query"
        )
        self.query_dense.build(query_3d)
        self.key_dense = self._dense(
            "abc,cde->abde", (None, heads, self.key_dim), "de", "key"
        )
        self.key_dense.build(tuple(key_shape))
        self.value_dense = self._dense(
            "abc,cde->abde", (None, heads, self.value_dim), "de", "value"
        )
        self.value_dense.build(tuple(value_shape))
        # (batch, T, heads, d_v) -> (batch, T, output_dim)
        out_dim = self.output_dim or query_shape[-1]
        self.output_dense = self._dense(
            "abcd,cde->abe", (None, out_dim), "e", "attention_output"
        )
        self.output_dense.build((query_shape[0], None, heads, self.value_dim))
        if self.max_relative_position is not None:
            # a^K and a^V for the distances -k..k (Shaw et al., section 3.2).
            size = 2 * self.max_relative_position + 1
            common = dict(initializer=self.kernel_initializer,
                          regularizer=self.kernel_regularizer,
                          dtype=self.variable_dtype)
            self.relative_key = self.add_weight(
                name="relative_key", shape=(size, self.key_dim), **common)
            self.relative_value = self.add_weight(
                name="relative_value", shape=(size, self.value_dim), **common)
        self._dims = {
            "query": query_shape[-1],
            "value": value_shape[-1],
            "key": key_shape[-1],
        }
        self.built = True

    def _compute_attention(
        self, query, key, value, mask=None, training=None,
        return_attention_scores=False, query_positions=None,
    ):
        """Attention over projected heads.

        Args:
            query: `(batch, Tq, heads, key_dim)`.
            key: `(batch, Tv, heads, key_dim)`.
            value: `(batch, Tv, heads, value_dim)`.
            mask: boolean, broadcastable to `(batch, Tq, Tv)`, or None.
            query_positions: with relative positions, the queries' positions
                (see `attend`); None aligns them at the end.

        Returns:
            `(output (batch, Tq, heads, value_dim), weights (batch, heads,
            Tq, Tv) or None)`.
        """
        if self.max_relative_position is not None:
            return self._relative_attention(query, key, value, mask, training,
                                            query_positions)
        result = utils.dot_product_attention(
            query,
            key,
            value,
            mask=mask,
            dropout_layer=self._dropout_layer,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        if return_attention_scores:
            return result
        return result, None

    def _relative_ids(self, query_positions, tq, tv):
        """`clip(j - i, -k, k) + k`: `(Tq, Tv)`, or `(batch, Tq, Tv)` for
        per-row positions."""
        if query_positions is None:
            query_positions = ops.arange(tq, dtype="int32") + (tv - tq)
        i = ops.expand_dims(ops.cast(query_positions, "int32"), -1)
        j = ops.arange(tv, dtype="int32")
        k = self.max_relative_position
        return ops.clip(j - i, -k, k) + k

    def _relative_attention(self, query, key, value, mask, training,
                            query_positions):
        """Shaw et al. (2018), section 3.3: `Q K^T + Q A^K^T` with one
        `(Tq, Tv, d)` table of relative embeddings (per row of the batch
        when the positions are), then the weights times `V` plus the weights
        times `A^V`."""
        dtype = query.dtype
        ids = self._relative_ids(query_positions, ops.shape(query)[1],
                                 ops.shape(key)[1])
        a_k = ops.cast(ops.take(self.relative_key, ids, axis=0), dtype)
        a_v = ops.cast(ops.take(self.relative_value, ids, axis=0), dtype)
        per_row = len(ids.shape) == 3
        scores = ops.einsum("bqhd,bkhd->bhqk", query, key) + ops.einsum(
            "bqhd,bqkd->bhqk" if per_row else "bqhd,qkd->bhqk", query, a_k)
        scores = scores * ops.cast(1.0 / math.sqrt(self.key_dim), dtype)
        if mask is not None:
            mask = ops.expand_dims(ops.cast(mask, "bool"), 1)   # (b, 1, Tq, Tv)
        weights = utils.masked_softmax(scores, mask)
        dropped = self._dropout_layer(weights, training=training)
        output = ops.einsum("bhqk,bkhd->bqhd", dropped, value) + ops.einsum(
            "bhqk,bqkd->bqhd" if per_row else "bhqk,qkd->bqhd", dropped, a_v)
        return output, weights

    def project_key_value(self, key, value):
        """`(K W^K, V W^V)`: `(batch, Tv, heads, key_dim)`, `(..., value_dim)`.

        Project a memory once (encoder-decoder attention) or one new step
        into a key/value cache, then call `attend`.
        """
        return self.key_dense(key), self.value_dense(value)

    def attend(self, query, key, value, mask=None, training=None,
               return_attention_scores=False, query_positions=None):
        """Attention of a `(batch, Tq, dim)` query over projected keys/values.

        Args:
            query: `(batch, Tq, query_dim)`, not yet projected.
            key, value: from `project_key_value` (or a cache of them).
            mask: boolean, broadcastable to `(batch, Tq, Tv)`, or None.
            query_positions: with `max_relative_position`, each query's
                position among the keys: int `(Tq,)` or `(batch, Tq)` (a
                step over a fixed-size cache whose rows are at different
                steps); None: `Tv - Tq + t`, aligned at the end. Ignored
                without relative positions.

        Returns:
            `(output (batch, Tq, output_dim), weights or None)`; rows with
            nothing to attend to give zeros.
        """
        q = self.query_dense(query)  # (batch, Tq, heads, key_dim)
        if query_positions is None:
            context, weights = self._compute_attention(
                q, key, value, mask, training, return_attention_scores)
        else:
            checks.rank("query_positions", query_positions.shape, (1, 2),
                        "(Tq,) or (batch, Tq) int positions")
            context, weights = self._compute_attention(
                q, key, value, mask, training, return_attention_scores,
                query_positions=query_positions)
        output = self.output_dense(context)  # (batch, Tq, output_dim)
        if mask is not None:
            # Rows with nothing to attend to give zeros, bias included.
            row_valid = ops.any(
                ops.broadcast_to(
                    mask, (ops.shape(q)[0], ops.shape(q)[1], ops.shape(key)[1])
                ),
                axis=-1,
                keepdims=True,
            )
            output = ops.where(row_valid, output, ops.zeros_like(output))
        return output, weights

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
    ):
        self._validate_shapes(
            query.shape, value.shape, None if key is None else key.shape
        )
        if key is None:
            key = value
        query, query_mask, attention_mask, single_step = utils.prepare_query(
            query, value, query_mask, value_mask, attention_mask)
        mask = utils.merge_masks(
            query_mask=query_mask,
            value_mask=value_mask,
            attention_mask=attention_mask,
            causal=self.causal,
            query_length=ops.shape(query)[1],
            value_length=ops.shape(value)[1],
        )

        k, v = self.project_key_value(key, value)
        output, weights = self.attend(query, k, v, mask, training,
                                      return_attention_scores)
        if single_step:
            output = ops.squeeze(output, 1)
            if weights is not None:
                weights = ops.squeeze(weights, 2)
        if return_attention_scores:
            return output, weights
        return output

    def compute_output_spec(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
    ):
        self._validate_shapes(
            query.shape, value.shape, None if key is None else key.shape
        )
        out_dim = self.output_dim or query.shape[-1]
        output = keras.KerasTensor(
            tuple(query.shape[:-1]) + (out_dim,), dtype=self.compute_dtype
        )
        if not return_attention_scores:
            return output
        if len(query.shape) == 2:
            w_shape = (query.shape[0], self.num_heads, value.shape[1])
        else:
            w_shape = (
                query.shape[0],
                self.num_heads,
                query.shape[1],
                value.shape[1],
            )
        return output, keras.KerasTensor(w_shape, dtype=self.compute_dtype)

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        out_dim = self.output_dim or query_shape[-1]
        return tuple(query_shape[:-1]) + (out_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "output_dim": self.output_dim,
                "causal": self.causal,
                **({} if self.max_relative_position is None else   # older files lack it
                   {"max_relative_position": self.max_relative_position}),
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
                "bias_regularizer": keras.regularizers.serialize(
                    self.bias_regularizer
                ),
            }
        )
        return config
