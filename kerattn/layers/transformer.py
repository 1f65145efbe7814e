"""Transformer embedding, encoder and decoder blocks (Vaswani et al., 2017)."""

import math

import keras
from keras import ops

from kerattn import checks
from kerattn.layers.multi_head_attention import MultiHeadAttention
from kerattn.layers.sinusoidal_position_encoding import SinusoidalPositionEncoding


@keras.saving.register_keras_serializable(package="kerattn")
class TransformerEmbedding(keras.layers.Layer):
    """Token embedding times `sqrt(d_model)` plus the sinusoidal positions.

    Vaswani et al. (2017), sections 3.4 and 3.5. PAD (id 0) is masked.

    Args:
        vocab_size: int.
        d_model: int, the model size.
        max_wavelength: the sinusoids' base (10000).
        positions: bool; False leaves the sinusoidal positions out (for a
            model whose self-attention has relative positions only).

    Call arguments:
        inputs: int `(batch, T)`; with `reverse=True`, the decoder's output
            `(..., d_model)`.
        start_index: the position of the first token (incremental decoding).
        reverse: project `inputs` back onto the vocabulary with the same
            matrix, `logits = inputs E^T` (no sqrt(d_model)): the tied
            pre-softmax transformation of section 3.4 (keras-hub's
            `ReversibleEmbedding` does the same).

    Returns:
        `(batch, T, d_model)`, with the padding mask attached; with
        `reverse=True`, logits `(..., vocab_size)`.

    Example:

    >>> import numpy as np
    >>> tuple(TransformerEmbedding(50, 8)(np.array([[3, 4, 0]])).shape)
    (1, 3, 8)
    """

    def __init__(self, vocab_size, d_model, max_wavelength=10000.0,
                 positions=True, **kwargs):
        super().__init__(**kwargs)
        checks.positive_int("vocab_size", vocab_size)
        checks.positive_int("d_model", d_model)
        checks.boolean("positions", positions)
        self.positions = positions
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.max_wavelength = max_wavelength
        self.embedding = keras.layers.Embedding(
            vocab_size, d_model, mask_zero=True, dtype=self.dtype_policy,
            name="token_embedding")
        self.position = SinusoidalPositionEncoding(
            max_wavelength, dtype=self.dtype_policy, name="position_encoding")
        self.supports_masking = True

    def build(self, inputs_shape):
        self.embedding.build(inputs_shape)
        self.built = True

    def call(self, inputs, start_index=0, reverse=False):
        if reverse:
            checks.same("inputs", inputs.shape[-1], "d_model", self.d_model,
                        "last dimension (features to project onto the vocabulary)")
            kernel = ops.cast(self.embedding.embeddings, self.compute_dtype)
            return ops.matmul(inputs, ops.transpose(kernel))
        checks.rank("inputs", inputs.shape, (2,), "(batch, T) token ids")
        checks.integer_ids("inputs", inputs)
        x = self.embedding(inputs) * ops.cast(math.sqrt(self.d_model),
                                              self.compute_dtype)
        if not self.positions:   # the attention's relative positions only
            return x
        return x + self.position(x, start_index=start_index)

    def compute_mask(self, inputs, previous_mask=None):
        # Keras passes no call arguments here: features (reverse=True) keep
        # the mask they came with, as a Dense layer would.
        if "int" not in keras.backend.standardize_dtype(inputs.dtype):
            return previous_mask
        return ops.not_equal(inputs, 0)

    def compute_output_spec(self, inputs, start_index=0, reverse=False):
        if reverse:
            return keras.KerasTensor(tuple(inputs.shape[:-1]) + (self.vocab_size,),
                                     self.compute_dtype)
        return keras.KerasTensor(tuple(inputs.shape) + (self.d_model,),
                                 self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"vocab_size": self.vocab_size, "d_model": self.d_model,
                       "max_wavelength": self.max_wavelength})
        if not self.positions:   # older files lack it
            config["positions"] = False
        return config


def _check_block_args(num_heads, ff_dim, dropout):
    checks.positive_int("num_heads", num_heads)
    checks.positive_int("ff_dim", ff_dim)
    checks.rate("dropout", dropout)


def _head_dim(d_model, num_heads):
    checks.require(
        d_model % num_heads == 0, "num_heads", f"a divisor of d_model={d_model}",
        num_heads,
        note="Each head gets d_model / num_heads features.")
    return d_model // num_heads


@keras.saving.register_keras_serializable(package="kerattn")
class TransformerEncoderBlock(keras.layers.Layer):
    """One encoder layer of Vaswani et al. (2017), section 3.1 (post-norm).

        x = LayerNorm(x + Dropout(MultiHead(x, x, x)))
        x = LayerNorm(x + Dropout(FFN(x))),  FFN(x) = max(0, x W_1 + b_1) W_2 + b_2

    Args:
        num_heads: int (8 in the base model); must divide d_model.
        ff_dim: int, the inner FFN size (2048).
        dropout: float, residual dropout (0.1).
        max_relative_position: None, or int `k`: the self-attention's
            relative positions (Shaw et al. 2018; `MultiHeadAttention`).

    Call arguments:
        inputs: `(batch, T, d_model)`.
        mask: optional boolean `(batch, T)`; the implicit mask when None.

    Returns:
        `(batch, T, d_model)`.

    Example:

    >>> import numpy as np
    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> tuple(TransformerEncoderBlock(2, 16)(x).shape)
    (2, 5, 8)
    """

    def __init__(self, num_heads, ff_dim, dropout=0.1,
                 max_relative_position=None, **kwargs):
        super().__init__(**kwargs)
        _check_block_args(num_heads, ff_dim, dropout)
        checks.positive_int("max_relative_position", max_relative_position,
                            allow_none=True)
        self.max_relative_position = max_relative_position
        self.num_heads = num_heads
        self.ff_dim = ff_dim
        self.dropout = dropout
        self.supports_masking = True

    def build(self, inputs_shape):
        checks.rank("inputs", inputs_shape, (3,), "(batch, T, d_model)")
        d = inputs_shape[-1]
        common = dict(dtype=self.dtype_policy)
        self.self_attention = MultiHeadAttention(
            self.num_heads, _head_dim(d, self.num_heads), name="self_attention",
            max_relative_position=self.max_relative_position, **common)
        self.self_attention.build(inputs_shape, inputs_shape)
        self.norm1 = keras.layers.LayerNormalization(epsilon=1e-6, name="norm1",
                                                     **common)
        self.norm2 = keras.layers.LayerNormalization(epsilon=1e-6, name="norm2",
                                                     **common)
        self.ffn_inner = keras.layers.Dense(self.ff_dim, activation="relu",
                                            name="ffn_inner", **common)
        self.ffn_outer = keras.layers.Dense(d, name="ffn_outer", **common)
        self.drop = keras.layers.Dropout(self.dropout, name="dropout", **common)
        for layer in (self.norm1, self.norm2, self.ffn_inner):
            layer.build(inputs_shape)
        self.ffn_outer.build(tuple(inputs_shape[:-1]) + (self.ff_dim,))
        self.built = True

    def call(self, inputs, mask=None, training=None):
        checks.rank("inputs", inputs.shape, (3,), "(batch, T, d_model)")
        a = self.self_attention(inputs, inputs, query_mask=mask, value_mask=mask,
                                training=training)
        x = self.norm1(inputs + self.drop(a, training=training))
        f = self.ffn_outer(self.ffn_inner(x))
        return self.norm2(x + self.drop(f, training=training))

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update({"num_heads": self.num_heads, "ff_dim": self.ff_dim,
                       "dropout": self.dropout})
        if self.max_relative_position is not None:   # older files lack it
            config["max_relative_position"] = self.max_relative_position
        return config


@keras.saving.register_keras_serializable(package="kerattn")
class TransformerDecoderBlock(keras.layers.Layer):
    """One decoder layer of Vaswani et al. (2017), section 3.1 (post-norm).

        x = LayerNorm(x + Dropout(MaskedMultiHead(x, x, x)))     (causal)
        x = LayerNorm(x + Dropout(MultiHead(x, memory, memory)))
        x = LayerNorm(x + Dropout(FFN(x)))

    `step()` runs one position with a key/value cache of the previous
    positions' projected self-attention keys and values (no recomputation
    of the prefix) and the memory's keys and values projected once.

    Args:
        num_heads, ff_dim, dropout, max_relative_position: as
            `TransformerEncoderBlock` (relative positions in the causal
            self-attention only; `step()` places its query at `index`).

    Call arguments:
        inputs: `(batch, T, d_model)` target states.
        memory: `(batch, S, d_model)` encoder outputs.
        inputs_mask, memory_mask: optional boolean masks; the implicit
            masks when None.

    Returns:
        `(batch, T, d_model)`.

    Example:

    >>> import numpy as np
    >>> y = np.random.rand(2, 5, 8).astype("float32")
    >>> m = np.random.rand(2, 7, 8).astype("float32")
    >>> tuple(TransformerDecoderBlock(2, 16)(y, m).shape)
    (2, 5, 8)
    """

    def __init__(self, num_heads, ff_dim, dropout=0.1,
                 max_relative_position=None, **kwargs):
        super().__init__(**kwargs)
        _check_block_args(num_heads, ff_dim, dropout)
        checks.positive_int("max_relative_position", max_relative_position,
                            allow_none=True)
        self.max_relative_position = max_relative_position
        self.num_heads = num_heads
        self.ff_dim = ff_dim
        self.dropout = dropout
        self.supports_masking = True

    def build(self, inputs_shape, memory_shape):
        checks.rank("inputs", inputs_shape, (3,), "(batch, T, d_model)")
        checks.rank("memory", memory_shape, (3,), "(batch, S, d_model)")
        d = inputs_shape[-1]
        head = _head_dim(d, self.num_heads)
        common = dict(dtype=self.dtype_policy)
        self.self_attention = MultiHeadAttention(
            self.num_heads, head, causal=True, name="self_attention",
            max_relative_position=self.max_relative_position, **common)
        self.self_attention.build(inputs_shape, inputs_shape)
        self.cross_attention = MultiHeadAttention(
            self.num_heads, head, name="cross_attention", **common)
        self.cross_attention.build(inputs_shape, memory_shape)
        self.norms = [keras.layers.LayerNormalization(
            epsilon=1e-6, name=f"norm{k + 1}", **common) for k in range(3)]
        for norm in self.norms:
            norm.build(inputs_shape)
        self.ffn_inner = keras.layers.Dense(self.ff_dim, activation="relu",
                                            name="ffn_inner", **common)
        self.ffn_inner.build(inputs_shape)
        self.ffn_outer = keras.layers.Dense(d, name="ffn_outer", **common)
        self.ffn_outer.build(tuple(inputs_shape[:-1]) + (self.ff_dim,))
        self.drop = keras.layers.Dropout(self.dropout, name="dropout", **common)
        self.built = True

    def _tail(self, x, cross, training):
        x = self.norms[1](x + self.drop(cross, training=training))
        f = self.ffn_outer(self.ffn_inner(x))
        return self.norms[2](x + self.drop(f, training=training))

    def call(self, inputs, memory, inputs_mask=None, memory_mask=None,
             training=None):
        a = self.self_attention(inputs, inputs, query_mask=inputs_mask,
                                value_mask=inputs_mask, training=training)
        x = self.norms[0](inputs + self.drop(a, training=training))
        c = self.cross_attention(x, memory, query_mask=inputs_mask,
                                 value_mask=memory_mask, training=training)
        return self._tail(x, c, training)

    def init_cache(self, batch_size, max_length):
        """Zero key/value caches for `max_length` positions."""
        heads, dim = self.num_heads, self.self_attention.key_dim
        shape = (batch_size, max_length, heads, dim)
        return {"key": ops.zeros(shape, self.compute_dtype),
                "value": ops.zeros(shape, self.compute_dtype)}

    def step(self, inputs, cache, memory_kv, memory_mask, index):
        """One position: `(batch, d_model)` -> `(output, cache, cross weights)`.

        Args:
            inputs: `(batch, d_model)`, the state at position `index`.
            cache: `{"key", "value"}` from `init_cache` or the last step.
            memory_kv: `cross_attention.project_key_value(memory, memory)`.
            memory_mask: boolean `(batch, S)`.
            index: the position (int or scalar tensor).

        Returns:
            `(output (batch, d_model), cache, weights (batch, heads, S))`.
        """
        x = ops.expand_dims(inputs, 1)  # (B, 1, d)
        k, v = self.self_attention.project_key_value(x, x)
        start = (0, index, 0, 0)
        cache = {"key": ops.slice_update(cache["key"], start, k),
                 "value": ops.slice_update(cache["value"], start, v)}
        length = ops.shape(cache["key"])[1]
        seen = ops.reshape(ops.less_equal(ops.arange(length), index),
                           (1, 1, -1))  # positions <= index
        # The query's position: the step's (the cache is fixed-size).
        positions = (None if self.max_relative_position is None else
                     ops.reshape(ops.cast(index, "int32"), (1,)))
        a, _ = self.self_attention.attend(x, cache["key"], cache["value"], seen,
                                          query_positions=positions)
        x = self.norms[0](x + a)
        mask = ops.expand_dims(ops.cast(memory_mask, "bool"), 1)
        c, weights = self.cross_attention.attend(
            x, memory_kv[0], memory_kv[1], mask, return_attention_scores=True)
        out = self._tail(x, c, None)
        return ops.squeeze(out, 1), cache, ops.squeeze(weights, 2)

    def compute_output_shape(self, inputs_shape, memory_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update({"num_heads": self.num_heads, "ff_dim": self.ff_dim,
                       "dropout": self.dropout})
        if self.max_relative_position is not None:   # older files lack it
            config["max_relative_position"] = self.max_relative_position
        return config
