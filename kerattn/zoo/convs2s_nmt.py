"""ConvS2S (Gehring et al., 2017) for translation, functional.

"Convolutional Sequence to Sequence Learning". Defaults are the paper's
WMT'16 English-Romanian model (section 5.1): 20 encoder and 20 decoder
layers of 512 units, kernel width 3, 512-dimensional embeddings with
learned positions (the "paper" preset). Named sizes (`PRESETS`, at the end
of this file) are one keyword away:

    model = convs2s_nmt(8000, 8000, preset="base")

Reading order (batch B, source length S, target length T, e = embedding
size, d = hidden size):

    e_j = w_j + p_j                         (B, S, e)  "source_embedding" + positions
    x = W e                                 (B, S, d)  "encoder_projection"
    x = GLUConvBlock^L(x)   (residual)      (B, S, d)  "encoder_k"
    z = W x                                 (B, S, e)  "encoder_output"
    g_i = w_i + p_i                         (B, T, e)  "target_embedding" + positions
    h = W g                                 (B, T, d)  "decoder_projection"
    for each decoder layer l:
        h = GLUConvBlock_causal(h)          (B, T, d)  "decoder_l"
        h = MultiStepAttention(h, g, z, e)  (B, T, d)  "attention_l"
    logits = W_V dropout(W h)               (B, T, V)  "decoder_output", "output_projection"

Each decoder layer has its own attention (multi-step attention, section
3.3), whose values are `z_j + e_j`. The attention is added to the output
of the decoder layer, residual included, as the paper's section 3.3 says
("simply added to the output of the corresponding decoder layer");
fairseq's `fconv` adds it between the GLU and the residual. The scaling of
section 3.4 (sqrt(0.5) on every residual sum, `m sqrt(1/m)` on the
conditional input) is applied; the encoder gradient scaling by the number
of attention layers and weight normalisation are not (Adam with gradient
clipping trains this model without them). One difference from fairseq,
noted rather than copied: fairseq's `FConvEncoder` returns its values as
`(z_j + e_j) * sqrt(0.5)`, a scaling the paper does not write; here the
values are the paper's `z_j + e_j` (section 3.3). The conditional input `c_i`
is linear in the values, so the two differ by a constant factor sqrt(0.5)
on `c_i` that the following projection `W_o` can absorb; a model trained
with one form does not load into the other.

The file reads top to bottom: the layers and the training graph, then
`ConvS2SNMT.encode` (the graph's own `encode_source`) and `.step`, which
keeps, per decoder layer, its last `kernel_size - 1` inputs (a step costs
one kernel window per layer, never the prefix) and runs the same
`embed_target` and `readout` as the graph, then the presets.
"""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import GLUConvBlock, MultiStepAttention, PositionEmbedding
from kerattn.zoo.model import GenerativeModel, from_preset, numbered_layers


# === Layers and training graph ===

def convs2s_nmt(source_vocab_size=40000, target_vocab_size=40000,
                embedding_dim=None, hidden_dim=None, encoder_layers=None,
                decoder_layers=None, kernel_size=None, dropout=None,
                max_length=1024, preset="paper", name="convs2s_nmt"):
    """The convolutional encoder-decoder of Gehring et al. (2017).

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (PAD = 0).
        embedding_dim: `e`, word and position embeddings (512).
        hidden_dim: `d`, the convolution blocks' width (512).
        encoder_layers, decoder_layers: numbers of blocks (20 each).
        kernel_size: `k`, the convolution width (3); odd, since encoder
            blocks see `k/2` positions either side.
        dropout: on embeddings, block inputs and before the output layer.
        max_length: positions of the learned position embeddings.
        preset: named sizes, one of `PRESETS` ("tiny", "small", "base",
            "paper"); a size given above overrides the preset's.
        name: the model's name.

    Returns:
        A `ConvS2SNMT`: `{"source_ids", "target_in_ids"}` -> `logits (B, T,
        V_y)`, with `encode` / `step` for decoding.

    Example:

    >>> model = convs2s_nmt(100, 120, embedding_dim=8, hidden_dim=16,
    ...                     encoder_layers=2, decoder_layers=2)
    >>> type(model).__name__, model.output_shape
    ('ConvS2SNMT', (None, None, 120))
    """
    c = from_preset(PRESETS, preset, embedding_dim=embedding_dim,
                    hidden_dim=hidden_dim, encoder_layers=encoder_layers,
                    decoder_layers=decoder_layers, kernel_size=kernel_size,
                    dropout=dropout)
    checks.sizes(source_vocab_size=source_vocab_size,
                 target_vocab_size=target_vocab_size,
                 max_length=max_length, **c)
    checks.require(c["kernel_size"] % 2 != 0, "kernel_size",
                   "odd (k/2 source positions either side)", c["kernel_size"])
    e, d, k, p = (c["embedding_dim"], c["hidden_dim"], c["kernel_size"],
                  c["dropout"])

    # === Layers ===
    layers = [
        keras.layers.Embedding(source_vocab_size, e, mask_zero=True,
                               name="source_embedding"),
        PositionEmbedding(max_length, name="source_positions"),
        keras.layers.Embedding(target_vocab_size, e, mask_zero=True,
                               name="target_embedding"),
        PositionEmbedding(max_length, name="target_positions"),
        keras.layers.Add(name="source_input"),               # keeps the mask
        keras.layers.Add(name="target_input"),
        keras.layers.Dropout(p, name="embedding_dropout"),
        keras.layers.Dense(d, name="encoder_projection"),
        keras.layers.Dense(e, name="encoder_output"),
        keras.layers.Dense(d, name="decoder_projection"),
        keras.layers.Dense(e, name="decoder_output"),
        keras.layers.Dropout(p, name="output_dropout"),
        keras.layers.Dense(target_vocab_size, name="output_projection"),
    ]
    get = {layer.name: layer for layer in layers}.__getitem__
    encoders = [GLUConvBlock(d, k, dropout=p, name=f"encoder_{i + 1}")
                for i in range(c["encoder_layers"])]
    decoders = [GLUConvBlock(d, k, causal=True, dropout=p,
                             name=f"decoder_{i + 1}")
                for i in range(c["decoder_layers"])]
    attentions = [MultiStepAttention(name=f"attention_{i + 1}")
                  for i in range(c["decoder_layers"])]

    # === Training graph ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    z, e_src, source_mask = encode_source(get, encoders, source_ids)  # (B, S, e)
    w = get("target_embedding")(target_in_ids)
    g = get("embedding_dropout")(
        get("target_input")([w, get("target_positions")(w)]))  # (B, T, e)
    h = get("decoder_projection")(g)                          # (B, T, d)
    for decoder, attention in zip(decoders, attentions):
        h = decoder(h)                                        # (B, T, d)
        h = attention(h, g, z, e_src, source_mask=source_mask)  # (B, T, d)
    logits = readout(get, h)                                  # (B, T, V_y)
    return ConvS2SNMT(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        logits, name=name)


def encode_source(get, encoders, source_ids):
    """`(B, S)` ids -> `z` `(B, S, e)`, the embeddings `e` `(B, S, e)` (the
    attention's values are `z + e`) and the mask `(B, S)`."""
    mask = ops.not_equal(source_ids, 0)
    w = get("source_embedding")(source_ids)
    e = get("embedding_dropout")(
        get("source_input")([w, get("source_positions")(w)]))  # (B, S, e)
    x = get("encoder_projection")(e)                          # (B, S, d)
    for encoder in encoders:
        x = encoder(x)                                        # (B, S, d)
    return get("encoder_output")(x), e, mask


def readout(get, h):
    """The decoder's last `h` -> logits (any leading shape)."""
    return get("output_projection")(get("output_dropout")(get("decoder_output")(h)))


# === Decoding: encode once, then one step at a time ===

@keras.saving.register_keras_serializable(package="kerattn")
class ConvS2SNMT(GenerativeModel):
    """ConvS2S, built by `convs2s_nmt`: the training graph with `encode` and
    `step` (see `kerattn.zoo.GenerativeModel`).

    Args:
        inputs, outputs, name: those of Keras' functional `Model`; the
            builder (`convs2s_nmt`) passes them.

    Example:

    >>> import numpy as np
    >>> model = kerattn.zoo.convs2s_nmt(20, 30, preset="tiny")
    >>> state = model.encode(np.array([[5, 6, 7, 0]], "int32"), max_length=4)
    >>> logits, state, attention = model.step(np.array([2], "int32"), state, 0)
    >>> tuple(logits.shape)
    (1, 30)
    """

    beam_invariant = ("z", "e", "mask")  # the encoder's outputs

    def encode(self, source_ids, max_length=None):
        """`(B, S)` ids -> encoder outputs `z`, embeddings `e`, the mask and an
        empty window of past inputs per decoder layer."""
        source_ids, _ = self.source_ids(source_ids)
        z, e, mask = encode_source(self.get_layer,
                                   numbered_layers(self, "encoder"), source_ids)
        batch = ops.shape(source_ids)[0]
        width = self.get_layer("decoder_projection").units
        return {"z": z, "e": e, "mask": mask,
                "buffers": [d.init_buffer(batch, width)
                            for d in numbered_layers(self, "decoder")]}

    def step(self, tokens, state, index):
        """`(B,)` previous tokens -> `(logits (B, V), state, attention (B, S))`
        (the last layer's attention)."""
        get = self.get_layer
        w = get("target_embedding")(ops.expand_dims(tokens, 1))  # (B, 1, e)
        g = ops.squeeze(w + get("target_positions")(w, start_index=index), 1)
        h = get("decoder_projection")(g)                         # (B, d)
        buffers = []
        for decoder, attention, buffer in zip(numbered_layers(self, "decoder"),
                                              numbered_layers(self, "attention"),
                                              state["buffers"]):
            h, buffer = decoder.step(h, buffer)
            h, weights = attention(h, g, state["z"], state["e"],
                                   source_mask=state["mask"],
                                   return_attention_scores=True)
            buffers.append(buffer)
        return readout(get, h), {**state, "buffers": buffers}, weights


# === Presets: "paper" is WMT'16 En-Ro (section 5.1); the others fit a CPU ===

PRESETS = {
    "tiny": dict(embedding_dim=16, hidden_dim=16, encoder_layers=1,
                 decoder_layers=1),
    "small": dict(embedding_dim=128, hidden_dim=128, encoder_layers=3,
                  decoder_layers=3),
    "base": dict(embedding_dim=256, hidden_dim=256, encoder_layers=6,
                 decoder_layers=6),
    "paper": dict(embedding_dim=512, hidden_dim=512, encoder_layers=20,
                  decoder_layers=20, kernel_size=3, dropout=0.1),
}
