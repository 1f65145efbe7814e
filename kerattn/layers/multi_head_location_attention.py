"""Multi-head additive and location-sensitive attention (ESPnet's family)."""

import math

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.base_attention import BaseAttention


@keras.saving.register_keras_serializable(package="kerattn")
class MultiHeadLocationAttention(BaseAttention):
    """Multi-head additive attention, with location features per head.

    ESPnet's recurrent decoders' multi-head attentions
    (`espnet/nets/pytorch_backend/rnn/attentions.py`): `AttMultiHeadAdd`
    (`location=False`), `AttMultiHeadLoc` (`location=True`) and
    `AttMultiHeadMultiResLoc` (`location=True, multi_resolution=True`).
    Each head `h` scores additively (Bahdanau et al.'s form, Vaswani et
    al.'s heads) and averages its own projection of the memory:

        e^h_j = g_h^T tanh(K_h h_j + Q_h s + q_h + U_h (F_h * a^h_{i-1})_j) + b_h
        a^h = softmax(scaling e^h),    c^h = sum_j a^h_j V_h h_j
        c = O [c^1; ...; c^H]

    `K_h` `(key, key_dim)`, `V_h` `(value, value_dim)`, `O` `(heads
    value_dim, output_dim)` have no bias; `Q_h` has `q_h`, `g_h` has `b_h`.
    The location term (`location=True`) convolves each head's own previous
    weights with `filters` filters (no bias) of odd width `kernel_size`, or
    with `multi_resolution=True` of width `2 floor(r (h + 1) / H) + 1` for
    head `h = 0 .. H-1` and `r = (kernel_size - 1) / 2` (ESPnet's
    `aconv_filts * (h + 1) // aheads`), then maps them by `U_h` (no bias).
    `scaling` defaults to ESPnet's: 2 for `AttMultiHeadLoc` (its forward's
    default), `1 / sqrt(key_dim)` for the other two.

    Its state in the step protocol (`BaseAttention`) is `{"alignment":
    (batch, heads, S)}` with `location=True` (each head's previous weights,
    uniform over the real positions before the first step, as ESPnet
    starts them), float32; `()` without. The weights it returns (to the
    decoder, the plots, beam search's coverage penalty) are the heads'
    mean; `return_head_weights=True` also returns `(batch, [Tq,] heads,
    S)`. Called alone, the layer takes `alignment_history=` `(batch,
    heads, S)` (one step) or `(batch, Tq, heads, S)`. Padded positions get
    exactly 0; a fully padded row zeros.

    Args:
        num_heads: int `H`.
        key_dim: int, each head's score size (`att_dim_k`).
        value_dim: int, each head's value size (`att_dim_v`; `key_dim` when
            None).
        output_dim: int, the context's size (`eprojs`: the memory's when
            None).
        location: bool, the per-head location term.
        filters, kernel_size: the location convolution's channels and odd
            width (ESPnet's `aconv_chans`, `2 aconv_filts + 1`).
        multi_resolution: bool, head widths growing with `h`.
        scaling: float > 0 or None (ESPnet's, above).
        kernel_initializer, kernel_regularizer: of the kernels.
        dropout: float in [0, 1), dropout on the attention weights.
        **kwargs: base layer keyword arguments.

    Example:

    >>> import numpy as np
    >>> h = np.random.rand(2, 9, 6).astype("float32")
    >>> s = np.random.rand(2, 5).astype("float32")
    >>> attention = MultiHeadLocationAttention(
    ...     4, key_dim=8, location=True, filters=3, kernel_size=5,
    ...     multi_resolution=True)
    >>> context, mean, heads = attention(s, h, return_attention_scores=True,
    ...                                  return_head_weights=True)
    >>> tuple(context.shape), tuple(mean.shape), tuple(heads.shape)
    ((2, 6), (2, 9), (2, 4, 9))
    """

    _history_dtype = "float32"
    _history_axes = (("heads", "num_heads", "number of heads"),)
    _causal_refused = "it scores with its heads' past alignments"

    def __init__(self, num_heads, key_dim, value_dim=None, output_dim=None,
                 location=False, filters=10, kernel_size=201,
                 multi_resolution=False, scaling=None,
                 kernel_initializer="glorot_uniform", kernel_regularizer=None,
                 **kwargs):
        super().__init__(**kwargs)
        checks.positive_int("num_heads", num_heads)
        checks.positive_int("key_dim", key_dim)
        checks.positive_int("value_dim", value_dim, allow_none=True)
        checks.positive_int("output_dim", output_dim, allow_none=True)
        checks.boolean("location", location)
        checks.boolean("multi_resolution", multi_resolution)
        checks.positive_int("filters", filters)
        checks.odd_int("kernel_size", kernel_size)
        checks.require(location or not multi_resolution, "multi_resolution",
                       "False without location=True (it sizes the location "
                       "filters)", multi_resolution)
        checks.number("scaling", scaling, low=0.0, low_open=True, allow_none=True)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim
        self.output_dim = output_dim
        self.location = location
        self.filters = filters
        self.kernel_size = kernel_size
        self.multi_resolution = multi_resolution
        self.scaling = scaling
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    @property
    def alignment_state(self):
        """"previous" per head with `location=True`, else None."""
        return "previous" if self.location else None

    @property
    def effective_scaling(self):
        if self.scaling is not None:
            return self.scaling
        if self.location and not self.multi_resolution:
            return 2.0
        return 1.0 / math.sqrt(self.key_dim)

    def widths(self):
        """Each head's location filter width."""
        half = (self.kernel_size - 1) // 2
        if not self.multi_resolution:
            return [self.kernel_size] * self.num_heads
        return [2 * (half * (h + 1) // self.num_heads) + 1
                for h in range(self.num_heads)]

    def build(self, query_shape, value_shape, key_shape=None):
        self._record_dims(query_shape, value_shape, key_shape)
        key_in = (value_shape if key_shape is None else key_shape)[-1]
        H, dk = self.num_heads, self.key_dim
        dv = self.value_dim or dk
        common = dict(initializer=self.kernel_initializer,
                      regularizer=self.kernel_regularizer,
                      dtype=self.variable_dtype)
        zeros = dict(initializer="zeros", dtype=self.variable_dtype)
        self.query_kernel = self.add_weight(name="query_kernel",
                                            shape=(H, query_shape[-1], dk), **common)
        self.query_bias = self.add_weight(name="query_bias", shape=(H, dk), **zeros)
        self.key_kernel = self.add_weight(name="key_kernel", shape=(H, key_in, dk),
                                          **common)
        self.value_kernel = self.add_weight(name="value_kernel",
                                            shape=(H, value_shape[-1], dv), **common)
        self.score_kernel = self.add_weight(name="score_kernel", shape=(H, dk),
                                            **common)
        self.score_bias = self.add_weight(name="score_bias", shape=(H,), **zeros)
        self.output_kernel = self.add_weight(
            name="output_kernel",
            shape=(H * dv, self.output_dim or value_shape[-1]), **common)
        if self.location:
            self.location_kernels = [
                self.add_weight(name=f"location_kernel_{h}",
                                shape=(width, 1, self.filters), **common)
                for h, width in enumerate(self.widths())]
            self.location_projection = self.add_weight(
                name="location_projection", shape=(H, self.filters, dk), **common)
        self.built = True

    def project_key(self, key):
        """Every head's `K_h h_j` and `V_h h_j`, concatenated: `(batch, S,
        H (key_dim + value_dim))` (the values are projected from `key`,
        which is `value` in a decoder)."""
        self._check_key(key)
        k = ops.einsum("bsd,hde->bshe", key, self.key_kernel)
        v = ops.einsum("bsd,hde->bshe", key, self.value_kernel)
        b, s = ops.shape(key)[0], ops.shape(key)[1]
        return ops.concatenate([ops.reshape(k, (b, s, -1)),
                                ops.reshape(v, (b, s, -1))], -1)

    def initial_alignment(self, value_mask):
        """Each head's first history: uniform over the real positions
        `(batch, heads, S)`, float32 (zeros for a fully padded row)."""
        real = ops.cast(ops.cast(value_mask, "float32") > 0.5, "float32")
        total = ops.sum(real, axis=-1, keepdims=True)
        uniform = real / ops.where(total > 0, total, 1.0)
        return ops.repeat(ops.expand_dims(uniform, -2), self.num_heads, axis=-2)

    def _compute_attention(self, query, key, value, mask, training,
                           return_attention_scores, alignment_history=None):
        """`(output, mean weights, {"heads": (b, Tq, H, S)[, "alignment"]})`."""
        H, dk = self.num_heads, self.key_dim
        dv = self.value_dim or dk
        b, s = ops.shape(key)[0], ops.shape(key)[1]
        k = ops.reshape(key[..., :H * dk], (b, s, H, dk))
        v = ops.reshape(key[..., H * dk:], (b, s, H, dv))
        q = ops.einsum("bqd,hde->bqhe", query, self.query_kernel) + self.query_bias
        hidden = ops.expand_dims(q, 3) + ops.expand_dims(
            ops.transpose(k, (0, 2, 1, 3)), 1)                     # (b, Tq, H, S, dk)
        if self.location:
            history = ops.cast(alignment_history, self.compute_dtype)
            tq = ops.shape(history)[1]
            terms = []
            for h, kernel in enumerate(self.location_kernels):
                flat = ops.reshape(history[:, :, h], (-1, s, 1))
                features = ops.conv(flat, kernel, padding="same")  # (b Tq, S, filters)
                terms.append(ops.reshape(
                    utils.project(features, self.location_projection[h]),
                    (b, tq, s, dk)))
            hidden = hidden + ops.stack(terms, axis=2)
        e = ops.sum(ops.tanh(hidden) * self.score_kernel[:, None, :], axis=-1)
        e = e + self.score_bias[:, None]                           # (b, Tq, H, S)
        e = ops.cast(e, "float32") * self.effective_scaling
        head_mask = None if mask is None else ops.expand_dims(mask, 2)
        heads = utils.masked_softmax(e, head_mask)                 # float32
        weights = ops.cast(heads, self.compute_dtype)
        dropped = self._dropout_layer(weights, training=training)
        contexts = ops.einsum("bqhs,bshe->bqhe", dropped, v)
        tq = ops.shape(contexts)[1]
        output = ops.matmul(ops.reshape(contexts, (b, tq, H * dv)), self.output_kernel)
        extras = {"heads": heads}
        if self.location:
            extras["alignment"] = heads
        return output, ops.mean(weights, axis=2), extras

    def call(self, query, value, key=None, query_mask=None, value_mask=None,
             attention_mask=None, projected_key=None, alignment_history=None,
             return_attention_scores=False, return_head_weights=False,
             training=None):
        output, weights, extras = self._attend(
            query, value, key=key, query_mask=query_mask, value_mask=value_mask,
            attention_mask=attention_mask, projected_key=projected_key,
            alignment_history=alignment_history, training=training)
        result = (output,)
        if return_attention_scores:
            result += (weights,)
        if return_head_weights:
            result += (extras["heads"],)
        return result[0] if len(result) == 1 else result

    def compute_output_spec(self, query, value, key=None, query_mask=None,
                            value_mask=None, attention_mask=None,
                            projected_key=None, alignment_history=None,
                            return_attention_scores=False,
                            return_head_weights=False, training=None):
        width = self.output_dim or value.shape[-1]
        output = keras.KerasTensor(tuple(query.shape[:-1]) + (width,),
                                   self.compute_dtype)
        weights = keras.KerasTensor(tuple(query.shape[:-1]) + (value.shape[1],),
                                    self.compute_dtype)
        result = (output,)
        if return_attention_scores:
            result += (weights,)
        if return_head_weights:
            result += (keras.KerasTensor(tuple(query.shape[:-1]) + (
                self.num_heads, value.shape[1]), "float32"),)
        return result[0] if len(result) == 1 else result

    # --- the step protocol --------------------------------------------------------

    def initial_state(self, cache, batch_size):
        if not self.location:
            return ()
        return {"alignment": self.initial_alignment(cache["mask"])}

    def step(self, query, cache, state, *, position=None, training=None,
             noise=None, mode=None):
        context, weights, extras = self._attend(
            query, cache["values"], projected_key=cache["keys"],
            value_mask=cache["mask"], training=training,
            alignment_history=state["alignment"] if self.location else None)
        if not self.location:
            return context, weights, state
        return context, weights, {"alignment": extras["alignment"]}

    def extend_source(self, state, cache):
        """Each head's weights padded to the longer source."""
        if not state:
            return state
        length = ops.shape(cache["mask"])[1]
        history = state["alignment"]
        return {"alignment": ops.pad(
            history, [[0, 0], [0, 0], [0, length - ops.shape(history)[-1]]])}

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        return tuple(query_shape[:-1]) + (self.output_dim or value_shape[-1],)

    def get_config(self):
        config = super().get_config()
        config.pop("causal", None)
        config.update({
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "value_dim": self.value_dim,
            "output_dim": self.output_dim,
            "location": self.location,
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "multi_resolution": self.multi_resolution,
            "scaling": self.scaling,
            "kernel_initializer": keras.initializers.serialize(
                self.kernel_initializer),
            "kernel_regularizer": keras.regularizers.serialize(
                self.kernel_regularizer),
        })
        return config
