"""The Transformer (Vaswani et al., 2017) for translation, functional.

"Attention Is All You Need". Base model defaults (section 3, Table 3):
N = 6 layers, d_model = 512, h = 8 heads, d_ff = 2048, dropout 0.1,
sinusoidal positions; train with label smoothing 0.1
(`kerattn.losses.MaskedSparseCrossentropy(label_smoothing=0.1)`). Small
sizes are one keyword away:

    model = transformer_nmt(8000, 8000, num_layers=2, d_model=128,
                            num_heads=4, ff_dim=256)

Reading order (batch B, source length S, target length T, d = d_model):

    x = E_x source_ids * sqrt(d) + PE          (B, S, d)   "source_embedding"
    x = EncoderBlock^N(x)                      (B, S, d)   "encoder_k"
    y = E_y target_in_ids * sqrt(d) + PE       (B, T, d)   "target_embedding"
    y = DecoderBlock^N(y, x)   (causal self-attention, then cross-attention)
    logits = y W                               (B, T, V_y) "output_projection"
"""

import keras
from keras import ops

from kerattn.layers import (
    TransformerDecoderBlock,
    TransformerEmbedding,
    TransformerEncoderBlock,
)
from kerattn.zoo.checks import check_builder_args, numbered_layers
from kerattn.zoo.model import ZooModel


def transformer_nmt(source_vocab_size=37000, target_vocab_size=37000,
                    num_layers=6, d_model=512, num_heads=8, ff_dim=2048,
                    dropout=0.1, name="transformer_nmt"):
    """The encoder-decoder Transformer of Vaswani et al. (2017).

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (PAD = 0).
        num_layers: N, encoder and decoder layers (6).
        d_model: the model size (512).
        num_heads: h (8); must divide d_model.
        ff_dim: the inner feed-forward size d_ff (2048).
        dropout: P_drop (0.1), on embeddings and every residual branch.
        name: the model's name.

    Returns:
        A functional `keras.Model`: `{"source_ids", "target_in_ids"}` ->
        `logits`; `kerattn.zoo.incremental` gives encode / step with a
        key/value cache.

    Example:

    >>> model = transformer_nmt(100, 120, num_layers=1, d_model=16,
    ...                         num_heads=2, ff_dim=32)
    >>> model.output_shape
    (None, None, 120)
    """
    check_builder_args(
        dropout=dropout,
        source_vocab_size=source_vocab_size,
        target_vocab_size=target_vocab_size,
        num_layers=num_layers,
        d_model=d_model,
        num_heads=num_heads,
        ff_dim=ff_dim,
    )
    if d_model % num_heads:
        raise ValueError(f"`num_heads`={num_heads} must divide d_model={d_model}.")

    # === Layers ===
    source_embedding = TransformerEmbedding(source_vocab_size, d_model,
                                            name="source_embedding")
    target_embedding = TransformerEmbedding(target_vocab_size, d_model,
                                            name="target_embedding")
    encoders = [TransformerEncoderBlock(num_heads, ff_dim, dropout,
                                        name=f"encoder_{k + 1}")
                for k in range(num_layers)]
    decoders = [TransformerDecoderBlock(num_heads, ff_dim, dropout,
                                        name=f"decoder_{k + 1}")
                for k in range(num_layers)]
    embedding_dropout = keras.layers.Dropout(dropout, name="embedding_dropout")
    output_projection = keras.layers.Dense(target_vocab_size,
                                           name="output_projection")

    # === Functional Model ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    x = embedding_dropout(source_embedding(source_ids))    # (B, S, d)
    for encoder in encoders:
        x = encoder(x)                                     # (B, S, d)
    y = embedding_dropout(target_embedding(target_in_ids))  # (B, T, d)
    for decoder in decoders:
        y = decoder(y, x)                                  # (B, T, d)
    logits = output_projection(y)                          # (B, T, V_y)
    return ZooModel(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        logits, name=name)


class TransformerIncremental:
    """Encode once; each step attends over a cache of past keys/values."""

    # State entries fixed per source sentence (beam search never reorders them).
    beam_invariant = ("memory", "mask")

    def __init__(self, model, pad_id=0):
        layers = {layer.name: layer for layer in model.layers}

        self.source_embedding = layers["source_embedding"]
        self.target_embedding = layers["target_embedding"]
        self.encoders = numbered_layers(model, "encoder")
        self.decoders = numbered_layers(model, "decoder")
        self.output_projection = layers["output_projection"]
        self.pad_id = pad_id

    def encode(self, source_ids, max_length=128):
        """`(B, S)` ids -> memory keys/values per layer and empty caches."""
        source_ids = ops.convert_to_tensor(source_ids, "int32")
        mask = ops.not_equal(source_ids, self.pad_id)
        x = self.source_embedding(source_ids)
        for encoder in self.encoders:
            x = encoder(x, mask=mask)
        batch = ops.shape(source_ids)[0]
        return {
            # One extra position: the loop's last step writes at max_length.
            "caches": [d.init_cache(batch, max_length + 1) for d in self.decoders],
            "memory": [d.cross_attention.project_key_value(x, x)
                       for d in self.decoders],
            "mask": mask,
        }

    def step(self, tokens, state, index):
        y = self.target_embedding(ops.expand_dims(tokens, 1), start_index=index)
        y = ops.squeeze(y, 1)                                   # (B, d)
        caches = []
        for decoder, cache, memory in zip(self.decoders, state["caches"],
                                          state["memory"]):
            y, cache, weights = decoder.step(y, cache, memory, state["mask"], index)
            caches.append(cache)
        attention = ops.mean(ops.cast(weights, "float32"), axis=1)  # last layer
        new_state = {"caches": caches, "memory": state["memory"],
                     "mask": state["mask"]}
        return self.output_projection(y), new_state, attention
