"""RNNsearch: Bahdanau, Cho and Bengio (2014), as a Keras functional model.

"Neural Machine Translation by Jointly Learning to Align and Translate".
Paper defaults (section 4.2 and appendix A): word embeddings m = 620, GRUs
of n = 1000 units (a bidirectional encoder, so annotations of 2n), an
alignment model of n' = 1000 units, a deep output of l = 500 maxout units,
30,000-word vocabularies. Small sizes are one keyword away:

    model = bahdanau_nmt(8000, 8000, embedding_dim=128, units=256,
                         alignment_units=256, maxout_units=128)

Reading order (shapes for batch B, source length S, target length T):

    x_j  = E_x source_ids                       (B, S, m)
    h_j  = [->h_j; <-h_j] = BiGRU(x)            (B, S, 2n)   "encoder"
    s_0  = tanh(W_s <-h_1)                      (B, n)       "initial_state"
    y    = E_y target_in_ids  (BOS y_0 ...)     (B, T, m)
    [s_{i-1}; c_i] = AttentionRNN(y, h, s_0)    (B, T, n + 2n) "decoder"
         e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j),  c_i = sum_j alpha_ij h_j
         s_i = GRU(s_{i-1}, [y_{i-1}; c_i])
    t~_i = U_o s_{i-1} + V_o E y_{i-1} + C_o c_i  (B, T, 2l)  "deep_output"
    t_i  = maxout(t~_i)                         (B, T, l)
    logits = W_o t_i                            (B, T, V_y)  "output_projection"
"""

import keras
from keras import ops

from kerattn.layers import AttentionRNN, BahdanauAttention, Maxout
from kerattn.zoo.checks import check_builder_args
from kerattn.zoo.model import ZooModel


def bahdanau_nmt(
    source_vocab_size=30000,
    target_vocab_size=30000,
    embedding_dim=620,
    units=1000,
    alignment_units=1000,
    maxout_units=500,
    dropout=0.0,
    name="bahdanau_nmt",
):
    """RNNsearch (Bahdanau et al., 2014): the training graph.

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (ids < size;
            0 is PAD and is masked).
        embedding_dim: `m`, 620 in the paper.
        units: `n`, the GRU units (per direction in the encoder), 1000.
        alignment_units: `n'`, the alignment model's hidden size, 1000.
        maxout_units: `l`, the deep output's maxout units, 500.
        dropout: dropout before the deep output (the paper used none for
            RNNsearch; useful on small data).
        name: the model's name.

    Returns:
        A functional `keras.Model` with inputs `{"source_ids": (B, S),
        "target_in_ids": (B, T)}` (int32, PAD = 0) and output `logits`
        `(B, T, target_vocab_size)`. `kerattn.zoo.incremental(model)` gives
        the encode / step functions that decoding uses (same weights).

    Example:

    >>> model = bahdanau_nmt(100, 120, embedding_dim=8, units=16,
    ...                      alignment_units=8, maxout_units=6)
    >>> model.output_shape
    (None, None, 120)
    """
    check_builder_args(
        dropout=dropout,
        source_vocab_size=source_vocab_size,
        target_vocab_size=target_vocab_size,
        embedding_dim=embedding_dim,
        units=units,
        alignment_units=alignment_units,
        maxout_units=maxout_units,
    )

    # === Layers ===
    source_embedding = keras.layers.Embedding(
        source_vocab_size, embedding_dim, mask_zero=True, name="source_embedding")
    encoder = keras.layers.Bidirectional(
        keras.layers.GRU(units, return_sequences=True, return_state=True),
        name="encoder")
    initial_state = keras.layers.Dense(units, activation="tanh",
                                       name="initial_state")
    target_embedding = keras.layers.Embedding(
        target_vocab_size, embedding_dim, mask_zero=True, name="target_embedding")
    decoder = AttentionRNN(
        units, BahdanauAttention(alignment_units, name="attention"),
        cell="gru", order="bahdanau", name="decoder")
    deep_output = keras.layers.Dense(2 * maxout_units, name="deep_output")
    maxout = Maxout(2, name="maxout")
    output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
    output_projection = keras.layers.Dense(target_vocab_size,
                                           name="output_projection")

    # === Functional Model ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    x = source_embedding(source_ids)                       # (B, S, m)
    h, _, backward_last = encoder(x)                       # (B, S, 2n), <-h_1
    s0 = initial_state(backward_last)                      # (B, n)
    y = target_embedding(target_in_ids)                    # (B, T, m)
    out = decoder(y, h, initial_state=[s0])                # (B, T, 3n)
    t = deep_output(keras.layers.Concatenate(name="deep_input")([out, y]))
    t = output_dropout(maxout(t))                          # (B, T, l)
    logits = output_projection(t)                          # (B, T, V_y)
    return ZooModel(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        logits, name=name)


class BahdanauIncremental:
    """Encode once, then one decoder step at a time (shared weights)."""

    # State entries fixed per source sentence (beam search never reorders them).
    beam_invariant = ("cache",)

    def __init__(self, model, pad_id=0):
        get = model.get_layer
        self.source_embedding = get("source_embedding")
        self.encoder = get("encoder")
        self.initial_state = get("initial_state")
        self.target_embedding = get("target_embedding")
        self.decoder = get("decoder")
        self.deep_output = get("deep_output")
        self.maxout = get("maxout")
        self.output_projection = get("output_projection")
        self.pad_id = pad_id

    def encode(self, source_ids):
        """`(B, S)` ids -> the decoding state (keys projected once)."""
        source_ids = ops.convert_to_tensor(source_ids, "int32")
        mask = ops.not_equal(source_ids, self.pad_id)
        x = self.source_embedding(source_ids)
        h, _, backward_last = self.encoder(x, mask=mask)
        s0 = self.initial_state(backward_last)
        return {
            "states": self.decoder.get_initial_state(ops.shape(source_ids)[0], [s0]),
            "cache": self.decoder.precompute(h, mask),
        }

    def step(self, tokens, state, index):
        """`(B,)` previous tokens -> `(logits (B, V), state, attention (B, S))`."""
        y = self.target_embedding(tokens)                        # (B, m)
        out, states, weights = self.decoder.step(y, state["states"], state["cache"])
        t = self.maxout(self.deep_output(ops.concatenate([out, y], axis=-1)))
        logits = self.output_projection(t)
        return logits, {"states": states, "cache": state["cache"]}, weights
