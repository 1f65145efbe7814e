"""Sequence to sequence learning (Sutskever, Vinyals and Le, 2014).

"Sequence to Sequence Learning with Neural Networks": no attention, the
baseline the attention models are measured against. Paper defaults
(section 3.4): 4-layer LSTMs of 1000 cells, 1000-dimensional embeddings,
the source fed in reverse, 160k / 80k vocabularies (the "paper" preset).
Named sizes (`PRESETS`, at the end of this file) are one keyword away:

    model = seq2seq(8000, 8000, preset="base")

Reading order (batch B, source length S, target length T, n units):

    x      = E_x reverse(source_ids)           (B, S, e)   "reverse_source"
    states = LSTM^L(x), each layer's (h, c)    L x 2 x (B, n)  "encoder_k"
    h_t    = LSTM^L(E_y target_in_ids; states) (B, T, n)   "decoder_k"
    logits = W h_t                             (B, T, V_y) "output_projection"

The file reads top to bottom: the layers and the training graph, then
`Seq2Seq.encode` and `.step`. Both paths run the same `encode_source` and
`decode_target`: a step is the training graph's decoder stack over a target
of length 1, started from the previous states.
"""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import LSTM, ReverseSequence
from kerattn.zoo.model import GenerativeModel, from_preset, numbered_layers


# === Layers and training graph ===

def seq2seq(source_vocab_size=160000, target_vocab_size=80000, num_layers=None,
            units=None, embedding_dim=None, reverse_source=True, dropout=None,
            preset="paper", name="seq2seq"):
    """The deep LSTM encoder-decoder of Sutskever et al. (2014).

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (PAD = 0).
        num_layers: LSTM layers in the encoder and the decoder (4).
        units: LSTM cells per layer (1000).
        embedding_dim: word embedding size (1000).
        reverse_source: feed the (unpadded part of the) source in reverse.
        dropout: dropout on embeddings and the decoder output (the paper
            used none).
        preset: named sizes, one of `PRESETS` ("tiny", "small", "base",
            "paper"); a size given above overrides the preset's.
        name: the model's name.

    Returns:
        A `Seq2Seq`: `{"source_ids", "target_in_ids"}` -> `logits`, with
        `encode` / `step` for decoding.

    Example:

    >>> model = seq2seq(100, 120, num_layers=2, units=16, embedding_dim=8)
    >>> type(model).__name__, model.output_shape
    ('Seq2Seq', (None, None, 120))
    """
    c = from_preset(PRESETS, preset, num_layers=num_layers, units=units,
                    embedding_dim=embedding_dim, dropout=dropout)
    checks.sizes(source_vocab_size=source_vocab_size,
                 target_vocab_size=target_vocab_size, **c)
    n, e, depth = c["units"], c["embedding_dim"], c["num_layers"]

    # === Layers ===
    layers = [
        keras.layers.Embedding(source_vocab_size, e, mask_zero=True,
                               name="source_embedding"),
        *[LSTM(n, return_sequences=True, return_state=True,
               name=f"encoder_{k + 1}") for k in range(depth)],
        keras.layers.Embedding(target_vocab_size, e, mask_zero=True,
                               name="target_embedding"),
        *[LSTM(n, return_sequences=True, return_state=True,
               name=f"decoder_{k + 1}") for k in range(depth)],
        keras.layers.Dropout(c["dropout"], name="dropout"),
        keras.layers.Dense(target_vocab_size, name="output_projection"),
    ]
    if reverse_source:
        layers.append(ReverseSequence(name="reverse_source"))
    by_name = {layer.name: layer for layer in layers}
    encoders = [by_name[f"encoder_{k + 1}"] for k in range(depth)]
    decoders = [by_name[f"decoder_{k + 1}"] for k in range(depth)]

    # === Training graph ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    states = encode_source(by_name, encoders, source_ids)      # L x [h, c]
    logits, _ = decode_target(by_name.__getitem__, decoders, target_in_ids,
                              states)                         # (B, T, V_y)
    return Seq2Seq(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        logits, name=name)


def encode_source(by_name, encoders, source_ids):
    """`(B, S)` ids -> each layer's last `[h, c]`, `(B, n)` each.

    `by_name`: the layers by name (`reverse_source` only when the source is
    read reversed).
    """
    mask = ops.not_equal(source_ids, 0)
    if "reverse_source" in by_name:
        source_ids = by_name["reverse_source"](source_ids)  # PAD stays at the end
    x = by_name["dropout"](by_name["source_embedding"](source_ids))  # (B, S, e)
    states = []
    for encoder in encoders:
        x, h, c = encoder(x, mask=mask)                     # (B, S, n)
        states.append([h, c])
    return states


def decode_target(get, decoders, target_in_ids, states):
    """`(B, T)` previous tokens -> `(logits (B, T, V_y), final states)`, the
    decoder stack started from `states` (one `[h, c]` per layer)."""
    y = get("dropout")(get("target_embedding")(target_in_ids))  # (B, T, e)
    final = []
    for decoder, state in zip(decoders, states):
        y, h, c = decoder(y, initial_state=state)           # (B, T, n)
        final.append([h, c])
    return get("output_projection")(get("dropout")(y)), final


# === Decoding: encode once, then one step at a time ===

@keras.saving.register_keras_serializable(package="kerattn")
class Seq2Seq(GenerativeModel):
    """Sutskever et al.'s model, built by `seq2seq`: the training graph with
    `encode` and `step` (see `kerattn.zoo.GenerativeModel`).

    Args:
        inputs, outputs, name: those of Keras' functional `Model`; the
            builder (`seq2seq`) passes them.

    Example:

    >>> import numpy as np
    >>> model = kerattn.zoo.seq2seq(20, 30, preset="tiny")
    >>> state = model.encode(np.array([[5, 6, 7, 0]], "int32"), max_length=4)
    >>> logits, state, attention = model.step(np.array([2], "int32"), state, 0)
    >>> tuple(logits.shape)
    (1, 30)
    """

    def encode(self, source_ids, max_length=None):
        """`(B, S)` ids -> `{"states": L x [h, c]}`."""
        source_ids, _ = self.source_ids(source_ids)
        by_name = {layer.name: layer for layer in self.layers}
        states = encode_source(by_name, numbered_layers(self, "encoder"),
                               source_ids)
        return {"states": states}

    def step(self, tokens, state, index):
        """`(B,)` previous tokens -> `(logits (B, V), state, None)`."""
        logits, states = decode_target(
            self.get_layer, numbered_layers(self, "decoder"),
            ops.expand_dims(tokens, 1), state["states"])
        return logits[:, 0], {"states": states}, None

    @staticmethod
    def get_layout_map(device_mesh):
        """Sharding over the mesh's "model" axis: the embeddings by width and
        the softmax by rows (the 160k / 80k-word embeddings and softmax are
        most of the paper model's 380M parameters); the LSTMs replicate.

        Args:
            device_mesh: a `keras.distribution.DeviceMesh` with a "model" axis.

        Returns:
            A `keras.distribution.LayoutMap`.
        """
        layouts = keras.distribution.LayoutMap(device_mesh)
        layouts[r".*_embedding/embeddings"] = (None, "model")
        layouts[r"output_projection/kernel"] = ("model", None)
        return layouts


# === Presets: "paper" is section 3.4; the others fit a CPU ===

PRESETS = {
    "tiny": dict(num_layers=1, units=16, embedding_dim=8),
    "small": dict(num_layers=2, units=128, embedding_dim=128),
    "base": dict(num_layers=4, units=256, embedding_dim=128, dropout=0.2),
    "paper": dict(num_layers=4, units=1000, embedding_dim=1000, dropout=0.0),
}
