"""The base class of the single-head score families (Bahdanau, Luong, ...)."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils


@keras.saving.register_keras_serializable(package="kerattn")
class BaseAttention(keras.layers.Layer):
    """Base class of attention layers that differ only in their score.

    A score family overrides `build` (to create its weights), `project_key`
    (the part of the score that depends on the key alone, computed once per
    source), `_calculate_scores` and `get_config`; everything else (masks,
    single decoder steps, the softmax, dropout and the weighted sum) lives
    here, as in `keras.layers.Attention` and its `AdditiveAttention`.

    The attention is

        alpha_ij = exp(e_ij) / sum_k exp(e_ik),    c_i = sum_j alpha_ij v_j

    where `e_ij = score(q_i, k_j)` is the family's score.

    Args:
        dropout: float in [0, 1), the fraction of attention weights dropped
            during training.
        causal: bool; if True, query `i` attends only to keys `j <= i`
            (aligned at the end when `Tq != Tv`, see
            `attention_utils.causal_mask`). For self-attention.
        probability_fn: how the scores become weights: "softmax",
            "hardmax" (one-hot at the largest score, TensorFlow Addons'
            `hardmax`; no gradient through the weights) or "sparsemax"
            (Martins and Astudillo, 2016: the projection onto the simplex,
            exactly zero below a threshold;
            `kerattn.layers.attention_utils.masked_sparsemax`): tfa's
            `probability_fn` of the same name. A family that computes its
            weights its own way (a monotonic alignment, a mixture,
            sharpening) takes "softmax" only.
        **kwargs: base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `(batch, Tq, query_dim)`, or `(batch, query_dim)` for a single
            decoder step.
        value: `(batch, Tv, value_dim)`.
        key: optional `(batch, Tv, key_dim)`; `value` is used when None.
        query_mask: optional boolean `(batch, Tq)` (`(batch,)` for a single
            step); True = a real query position. Taken from the implicit
            Keras mask of `query` (e.g. `Embedding(mask_zero=True)`) when not
            given.
        value_mask: optional boolean `(batch, Tv)`; True = attend. Taken from
            the implicit Keras mask of `value` when not given.
        attention_mask: optional boolean `(batch, Tq, Tv)` combined with the
            other masks by logical AND.
        projected_key: optional output of `project_key(key)`, to reuse the
            key projection across decoder steps. `key` is then ignored.
        alignment_history: optional `(batch, Tv)` (the same for every
            query) or `(batch, Tq, Tv)`, for an attention that declares an
            `alignment_state`: the previous step's weights ("previous") or
            their sum over the earlier steps ("cumulative").
            `initial_alignment` (zeros) when None; ignored by an attention
            without state. Padded source positions are zeroed before use.
        return_attention_scores: bool; if True return `(output, weights)`.
        training: bool, whether dropout is active.

    Returns:
        `output` of shape `(batch, Tq, value_dim)` (`(batch, value_dim)` for a
        single step), and with `return_attention_scores=True` also the
        attention weights `(batch, Tq, Tv)` (`(batch, Tv)` for a single
        step). Masked positions get exactly zero weight; a query row with no
        attendable key gets zero weights and a zero output.

    The step protocol: what a recurrent decoder (`AttentionRNN`) calls,
    and all it calls, at each of its steps. An attention that scores with
    its own past (an alignment history, a sampled location) keeps that past
    as its *state*, a pytree of `(batch, ...)` tensors that the decoder
    carries through its loop, keeps at padded steps and reorders in beam
    search without reading it (as Keras' `RNN` carries a cell's states):

    - `initial_state(cache, batch_size)`: the state before the first step.
      `cache` is `AttentionRNN.precompute`'s dict: `"keys"` (this layer's
      `project_key` of the memory), `"values"` `(batch, S, value_dim)` and
      `"mask"` `(batch, S)` of the decoder's compute dtype (1 = attend). A
      stateless attention returns `()` (a valid loop variable on every
      backend, unlike None). The state's dtypes are the ones it is kept in.
    - `step(query, cache, state, *, position, training, noise, mode)`:
      one query `(batch, query_dim)` to `(context (batch, value_dim),
      weights (batch, S), next_state)`. `cache` is as above with a boolean
      mask; `position` `(batch,)` int32 is each row's own step index (rows
      of a batch may be at different steps); `noise` is this step's slice
      of what `draw_noise` drew (`{}` when nothing was drawn: the layer then
      draws for itself); `mode` is what `mode_for` resolved.
    - `draw_noise(cache, steps, *, training, mode)`: the randomness the
      steps of a whole pass need, `{name: (batch, steps, ...)}`, drawn by
      the decoder before its loop (a JAX scan cannot advance a seed
      generator); `{}` for a deterministic attention.
    - `sample_of(state)`: for an attention that samples a location (hard
      attention), the one-hot location of the step that left `state`; None
      for the others.
    - `mode_for(mode, *, decoding)`: the mode a pass runs in, for an
      attention that computes its weights one way in training and another
      when decoding (monotonic attention); None for the others, which
      refuse any `mode` with a ValueError naming `attention_mode`.
    - `extend_source(state, cache)`: the state grown to a longer source
      (`cache` the longer one's), for streaming decoders; the identity for
      a stateless attention.
    - `context_dim(value_dim)`: the size of a step's context for values of
      `value_dim` features (the decoder sizes what it feeds and outputs by
      it): `value_dim` but for several mechanisms side by side
      (`MultipleAttention`).

    The base class implements the protocol for the stateless families and
    for the ones with an `alignment_state` (the state `{"alignment":
    (batch, S)}`); a family with another state or other inputs overrides
    `step` (and `initial_state`), calling `_attend`, the shared body of
    `call` and `step`.

    What the protocol leaves room for: a decoder that constrains where an
    attention may look at a step narrows that step's `cache["mask"]`, which
    every family honours (`AttentionRNN(wait_k=k)` does: a wait-k
    schedule; an attention constraint at inference would); an attention
    made of several mechanisms keeps the tuple of their states (the
    decoder and the searches map over any tree); a streaming model
    declares what it can commit to (`GenerativeModel.can_stream`,
    `lookahead`, `reads`).

    Example:

    A new score family, the dot product times a learned scalar:

    >>> import numpy as np
    >>> from keras import ops
    >>> class ScaledDot(BaseAttention):
    ...     def build(self, query_shape, value_shape, key_shape=None):
    ...         super().build(query_shape, value_shape, key_shape)
    ...         self.scale = self.add_weight(name="scale", shape=(),
    ...                                      initializer="ones")
    ...     def _calculate_scores(self, query, key):
    ...         return self.scale * ops.matmul(query, ops.transpose(key, (0, 2, 1)))
    >>> q = np.random.rand(2, 3, 4).astype("float32")
    >>> v = np.random.rand(2, 5, 4).astype("float32")
    >>> out, weights = ScaledDot()(q, v, return_attention_scores=True)
    >>> tuple(out.shape), tuple(weights.shape)
    ((2, 3, 4), (2, 3, 5))
    """

    # `alignment_state`: the alignment history a family's score reads (a
    # detail of the families that have one, read by this class only): None
    # (stateless), "previous" (the last step's weights a_{i-1}:
    # location-sensitive attention) or "cumulative" (their sum over the
    # earlier steps: coverage). `initial_alignment` gives its first value and
    # `next_alignment` its update from a step's weights; the step protocol
    # keeps it as the state `{"alignment": (batch, Tv)}`.
    alignment_state = None
    # Whether a decoding step (in the decoding mode) reads the source only up
    # to where it stops, so that a streaming decoder may commit to its output
    # before the source ends (hard monotonic attention); the soft families
    # read the whole source at every step.
    reads_prefix = False
    # Why the family cannot honour `causal=True` (None: it can). Such a
    # family accepts `causal=False` (saved configs hold it) and refuses True.
    _causal_refused = None
    # Why the family takes no `probability_fn` but "softmax" (None: it
    # takes them all, its weights being `_normalize` of its scores).
    _probability_fn_refused = "it computes its weights its own way"

    def __init__(self, dropout=0.0, causal=False, probability_fn="softmax",
                 **kwargs):
        super().__init__(**kwargs)
        checks.rate("dropout", dropout)
        checks.boolean("causal", causal)
        checks.require(
            not (causal and self._causal_refused), "causal",
            f"False for {type(self).__name__} ({self._causal_refused})", causal)
        if self._probability_fn_refused:
            checks.require(
                probability_fn == "softmax", "probability_fn",
                f"'softmax' for {type(self).__name__} "
                f"({self._probability_fn_refused})", probability_fn)
        checks.one_of("probability_fn", probability_fn, utils.PROBABILITY_FNS)
        self.dropout = dropout
        self.causal = causal
        self.probability_fn = probability_fn
        self.supports_masking = True
        self._dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="attention_dropout"
        )

    # --- shape validation ---------------------------------------------------

    def _validate_shapes(self, query_shape, value_shape, key_shape=None):
        checks.rank(
            "query",
            query_shape,
            (2, 3),
            "(batch, Tq, query_dim), or (batch, query_dim) for one step",
        )
        checks.rank("value", value_shape, (3,), "(batch, Tv, value_dim)")
        if key_shape is not None:
            checks.rank("key", key_shape, (3,), "(batch, Tv, key_dim)")
            checks.same(
                "key", key_shape[1], "value", value_shape[1], "length Tv"
            )
            checks.same(
                "key", key_shape[0], "value", value_shape[0], "batch size"
            )
        checks.same(
            "query", query_shape[0], "value", value_shape[0], "batch size"
        )

    def _record_dims(self, query_shape, value_shape, key_shape=None):
        """Remember the feature sizes the weights were built for."""
        self._validate_shapes(query_shape, value_shape, key_shape)
        key_shape = value_shape if key_shape is None else key_shape
        self._dims = {
            "query": query_shape[-1],
            "value": value_shape[-1],
            "key": key_shape[-1],
        }

    def _check_dim(self, name, x, which):
        """`x`'s feature size must match the one the layer was built with."""
        want = getattr(self, "_dims", {}).get(which)
        got = x.shape[-1]
        if got is not None and want is not None and int(got) != int(want):
            checks.fail(
                name, f"of last dimension {want} (the size this layer was "
                "built with)", tuple(x.shape))

    def _check_key(self, key, name="key"):
        checks.rank(name, key.shape, (3,), "(batch, Tv, key_dim)")
        self._check_dim(name, key, "key")

    def build(self, query_shape, value_shape, key_shape=None):
        self._record_dims(query_shape, value_shape, key_shape)
        self.built = True

    def _key_for(self, value, key, projected_key):
        """`projected_key`, or the checked projection of `key` (or `value`)."""
        if projected_key is not None:
            return projected_key
        if key is None:
            self._check_key(value, name="value")
            return self.project_key(value)
        self._check_key(key)
        return self.project_key(key)

    # --- the score family's hooks ------------------------------------------

    def project_key(self, key):
        """The key-only part of the score, computed once per source.

        Args:
            key: `(batch, Tv, key_dim)`.

        Returns:
            The projected key, to pass as `projected_key=` at every decoder
            step. The identity in the base class.
        """
        return key

    def _calculate_scores(self, query, key):
        """Scores `e` of shape `(batch, Tq, Tv)`.

        Args:
            query: `(batch, Tq, query_dim)`.
            key: the output of `project_key`, `(batch, Tv, ...)`.
        """
        raise NotImplementedError

    def _normalize(self, scores, mask):
        """Weights from scores `(batch, Tq, Tv)`: the masked
        `probability_fn` (the softmax by default).

        Override for another normalisation (and give the reason in
        `_probability_fn_refused`); masked positions must get exactly zero
        weight and a fully masked row zeros.
        """
        return utils.normalize(scores, mask, self.probability_fn)

    def _compute_attention(
        self, query, key, value, mask, training, return_attention_scores,
        alignment_history=None,
    ):
        """Weights and context from the query, projected key and value.

        The one place to override for a fused kernel. `mask` is boolean,
        broadcastable to `(batch, Tq, Tv)`, or None. `alignment_history`
        `(batch, Tq, Tv)` is given to an attention with an
        `alignment_state` only, and passed on to its `_calculate_scores`.
        Returns `(output (batch, Tq, value_dim), weights (batch, Tq, Tv))`;
        `weights` may be None when `return_attention_scores` is False.
        """
        if alignment_history is None:
            scores = self._calculate_scores(query, key)
        else:
            scores = self._calculate_scores(
                query, key, alignment_history=alignment_history)
        weights = self._normalize(scores, mask)
        dropped = self._dropout_layer(weights, training=training)
        output = ops.matmul(dropped, value)
        return output, weights

    # --- the alignment history (attentions with an `alignment_state`) -------

    def initial_alignment(self, value_mask):
        """The history before the first step: zeros `(batch, Tv)`.

        Args:
            value_mask: `(batch, Tv)`, of any dtype (only its shape is read
                here; a family may place its first alignment by it).
        """
        return ops.zeros_like(value_mask, dtype=self.compute_dtype)

    def next_alignment(self, history, weights):
        """The history after a step with `weights` `(batch, Tv)`."""
        if self.alignment_state == "cumulative":
            return history + ops.cast(weights, history.dtype)
        return ops.cast(weights, history.dtype)

    # The history's axes between the query axis and Tv, each `(shown as,
    # the attribute that sizes it, what)`: none here; a multi-head
    # family's heads.
    _history_axes = ()

    def _history_for(self, history, value_mask, query, value, dtype=None):
        """`alignment_history` as `(batch, Tq, ..., Tv)` of `dtype` (the
        compute dtype when None), zero on padding; `...`: the
        `_history_axes`, checked against their attributes."""
        axes = [(shown, attribute, getattr(self, attribute), what)
                for shown, attribute, what in self._history_axes]
        if history is None:
            first = (ops.ones(ops.shape(value)[:2]) if value_mask is None
                     else value_mask)
            history = ops.expand_dims(self.initial_alignment(first), 1)
        else:
            history = ops.convert_to_tensor(history)
            inner = "".join(f"{shown}, " for shown, _, _, _ in axes)
            checks.rank("alignment_history", history.shape,
                        (2 + len(axes), 3 + len(axes)),
                        f"(batch, {inner}Tv) or (batch, Tq, {inner}Tv)")
            for k, (_, attribute, size, what) in enumerate(axes):
                checks.same("alignment_history", history.shape[k - 1 - len(axes)],
                            attribute, size, what)
            checks.same("alignment_history", history.shape[-1], "value",
                        value.shape[1], "length Tv")
            if len(history.shape) == 2 + len(axes):
                history = ops.expand_dims(history, 1)
        history = ops.cast(history, dtype or self.compute_dtype)
        if value_mask is not None:
            real = utils.mask_as(value_mask, history.dtype)   # (batch, Tv)
            for _ in range(1 + len(axes)):
                real = ops.expand_dims(real, 1)
            history = history * real
        return history

    # --- call ---------------------------------------------------------------

    # The dtype `_history_for` gives the alignment history (None: the
    # compute dtype); a family that keeps its history in float32 sets it.
    _history_dtype = None

    def _attend(self, query, value, key=None, query_mask=None,
                value_mask=None, attention_mask=None, projected_key=None,
                alignment_history=None, training=None,
                return_attention_scores=True, **options):
        """The body `call` and `step` share: shapes checked, the masks
        merged in one place, the key projected (unless given), the
        history prepared, then `_compute_attention(..., **options)`.

        Returns `(output, weights, extras)`, without the query axis for a
        single step; `extras` is the dict a family's `_compute_attention`
        may return third (`{}` otherwise).
        """
        self._validate_shapes(
            query.shape, value.shape, None if key is None else key.shape
        )
        self._check_dim("query", query, "query")
        query, query_mask, attention_mask, single_step = utils.prepare_query(
            query, value, query_mask, value_mask, attention_mask)
        projected_key = self._key_for(value, key, projected_key)
        mask = utils.merge_masks(
            query_mask=query_mask,
            value_mask=value_mask,
            attention_mask=attention_mask,
            causal=self.causal,
            query_length=ops.shape(query)[1],
            value_length=ops.shape(value)[1],
        )
        if self.alignment_state is not None:
            options["alignment_history"] = self._history_for(
                alignment_history, value_mask, query, value,
                dtype=self._history_dtype)
        result = self._compute_attention(
            query, projected_key, value, mask, training,
            return_attention_scores, **options
        )
        output, weights = result[0], result[1]
        extras = result[2] if len(result) > 2 else {}
        if single_step:
            output = ops.squeeze(output, 1)
            if weights is not None:
                weights = ops.squeeze(weights, 1)
            extras = {k: ops.squeeze(v, 1) for k, v in extras.items()}
        return output, weights, extras

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        attention_mask=None,
        projected_key=None,
        alignment_history=None,
        return_attention_scores=False,
        training=None,
    ):
        output, weights, _ = self._attend(
            query, value, key=key, query_mask=query_mask,
            value_mask=value_mask, attention_mask=attention_mask,
            projected_key=projected_key, alignment_history=alignment_history,
            training=training, return_attention_scores=return_attention_scores)
        if return_attention_scores:
            return output, weights
        return output

    # --- the step protocol (see the class docstring) ------------------------

    def initial_state(self, cache, batch_size):
        """The state before the first step: `()`, or `{"alignment": a_0}`
        `(batch, S)` for a family with an `alignment_state` (in
        `_history_dtype`, else the cache's dtype: the decoder's)."""
        if self.alignment_state is None:
            return ()
        mask = cache["mask"]
        first = self.initial_alignment(mask)
        return {"alignment": ops.cast(first, self._history_dtype or mask.dtype)}

    def step(self, query, cache, state, *, position=None, training=None,
             noise=None, mode=None):
        """One decoder step: `(context, weights, next_state)` (see the class
        docstring). Here `position`, `noise` and `mode` are unused."""
        history = state["alignment"] if self.alignment_state else None
        context, weights, _ = self._attend(
            query, cache["values"], projected_key=cache["keys"],
            value_mask=cache["mask"], alignment_history=history,
            training=training)
        if self.alignment_state is None:
            return context, weights, state
        return context, weights, {
            "alignment": self.next_alignment(history, weights)}

    def draw_noise(self, cache, steps, *, training=None, mode=None):
        """`{name: (batch, steps, ...)}`, the randomness of a whole pass
        drawn before the decoder's loop: `{}` here."""
        return {}

    def sample_of(self, state):
        """The one-hot location `(batch, S)` a sampling attention used at
        the step that left `state` (`AttentionRNN(...,
        return_attention_samples=True)` collects it); None here, an
        attention that samples nothing."""
        return None

    def mode_for(self, mode, *, decoding):
        """The mode of a pass: None here, where `mode` (the decoder's
        `attention_mode`) must be None."""
        checks.require(
            mode is None, "attention_mode",
            f"None ({type(self).__name__} has one mode)", mode)
        return None

    def extend_source(self, state, cache):
        """The state grown to the longer source of `cache`: each
        `(batch, S)` entry padded with zeros to the new length (a stateless
        attention's `()` stays as it is)."""
        length = ops.shape(cache["mask"])[1]

        def grow(x):
            return ops.pad(x, [[0, 0], [0, length - ops.shape(x)[-1]]])

        return {k: grow(v) for k, v in state.items()} if state else state

    def context_dim(self, value_dim):
        """The size of the context for values of `value_dim` features (the
        values' own here; several mechanisms side by side:
        `MultipleAttention`)."""
        return value_dim

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        return tuple(query_shape[:-1]) + (value_shape[-1],)

    def compute_output_spec(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        attention_mask=None,
        projected_key=None,
        alignment_history=None,
        return_attention_scores=False,
        training=None,
    ):
        self._validate_shapes(
            query.shape, value.shape, None if key is None else key.shape
        )
        out_shape = tuple(query.shape[:-1]) + (value.shape[-1],)
        output = keras.KerasTensor(out_shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return output
        w_shape = tuple(query.shape[:-1]) + (value.shape[1],)
        return output, keras.KerasTensor(w_shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"dropout": self.dropout, "causal": self.causal})
        if self.probability_fn != "softmax":   # older files lack it
            config["probability_fn"] = self.probability_fn
        return config
