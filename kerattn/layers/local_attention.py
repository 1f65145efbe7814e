"""Local attention, monotonic and predictive (Luong et al., 2015, section 3.2)."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.luong_attention import LuongAttention

MODES = ("monotonic", "predictive")


@keras.saving.register_keras_serializable(package="kerattn")
class LocalAttention(LuongAttention):
    """Local attention of Luong, Pham and Manning (2015), section 3.2.

    "Effective Approaches to Attention-based Neural Machine Translation".
    Each target step `t` attends to the window `[p_t - D, p_t + D]` of
    source positions only:

        local-m ("monotonic"):  p_t = t
        local-p ("predictive"): p_t = S * sigmoid(v_p^T tanh(W_p h_t))
        a_t(s) = align(h_t, h_s) * exp(-(s - p_t)^2 / (2 sigma^2)),
                 sigma = D / 2   (local-p only; local-m uses align alone)

    where `align` is the softmax of a Luong score ("dot", "general",
    "concat") over the window and `S` is each example's real (unpadded)
    source length. Weights outside the window and on padding are exactly
    zero. With `D = 0` local-p's window holds the one source position
    nearest `p_t`, `min(round(p_t), S - 1)`, and `sigma = 1/2` (the
    paper's `D / 2` would be 0); local-m's window `[t, t]` holds `t`. As in the paper, local-p's weights are not renormalised after the
    Gaussian, and `p_t` gets its gradient through the Gaussian.

    local-m is "monotonic" in Luong et al.'s sense (the window moves one
    source position per target step); the attention that learns where to
    stop, moving only forward, is Raffel et al.'s `HardMonotonicAttention`
    (and its chunkwise MoChA, `MonotonicChunkwiseAttention`).

    The layer gathers the `2D + 2` candidate positions of each window
    (no `(Tq, Tv)` score matrix is built), so time and memory grow
    linearly with the source length. `return_attention_scores=True`
    scatters the weights back to `(batch, Tq, Tv)`.

    Args:
        mode: "monotonic" (local-m) or "predictive" (local-p).
        window: int `D >= 0`, the half-width of the window.
        score: "dot", "general" or "concat".
        units: the hidden size of "concat" and of local-p's position
            network (`W_p`); the query size when None.
        scale, kernel_initializer, kernel_regularizer, dropout: as in
            `LuongAttention`.
        **kwargs: base layer keyword arguments.

    Call arguments:
        query, value, key, query_mask, value_mask, projected_key,
        return_attention_scores, training: as in `BaseAttention`.
        query_start: int, scalar or `(batch,)` int tensor: the target
            position of the first query (local-m's `p_t = query_start + i`),
            the same for every row or one per row; for one decoder step pass
            each row's step index `t`.

    Returns:
        `output` `(batch, Tq, value_dim)` (`(batch, value_dim)` for one
        step) and, with `return_attention_scores=True`, the weights
        `(batch, Tq, Tv)` (`(batch, Tv)`).

    Example:

    >>> import numpy as np
    >>> h_s = np.random.rand(2, 30, 16).astype("float32")
    >>> h_t = np.random.rand(2, 5, 16).astype("float32")
    >>> attention = LocalAttention(mode="predictive", window=3)
    >>> c, a = attention(h_t, h_s, return_attention_scores=True)
    >>> tuple(c.shape), tuple(a.shape)
    ((2, 5, 16), (2, 5, 30))
    """

    def __init__(
        self,
        mode="predictive",
        window=10,
        score="general",
        units=None,
        scale=False,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        dropout=0.0,
        **kwargs,
    ):
        checks.require(
            score in ("dot", "general", "concat"), "score",
            "one of ('dot', 'general', 'concat') for LocalAttention", score)
        checks.one_of("mode", mode, MODES)
        checks.nonnegative_int("window", window)
        checks.positive_int("units", units, allow_none=True)
        checks.require(
            not kwargs.pop("coverage", False), "coverage", "False for "
            "LocalAttention (a global attention's option: LuongAttention("
            "score='concat', coverage=True))", True)
        super().__init__(
            score=score,
            units=units if score == "concat" else None,
            scale=scale,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            dropout=dropout,
            **kwargs,
        )
        self.mode = mode
        self.window = window
        self.position_units = units

    _causal_refused = ("its window is placed by the step (local-m) or "
                       "predicted (local-p), never cut at the query")
    _probability_fn_refused = ("its weights are a softmax over its window "
                               "(times a Gaussian for local-p)")

    def step(self, query, cache, state, *, position=None, training=None,
             noise=None, mode=None):
        """One decoder step; local-m centres its window on the row's own
        step index, `p_t = position` (see `BaseAttention`)."""
        context, weights = self.call(
            query, cache["values"], projected_key=cache["keys"],
            value_mask=cache["mask"], return_attention_scores=True,
            training=training,
            query_start=0 if position is None else position)
        return context, weights, state

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        if self.mode == "predictive":
            units = self.position_units or query_shape[-1]
            common = dict(
                initializer=self.kernel_initializer,
                regularizer=self.kernel_regularizer,
                dtype=self.variable_dtype,
            )
            self.W_p = self.add_weight(
                name="W_p", shape=(query_shape[-1], units), **common
            )
            self.v_p = self.add_weight(name="v_p", shape=(units,), **common)

    def _validate_shapes(self, query_shape, value_shape, key_shape=None):
        # No `max_length` limit (that is the location score's), the rest as
        # in LuongAttention.
        super(LuongAttention, self)._validate_shapes(
            query_shape, value_shape, key_shape
        )
        if self.score == "dot":
            key_shape = value_shape if key_shape is None else key_shape
            checks.same("query", query_shape[-1], "key", key_shape[-1],
                        "last dimension with score='dot' (`value` if no key)")

    def predict_positions(self, query, source_lengths):
        """local-p's `p_t = S * sigmoid(v_p^T tanh(W_p h_t))`, `(batch, Tq)`."""
        hidden = ops.tanh(utils.project(query, self.W_p))
        p = ops.sigmoid(ops.sum(hidden * self.v_p, axis=-1))
        return ops.expand_dims(source_lengths, -1) * p

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        attention_mask=None,
        projected_key=None,
        return_attention_scores=False,
        training=None,
        query_start=0,
    ):
        checks.require(
            attention_mask is None, "attention_mask", "None",
            note="`attention_mask` is not supported by LocalAttention (it "
            "never builds a (Tq, Tv) matrix); pass `value_mask` (batch, Tv) "
            "and `query_mask` (batch, Tq) instead.")
        self._validate_shapes(
            query.shape, value.shape, None if key is None else key.shape
        )
        self._check_dim("query", query, "query")
        query, query_mask, _, single_step = utils.prepare_query(
            query, value, query_mask, value_mask)
        projected_key = self._key_for(value, key, projected_key)

        shape = ops.shape(value)
        b, tv = shape[0], shape[1]
        tq = ops.shape(query)[1]
        dtype = query.dtype
        if value_mask is None:
            value_mask = ops.ones((b, tv), dtype="bool")
        value_mask = ops.cast(value_mask, "bool")
        lengths = ops.cast(ops.sum(ops.cast(value_mask, "int32"), axis=1), dtype)

        # === Window centres p_t: (batch, Tq) ===
        if self.mode == "monotonic":
            start = ops.cast(query_start, "int32")
            if len(start.shape) == 1:  # one start per row
                start = ops.expand_dims(start, -1)
            steps = ops.expand_dims(ops.arange(tq, dtype="int32"), 0) + start
            p_t = ops.broadcast_to(ops.cast(steps, dtype), (b, tq))
        else:
            p_t = self.predict_positions(query, lengths)

        # === Gather the window [floor(p_t) - D, floor(p_t) + D + 1] ===
        width = 2 * self.window + 2
        nearest_only = self.mode == "predictive" and self.window == 0
        if nearest_only:  # D = 0: the source position nearest p_t
            nearest = ops.minimum(ops.floor(p_t + 0.5),
                                  ops.expand_dims(lengths, -1) - 1)
            start = ops.cast(nearest, "int32")
        else:
            start = ops.cast(ops.floor(p_t), "int32") - self.window
        positions = ops.expand_dims(start, -1) + ops.arange(width)  # (b,Tq,W)
        distance = ops.cast(positions, dtype) - ops.expand_dims(p_t, -1)
        in_range = ops.logical_and(positions >= 0, positions < tv)
        safe = ops.clip(positions, 0, tv - 1)
        keys_w = utils.gather_positions(projected_key, safe)  # (b, Tq, W, d)
        values_w = utils.gather_positions(value, safe)
        pad_ok = utils.gather_positions(value_mask, safe)
        valid = ops.logical_and(in_range, pad_ok)
        if nearest_only:
            in_window = positions == ops.expand_dims(start, -1)
        else:
            in_window = ops.abs(distance) <= ops.cast(self.window, dtype)
        valid = ops.logical_and(valid, in_window)
        if query_mask is not None:
            valid = ops.logical_and(
                valid, ops.expand_dims(ops.cast(query_mask, "bool"), -1)
            )

        # === align(h_t, h_s) over the window ===
        scores = self._window_scores(query, keys_w)  # (b, Tq, W)
        weights = utils.masked_softmax(scores, valid)
        if self.mode == "predictive":
            sigma = self.window / 2.0 if self.window > 0 else 0.5
            weights = weights * ops.exp(
                -ops.square(distance) / ops.cast(2.0 * sigma**2, dtype)
            )
        dropped = self._dropout_layer(weights, training=training)
        output = ops.sum(ops.expand_dims(dropped, -1) * values_w, axis=2)

        full = None
        if return_attention_scores:
            full = utils.scatter_positions(weights, safe, tv)  # (b, Tq, Tv)
        if single_step:
            output = ops.squeeze(output, 1)
            if full is not None:
                full = ops.squeeze(full, 1)
        if return_attention_scores:
            return output, full
        return output

    def _window_scores(self, query, keys_w):
        """Luong scores of each query against its own window of keys."""
        if self.score in ("dot", "general"):
            scores = ops.sum(ops.expand_dims(query, 2) * keys_w, axis=-1)
        else:  # concat
            q_dim = int(query.shape[-1])
            hidden = ops.expand_dims(utils.project(query, self.W_a[:q_dim]), 2)
            scores = ops.sum(ops.tanh(hidden + keys_w) * self.v_a, axis=-1)
        if self.scale:
            scores = scores * self.scale_factor
        return scores

    def compute_output_spec(self, query, value, key=None, **kwargs):
        return super().compute_output_spec(
            query,
            value,
            key=key,
            return_attention_scores=kwargs.get("return_attention_scores", False),
        )

    def get_config(self):
        config = super().get_config()
        for name in ("max_length", "causal", "coverage"):
            config.pop(name, None)
        config.update(
            {"mode": self.mode, "window": self.window, "units": self.position_units}
        )
        return config
