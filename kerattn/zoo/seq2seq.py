"""Sequence to sequence learning (Sutskever, Vinyals and Le, 2014).

"Sequence to Sequence Learning with Neural Networks": no attention, the
baseline the attention models are measured against. Paper defaults
(section 3.4): 4-layer LSTMs of 1000 cells, 1000-dimensional embeddings,
the source fed in reverse, 160k / 80k vocabularies. Small sizes are one
keyword away:

    model = seq2seq(8000, 8000, units=256, embedding_dim=256, num_layers=2)

Reading order (batch B, source length S, target length T, n units):

    x      = E_x reverse(source_ids)           (B, S, e)   "reverse_source"
    states = LSTM^L(x), each layer's (h, c)    L x 2 x (B, n)  "encoder_k"
    h_t    = LSTM^L(E_y target_in_ids; states) (B, T, n)   "decoder_k"
    logits = W h_t                             (B, T, V_y) "output_projection"
"""

import keras
from keras import ops

from kerattn.layers import ReverseSequence
from kerattn.zoo.checks import check_builder_args
from kerattn.zoo.model import ZooModel


def seq2seq(source_vocab_size=160000, target_vocab_size=80000, num_layers=4,
            units=1000, embedding_dim=1000, reverse_source=True, dropout=0.0,
            name="seq2seq"):
    """The deep LSTM encoder-decoder of Sutskever et al. (2014).

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (PAD = 0).
        num_layers: LSTM layers in the encoder and the decoder (4).
        units: LSTM cells per layer (1000).
        embedding_dim: word embedding size (1000).
        reverse_source: feed the (unpadded part of the) source in reverse.
        dropout: dropout on embeddings and the decoder output (the paper
            used none).
        name: the model's name.

    Returns:
        A functional `keras.Model`: `{"source_ids", "target_in_ids"}` ->
        `logits`; `kerattn.zoo.incremental` gives encode / step.

    Example:

    >>> model = seq2seq(100, 120, num_layers=2, units=16, embedding_dim=8)
    >>> model.output_shape
    (None, None, 120)
    """
    check_builder_args(
        dropout=dropout,
        source_vocab_size=source_vocab_size,
        target_vocab_size=target_vocab_size,
        num_layers=num_layers,
        units=units,
        embedding_dim=embedding_dim,
    )

    # === Layers ===
    reverse = ReverseSequence(name="reverse_source") if reverse_source else None
    source_embedding = keras.layers.Embedding(
        source_vocab_size, embedding_dim, mask_zero=True, name="source_embedding")
    encoders = [keras.layers.LSTM(units, return_sequences=True, return_state=True,
                                  name=f"encoder_{k + 1}")
                for k in range(num_layers)]
    target_embedding = keras.layers.Embedding(
        target_vocab_size, embedding_dim, mask_zero=True, name="target_embedding")
    decoders = [keras.layers.LSTM(units, return_sequences=True, return_state=True,
                                  name=f"decoder_{k + 1}")
                for k in range(num_layers)]
    dropout_layer = keras.layers.Dropout(dropout, name="dropout")
    output_projection = keras.layers.Dense(target_vocab_size,
                                           name="output_projection")

    # === Functional Model ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    ids = reverse(source_ids) if reverse is not None else source_ids
    x = dropout_layer(source_embedding(ids))               # (B, S, e)
    states = []
    for encoder in encoders:
        x, h, c = encoder(x)                               # (B, S, n)
        states.append([h, c])
    y = dropout_layer(target_embedding(target_in_ids))     # (B, T, e)
    for decoder, state in zip(decoders, states):
        y, _, _ = decoder(y, initial_state=state)          # (B, T, n)
    logits = output_projection(dropout_layer(y))           # (B, T, V_y)
    return ZooModel(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        logits, name=name)


class Seq2SeqIncremental:
    """Encode once (the final states), then one LSTM step per token."""

    def __init__(self, model, pad_id=0):
        names = {layer.name for layer in model.layers}
        self.reverse = (model.get_layer("reverse_source")
                        if "reverse_source" in names else None)
        self.source_embedding = model.get_layer("source_embedding")
        layers = sorted((l for l in model.layers if "_" in l.name
                         and l.name.split("_")[0] in ("encoder", "decoder")
                         and l.name.split("_")[-1].isdigit()),
                        key=lambda l: int(l.name.split("_")[-1]))
        self.encoders = [l for l in layers if l.name.startswith("encoder_")]
        self.decoders = [l for l in layers if l.name.startswith("decoder_")]
        for decoder in self.decoders:  # stepping the cell: masks don't apply
            decoder.cell.supports_masking = True
        self.target_embedding = model.get_layer("target_embedding")
        self.output_projection = model.get_layer("output_projection")
        self.pad_id = pad_id

    def encode(self, source_ids):
        source_ids = ops.convert_to_tensor(source_ids, "int32")
        mask = ops.not_equal(source_ids, self.pad_id)
        if self.reverse is not None:
            source_ids = self.reverse(source_ids)
        x = self.source_embedding(source_ids)
        states = []
        for encoder in self.encoders:
            x, h, c = encoder(x, mask=mask)
            states.append([h, c])
        return {"states": states}

    def step(self, tokens, state, index):
        y = self.target_embedding(tokens)
        new_states = []
        for decoder, (h, c) in zip(self.decoders, state["states"]):
            y, (h, c) = decoder.cell(y, [h, c])
            new_states.append([h, c])
        return self.output_projection(y), {"states": new_states}
