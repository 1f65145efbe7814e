"""Forward attention (Zhang, Ling and Dai, 2018), with its transition agent."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.location_sensitive_attention import LocationSensitiveAttention

AGENTS = (None, "move", "stay")


@keras.saving.register_keras_serializable(package="kerattn")
class ForwardAttention(LocationSensitiveAttention):
    """Forward attention of Zhang, Ling and Dai (2018).

    "Forward Attention in Sequence-to-Sequence Acoustic Modelling for
    Speech Synthesis", section 3, algorithms 1 and 2. A base attention
    gives `y_t = softmax(e_t)` (here the location-sensitive score of
    `LocationSensitiveAttention` on the previous forward weights, as
    ESPnet's `AttForward`); the forward recursion keeps only alignments
    that stay or move one position a step:

        a^_t(n) = (a_{t-1}(n) + a_{t-1}(n-1)) y_t(n)               (alg. 1)
        a_t(n) = a^_t(n) / sum_m a^_t(m),    c_t = sum_n a_t(n) h_n

    from `a_0` one-hot at the first position. With a transition agent
    (alg. 2) a learned probability `u` weighs the two moves,

        a^_t(n) = ((1 - u_{t-1}) a_{t-1}(n) + u_{t-1} a_{t-1}(n-1)) y_t(n)
        u_t = sigmoid(w_u^T [c_t; q_t] + b_u),    u_0 = 0.5

    `transition_agent="move"` is the paper's (`u` the probability of moving
    on); `"stay"` is ESPnet's `AttForwardTA`, which puts `u` on the stay
    term, `(u a_{t-1}(n) + (1 - u) a_{t-1}(n-1)) y_t(n)`. The paper's agent
    also reads the previous output `o_{t-1}`, which the step protocol does
    not give an attention: here it reads the context and the query (ESPnet
    concatenates all three into one linear layer, as here). ESPnet also
    floors `a^` at 1e-6 before normalising, which puts a little weight on
    every position, padding included; here `a^` is normalised as the
    paper writes it, padded positions 0. When `a^_t` is zero everywhere
    (`y_t` zero where the recursion can go) the step attends nowhere, and
    so do the later ones.

    Its state in the step protocol (`BaseAttention`) is `{"alignment":
    a_{t-1}}` (float32), plus `{"agent": u_{t-1}}` `(batch, 1)` with an
    agent. Called alone, the layer takes `alignment_history=` (`a_{t-1}`,
    that one-hot when None) and `agent=` (`u_{t-1}`, `(batch,)` or
    `(batch, Tq)`, 0.5 when None); `return_state=True` also returns
    `{"alignment": a_t[, "agent": u_t]}`.

    Args:
        units, filters, kernel_size, sharpening, smoothing, use_bias: the
            base score's, as in `LocationSensitiveAttention` (one
            "previous" channel).
        kernel_initializer, kernel_regularizer, dropout: likewise.
        transition_agent: None, "move" (the paper's) or "stay" (ESPnet's).
        **kwargs: base layer keyword arguments.

    Example:

    >>> import numpy as np
    >>> h = np.random.rand(2, 9, 4).astype("float32")
    >>> s = np.random.rand(2, 6).astype("float32")
    >>> attention = ForwardAttention(8, filters=2, kernel_size=3,
    ...                              transition_agent="move")
    >>> _, a1, state = attention(s, h, return_attention_scores=True,
    ...                          return_state=True)
    >>> float(keras.ops.max(a1[:, 2:]))   # one step reaches position 1 at most
    0.0
    >>> sorted(state)
    ['agent', 'alignment']
    """

    _history_dtype = "float32"
    _probability_fn_refused = "its weights are the forward recursion's"

    def __init__(self, units, filters=32, kernel_size=31, transition_agent=None,
                 **kwargs):
        checks.require(
            kwargs.pop("channels", None) in (None, ["previous"], ("previous",)),
            "channels", "('previous',) for ForwardAttention (its score reads "
            "the previous forward weights)", True)
        checks.require(not kwargs.pop("cumulative", False), "cumulative",
                       "False for ForwardAttention", True)
        super().__init__(units, filters=filters, kernel_size=kernel_size, **kwargs)
        checks.one_of("transition_agent", transition_agent, AGENTS)
        self.transition_agent = transition_agent

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        if self.transition_agent:
            self.agent_kernel = self.add_weight(
                name="agent_kernel", shape=(value_shape[-1] + query_shape[-1], 1),
                initializer=self.kernel_initializer,
                regularizer=self.kernel_regularizer, dtype=self.variable_dtype)
            self.agent_bias = self.add_weight(
                name="agent_bias", shape=(1,), initializer="zeros",
                dtype=self.variable_dtype)
        self.built = True

    def initial_alignment(self, value_mask):
        """`a_0`: one-hot at each row's first real position (float32)."""
        return utils.first_position(value_mask)

    def _compute_attention(self, query, key, value, mask, training,
                           return_attention_scores, alignment_history=None,
                           agent=None):
        """`(output, weights, {"alignment": a_t[, "agent": u_t]})`."""
        previous = ops.cast(alignment_history, "float32")          # (b, Tq, Tv)
        scores = self._calculate_scores(
            query, key, alignment_history=ops.cast(previous, self.compute_dtype))
        shifted = ops.pad(previous[..., :-1], [[0, 0], [0, 0], [1, 0]])
        if self.transition_agent is None:
            moved = previous + shifted
        else:
            u = 0.5 if agent is None else ops.cast(agent, "float32")
            if agent is not None:                                   # (b, Tq, 1)
                u = ops.reshape(u, (ops.shape(u)[0], -1, 1))
            if self.transition_agent == "move":
                moved = (1.0 - u) * previous + u * shifted
            else:
                moved = u * previous + (1.0 - u) * shifted
        # a_t(n) = moved(n) y_t(n) / sum_m moved(m) y_t(m), with y_t the
        # softmax of the (sharpened) scores: the softmax's normaliser
        # cancels, so a_t is a softmax of `log y~ + log moved` over the
        # positions `moved` reaches. Written so, no product of two small
        # probabilities underflows to a zero total (the paper's 0 / 0, and
        # an infinite gradient through a tiny one, where y_t puts its mass
        # far from a_{t-1}: NaN within an epoch of G2P phrases).
        logits = ops.cast(scores, "float32") * self.sharpening
        if self.smoothing:   # y~ = sigmoid(beta e)
            logits = ops.log_sigmoid(logits)
        support = moved > 0.0
        if mask is not None:
            support = ops.logical_and(support, ops.cast(mask, "bool"))
        alpha = utils.masked_softmax(
            logits + ops.log(ops.where(support, moved, 1.0)), support)
        weights = ops.cast(alpha, self.compute_dtype)
        dropped = self._dropout_layer(weights, training=training)
        output = ops.matmul(dropped, ops.cast(value, self.compute_dtype))
        extras = {"alignment": alpha}
        if self.transition_agent:
            reads = ops.concatenate([output, ops.cast(query, output.dtype)], -1)
            extras["agent"] = ops.cast(ops.sigmoid(
                utils.project(reads, self.agent_kernel) + self.agent_bias)[..., 0],
                "float32")                                          # (b, Tq)
        return output, weights, extras

    def call(self, query, value, key=None, query_mask=None, value_mask=None,
             attention_mask=None, projected_key=None, alignment_history=None,
             agent=None, return_attention_scores=False, return_state=False,
             training=None):
        if agent is not None:
            checks.require(self.transition_agent is not None, "agent",
                           "None without a transition agent", "a tensor")
        output, weights, extras = self._attend(
            query, value, key=key, query_mask=query_mask, value_mask=value_mask,
            attention_mask=attention_mask, projected_key=projected_key,
            alignment_history=alignment_history, training=training, agent=agent)
        result = (output,)
        if return_attention_scores:
            result += (weights,)
        if return_state:
            result += (extras,)
        return result[0] if len(result) == 1 else result

    def compute_output_spec(self, query, value, key=None, query_mask=None,
                            value_mask=None, attention_mask=None,
                            projected_key=None, alignment_history=None,
                            agent=None, return_attention_scores=False,
                            return_state=False, training=None):
        spec = super().compute_output_spec(query, value, key,
                                           return_attention_scores=True)
        result = (spec[0],)
        if return_attention_scores:
            result += (spec[1],)
        if return_state:
            state = {"alignment": keras.KerasTensor(spec[1].shape, "float32")}
            if self.transition_agent:
                state["agent"] = keras.KerasTensor(spec[1].shape[:-1], "float32")
            result += (state,)
        return result[0] if len(result) == 1 else result

    # --- the step protocol ------------------------------------------------------

    def initial_state(self, cache, batch_size):
        state = {"alignment": self.initial_alignment(cache["mask"])}
        if self.transition_agent:
            first = ops.cast(cache["mask"][:, :1], "float32")
            state["agent"] = ops.zeros_like(first) + 0.5
        return state

    def step(self, query, cache, state, *, position=None, training=None,
             noise=None, mode=None):
        context, weights, extras = self._attend(
            query, cache["values"], projected_key=cache["keys"],
            value_mask=cache["mask"], alignment_history=state["alignment"],
            training=training, agent=state.get("agent"))
        if self.transition_agent:
            extras["agent"] = ops.reshape(extras["agent"], (-1, 1))
        return context, weights, extras

    def extend_source(self, state, cache):
        """The forward weights padded to the longer source; the agent's `u`
        kept."""
        length = ops.shape(cache["mask"])[1]
        alignment = state["alignment"]
        grown = ops.pad(alignment, [[0, 0], [0, length - ops.shape(alignment)[-1]]])
        return {**state, "alignment": grown}

    def get_config(self):
        config = super().get_config()
        config.pop("channels", None)
        config["transition_agent"] = self.transition_agent
        return config
