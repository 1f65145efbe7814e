"""Location-sensitive attention (Chorowski et al., 2015)."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.bahdanau_attention import BahdanauAttention


@keras.saving.register_keras_serializable(package="kerattn")
class LocationSensitiveAttention(BahdanauAttention):
    """Location-sensitive attention of Chorowski et al. (2015).

    "Attention-Based Models for Speech Recognition", section 2.2, eq. 8-9:
    the additive score also reads where the previous step attended,

        f_i = F * alpha_{i-1}                          (eq. 8)
        e_ij = w^T tanh(W s_{i-1} + V h_j + U f_ij + b) (eq. 9)

    `F` is `filters` (`k`) 1-D convolution filters of odd width
    `kernel_size` (`r`), applied with "same" padding (padded source
    positions are zero, so they contribute nothing); `U` maps the `k`
    location features into the `units` of the hidden layer. The weights
    carry Bahdanau's names: `W_a` is `W`, `U_a` is `V` (`project_key`), `v_a`
    is `w`, and the new ones are `b`, `location_kernel` (`F`, `(r, 1, k)`)
    and `location_projection` (`U`, `(k, units)`).

    Section 2.3's options: `sharpening=beta` scales the scores before the
    softmax, `alpha_ij = exp(beta e_ij) / sum_j exp(beta e_ij)`, and
    `smoothing=True` replaces the exponential by the logistic sigmoid,
    `alpha_ij = sigmoid(e_ij) / sum_j sigmoid(e_ij)` (a wider focus).
    `cumulative=True` convolves the sum of all previous alignments instead
    of the last one (Tacotron 2, Shen et al., 2018, section 2.2, whose
    sizes are the defaults here: 32 filters of width 31). Coverage's
    `w_c c_j` term (`BahdanauAttention(coverage=True)`) is the width-1,
    one-filter, cumulative case of `U f_ij`.

    `alignment_state` is "previous" (or "cumulative"): its state in the step
    protocol (`BaseAttention`) is `{"alignment": alpha_{i-1}}`, which
    `AttentionRNN` carries and passes back at each step; called alone, the
    layer takes `alignment_history=` (zeros when not given, the history
    before the first step).

    `LuongAttention(score="location")` is another mechanism: Luong's score
    from the target state alone, `a_t = softmax(W_a h_t)`, which reads no
    previous alignment.

    Args:
        units: int, the hidden size of the score (the length of `w`).
        filters: int `k`, the number of location filters.
        kernel_size: odd int `r`, the filters' width.
        cumulative: bool, convolve the cumulative alignment (Tacotron 2).
        sharpening: float `beta > 0`, the inverse temperature of the
            softmax (1: the plain softmax).
        smoothing: bool, normalise sigmoids instead of exponentials.
        normalize: bool, weight normalisation of `w` (`BahdanauAttention`).
        kernel_initializer, kernel_regularizer, dropout: as in
            `BahdanauAttention`.
        **kwargs: base layer keyword arguments.

    Call arguments, Returns: see `kerattn.layers.BaseAttention`
    (`alignment_history` included).

    Example:

    >>> import numpy as np
    >>> h = np.random.rand(2, 7, 16).astype("float32")       # h_j
    >>> s_prev = np.random.rand(2, 32).astype("float32")     # s_{i-1}
    >>> attention = LocationSensitiveAttention(8, filters=4, kernel_size=3)
    >>> context, alpha = attention(s_prev, h, return_attention_scores=True)
    >>> context, alpha = attention(s_prev, h, alignment_history=alpha,
    ...                            return_attention_scores=True)
    >>> tuple(context.shape), tuple(alpha.shape)
    ((2, 16), (2, 7))
    """

    def __init__(
        self,
        units,
        filters=32,
        kernel_size=31,
        cumulative=False,
        sharpening=1.0,
        smoothing=False,
        normalize=False,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        dropout=0.0,
        **kwargs,
    ):
        checks.require(
            not kwargs.pop("coverage", False), "coverage",
            "False for LocationSensitiveAttention (use cumulative=True to "
            "read the summed alignments)", True)
        super().__init__(
            units,
            normalize=normalize,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            dropout=dropout,
            **kwargs,
        )
        checks.positive_int("filters", filters)
        checks.positive_int("kernel_size", kernel_size)
        checks.require(kernel_size % 2 == 1, "kernel_size",
                       "an odd int (the window is centred on each position)",
                       kernel_size)
        checks.boolean("cumulative", cumulative)
        checks.number("sharpening", sharpening, low=0.0, low_open=True)
        checks.boolean("smoothing", smoothing)
        self.filters = filters
        self.kernel_size = kernel_size
        self.cumulative = cumulative
        self.sharpening = float(sharpening)
        self.smoothing = smoothing

    _causal_refused = "it scores with its own past alignments"

    @property
    def alignment_state(self):
        """"previous" (`alpha_{i-1}`), or "cumulative" with `cumulative=True`."""
        return "cumulative" if self.cumulative else "previous"

    @property
    def uses_bias(self):
        return True

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        common = dict(
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            dtype=self.variable_dtype,
        )
        self.location_kernel = self.add_weight(
            name="location_kernel", shape=(self.kernel_size, 1, self.filters),
            **common)
        self.location_projection = self.add_weight(
            name="location_projection", shape=(self.filters, self.units),
            **common)
        self.built = True

    def alignment_term(self, history):
        """`U f_ij`, `f = F * history`: `(batch, Tq, Tv, units)`."""
        return utils.alignment_features(
            history, self.location_projection, kernel=self.location_kernel)

    def _normalize(self, scores, mask):
        if self.sharpening != 1.0:
            scores = scores * self.sharpening
        if not self.smoothing:
            return utils.masked_softmax(scores, mask)
        weights = ops.sigmoid(scores)
        if mask is not None:
            weights = ops.where(mask, weights, ops.zeros_like(weights))
        total = ops.sum(weights, axis=-1, keepdims=True)
        # A fully masked row sums to 0: it divides by 1 and stays zeros.
        return weights / ops.where(total > 0, total, ops.ones_like(total))

    def get_config(self):
        config = super().get_config()
        for name in ("causal", "coverage"):
            config.pop(name, None)
        config.update({
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "cumulative": self.cumulative,
            "sharpening": self.sharpening,
            "smoothing": self.smoothing,
        })
        return config
