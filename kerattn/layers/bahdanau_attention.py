"""Additive attention (Bahdanau et al., 2014)."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.base_attention import BaseAttention


@keras.saving.register_keras_serializable(package="kerattn")
class BahdanauAttention(BaseAttention):
    """Additive attention of Bahdanau, Cho and Bengio (2014).

    "Neural Machine Translation by Jointly Learning to Align and Translate",
    eq. 6 and appendix A.1.2:

        e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)
        alpha_ij = softmax_j(e_ij),    c_i = sum_j alpha_ij h_j

    `s_{i-1}` is the query (the previous decoder state), `h_j` the keys
    (the encoder annotations; the values default to the same tensor).
    `U_a h_j` does not depend on `i`: `project_key` computes it once per
    source sentence and `projected_key=` reuses it at every decoder step.

    With `coverage=True` the score also reads the coverage vector
    `c^i = sum_{i' < i} alpha_{i'}`, the attention the decoder has already
    paid to each source position (See et al., 2017, eq. 11):

        e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j + w_c c^i_j + b)

    with a learned vector `w_c` and bias `b`. Its `alignment_state` is then
    "cumulative": its state in the step protocol is `{"alignment": c^i}`,
    which `AttentionRNN` carries and passes back at each step. Pair it with
    the coverage loss (`kerattn.losses.coverage_loss`,
    `CoverageRegularization`, eq. 12-13). This is a training-time
    mechanism; the `coverage_penalty` of beam search (`kerattn.decoding`) is
    GNMT's decode-time term of every hypothesis's score, with no weights,
    and works with any attention.

    With `normalize=True` the score uses the weight-normalised
    `v = g * v_a / ||v_a||` and a bias `b` inside the `tanh` (Salimans and
    Kingma, 2016; the `normalize` option of TensorFlow Addons' attention).

    Compared with `keras.layers.AdditiveAttention`: that layer has no `W_a`
    and `U_a`; it expects an already projected query and key of equal size
    and its `use_scale=True` vector plays the role of `v_a`. With
    `query = s W_a`, `key = h U_a` and `scale = v_a` the two are equal.

    Args:
        units: int, the size of the alignment model's hidden layer (`n'` in
            the paper's appendix).
        normalize: bool, use weight normalisation of `v_a` (see above).
        coverage: bool, score with the coverage vector (see above).
        kernel_initializer: initializer of `W_a`, `U_a` and `v_a`.
        kernel_regularizer: optional regularizer of the same.
        dropout: float in [0, 1), dropout on the attention weights.
        causal: bool, causal masking for self-attention.
        probability_fn: "softmax", "hardmax" or "sparsemax": tfa's
            `probability_fn` of the same name (see
            `kerattn.layers.BaseAttention`).
        **kwargs: base layer keyword arguments.

    Call arguments, Returns: see `kerattn.layers.BaseAttention`.

    Example:

    >>> import numpy as np
    >>> states = np.random.rand(2, 7, 16).astype("float32")   # h_j
    >>> s_prev = np.random.rand(2, 32).astype("float32")      # s_{i-1}
    >>> attention = BahdanauAttention(units=8)
    >>> context, alpha = attention(
    ...     s_prev, states, return_attention_scores=True)
    >>> tuple(context.shape), tuple(alpha.shape)
    ((2, 16), (2, 7))
    >>> keys = attention.project_key(states)  # U_a h_j, once per sentence
    >>> context = attention(s_prev, states, projected_key=keys)
    """

    def __init__(
        self,
        units,
        normalize=False,
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
        checks.positive_int("units", units)
        checks.boolean("normalize", normalize)
        checks.boolean("coverage", coverage)
        checks.require(
            not (coverage and self._coverage_refused), "coverage",
            f"False for {type(self).__name__} ({self._coverage_refused})",
            coverage)
        self.units = units
        self.normalize = normalize
        self.coverage = coverage
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    _probability_fn_refused = None
    # Why a subclass refuses `coverage=True` (None: it takes it).
    _coverage_refused = None

    @property
    def alignment_state(self):
        """"cumulative" with `coverage=True` (the decoder carries `c^i`)."""
        return "cumulative" if self.coverage else None

    @property
    def uses_bias(self):
        """Whether the score has the bias `b` inside its tanh."""
        return self.normalize or self.coverage

    def build(self, query_shape, value_shape, key_shape=None):
        self._record_dims(query_shape, value_shape, key_shape)
        key_dim = (value_shape if key_shape is None else key_shape)[-1]
        common = dict(
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            dtype=self.variable_dtype,
        )
        self.W_a = self.add_weight(
            name="W_a", shape=(query_shape[-1], self.units), **common
        )
        self.U_a = self.add_weight(
            name="U_a", shape=(key_dim, self.units), **common
        )
        self.v_a = self.add_weight(name="v_a", shape=(self.units,), **common)
        if self.normalize:
            self.g = self.add_weight(
                name="g",
                shape=(),
                initializer=keras.initializers.Constant(
                    (1.0 / self.units) ** 0.5
                ),
                dtype=self.variable_dtype,
            )
        if self.uses_bias:
            self.b = self.add_weight(
                name="b",
                shape=(self.units,),
                initializer="zeros",
                dtype=self.variable_dtype,
            )
        if self.coverage:
            self.w_c = self.add_weight(name="w_c", shape=(self.units,),
                                       **common)
        self.built = True

    def project_key(self, key):
        """`U_a h_j` for every source position: `(batch, Tv, units)`."""
        self._check_key(key)
        return utils.project(key, self.U_a)

    def alignment_term(self, history):
        """The history's term inside the tanh, `(batch, Tq, Tv, units)`:
        `w_c c_j` (coverage)."""
        return utils.alignment_features(history, ops.expand_dims(self.w_c, 0))

    def _calculate_scores(self, query, key, alignment_history=None):
        # (batch, Tq, 1, units) + (batch, 1, Tv, units)
        hidden = ops.expand_dims(utils.project(query, self.W_a), 2)
        hidden = hidden + ops.expand_dims(key, 1)
        if alignment_history is not None:  # (batch, Tq, Tv, units)
            hidden = hidden + self.alignment_term(alignment_history)
        if self.uses_bias:
            hidden = hidden + self.b
        v_a = self.v_a
        if self.normalize:
            v_a = self.g * v_a * ops.rsqrt(ops.sum(ops.square(v_a)))
        return ops.sum(ops.tanh(hidden) * v_a, axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "normalize": self.normalize,
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
