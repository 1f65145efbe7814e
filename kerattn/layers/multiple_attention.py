"""Several attention mechanisms over one memory, queried at once."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers.base_attention import BaseAttention


def layer_from(config_or_layer):
    """A layer, or the layer a saved config (a dict) describes."""
    if isinstance(config_or_layer, dict):
        return keras.saving.deserialize_keras_object(config_or_layer)
    return config_or_layer


def as_one_attention(attention):
    """`attention`, or a list of them as one `MultipleAttention` (what
    `AttentionRNN` takes as its `attention`)."""
    if isinstance(attention, (list, tuple)):
        return MultipleAttention(list(attention))
    return attention


@keras.saving.register_keras_serializable(package="kerattn")
class MultipleAttention(BaseAttention):
    """Several attention mechanisms queried with the same query; their
    contexts concatenated.

    TensorFlow Addons' `AttentionWrapper(cell, [mechanism_1, ...,
    mechanism_k])` (its `_is_multi` path): each mechanism attends over the
    memory on its own, and the decoder reads

        c = [c^(1); ...; c^(k)],    c^(i) = sum_j alpha^(i)_j v_j

    (`k * value_dim` features). `AttentionRNN(units, [a, b])` wraps its
    list in this layer. Each mechanism keeps its own state (the state is
    the tuple of theirs) and its own randomness and mode; the weights this
    layer returns are the mean of the mechanisms' weights (a row sums to 1
    where every mechanism's does: not a monotonic one's, which may attend
    nowhere), one `(batch, Tv)` row a step for the decoder's alignment
    history. With the attentional layer,
    `AttentionRNN`'s one `W_c` reads `[c^(1); ...; c^(k); h]`: tfa's one
    attention layer per mechanism (`attention_layer_size=[m_1, ...]`) is
    that `W_c` with zero blocks, so a tfa checkpoint loads into it exactly
    (docs/migrating_from_tfa.md).

    Args:
        attentions: a list of at least two kerattn attention layers
            (`BaseAttention`s), queried in this order.
        **kwargs: base layer keyword arguments.

    Call arguments, Returns: see `kerattn.layers.BaseAttention`; the
    output has `k * value_dim` features.

    Example:

    >>> import numpy as np
    >>> from kerattn.layers import BahdanauAttention, LuongAttention
    >>> both = MultipleAttention([BahdanauAttention(8), LuongAttention("general")])
    >>> q = np.random.rand(2, 16).astype("float32")
    >>> h = np.random.rand(2, 7, 10).astype("float32")
    >>> context, weights = both(q, h, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 20), (2, 7))
    """

    _causal_refused = "give each mechanism its own flag"

    def __init__(self, attentions, **kwargs):
        super().__init__(**kwargs)
        checks.require(isinstance(attentions, (list, tuple)) and len(attentions) >= 2,
                       "attentions", "a list of at least two attention layers",
                       type(attentions).__name__)
        attentions = [layer_from(a) for a in attentions]
        for attention in attentions:
            checks.instance(
                "attentions", attention, BaseAttention,
                "a list of kerattn attention layers (BaseAttention)")
        self.attentions = attentions
        self.reads_prefix = all(a.reads_prefix for a in attentions)

    def context_dim(self, value_dim):
        """The context's size: the mechanisms' contexts side by side."""
        return sum(a.context_dim(value_dim) for a in self.attentions)

    def build(self, query_shape, value_shape, key_shape=None):
        for attention in self.attentions:
            if not attention.built:
                attention.build(query_shape, value_shape, key_shape)
        self.built = True

    def project_key(self, key):
        """Each mechanism's projected key, a tuple."""
        return tuple(a.project_key(key) for a in self.attentions)

    def _each(self, cache):
        """Each mechanism's cache: its own projected keys (one symbolic
        placeholder for all, where a decoder asks for the state's layout)."""
        keys = cache["keys"]
        if not isinstance(keys, (list, tuple)):
            keys = [keys] * len(self.attentions)
        return [{**cache, "keys": k} for k in keys]

    def _join(self, contexts, weights):
        context = ops.concatenate(contexts, axis=-1)
        if weights[0] is None:
            return context, None
        return context, ops.mean(ops.stack(weights, 0), axis=0)

    def call(self, query, value, key=None, query_mask=None, value_mask=None,
             attention_mask=None, projected_key=None, alignment_history=None,
             return_attention_scores=False, training=None):
        checks.require(
            alignment_history is None, "alignment_history",
            "None for MultipleAttention (each mechanism keeps its own state: "
            "run it through a decoder's steps)", type(alignment_history).__name__)
        contexts, weights = [], []
        for k, attention in enumerate(self.attentions):
            context, w = attention(
                query, value, key=key, query_mask=query_mask,
                value_mask=value_mask, attention_mask=attention_mask,
                projected_key=None if projected_key is None else projected_key[k],
                return_attention_scores=True, training=training)
            contexts.append(context)
            weights.append(w)
        context, weights = self._join(contexts, weights)
        return (context, weights) if return_attention_scores else context

    def compute_output_spec(self, query, value, key=None, query_mask=None,
                            value_mask=None, attention_mask=None,
                            projected_key=None, alignment_history=None,
                            return_attention_scores=False, training=None):
        out_shape = tuple(query.shape[:-1]) + (self.context_dim(value.shape[-1]),)
        output = keras.KerasTensor(out_shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return output
        w_shape = tuple(query.shape[:-1]) + (value.shape[1],)
        return output, keras.KerasTensor(w_shape, dtype=self.compute_dtype)

    # --- the step protocol: each mechanism's, side by side -------------------

    def initial_state(self, cache, batch_size):
        """The tuple of the mechanisms' initial states."""
        return tuple(a.initial_state(c, batch_size)
                     for a, c in zip(self.attentions, self._each(cache)))

    def step(self, query, cache, state, *, position=None, training=None,
             noise=None, mode=None):
        contexts, weights, states = [], [], []
        modes = mode if mode is not None else (None,) * len(self.attentions)
        for k, (attention, c) in enumerate(zip(self.attentions, self._each(cache))):
            mine = {name[len(f"{k}/"):]: v for name, v in (noise or {}).items()
                    if name.startswith(f"{k}/")}
            context, w, s = attention.step(query, c, state[k], position=position,
                                           training=training, noise=mine,
                                           mode=modes[k])
            contexts.append(ops.cast(context, self.compute_dtype))
            weights.append(ops.cast(w, self.compute_dtype))
            states.append(s)
        context, weights = self._join(contexts, weights)
        return context, weights, tuple(states)

    def draw_noise(self, cache, steps, *, training=None, mode=None):
        """Each mechanism's draws, named `"<k>/<name>"`."""
        modes = mode if mode is not None else (None,) * len(self.attentions)
        drawn = {}
        for k, (attention, c) in enumerate(zip(self.attentions, self._each(cache))):
            for name, value in attention.draw_noise(c, steps, training=training,
                                                    mode=modes[k]).items():
                drawn[f"{k}/{name}"] = value
        return drawn

    def sample_of(self, state):
        """The first sampling mechanism's location (None if none samples)."""
        for attention, s in zip(self.attentions, state):
            sample = attention.sample_of(s)
            if sample is not None:
                return sample
        return None

    def mode_for(self, mode, *, decoding):
        """The mechanisms' modes, a tuple (None when none has modes):
        `mode` goes to each mechanism that has modes."""
        own = [a.mode_for(None, decoding=decoding) for a in self.attentions]
        if all(m is None for m in own):
            return super().mode_for(mode, decoding=decoding)
        return tuple(m if m is None or mode is None
                     else a.mode_for(mode, decoding=decoding)
                     for a, m in zip(self.attentions, own))

    def extend_source(self, state, cache):
        return tuple(a.extend_source(s, c) for a, s, c in
                     zip(self.attentions, state, self._each(cache)))

    def get_config(self):
        config = super().get_config()
        config["attentions"] = [keras.saving.serialize_keras_object(a)
                                for a in self.attentions]
        return config
