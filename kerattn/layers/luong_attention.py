"""Multiplicative and location-based attention (Luong et al., 2015)."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.base_attention import BaseAttention

SCORES = ("dot", "general", "concat", "location")


@keras.saving.register_keras_serializable(package="kerattn")
class LuongAttention(BaseAttention):
    """Global attention of Luong, Pham and Manning (2015), all four scores.

    "Effective Approaches to Attention-based Neural Machine Translation",
    section 3.1, with `h_t` the query (the current decoder state) and
    `h_s` the keys (the encoder states; values default to the same):

        score(h_t, h_s) = h_t^T h_s                        "dot"
                          h_t^T W_a h_s                    "general"
                          v_a^T tanh(W_a [h_t; h_s])       "concat"
        a_t = softmax(W_a h_t)                             "location"
        a_t(s) = softmax_s(score(h_t, h_s)),   c_t = sum_s a_t(s) h_s

    "location" ignores the keys: `W_a` maps `h_t` to one logit per source
    position up to `max_length`, and the logits are cut to the actual
    source length `Tv <= max_length` and masked to each example's real
    length before the softmax.

    The key-only parts (`W_a h_s` for "general", the `h_s` half of `W_a`
    for "concat") are computed once per source by `project_key`.

    With `coverage=True` ("concat" only) the score also reads the coverage
    vector `c^t = sum_{t' < t} a_{t'}` (See et al., 2017, eq. 11, on
    Luong's concat score):

        score(h_t, h_s) = v_a^T tanh(W_a [h_t; h_s] + w_c c^t_s + b)

    Its `alignment_state` is then "cumulative" (see `BahdanauAttention`'s
    `coverage`, and there how it differs from beam search's
    `coverage_penalty`).

    "location" here is Luong's score from the target state alone; the
    attention that reads where it looked before (Chorowski et al., 2015)
    is `LocationSensitiveAttention`.

    With `score="dot"` this is `keras.layers.Attention`, and with
    `scale=True` that layer's `use_scale=True`: a learned scalar that
    multiplies the scores (initialised to 1).

    Args:
        score: one of "dot", "general", "concat", "location".
        units: int, the hidden size of the "concat" score (the rows of its
            `W_a`); defaults to the query size. Only for "concat".
        max_length: int, the maximum source length of the "location" score.
            Required for "location", rejected otherwise.
        scale: bool, learn a scalar that multiplies the scores.
        coverage: bool, score with the coverage vector ("concat" only).
        kernel_initializer: initializer of the weights.
        kernel_regularizer: optional regularizer of the weights.
        dropout: float in [0, 1), dropout on the attention weights.
        causal: bool, causal masking for self-attention.
        probability_fn: "softmax", "hardmax" or "sparsemax": tfa's
            `probability_fn` of the same name (see
            `kerattn.layers.BaseAttention`).
        **kwargs: base layer keyword arguments.

    Call arguments, Returns: see `kerattn.layers.BaseAttention`. "dot"
    needs `query_dim == key_dim`.

    Example:

    >>> import numpy as np
    >>> h_s = np.random.rand(2, 7, 16).astype("float32")
    >>> h_t = np.random.rand(2, 5, 16).astype("float32")
    >>> attention = LuongAttention(score="general")
    >>> context, a_t = attention(h_t, h_s, return_attention_scores=True)
    >>> tuple(context.shape), tuple(a_t.shape)
    ((2, 5, 16), (2, 5, 7))
    """

    def __init__(
        self,
        score="dot",
        units=None,
        max_length=None,
        scale=False,
        coverage=False,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        dropout=0.0,
        causal=False,
        probability_fn="softmax",
        **kwargs,
    ):
        super().__init__(dropout=dropout, causal=causal,
                         probability_fn=probability_fn, **kwargs)
        checks.one_of("score", score, SCORES)
        checks.positive_int("units", units, allow_none=True)
        checks.require(
            units is None or score == "concat", "units",
            "None unless score='concat'", units,
            note=f"It applies only to score='concat', not score={score!r}.")
        if score == "location":
            checks.positive_int("max_length", max_length)
        else:
            checks.require(
                max_length is None, "max_length",
                "None unless score='location'", max_length,
                note="It applies only to score='location', not "
                f"score={score!r}.")
        checks.boolean("scale", scale)
        checks.boolean("coverage", coverage)
        checks.require(
            not coverage or score == "concat", "coverage",
            "False unless score='concat'", coverage,
            note=f"Coverage enters the concat score, not score={score!r}.")
        self.coverage = coverage
        self.score = score
        self.units = units
        self.max_length = max_length
        self.scale = scale
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    def _validate_shapes(self, query_shape, value_shape, key_shape=None):
        super()._validate_shapes(query_shape, value_shape, key_shape)
        if self.score == "dot":
            key_shape = value_shape if key_shape is None else key_shape
            checks.same("query", query_shape[-1], "key", key_shape[-1],
                        "last dimension with score='dot' (`value` if no key; "
                        "score='general' learns a projection)")
        if self.score == "location":
            tv = value_shape[1]
            if tv is not None and int(tv) > self.max_length:
                checks.fail(
                    "value", f"no longer than max_length={self.max_length} "
                    f"(score='location'), shaped (batch, Tv <= "
                    f"{self.max_length}, dim)", tuple(value_shape))

    def build(self, query_shape, value_shape, key_shape=None):
        self._record_dims(query_shape, value_shape, key_shape)
        q_dim = query_shape[-1]
        k_dim = (value_shape if key_shape is None else key_shape)[-1]
        common = dict(
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            dtype=self.variable_dtype,
        )
        if self.score == "general":
            # h_t^T W_a h_s, W_a of shape (query_dim, key_dim) as in the paper.
            self.W_a = self.add_weight(
                name="W_a", shape=(q_dim, k_dim), **common
            )
        elif self.score == "concat":
            units = self.units or q_dim
            # W_a [h_t; h_s]: rows [:query_dim] act on h_t, the rest on h_s.
            self.W_a = self.add_weight(
                name="W_a", shape=(q_dim + k_dim, units), **common
            )
            self.v_a = self.add_weight(name="v_a", shape=(units,), **common)
            if self.coverage:
                self.b = self.add_weight(name="b", shape=(units,),
                                         initializer="zeros",
                                         dtype=self.variable_dtype)
                self.w_c = self.add_weight(name="w_c", shape=(units,),
                                           **common)
        elif self.score == "location":
            self.W_a = self.add_weight(
                name="W_a", shape=(q_dim, self.max_length), **common
            )
        if self.scale:
            self.scale_factor = self.add_weight(
                name="scale",
                shape=(),
                initializer="ones",
                dtype=self.variable_dtype,
            )
        self.built = True

    _probability_fn_refused = None

    @property
    def alignment_state(self):
        """"cumulative" with `coverage=True` (the decoder carries `c^t`)."""
        return "cumulative" if self.coverage else None

    def project_key(self, key):
        """The key-only part of the score (`W_a h_s` for "general")."""
        self._check_key(key)
        if self.score == "general":
            # (W_a h_s)^T for every s: (batch, Tv, query_dim).
            return utils.project(key, ops.transpose(self.W_a))
        if self.score == "concat":
            q_dim = int(self._dims["query"])
            return utils.project(key, self.W_a[q_dim:])
        return key

    def _calculate_scores(self, query, key, alignment_history=None):
        if self.score in ("dot", "general"):
            scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))
        elif self.score == "concat":
            q_dim = int(query.shape[-1])
            hidden = ops.expand_dims(utils.project(query, self.W_a[:q_dim]), 2)
            hidden = hidden + ops.expand_dims(key, 1)
            if alignment_history is not None:  # w_c c_s + b (coverage)
                hidden = hidden + utils.alignment_features(
                    alignment_history, ops.expand_dims(self.w_c, 0)) + self.b
            hidden = ops.tanh(hidden)
            scores = ops.sum(hidden * self.v_a, axis=-1)
        else:  # location: one logit per source position, cut to Tv.
            scores = utils.project(query, self.W_a)
            scores = scores[:, :, : ops.shape(key)[1]]
        if self.scale:
            scores = scores * self.scale_factor
        return scores

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score": self.score,
                "units": self.units,
                "max_length": self.max_length,
                "scale": self.scale,
                "coverage": self.coverage,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
            }
        )
        return config
