"""Dynamic convolution attention (Battenberg et al., 2020)."""

import math

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.base_attention import BaseAttention

# The floor under the prior before its log (every public implementation
# has one; the paper gives none): a position the prior cannot reach gets
# log(1e-6) = -13.8, not -inf.
PRIOR_FLOOR = 1e-6


def beta_binomial(length, alpha, beta):
    """The beta-binomial pmf `P(k)`, `k = 0 .. length - 1` (`n = length -
    1` trials): `C(n, k) B(k + alpha, n - k + beta) / B(alpha, beta)`.

    >>> [round(p, 3) for p in beta_binomial(3, 1.0, 1.0)]   # uniform
    [0.333, 0.333, 0.333]
    """
    n = length - 1

    def log_beta(a, b):
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)

    return [math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                     + log_beta(k + alpha, n - k + beta) - log_beta(alpha, beta))
            for k in range(length)]


def _windows(x, before, after):
    """`(..., Tv)` -> `(..., Tv, before + 1 + after)`: at `j`, the values at
    `j - before .. j + after` (zeros outside the sequence)."""
    length = ops.shape(x)[-1]
    pad = [[0, 0]] * (len(x.shape) - 1) + [[before, after]]
    padded = ops.pad(x, pad)
    return ops.stack([padded[..., k:k + length]
                      for k in range(before + 1 + after)], axis=-1)


@keras.saving.register_keras_serializable(package="kerattn")
class DynamicConvolutionAttention(BaseAttention):
    """Dynamic convolution attention (DCA) of Battenberg et al. (2020).

    "Location-Relative Attention Mechanisms for Robust Long-Form Speech
    Synthesis", section 2.2: location-sensitive attention without its
    content terms, plus filters predicted from the query and a fixed prior
    that only moves forward:

        f_i = F * alpha_{i-1}                       (static filters)
        g_i = G(s_i) * alpha_{i-1},  G(s_i) = V_G tanh(W_G s_i + b_G)
        p_i = log(P * alpha_{i-1})                  (the causal prior)
        e_ij = v^T tanh(U f_ij + T g_ij + b) + p_ij
        alpha_i = softmax(e_i)

    `F` is `static_filters` filters of odd width `static_width`, `G(s_i)`
    `dynamic_filters` filters of odd width `dynamic_width` predicted for
    each query (both centred on each position, zeros outside the source);
    `P` is the beta-binomial pmf of `prior_length` taps with parameters
    `prior_alpha`, `prior_beta`, applied causally, `(P * a)_j = sum_k P(k)
    a_{j-k}` (mass moves forward by `k` with probability `P(k)`; the
    defaults' mean is one position), floored at `PRIOR_FLOOR` before the
    log. The defaults are the paper's: 8 static and 8 dynamic filters of
    width 21, a prior of 11 taps with (0.1, 0.9), 128 units. The weights:
    `static_kernel` `F` `(static_width, static_filters)`,
    `dynamic_hidden_kernel` `W_G`, `dynamic_hidden_bias` `b_G`,
    `dynamic_kernel` `V_G` `(units, dynamic_filters * dynamic_width)`,
    `static_projection` `U`, `dynamic_projection` `T`, `b`, `v`.

    The score reads no source content (`value` is only averaged). Its
    state in the step protocol (`BaseAttention`) is `{"alignment":
    alpha_{i-1}}` in float32, one-hot at each row's first real position
    before the first step; called alone, the layer takes
    `alignment_history=` (`(batch, Tv)` or `(batch, Tq, Tv)`, that one-hot
    when None). Padded positions get exactly 0; a fully padded row zeros.

    Args:
        units: int, the hidden size of the energy (and of `G`'s network).
        static_filters, static_width: `F`'s count and odd width.
        dynamic_filters, dynamic_width: `G(s_i)`'s count and odd width.
        prior_length, prior_alpha, prior_beta: the prior filter.
        kernel_initializer, kernel_regularizer: of the kernels.
        dropout: float in [0, 1), dropout on the attention weights.
        **kwargs: base layer keyword arguments.

    Example:

    >>> import numpy as np
    >>> s = np.random.rand(2, 8).astype("float32")
    >>> h = np.random.rand(2, 30, 4).astype("float32")
    >>> attention = DynamicConvolutionAttention(16, static_width=5,
    ...                                         dynamic_width=5)
    >>> context, alpha = attention(s, h, return_attention_scores=True)
    >>> tuple(context.shape), round(float(keras.ops.sum(alpha[0])), 4)
    ((2, 4), 1.0)
    """

    alignment_state = "previous"
    _history_dtype = "float32"
    _causal_refused = "it scores with its own past alignments"

    def __init__(self, units=128, static_filters=8, static_width=21,
                 dynamic_filters=8, dynamic_width=21, prior_length=11,
                 prior_alpha=0.1, prior_beta=0.9,
                 kernel_initializer="glorot_uniform", kernel_regularizer=None,
                 **kwargs):
        super().__init__(**kwargs)
        checks.positive_int("units", units)
        for name, value in (("static_filters", static_filters),
                            ("dynamic_filters", dynamic_filters),
                            ("prior_length", prior_length)):
            checks.positive_int(name, value)
        for name, value in (("static_width", static_width),
                            ("dynamic_width", dynamic_width)):
            checks.odd_int(name, value, "the filters are centred on each position")
        checks.number("prior_alpha", prior_alpha, low=0.0, low_open=True)
        checks.number("prior_beta", prior_beta, low=0.0, low_open=True)
        self.units = units
        self.static_filters = static_filters
        self.static_width = static_width
        self.dynamic_filters = dynamic_filters
        self.dynamic_width = dynamic_width
        self.prior_length = prior_length
        self.prior_alpha = float(prior_alpha)
        self.prior_beta = float(prior_beta)
        self.prior = beta_binomial(prior_length, self.prior_alpha, self.prior_beta)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    def build(self, query_shape, value_shape, key_shape=None):
        self._record_dims(query_shape, value_shape, key_shape)
        common = dict(initializer=self.kernel_initializer,
                      regularizer=self.kernel_regularizer,
                      dtype=self.variable_dtype)
        zeros = dict(initializer="zeros", dtype=self.variable_dtype)
        u = self.units
        self.static_kernel = self.add_weight(
            name="static_kernel", shape=(self.static_width, self.static_filters),
            **common)
        self.dynamic_hidden_kernel = self.add_weight(
            name="dynamic_hidden_kernel", shape=(query_shape[-1], u), **common)
        self.dynamic_hidden_bias = self.add_weight(
            name="dynamic_hidden_bias", shape=(u,), **zeros)
        self.dynamic_kernel = self.add_weight(
            name="dynamic_kernel",
            shape=(u, self.dynamic_filters * self.dynamic_width), **common)
        self.static_projection = self.add_weight(
            name="static_projection", shape=(self.static_filters, u), **common)
        self.dynamic_projection = self.add_weight(
            name="dynamic_projection", shape=(self.dynamic_filters, u), **common)
        self.b = self.add_weight(name="b", shape=(u,), **zeros)
        self.v = self.add_weight(name="v", shape=(u,), **common)
        self.built = True

    def initial_alignment(self, value_mask):
        """`alpha_0`: one-hot at each row's first real position (float32;
        zeros for a fully padded row)."""
        return utils.first_position(value_mask)

    def _calculate_scores(self, query, key, alignment_history=None):
        """`e` `(batch, Tq, Tv)` from the queries and `alpha_{i-1}`."""
        history = ops.cast(alignment_history, "float32")           # (b, Tq, Tv)
        half_s, half_d = self.static_width // 2, self.dynamic_width // 2
        dtype = self.compute_dtype
        near = ops.cast(_windows(history, half_s, half_s), dtype)  # (b, Tq, Tv, r)
        f = utils.project(near, self.static_kernel)                # (b, Tq, Tv, k_s)
        hidden = ops.tanh(utils.project(query, self.dynamic_hidden_kernel)
                          + self.dynamic_hidden_bias)
        filters = utils.project(hidden, self.dynamic_kernel)       # (b, Tq, k_d r_d)
        filters = ops.reshape(filters, (ops.shape(query)[0], ops.shape(query)[1],
                                        self.dynamic_filters, self.dynamic_width))
        near = ops.cast(_windows(history, half_d, half_d), dtype)
        g = ops.einsum("bqjr,bqkr->bqjk", near, filters)          # (b, Tq, Tv, k_d)
        energy = ops.tanh(utils.project(f, self.static_projection)
                          + utils.project(g, self.dynamic_projection) + self.b)
        e = ops.cast(ops.sum(energy * self.v, axis=-1), "float32")
        taps = ops.convert_to_tensor(self.prior[::-1], "float32")  # a_{j-n} .. a_j
        prior = ops.sum(_windows(history, self.prior_length - 1, 0) * taps, axis=-1)
        return e + ops.log(ops.maximum(prior, PRIOR_FLOOR))

    def _normalize(self, scores, mask):
        return ops.cast(utils.masked_softmax(scores, mask), self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.pop("causal", None)
        config.update({
            "units": self.units,
            "static_filters": self.static_filters,
            "static_width": self.static_width,
            "dynamic_filters": self.dynamic_filters,
            "dynamic_width": self.dynamic_width,
            "prior_length": self.prior_length,
            "prior_alpha": self.prior_alpha,
            "prior_beta": self.prior_beta,
            "kernel_initializer": keras.initializers.serialize(
                self.kernel_initializer),
            "kernel_regularizer": keras.regularizers.serialize(
                self.kernel_regularizer),
        })
        return config
