"""Location-aware recurrent attention (ESPnet's `AttLocRec`)."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.bahdanau_attention import BahdanauAttention


@keras.saving.register_keras_serializable(package="kerattn")
class RecurrentLocationAttention(BahdanauAttention):
    """Location-aware recurrent attention: the location features of
    Chorowski et al. (2015) summarised by an LSTM over the decoder's steps.

    ESPnet's `AttLocRec` (`espnet/nets/pytorch_backend/rnn/attentions.py`;
    no paper of its own: "an extended version of location aware attention
    ... with the use of RNN, it take[s] the effect of the history of
    attention weights into account"). At decoder step `i`, from the
    previous weights `alpha_{i-1}`:

        f_i = relu(F * alpha_{i-1})                   (B, Tv, k), as eq. 8
        p_i = max_j f_ij                              (B, k): over the frames
        (a_i, m_i) = LSTM(p_i, (a_{i-1}, m_{i-1}))    no biases, zeros at first
        e_ij = w^T tanh(W s_{i-1} + V h_j + b + a_i)
        alpha_i = softmax(beta e_i)

    so the location enters the energy as one vector `a_i` for every frame
    (where `LocationSensitiveAttention` adds a feature at each frame), and
    the LSTM remembers how the alignment has moved. `F` is `filters` (`k`)
    filters of odd width `kernel_size`, "same" padding; the LSTM has
    `units` cells (its state the score's width, as ESPnet's `att_dim`) and
    Keras' gate order (input, forget, cell, output: torch's). Padded
    frames' features are set to zero before the max (the features are
    non-negative, so they never win it); ESPnet pools over the padded
    frames too, where the convolution reaches past the end of a shorter
    utterance.

    Porting `AttLocRec(eprojs, dunits, att_dim, aconv_chans,
    aconv_filts)`: `RecurrentLocationAttention(att_dim,
    filters=aconv_chans, kernel_size=2 aconv_filts + 1, sharpening=2.0)`,
    each torch weight `w` mapping as `mlp_dec` -> `W_a = w.T`, `mlp_enc` ->
    `U_a = w.T` and `b` = its bias, `gvec` -> `v_a = w[0]` (its bias is the
    same at every frame: the softmax drops it), `loc_conv` `(k, 1, 1,
    width)` -> `location_kernel = w[:, 0, 0].T[:, None, :]`, `att_lstm`'s
    `weight_ih` `(4 att_dim, k)` -> `lstm_kernel = w.T` and `weight_hh` ->
    `lstm_recurrent_kernel = w.T`. ESPnet starts `alpha_0` uniform over
    the real frames, ours at zeros (as every location family here).

    Its state in the step protocol (`BaseAttention`) is `{"alignment":
    alpha_{i-1}, "h": a_{i-1}, "c": m_{i-1}}`, which `AttentionRNN`
    carries. Called alone, `alignment_history=` is `alpha_{i-1}` (`(batch,
    Tv)` or `(batch, Tq, Tv)`; zeros when not given) or the tuple
    `(alpha_{i-1}, a_{i-1}, m_{i-1})`, the LSTM's state `(batch, units)`
    (zeros when not given); the step's new LSTM state is the step
    protocol's.

    Args:
        units: int, the score's hidden size and the LSTM's cells.
        filters: int `k`, the location filters.
        kernel_size: odd int, the filters' width.
        sharpening: float `beta > 0` (ESPnet's `scaling`, 2).
        normalize, kernel_initializer, kernel_regularizer, dropout: as in
            `BahdanauAttention`.
        **kwargs: base layer keyword arguments.

    Example:

    >>> import numpy as np
    >>> h = np.random.rand(2, 7, 16).astype("float32")
    >>> s_prev = np.random.rand(2, 32).astype("float32")
    >>> attention = RecurrentLocationAttention(8, filters=4, kernel_size=3)
    >>> context, alpha = attention(s_prev, h, return_attention_scores=True)
    >>> tuple(context.shape), tuple(alpha.shape), tuple(attention.lstm_kernel.shape)
    ((2, 16), (2, 7), (4, 32))
    """

    def __init__(self, units, filters=32, kernel_size=31, sharpening=1.0,
                 normalize=False, kernel_initializer="glorot_uniform",
                 kernel_regularizer=None, dropout=0.0, **kwargs):
        super().__init__(units, normalize=normalize,
                         kernel_initializer=kernel_initializer,
                         kernel_regularizer=kernel_regularizer, dropout=dropout,
                         **kwargs)
        checks.positive_int("filters", filters)
        checks.odd_int("kernel_size", kernel_size)
        checks.number("sharpening", sharpening, low=0.0, low_open=True)
        self.filters = filters
        self.kernel_size = kernel_size
        self.sharpening = float(sharpening)

    alignment_state = "previous"
    _causal_refused = "it scores with its own past alignments"
    _probability_fn_refused = "its own normalisation: sharpening"
    _coverage_refused = "it reads the previous weights"

    @property
    def uses_bias(self):
        return True   # ESPnet's mlp_enc bias

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        common = dict(initializer=self.kernel_initializer,
                      regularizer=self.kernel_regularizer,
                      dtype=self.variable_dtype)
        self.location_kernel = self.add_weight(
            name="location_kernel", shape=(self.kernel_size, 1, self.filters),
            **common)
        self.lstm_kernel = self.add_weight(
            name="lstm_kernel", shape=(self.filters, 4 * self.units), **common)
        self.lstm_recurrent_kernel = self.add_weight(
            name="lstm_recurrent_kernel", shape=(self.units, 4 * self.units),
            initializer="orthogonal", regularizer=self.kernel_regularizer,
            dtype=self.variable_dtype)
        self.built = True

    # --- the history: the previous weights and the LSTM's state --------------

    def _history_for(self, history, value_mask, query, value, dtype=None):
        """`(alpha (batch, Tq, Tv), a, m)`, the LSTM's state `(batch, Tq,
        units)` (zeros when not given)."""
        lstm = (None, None)
        if isinstance(history, (list, tuple)):
            checks.require(len(history) == 3, "alignment_history",
                           "alpha_{i-1} or the tuple (alpha_{i-1}, h, c)",
                           f"a tuple of {len(history)}")
            history, *lstm = history
        alpha = super()._history_for(history, value_mask, query, value, dtype=dtype)
        tq = ops.shape(alpha)[1]

        def state(x):
            if x is None:   # (batch, Tq, units), the batch possibly symbolic
                return ops.repeat(ops.zeros_like(alpha[:, :, :1]), self.units, axis=-1)
            x = ops.cast(ops.convert_to_tensor(x), alpha.dtype)
            checks.require(x.shape[-1] in (None, self.units), "alignment_history",
                           f"an LSTM state of {self.units} (units) features",
                           tuple(x.shape))
            if len(x.shape) == 2:
                x = ops.repeat(ops.expand_dims(x, 1), tq, axis=1)
            return x

        return alpha, state(lstm[0]), state(lstm[1])

    def recur(self, alpha, h, c, mask):
        """`(a_i, m_i)`: the LSTM's step on the pooled location features of
        `alpha` `(batch, Tq, Tv)` (`mask` broadcastable to it, or None)."""
        shape = ops.shape(alpha)
        flat = ops.reshape(alpha, (-1, shape[2], 1))
        kernel = ops.cast(self.location_kernel, alpha.dtype)
        f = ops.relu(ops.conv(flat, kernel, padding="same"))   # (b Tq, Tv, k)
        f = ops.reshape(f, (shape[0], shape[1], shape[2], self.filters))
        if mask is not None:
            f = f * ops.expand_dims(utils.mask_as(
                ops.broadcast_to(mask, shape), f.dtype), -1)
        p = ops.max(f, axis=2)                                    # (b, Tq, k)
        z = (ops.matmul(p, ops.cast(self.lstm_kernel, p.dtype))
             + ops.matmul(h, ops.cast(self.lstm_recurrent_kernel, h.dtype)))
        i, f_gate, g, o = ops.split(z, 4, axis=-1)
        c = ops.sigmoid(f_gate) * c + ops.sigmoid(i) * ops.tanh(g)
        return ops.sigmoid(o) * ops.tanh(c), c

    def alignment_term(self, history):
        """`a_i`, the same at every frame: `(batch, Tq, 1, units)`."""
        return ops.expand_dims(history, 2)

    def _compute_attention(self, query, key, value, mask, training,
                           return_attention_scores, alignment_history=None):
        alpha, h, c = alignment_history
        h, c = self.recur(alpha, h, c, mask)
        output, weights = super()._compute_attention(
            query, key, value, mask, training, return_attention_scores,
            alignment_history=h)
        return output, weights, {"h": h, "c": c}

    def _normalize(self, scores, mask):
        if self.sharpening != 1.0:
            scores = scores * self.sharpening
        return utils.masked_softmax(scores, mask)

    # --- the step protocol --------------------------------------------------------

    def initial_state(self, cache, batch_size):
        mask = cache["mask"]
        dtype = keras.backend.standardize_dtype(mask.dtype)
        dtype = self.compute_dtype if dtype == "bool" else dtype
        zeros = ops.repeat(ops.zeros_like(mask[:, :1], dtype=dtype), self.units,
                           axis=1)
        return {"alignment": ops.cast(self.initial_alignment(mask), dtype),
                "h": zeros, "c": zeros}

    def step(self, query, cache, state, *, position=None, training=None,
             noise=None, mode=None):
        context, weights, extras = self._attend(
            query, cache["values"], projected_key=cache["keys"],
            value_mask=cache["mask"], training=training,
            alignment_history=(state["alignment"], state["h"], state["c"]))
        dtype = state["alignment"].dtype
        return context, weights, {
            "alignment": ops.cast(weights, dtype),
            "h": ops.cast(extras["h"], dtype), "c": ops.cast(extras["c"], dtype)}

    def extend_source(self, state, cache):
        """A longer source: the weights padded with zeros, the LSTM's state
        as it is."""
        grown = super().extend_source({"alignment": state["alignment"]}, cache)
        return dict(state, alignment=grown["alignment"])

    def get_config(self):
        config = super().get_config()
        for name in ("causal", "coverage"):
            config.pop(name, None)
        config.update({"filters": self.filters, "kernel_size": self.kernel_size,
                       "sharpening": self.sharpening})
        return config
