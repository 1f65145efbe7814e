"""Location-sensitive attention (Chorowski et al., 2015)."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.bahdanau_attention import BahdanauAttention

# The histories the location filters may read (`channels`).
_CHANNELS = ("previous", "cumulative")


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
    is `w`, and the new ones are `b` (absent with `use_bias=False`),
    `location_kernel` (`F`, `(r, C, k)` for the `C` history `channels`) and
    `location_projection` (`U`, `(k, units)`).

    Section 2.3's options: `sharpening=beta` scales the scores before the
    softmax, `alpha_ij = exp(beta e_ij) / sum_j exp(beta e_ij)`, and
    `smoothing=True` replaces the exponential by the logistic sigmoid,
    `alpha_ij = sigmoid(e_ij) / sum_j sigmoid(e_ij)` (a wider focus).

    The history the filters read is a tuple of `channels`: "previous"
    (`alpha_{i-1}`, Chorowski et al.'s) and "cumulative" (`sum_{i' < i}
    alpha_{i'}`). Tacotron 2 (Shen et al., 2018, section 2.2: "cumulative
    attention weights from previous decoder time steps as an additional
    feature") reads both, as two input channels of one convolution:
    `channels=("previous", "cumulative")`, `use_bias=False`, `units=128`,
    32 filters of width 31 (the defaults' sizes). `cumulative=True` is
    short for `channels=("cumulative",)`. Coverage's `w_c c_j` term
    (`BahdanauAttention(coverage=True)`) is the width-1, one-filter,
    cumulative case of `U f_ij`.

    Porting NVIDIA's tacotron2 (`model.py`: `Attention`, `LocationLayer`),
    whose energy has no bias anywhere (`use_bias=False`) and whose decoder
    concatenates `[attention_weights, attention_weights_cum]` in that
    order, each torch weight `w` (`Linear`: `(out, in)`; `Conv1d`:
    `(out, in, width)`) maps as

        query_layer.linear_layer.weight      (units, query_dim) -> W_a = w.T
        memory_layer.linear_layer.weight     (units, key_dim)   -> U_a = w.T
        v.linear_layer.weight                (1, units)         -> v_a = w[0]
        location_layer.location_conv.conv.weight  (k, 2, r)
                                   -> location_kernel = w.transpose(2, 1, 0)
        location_layer.location_dense.linear_layer.weight  (units, k)
                                   -> location_projection = w.T

    (both convolve as a cross-correlation with `(r - 1) / 2` zeros each
    side, and mask padding with the softmax).

    `previous_steps=w` widens the "previous" channel to the `w` last
    alignments, `alpha_{i-w}, ..., alpha_{i-1}` (the oldest first), each an
    input channel of the convolution: ESPnet's 2-D location attention
    (`AttLoc2D(eprojs, dunits, att_dim, att_win, aconv_chans,
    aconv_filts)`), whose `Conv2d(1, C, (att_win, 2 aconv_filts + 1))`
    covers all `att_win` rows at once, is
    `LocationSensitiveAttention(att_dim, filters=aconv_chans,
    kernel_size=2 aconv_filts + 1, previous_steps=att_win,
    sharpening=2.0)` with its `loc_conv.weight` `(C, 1, att_win, width)`
    -> `location_kernel = w[:, 0].transpose(2, 1, 0)` (the other weights as
    for `AttLoc`, docs/layers.md). ESPnet starts every row of the window
    at the uniform weights over the real frames, ours at zeros (give
    ESPnet's as `alignment_history=` to match its first steps).

    `alignment_state` is the channel ("previous" or "cumulative"), its
    state in the step protocol (`BaseAttention`) `{"alignment": the
    history}`, which `AttentionRNN` carries and passes back at each step;
    with two channels it is "previous+cumulative" and the state
    `{"previous": alpha_{i-1}, "cumulative": sum_{i' < i} alpha_{i'}}`;
    with `previous_steps=w` the older steps join it as "previous-2" (for
    `alpha_{i-2}`) up to "previous-w", each shifted along at every step.
    Called alone, the layer takes `alignment_history=`: the history
    `(batch, Tv)` or `(batch, Tq, Tv)`, or with several a tuple of them in
    the order of `alignment_state` (zeros when not given, the history
    before the first step).

    `LuongAttention(score="location")` is another mechanism: Luong's score
    from the target state alone, `a_t = softmax(W_a h_t)`, which reads no
    previous alignment.

    Args:
        units: int, the hidden size of the score (the length of `w`).
        filters: int `k`, the number of location filters.
        kernel_size: odd int `r`, the filters' width.
        channels: tuple of "previous" and / or "cumulative", the history
            channels the filters read (None: `("previous",)`, or
            `("cumulative",)` with `cumulative=True`).
        cumulative: bool, short for `channels=("cumulative",)`.
        previous_steps: int `w >= 1`, the last alignments the "previous"
            channel reads (ESPnet's `AttLoc2D` window; 1: `alpha_{i-1}`).
        use_bias: bool, the bias `b` inside the tanh (False: Tacotron 2's
            energy, without one).
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

    Tacotron 2's attention, on the previous and the cumulative weights:

    >>> tacotron = LocationSensitiveAttention(
    ...     8, filters=4, kernel_size=3, use_bias=False,
    ...     channels=("previous", "cumulative"))
    >>> _, first = tacotron(s_prev, h, return_attention_scores=True)
    >>> _, second = tacotron(s_prev, h, alignment_history=(first, first),
    ...                      return_attention_scores=True)
    >>> tuple(tacotron.location_kernel.shape)
    (3, 2, 4)
    """

    def __init__(
        self,
        units,
        filters=32,
        kernel_size=31,
        cumulative=False,
        channels=None,
        previous_steps=1,
        use_bias=True,
        sharpening=1.0,
        smoothing=False,
        normalize=False,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(
            units,
            normalize=normalize,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            dropout=dropout,
            **kwargs,
        )
        checks.positive_int("filters", filters)
        checks.odd_int("kernel_size", kernel_size)
        checks.boolean("cumulative", cumulative)
        checks.boolean("use_bias", use_bias)
        if channels is None:
            channels = ("cumulative",) if cumulative else ("previous",)
        checks.require(
            isinstance(channels, (list, tuple)) and 1 <= len(channels) <= 2
            and len(set(channels)) == len(channels)
            and all(c in _CHANNELS for c in channels), "channels",
            f"a tuple of distinct channels of {_CHANNELS}", channels)
        channels = tuple(channels)
        checks.require(
            not cumulative or channels == ("cumulative",), "cumulative",
            "False when `channels` is given (it is short for "
            "channels=('cumulative',))", cumulative)
        checks.positive_int("previous_steps", previous_steps)
        checks.require(
            previous_steps == 1 or "previous" in channels, "previous_steps",
            "1 unless `channels` has 'previous' (the steps are that "
            "channel's)", previous_steps)
        checks.number("sharpening", sharpening, low=0.0, low_open=True)
        checks.boolean("smoothing", smoothing)
        self.filters = filters
        self.kernel_size = kernel_size
        self.channels = channels
        self.previous_steps = previous_steps
        # The histories the convolution reads, in its input channels'
        # order: "previous" as its `previous_steps` last alignments, the
        # oldest first (alpha_{i-w}, ..., alpha_{i-1}: "previous-w", ...,
        # "previous").
        self._inputs = tuple(
            name for channel in channels for name in (
                [f"previous-{k}" for k in range(previous_steps, 1, -1)]
                + ["previous"] if channel == "previous" else [channel]))
        self.use_bias = use_bias
        self.sharpening = float(sharpening)
        self.smoothing = smoothing

    _causal_refused = "it scores with its own past alignments"
    _probability_fn_refused = "its own normalisation: sharpening, smoothing"
    _coverage_refused = "use cumulative=True to read the summed alignments"

    @property
    def cumulative(self):
        """Whether the one channel is the cumulative alignment."""
        return self.channels == ("cumulative",)

    @property
    def alignment_state(self):
        """The histories read: "previous" (`alpha_{i-1}`), "cumulative",
        "previous+cumulative", or with `previous_steps=w` the `w` last
        alignments ("previous-3+previous-2+previous" for 3)."""
        return "+".join(self._inputs)

    @property
    def uses_bias(self):
        return self.use_bias

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        common = dict(
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            dtype=self.variable_dtype,
        )
        self.location_kernel = self.add_weight(
            name="location_kernel",
            shape=(self.kernel_size, len(self._inputs), self.filters),
            **common)
        self.location_projection = self.add_weight(
            name="location_projection", shape=(self.filters, self.units),
            **common)
        self.built = True

    def alignment_term(self, history):
        """`U f_ij`, `f = F * history`: `(batch, Tq, Tv, units)`."""
        return utils.alignment_features(
            history, self.location_projection, kernel=self.location_kernel)

    # --- several channels: a tuple of histories, a state of each ------------

    def _history_for(self, history, value_mask, query, value, dtype=None):
        """One channel: as in `BaseAttention`. Several: a tuple of
        histories (None: each the first) stacked as `(batch, Tq, Tv, C)`."""
        if len(self._inputs) == 1:
            return super()._history_for(history, value_mask, query, value,
                                        dtype=dtype)
        if history is None:
            history = (None,) * len(self._inputs)
        checks.require(
            isinstance(history, (list, tuple))
            and len(history) == len(self._inputs), "alignment_history",
            f"a tuple of {len(self._inputs)} histories, one of each of "
            f"{self._inputs}", type(history).__name__)
        return ops.stack([
            super(LocationSensitiveAttention, self)._history_for(
                h, value_mask, query, value, dtype=dtype) for h in history],
            axis=-1)

    def initial_state(self, cache, batch_size):
        if len(self._inputs) == 1:
            return super().initial_state(cache, batch_size)
        first = ops.cast(self.initial_alignment(cache["mask"]),
                         cache["mask"].dtype)
        return {name: first for name in self._inputs}

    def step(self, query, cache, state, *, position=None, training=None,
             noise=None, mode=None):
        if len(self._inputs) == 1:
            return super().step(query, cache, state, position=position,
                                training=training, noise=noise, mode=mode)
        context, weights, _ = self._attend(
            query, cache["values"], projected_key=cache["keys"],
            value_mask=cache["mask"], training=training,
            alignment_history=tuple(state[c] for c in self._inputs))

        def after(name):
            history = state[name]
            if name == "previous":
                return ops.cast(weights, history.dtype)
            if name == "cumulative":
                return history + ops.cast(weights, history.dtype)
            k = int(name.split("-")[1])   # alpha_{i-k} <- alpha_{i-(k-1)}
            return state["previous" if k == 2 else f"previous-{k - 1}"]

        return context, weights, {name: after(name) for name in self._inputs}

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
            "channels": list(self.channels),
            "previous_steps": self.previous_steps,
            "use_bias": self.use_bias,
            "sharpening": self.sharpening,
            "smoothing": self.smoothing,
        })
        return config
