"""The Transformer (Vaswani et al., 2017) for translation, functional.

"Attention Is All You Need". Base model defaults (section 3, Table 3):
N = 6 layers, d_model = 512, h = 8 heads, d_ff = 2048, dropout 0.1,
sinusoidal positions; train with label smoothing 0.1
(`kerattn.losses.MaskedSparseCrossentropy(label_smoothing=0.1)`); the
"paper" preset. Named sizes (`PRESETS`, at the end of this file) are one
keyword away:

    model = transformer_nmt(8000, 8000, preset="base")

Reading order (batch B, source length S, target length T, d = d_model):

    x = E_x source_ids * sqrt(d) + PE          (B, S, d)   "source_embedding"
    x = EncoderBlock^N(x)                      (B, S, d)   "encoder_k"
    y = E_y target_in_ids * sqrt(d) + PE       (B, T, d)   "target_embedding"
    y = DecoderBlock^N(y, x)   (causal self-attention, then cross-attention)
    logits = y W                               (B, T, V_y) "output_projection"

The file reads top to bottom: the layers and the training graph, then
`TransformerNMT.encode` (the graph's own `encode_source`, then each
decoder block's cross-attention keys and values, once) and `.step` (each
block's `step` over a key/value cache of the past positions), its layout
map for model parallelism, then the presets.
"""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import (
    TransformerDecoderBlock,
    TransformerEmbedding,
    TransformerEncoderBlock,
)
from kerattn.zoo.model import GenerativeModel, from_preset, numbered_layers


# === Layers and training graph ===

def transformer_nmt(source_vocab_size=37000, target_vocab_size=37000,
                    num_layers=None, d_model=None, num_heads=None, ff_dim=None,
                    dropout=None, tie_embeddings=None, preset="paper",
                    max_relative_position=None, absolute_positions=True,
                    name="transformer_nmt"):
    """The encoder-decoder Transformer of Vaswani et al. (2017).

    Args:
        source_vocab_size, target_vocab_size: vocabulary sizes (PAD = 0).
        num_layers: N, encoder and decoder layers (6).
        d_model: the model size (512).
        num_heads: h (8); must divide d_model.
        ff_dim: the inner feed-forward size d_ff (2048).
        dropout: P_drop (0.1), on embeddings and every residual branch.
        tie_embeddings: section 3.4, "we share the same weight matrix between
            the two embedding layers and the pre-softmax linear
            transformation": "all" does that (one matrix; it needs one joint
            source/target vocabulary, so the two sizes must be equal);
            "target" ties only the target embedding and the pre-softmax
            weights (separate vocabularies, as our recipes have); "none"
            keeps three matrices and an output bias (Keras' usual `Dense`).
            Tied logits are `y E^T`, with no bias. The "paper" preset says
            "target": only the caller knows whether its two vocabularies
            are one (two separate vocabularies of 8,000 words have equal
            sizes too), so "all" is asked for by name. The CPU presets say
            "none".
        preset: named sizes, one of `PRESETS` ("tiny", "small", "base",
            "paper"); a size given above overrides the preset's.
        max_relative_position: None, or int `k`: relative position
            representations in every self-attention (Shaw et al. 2018,
            `MultiHeadAttention(max_relative_position=k)`; 16 in their
            experiments).
        absolute_positions: bool; False leaves the sinusoidal positions
            out of the embeddings (Shaw et al. use relative positions alone,
            reporting no gain from both); needs `max_relative_position`.
        name: the model's name.

    Returns:
        A `TransformerNMT`: `{"source_ids", "target_in_ids"}` -> `logits`,
        with `encode` / `step` (a key/value cache) for decoding.

    Example:

    >>> model = transformer_nmt(100, 120, num_layers=1, d_model=16,
    ...                         num_heads=2, ff_dim=32)
    >>> type(model).__name__, model.output_shape
    ('TransformerNMT', (None, None, 120))
    """
    c = from_preset(PRESETS, preset, num_layers=num_layers, d_model=d_model,
                    num_heads=num_heads, ff_dim=ff_dim, dropout=dropout,
                    tie_embeddings=tie_embeddings)
    tie = c.pop("tie_embeddings")
    checks.sizes(source_vocab_size=source_vocab_size,
                 target_vocab_size=target_vocab_size, **c)
    checks.one_of("tie_embeddings", tie, ("none", "target", "all"))
    checks.require(
        tie != "all" or source_vocab_size == target_vocab_size,
        "tie_embeddings", "'none' or 'target' for vocabularies of different "
        "sizes", tie, note=f"'all' shares one matrix between the source "
        f"({source_vocab_size}) and target ({target_vocab_size}) vocabularies, "
        "which needs one joint vocabulary.")
    checks.require(
        c["d_model"] % c["num_heads"] == 0, "num_heads",
        f"a divisor of d_model={c['d_model']}", c["num_heads"],
        note="Each head takes d_model / num_heads features.")
    depth, p = c["num_layers"], c["dropout"]
    checks.positive_int("max_relative_position", max_relative_position,
                        allow_none=True)
    checks.boolean("absolute_positions", absolute_positions)
    checks.require(
        absolute_positions or max_relative_position is not None,
        "absolute_positions", "True without max_relative_position (the model "
        "would have no positions at all)", absolute_positions)
    relative = {} if max_relative_position is None else {
        "max_relative_position": max_relative_position}
    positions = {} if absolute_positions else {"positions": False}

    # === Layers ===
    # Tied matrices are one layer: "all" has no source_embedding, "target"
    # and "all" no output_projection (encode_source and project look).
    layers = [
        TransformerEmbedding(target_vocab_size, c["d_model"],
                             name="target_embedding", **positions),
        keras.layers.Dropout(p, name="embedding_dropout"),
    ]
    if tie != "all":
        layers.append(TransformerEmbedding(source_vocab_size, c["d_model"],
                                           name="source_embedding", **positions))
    if tie == "none":
        layers.append(keras.layers.Dense(target_vocab_size,
                                         name="output_projection"))
    by_name = {layer.name: layer for layer in layers}
    get = by_name.__getitem__
    encoders = [TransformerEncoderBlock(c["num_heads"], c["ff_dim"], p,
                                        name=f"encoder_{k + 1}", **relative)
                for k in range(depth)]
    decoders = [TransformerDecoderBlock(c["num_heads"], c["ff_dim"], p,
                                        name=f"decoder_{k + 1}", **relative)
                for k in range(depth)]

    # === Training graph ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    x, mask = encode_source(by_name, encoders, source_ids)   # (B, S, d)
    y = get("embedding_dropout")(get("target_embedding")(target_in_ids))
    for decoder in decoders:
        y = decoder(y, x, memory_mask=mask)                  # (B, T, d)
    logits = project(by_name, y)                             # (B, T, V_y)
    return TransformerNMT(
        {"source_ids": source_ids, "target_in_ids": target_in_ids},
        logits, name=name)


def encode_source(by_name, encoders, source_ids):
    """`(B, S)` ids -> the encoder's output `(B, S, d)` and the mask `(B, S)`.

    `by_name`: the layers by name (no `source_embedding` when all the
    embeddings are tied: the target's embeds the source).
    """
    mask = ops.not_equal(source_ids, 0)
    embed = by_name.get("source_embedding", by_name["target_embedding"])
    x = by_name["embedding_dropout"](embed(source_ids))
    for encoder in encoders:
        x = encoder(x, mask=mask)                            # (B, S, d)
    return x, mask


def project(by_name, y):
    """`(..., d)` -> logits `(..., V_y)`: `output_projection`, or `y E^T`
    with the target embedding when tied."""
    if "output_projection" in by_name:
        return by_name["output_projection"](y)
    return by_name["target_embedding"](y, reverse=True)


# === Decoding: encode once, then one step at a time ===

@keras.saving.register_keras_serializable(package="kerattn")
class TransformerNMT(GenerativeModel):
    """The Transformer, built by `transformer_nmt`: the training graph with
    `encode` and `step` (see `kerattn.zoo.GenerativeModel`).

    Args:
        inputs, outputs, name: those of Keras' functional `Model`; the
            builder (`transformer_nmt`) passes them.

    Example:

    >>> import numpy as np
    >>> model = kerattn.zoo.transformer_nmt(20, 30, preset="tiny")
    >>> state = model.encode(np.array([[5, 6, 7, 0]], "int32"), max_length=4)
    >>> logits, state, attention = model.step(np.array([2], "int32"), state, 0)
    >>> tuple(logits.shape)
    (1, 30)
    """

    beam_invariant = ("memory", "mask")  # cross-attention keys/values, mask

    def encode(self, source_ids, max_length=128):
        """`(B, S)` ids -> memory keys/values per block and empty caches of
        `max_length + 1` positions (the loop's last step writes at
        `max_length`)."""
        source_ids, _ = self.source_ids(source_ids)
        x, mask = encode_source(self.layers_by_name,
                                numbered_layers(self, "encoder"), source_ids)
        decoders = numbered_layers(self, "decoder")
        batch = ops.shape(source_ids)[0]
        return {
            "caches": [d.init_cache(batch, (max_length or 128) + 1)
                       for d in decoders],
            "memory": [d.cross_attention.project_key_value(x, x)
                       for d in decoders],
            "mask": mask,
        }

    def step(self, tokens, state, index):
        """`(B,)` previous tokens -> `(logits (B, V), state, attention (B, S))`
        (the last block's cross-attention, averaged over heads)."""
        y = self.get_layer("target_embedding")(ops.expand_dims(tokens, 1),
                                               start_index=index)
        y = ops.squeeze(y, 1)                                   # (B, d)
        caches = []
        for decoder, cache, memory in zip(numbered_layers(self, "decoder"),
                                          state["caches"], state["memory"]):
            y, cache, weights = decoder.step(y, cache, memory, state["mask"],
                                             index)
            caches.append(cache)
        attention = ops.mean(ops.cast(weights, "float32"), axis=1)
        new_state = {"caches": caches, "memory": state["memory"],
                     "mask": state["mask"]}
        return project(self.layers_by_name, y), new_state, attention

    @staticmethod
    def get_layout_map(device_mesh):
        """Megatron-style sharding over the mesh's "model" axis.

        Attention is split by heads, the feed-forward by its inner width,
        the embeddings and the output projection by the model width
        (vocabularies are rarely a multiple of the device count); every
        other variable is replicated.

        Args:
            device_mesh: a `keras.distribution.DeviceMesh` with a "model" axis.

        Returns:
            A `keras.distribution.LayoutMap`.
        """
        layouts = keras.distribution.LayoutMap(device_mesh)
        layouts[r".*_embedding/token_embedding/embeddings"] = (None, "model")
        layouts[r".*attention/(query|key|value)/kernel"] = (None, "model", None)
        layouts[r".*attention/(query|key|value)/bias"] = ("model", None)
        layouts[r".*attention/attention_output/kernel"] = ("model", None, None)
        layouts[r".*ffn_inner/kernel"] = (None, "model")
        layouts[r".*ffn_inner/bias"] = ("model",)
        layouts[r".*ffn_outer/kernel"] = ("model", None)
        layouts[r"output_projection/kernel"] = ("model", None)
        return layouts


# === Presets: "paper" is the base model of Table 3; the others fit a CPU ===

PRESETS = {
    "tiny": dict(num_layers=1, d_model=16, num_heads=2, ff_dim=32,
                 tie_embeddings="none"),
    "small": dict(num_layers=2, d_model=128, num_heads=4, ff_dim=256,
                  tie_embeddings="none"),
    "base": dict(num_layers=3, d_model=256, num_heads=4, ff_dim=512,
                 tie_embeddings="none"),
    # Section 3.4 ties all three with a joint vocabulary: tie_embeddings="all".
    "paper": dict(num_layers=6, d_model=512, num_heads=8, ff_dim=2048,
                  dropout=0.1, tie_embeddings="target"),
}
