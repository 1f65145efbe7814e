"""The RNN Encoder-Decoder of Cho et al. (2014), as a Keras functional model.

"Learning Phrase Representations using RNN Encoder-Decoder for Statistical
Machine Translation": the whole source is summarised in one vector `c`
that conditions every decoder step and the output (no attention).
Paper defaults (appendix A.1): GRUs of 1000 units, 100-dimensional word
embeddings, a maxout output of 500 units, 15,000-word vocabularies (the
"paper" preset; `PRESETS` at the end of this file has CPU sizes).

Reading order (batch B, source length S, target length T, n units):

    h_N  = GRU(E_x source_ids), last state          (B, n)  "encoder"
    c    = tanh(V h_N)                              (B, n)  "summary"
    h'_0 = tanh(V' c)                               (B, n)  "initial_state"
    h'_t = GRU(h'_{t-1}, [e(y_{t-1}); c])           (B, T, n) "decoder"
    s'_t = O_h h'_t + O_y e(y_{t-1}) + O_c c        (B, T, 2l) "deep_output"
    logits = G maxout(s'_t)                         (B, T, V_y) "output_projection"

The file reads top to bottom: the layers and the training graph, then
`ChoEncoderDecoder.encode` and `.step`. Both paths run the same
`encode_source` and `decode_target`: a step is the training graph's decoder
over a target of length 1, started from the previous state.
"""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import GRU, Maxout, RepeatOverTime
from kerattn.zoo.model import GenerativeModel, from_preset


# === Layers and training graph ===

def cho_encoder_decoder(source_vocab_size=15000, target_vocab_size=15000,
                        embedding_dim=None, units=None, maxout_units=None,
                        dropout=None, reset_after=None, preset="paper",
                        name="cho_encoder_decoder"):
    """The RNN Encoder-Decoder (Cho et al., 2014).

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (PAD = 0).
        embedding_dim: word embedding size (100).
        units: GRU units (1000).
        maxout_units: the output layer's maxout units (500).
        dropout: dropout before the output projection.
        reset_after: the GRUs' reset gate. False is the paper's GRU,
            `h~ = tanh(W x + U (r * h))` (the "paper" preset); True is Keras'
            default (the cuDNN form, `tanh(W x + r * (U h + b))`, one more
            bias vector per GRU; the CPU presets keep it).
        preset: named sizes, one of `PRESETS` ("tiny", "small", "base",
            "paper"); a size given above overrides the preset's.
        name: the model's name.

    Returns:
        A `ChoEncoderDecoder`: `{"source_ids", "target_in_ids"}` ->
        `logits`, with `encode` / `step` for decoding.

    Example:

    >>> model = cho_encoder_decoder(100, 120, embedding_dim=8, units=16,
    ...                             maxout_units=6)
    >>> type(model).__name__, model.output_shape
    ('ChoEncoderDecoder', (None, None, 120))
    """
    c = from_preset(PRESETS, preset, embedding_dim=embedding_dim, units=units,
                    maxout_units=maxout_units, dropout=dropout,
                    reset_after=reset_after)
    reset_after = c.pop("reset_after")
    checks.boolean("reset_after", reset_after)
    checks.sizes(source_vocab_size=source_vocab_size,
                 target_vocab_size=target_vocab_size, **c)
    e, n = c["embedding_dim"], c["units"]

    # === Layers ===
    layers = [
        keras.layers.Embedding(source_vocab_size, e, mask_zero=True,
                               name="source_embedding"),
        GRU(n, reset_after=reset_after, name="encoder"),
        keras.layers.Dense(n, activation="tanh", name="summary"),
        keras.layers.Dense(n, activation="tanh", name="initial_state"),
        keras.layers.Embedding(target_vocab_size, e, mask_zero=True,
                               name="target_embedding"),
        RepeatOverTime(name="repeat_summary"),
        keras.layers.Concatenate(name="decoder_input"),
        GRU(n, return_sequences=True, reset_after=reset_after,
            name="decoder"),
        keras.layers.Concatenate(name="deep_input"),
        keras.layers.Dense(2 * c["maxout_units"], name="deep_output"),
        Maxout(2, name="maxout"),
        keras.layers.Dropout(c["dropout"], name="output_dropout"),
        keras.layers.Dense(target_vocab_size, name="output_projection"),
    ]
    get = {layer.name: layer for layer in layers}.__getitem__

    # === Training graph ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    c_vec, h0 = encode_source(get, source_ids)              # (B, n), (B, n)
    logits, _ = decode_target(get, target_in_ids, c_vec, h0)  # (B, T, V_y)
    return ChoEncoderDecoder(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        logits, name=name)


def encode_source(get, source_ids):
    """`(B, S)` ids -> the summary `c` and the decoder's `h'_0`, `(B, n)` each."""
    mask = ops.not_equal(source_ids, 0)
    h_n = get("encoder")(get("source_embedding")(source_ids), mask=mask)
    c = get("summary")(h_n)                                 # c = tanh(V h_N)
    return c, get("initial_state")(c)                       # h'_0 = tanh(V' c)


def decode_target(get, target_in_ids, c, h_prev):
    """`(B, T)` previous tokens -> `(logits (B, T, V_y), h' (B, T, n))`,
    the decoder GRU started from `h_prev`."""
    y = get("target_embedding")(target_in_ids)              # (B, T, e)
    c_t = get("repeat_summary")(c, y)                       # (B, T, n)
    h = get("decoder")(get("decoder_input")([y, c_t]),
                       initial_state=[h_prev])              # (B, T, n)
    s = get("deep_output")(get("deep_input")([h, y, c_t]))  # (B, T, 2l)
    logits = get("output_projection")(get("output_dropout")(get("maxout")(s)))
    return logits, h


# === Decoding: encode once, then one step at a time ===

@keras.saving.register_keras_serializable(package="kerattn")
class ChoEncoderDecoder(GenerativeModel):
    """The RNN Encoder-Decoder, built by `cho_encoder_decoder`: the training
    graph with `encode` and `step` (see `kerattn.zoo.GenerativeModel`).

    Args:
        inputs, outputs, name: those of Keras' functional `Model`; the
            builder (`cho_encoder_decoder`) passes them.

    Example:

    >>> import numpy as np
    >>> model = kerattn.zoo.cho_encoder_decoder(20, 30, preset="tiny")
    >>> state = model.encode(np.array([[5, 6, 7, 0]], "int32"), max_length=4)
    >>> logits, state, attention = model.step(np.array([2], "int32"), state, 0)
    >>> tuple(logits.shape)
    (1, 30)
    """

    beam_invariant = ("c",)  # the summary of the source

    def encode(self, source_ids, max_length=None):
        """`(B, S)` ids -> `{"h": h'_0, "c": c}`."""
        source_ids, _ = self.source_ids(source_ids)
        c, h0 = encode_source(self.get_layer, source_ids)
        return {"h": h0, "c": c}

    def step(self, tokens, state, index):
        """`(B,)` previous tokens -> `(logits (B, V), state, None)`."""
        logits, h = decode_target(self.get_layer, ops.expand_dims(tokens, 1),
                                  state["c"], state["h"])
        return logits[:, 0], {"h": h[:, 0], "c": state["c"]}, None


# === Presets: "paper" is appendix A.1; the others fit a CPU ===

PRESETS = {
    "tiny": dict(embedding_dim=8, units=16, maxout_units=8, reset_after=True),
    "small": dict(embedding_dim=128, units=128, maxout_units=128, reset_after=True),
    "base": dict(embedding_dim=128, units=256, maxout_units=256, dropout=0.2, reset_after=True),
    "paper": dict(embedding_dim=100, units=1000, maxout_units=500, dropout=0.0,
                  reset_after=False),
}
