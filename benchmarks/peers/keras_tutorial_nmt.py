"""Peer of figure 3: RNNsearch written the way the TensorFlow tutorial does.

In the style of TensorFlow's "Neural machine translation with attention"
tutorial: an encoder, then a Python `for` loop over the target steps
(teacher forcing) around `keras.layers.AdditiveAttention`, a `GRUCell`
and the output layers, the step outputs stacked at the end. Traced under
XLA or `jax.jit` the loop is unrolled into one static graph, which makes
it a strong peer at short lengths.

It is the same architecture and parameter count as
`kerattn.zoo.bahdanau_nmt` (BiGRU encoder, tanh initial state from the
backward encoder's last state, Bahdanau scoring v^T tanh(W s + U h) with
the keys U h projected once, GRU fed [y_{i-1}; c_i], deep output with
maxout), so the figure compares implementations, not models.
"""

import keras
from keras import ops


class TutorialNMT(keras.Model):
    def __init__(self, vocab_size, embedding_dim, units, alignment_units,
                 maxout_units, **kwargs):
        super().__init__(**kwargs)
        self.source_embedding = keras.layers.Embedding(vocab_size, embedding_dim)
        self.encoder = keras.layers.Bidirectional(
            keras.layers.GRU(units, return_sequences=True, return_state=True))
        self.initial_state = keras.layers.Dense(units, activation="tanh")
        self.target_embedding = keras.layers.Embedding(vocab_size, embedding_dim)
        self.W_a = keras.layers.Dense(alignment_units, use_bias=False)
        self.U_a = keras.layers.Dense(alignment_units, use_bias=False)
        # v_a: AdditiveAttention's learned scale.
        self.attention = keras.layers.AdditiveAttention(use_scale=True)
        self.cell = keras.layers.GRUCell(units)
        self.deep_output = keras.layers.Dense(2 * maxout_units)
        self.output_projection = keras.layers.Dense(vocab_size)
        self.maxout_units = maxout_units

    def call(self, inputs):
        source_ids, target_in_ids = inputs["source_ids"], inputs["target_in_ids"]
        source_mask = ops.not_equal(source_ids, 0)
        h, _, backward_last = self.encoder(self.source_embedding(source_ids),
                                           mask=source_mask)
        s = self.initial_state(backward_last)
        keys = self.U_a(h)
        y = self.target_embedding(target_in_ids)
        logits = []
        for i in range(target_in_ids.shape[1]):           # the tutorial's loop
            query = ops.expand_dims(self.W_a(s), 1)
            c = self.attention([query, h, keys], mask=[None, source_mask])
            c = ops.squeeze(c, 1)
            y_i = y[:, i]
            t = self.deep_output(ops.concatenate([s, c, y_i], axis=-1))
            t = ops.max(ops.reshape(t, (-1, self.maxout_units, 2)), axis=-1)
            logits.append(self.output_projection(t))
            s, _ = self.cell(ops.concatenate([y_i, c], axis=-1), [s])
            s = s[0] if isinstance(s, (list, tuple)) else s
        return ops.stack(logits, axis=1)
