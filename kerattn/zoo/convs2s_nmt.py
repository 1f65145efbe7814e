"""ConvS2S (Gehring et al., 2017) for translation, functional.

"Convolutional Sequence to Sequence Learning". Defaults are the paper's
WMT'16 English-Romanian model (section 5.1): 20 encoder and 20 decoder
layers of 512 units, kernel width 3, 512-dimensional embeddings with
learned positions. Small sizes are one keyword away:

    model = convs2s_nmt(8000, 8000, embedding_dim=128, hidden_dim=256,
                        encoder_layers=4, decoder_layers=3)

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
clipping trains this model without them).

Incremental decoding (`kerattn.zoo.incremental`) keeps, per decoder
layer, its last `kernel_size - 1` inputs: a step costs one kernel window
per layer, never the prefix.
"""

import keras
from keras import ops

from kerattn.layers import GLUConvBlock, MultiStepAttention, PositionEmbedding
from kerattn.zoo.checks import check_builder_args, numbered_layers
from kerattn.zoo.model import ZooModel


def convs2s_nmt(source_vocab_size=40000, target_vocab_size=40000,
                embedding_dim=512, hidden_dim=512, encoder_layers=20,
                decoder_layers=20, kernel_size=3, dropout=0.1,
                max_length=1024, name="convs2s_nmt"):
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
        name: the model's name.

    Returns:
        A functional `keras.Model`: `{"source_ids", "target_in_ids"}` ->
        `logits (B, T, V_y)`.

    Example:

    >>> model = convs2s_nmt(100, 120, embedding_dim=8, hidden_dim=16,
    ...                     encoder_layers=2, decoder_layers=2)
    >>> model.output_shape
    (None, None, 120)
    """
    check_builder_args(
        dropout=dropout,
        source_vocab_size=source_vocab_size,
        target_vocab_size=target_vocab_size,
        embedding_dim=embedding_dim,
        hidden_dim=hidden_dim,
        encoder_layers=encoder_layers,
        decoder_layers=decoder_layers,
        kernel_size=kernel_size,
        max_length=max_length,
    )
    if kernel_size % 2 == 0:
        raise ValueError(
            f"`kernel_size` must be odd (k/2 source positions either side); "
            f"got {kernel_size}.")

    # === Layers ===
    source_embedding = keras.layers.Embedding(
        source_vocab_size, embedding_dim, mask_zero=True, name="source_embedding")
    source_positions = PositionEmbedding(max_length, name="source_positions")
    target_embedding = keras.layers.Embedding(
        target_vocab_size, embedding_dim, mask_zero=True, name="target_embedding")
    target_positions = PositionEmbedding(max_length, name="target_positions")
    source_input = keras.layers.Add(name="source_input")   # keeps the mask
    target_input = keras.layers.Add(name="target_input")
    embedding_dropout = keras.layers.Dropout(dropout, name="embedding_dropout")
    encoder_projection = keras.layers.Dense(hidden_dim, name="encoder_projection")
    encoders = [GLUConvBlock(hidden_dim, kernel_size, dropout=dropout,
                             name=f"encoder_{k + 1}")
                for k in range(encoder_layers)]
    encoder_output = keras.layers.Dense(embedding_dim, name="encoder_output")
    decoder_projection = keras.layers.Dense(hidden_dim, name="decoder_projection")
    decoders = [GLUConvBlock(hidden_dim, kernel_size, causal=True,
                             dropout=dropout, name=f"decoder_{k + 1}")
                for k in range(decoder_layers)]
    attentions = [MultiStepAttention(name=f"attention_{k + 1}")
                  for k in range(decoder_layers)]
    decoder_output = keras.layers.Dense(embedding_dim, name="decoder_output")
    output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
    output_projection = keras.layers.Dense(target_vocab_size,
                                           name="output_projection")

    # === Functional Model ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    source_mask = ops.not_equal(source_ids, 0)                # (B, S)
    w = source_embedding(source_ids)
    e = embedding_dropout(source_input([w, source_positions(w)]))  # (B, S, e)
    x = encoder_projection(e)                                 # (B, S, d)
    for encoder in encoders:
        x = encoder(x)                                        # (B, S, d)
    z = encoder_output(x)                                     # (B, S, e)
    w = target_embedding(target_in_ids)
    g = embedding_dropout(target_input([w, target_positions(w)]))  # (B, T, e)
    h = decoder_projection(g)                                 # (B, T, d)
    for decoder, attention in zip(decoders, attentions):
        h = decoder(h)                                        # (B, T, d)
        h = attention(h, g, z, e, source_mask=source_mask)    # (B, T, d)
    logits = output_projection(output_dropout(decoder_output(h)))  # (B, T, V_y)
    return ZooModel(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        logits, name=name)


class ConvS2SIncremental:
    """Encode once; each step convolves only the last `k` inputs per layer."""

    # State entries fixed per source sentence (beam search never reorders them).
    beam_invariant = ("z", "e", "mask")

    def __init__(self, model, pad_id=0):
        layers = {layer.name: layer for layer in model.layers}

        # The encoder is the training graph's own sub-graph: no code copied.
        self.encoder = keras.Model(
            model.input["source_ids"],
            [layers["encoder_output"].output,
             layers["encoder_projection"].input])
        self.target_embedding = layers["target_embedding"]
        self.target_positions = layers["target_positions"]
        self.decoder_projection = layers["decoder_projection"]
        self.decoders = numbered_layers(model, "decoder")
        self.attentions = numbered_layers(model, "attention")
        self.decoder_output = layers["decoder_output"]
        self.output_projection = layers["output_projection"]
        self.pad_id = pad_id

    def encode(self, source_ids):
        """`(B, S)` ids -> encoder outputs z, embeddings e, empty windows."""
        source_ids = ops.convert_to_tensor(source_ids, "int32")
        z, e = self.encoder(source_ids)
        batch = ops.shape(source_ids)[0]
        width = self.decoder_projection.units
        return {
            "z": z, "e": e, "mask": ops.not_equal(source_ids, self.pad_id),
            "buffers": [d.init_buffer(batch, width) for d in self.decoders],
        }

    def step(self, tokens, state, index):
        """`(B,)` previous tokens -> `(logits (B, V), state, attention (B, S))`."""
        w = self.target_embedding(ops.expand_dims(tokens, 1))   # (B, 1, e)
        g = ops.squeeze(w + self.target_positions(w, start_index=index), 1)
        h = self.decoder_projection(g)                         # (B, d)
        buffers = []
        for decoder, attention, buffer in zip(self.decoders, self.attentions,
                                              state["buffers"]):
            h, buffer = decoder.step(h, buffer)
            h, weights = attention(h, g, state["z"], state["e"],
                                   source_mask=state["mask"],
                                   return_attention_scores=True)
            buffers.append(buffer)
        logits = self.output_projection(self.decoder_output(h))
        return logits, {**state, "buffers": buffers}, weights  # last layer's
