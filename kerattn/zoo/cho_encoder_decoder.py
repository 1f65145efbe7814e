"""The RNN Encoder-Decoder of Cho et al. (2014), as a Keras functional model.

"Learning Phrase Representations using RNN Encoder-Decoder for Statistical
Machine Translation": the whole source is summarised in one vector `c`
that conditions every decoder step and the output (no attention).
Paper defaults (appendix A.1): GRUs of 1000 units, 100-dimensional word
embeddings, a maxout output of 500 units, 15,000-word vocabularies.

Reading order (batch B, source length S, target length T, n units):

    h_N  = GRU(E_x source_ids), last state          (B, n)  "encoder"
    c    = tanh(V h_N)                              (B, n)  "summary"
    h'_0 = tanh(V' c)                               (B, n)  "initial_state"
    h'_t = GRU(h'_{t-1}, [e(y_{t-1}); c])           (B, T, n) "decoder"
    s'_t = O_h h'_t + O_y e(y_{t-1}) + O_c c        (B, T, 2l) "deep_output"
    logits = G maxout(s'_t)                         (B, T, V_y) "output_projection"
"""

import keras
from keras import ops

from kerattn.layers import Maxout, RepeatOverTime
from kerattn.zoo.checks import check_builder_args
from kerattn.zoo.model import ZooModel


def cho_encoder_decoder(source_vocab_size=15000, target_vocab_size=15000,
                        embedding_dim=100, units=1000, maxout_units=500,
                        dropout=0.0, name="cho_encoder_decoder"):
    """The RNN Encoder-Decoder (Cho et al., 2014).

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (PAD = 0).
        embedding_dim: word embedding size (100).
        units: GRU units (1000).
        maxout_units: the output layer's maxout units (500).
        dropout: dropout before the output projection.
        name: the model's name.

    Returns:
        A functional `keras.Model`: `{"source_ids", "target_in_ids"}` ->
        `logits`; `kerattn.zoo.incremental` gives encode / step.

    Example:

    >>> model = cho_encoder_decoder(100, 120, embedding_dim=8, units=16,
    ...                             maxout_units=6)
    >>> model.output_shape
    (None, None, 120)
    """
    check_builder_args(
        dropout=dropout,
        source_vocab_size=source_vocab_size,
        target_vocab_size=target_vocab_size,
        embedding_dim=embedding_dim,
        units=units,
        maxout_units=maxout_units,
    )

    # === Layers ===
    source_embedding = keras.layers.Embedding(
        source_vocab_size, embedding_dim, mask_zero=True, name="source_embedding")
    encoder = keras.layers.GRU(units, name="encoder")
    summary = keras.layers.Dense(units, activation="tanh", name="summary")
    initial_state = keras.layers.Dense(units, activation="tanh",
                                       name="initial_state")
    target_embedding = keras.layers.Embedding(
        target_vocab_size, embedding_dim, mask_zero=True, name="target_embedding")
    repeat = RepeatOverTime(name="repeat_summary")
    decoder = keras.layers.GRU(units, return_sequences=True, name="decoder")
    deep_output = keras.layers.Dense(2 * maxout_units, name="deep_output")
    maxout = Maxout(2, name="maxout")
    output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
    output_projection = keras.layers.Dense(target_vocab_size,
                                           name="output_projection")

    # === Functional Model ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    h_n = encoder(source_embedding(source_ids))             # (B, n)
    c = summary(h_n)                                        # (B, n)
    y = target_embedding(target_in_ids)                     # (B, T, e)
    c_t = repeat(c, y)                                      # (B, T, n)
    h = decoder(keras.layers.Concatenate(name="decoder_input")([y, c_t]),
                initial_state=[initial_state(c)])           # (B, T, n)
    s = deep_output(keras.layers.Concatenate(name="deep_input")([h, y, c_t]))
    logits = output_projection(output_dropout(maxout(s)))   # (B, T, V_y)
    return ZooModel(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        logits, name=name)


class ChoIncremental:
    """Encode once (the summary c), then one GRU step per token."""

    # State entries fixed per source sentence (beam search never reorders them).
    beam_invariant = ("c",)

    def __init__(self, model, pad_id=0):
        get = model.get_layer
        self.source_embedding = get("source_embedding")
        self.encoder = get("encoder")
        self.summary = get("summary")
        self.initial_state = get("initial_state")
        self.target_embedding = get("target_embedding")
        self.decoder = get("decoder")
        self.decoder.cell.supports_masking = True  # stepping: no masks apply
        self.deep_output = get("deep_output")
        self.maxout = get("maxout")
        self.output_projection = get("output_projection")
        self.pad_id = pad_id

    def encode(self, source_ids):
        source_ids = ops.convert_to_tensor(source_ids, "int32")
        mask = ops.not_equal(source_ids, self.pad_id)
        c = self.summary(self.encoder(self.source_embedding(source_ids),
                                      mask=mask))
        return {"h": self.initial_state(c), "c": c}

    def step(self, tokens, state, index):
        y = self.target_embedding(tokens)                        # (B, e)
        c = state["c"]
        h, _ = self.decoder.cell(ops.concatenate([y, c], -1), [state["h"]])
        s = self.deep_output(ops.concatenate([h, y, c], -1))
        logits = self.output_projection(self.maxout(s))
        return logits, {"h": h, "c": c}
