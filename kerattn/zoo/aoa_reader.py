"""AoA Reader: Cui, Chen, Wei, Wang, Liu and Hu (2017), as a Keras functional model.

"Attention-over-Attention Neural Networks for Reading Comprehension".
Paper defaults (section 4.2, CBT): a shared 384-d embedding, bidirectional
GRUs of 256 units per direction, dropout 0.1 on the embeddings, Adam
(lr 0.001), gradients clipped at norm 5, batches of 32: the "paper" preset.
Named sizes (`PRESETS`, at the end of this file) and single sizes are one
keyword away:

    model = aoa_reader(vocab_size=20000, preset="small", units=96)

Reading order (shapes for batch B, document |D|, query |Q|, C candidates):

    e(D), e(Q)  = shared embedding              (B, |D|, m), (B, |Q|, m)  "embedding"
    h_doc   = BiGRU(e(D))                       (B, |D|, 2d)  "document_encoder"
    h_query = BiGRU(e(Q))                       (B, |Q|, 2d)  "query_encoder"
    M       = h_doc h_query^T                   (B, |D|, |Q|) \\
    alpha   = softmax over D (per query word)   (B, |D|, |Q|)  | "attention"
    beta    = mean over D of softmax over Q     (B, |Q|)       | (AttentionOverAttention)
    s       = alpha beta                        (B, |D|)      /
    P(w)    = sum_{i: D_i = w} s_i              (B, C)        "pointer_sum"

Training minimises `-log P(answer)` (`MaskedSparseCrossentropy(pad_id=-1,
from_logits=False)` on the answer's index among the candidates); the
prediction is the argmax over the given candidates.
"""

import keras

from kerattn import checks
from kerattn.layers import GRU, AttentionOverAttention, PointerSum
from kerattn.zoo.model import ZooModel, from_preset


def aoa_reader(
    vocab_size=100000,
    embedding_dim=None,
    units=None,
    dropout=None,
    preset="paper",
    name="aoa_reader",
):
    """Attention-over-attention reader (Cui et al., 2017).

    Args:
        vocab_size: word ids are `< vocab_size`; 0 is PAD and is masked.
        embedding_dim: the shared embedding size (384 in the paper).
        units: GRU units per direction (256).
        dropout: dropout on the embeddings (0.1).
        preset: named sizes, one of `PRESETS` ("tiny", "small", "base",
            "paper"); a size given above overrides the preset's.
        name: the model's name.

    Returns:
        A functional `keras.Model`: `{"document_ids": (B, |D|), "query_ids":
        (B, |Q|), "candidate_ids": (B, C)}` (int32, PAD = 0) -> candidate
        probabilities `(B, C)` (padded candidates get 0).
        `aoa_attention(model)` also returns `s`, `alpha` and `beta`.

    Example:

    >>> model = aoa_reader(100, embedding_dim=8, units=4)
    >>> model.output_shape
    (None, None)
    """
    c = from_preset(PRESETS, preset, embedding_dim=embedding_dim, units=units,
                    dropout=dropout)
    checks.sizes(vocab_size=vocab_size, **c)

    # === Layers ===
    embedding = keras.layers.Embedding(vocab_size, c["embedding_dim"],
                                       mask_zero=True, name="embedding")
    embedding_dropout = keras.layers.Dropout(c["dropout"],
                                             name="embedding_dropout")
    document_encoder = keras.layers.Bidirectional(
        GRU(c["units"], return_sequences=True), name="document_encoder")
    query_encoder = keras.layers.Bidirectional(
        GRU(c["units"], return_sequences=True), name="query_encoder")
    attention = AttentionOverAttention(name="attention")
    pointer_sum = PointerSum(name="pointer_sum")

    # === Functional Model ===
    document_ids = keras.Input((None,), dtype="int32", name="document_ids")
    query_ids = keras.Input((None,), dtype="int32", name="query_ids")
    candidate_ids = keras.Input((None,), dtype="int32", name="candidate_ids")
    h_doc = document_encoder(embedding_dropout(embedding(document_ids)))  # (B, D, 2d)
    h_query = query_encoder(embedding_dropout(embedding(query_ids)))      # (B, Q, 2d)
    # (With the weights, so that aoa_attention's call has the same outputs.)
    s, _ = attention(h_doc, h_query, return_attention_scores=True)         # (B, D)
    probabilities = pointer_sum(s, document_ids, candidate_ids)           # (B, C)
    return ZooModel(
        {"document_ids": document_ids, "query_ids": query_ids,
         "candidate_ids": candidate_ids},
        probabilities, name=name)


def aoa_attention(model):
    """A model giving an AoA reader's probabilities and its attentions.

    Built from `model`'s own layers (shared weights).

    Returns:
        A functional `keras.Model` with the reader's inputs and outputs
        `{"probabilities": (B, C), "s": (B, |D|), "alpha": (B, |D|, |Q|),
        "beta": (B, |Q|)}`.

    Args:
        model: an `aoa_reader` model.

    Example:

    >>> import numpy as np
    >>> model = aoa_reader(100, embedding_dim=8, units=4)
    >>> inputs = {"document_ids": np.array([[5, 6, 7, 5, 0]], "int32"),
    ...           "query_ids": np.array([[8, 9]], "int32"),
    ...           "candidate_ids": np.array([[5, 7]], "int32")}
    >>> out = aoa_attention(model).predict(inputs, verbose=0)
    >>> out["probabilities"].shape, out["s"].shape, out["alpha"].shape
    ((1, 2), (1, 5), (1, 5, 2))
    """
    checks.model("model", model, "a kerattn.zoo.aoa_reader model")
    names = {layer.name for layer in model.layers}
    needed = {"embedding", "document_encoder", "query_encoder", "attention",
              "pointer_sum"}
    checks.require(
        needed <= names, "model", "a kerattn.zoo.aoa_reader model",
        note=f"Received a model named {model.name!r} with layers "
        f"{sorted(names)}.")
    get = model.get_layer
    inputs = {k: keras.Input((None,), dtype="int32", name=k)
              for k in ("document_ids", "query_ids", "candidate_ids")}
    h_doc = get("document_encoder")(get("embedding")(inputs["document_ids"]))
    h_query = get("query_encoder")(get("embedding")(inputs["query_ids"]))
    s, weights = get("attention")(h_doc, h_query, return_attention_scores=True)
    probabilities = get("pointer_sum")(s, inputs["document_ids"],
                                       inputs["candidate_ids"])
    return ZooModel(inputs, {"probabilities": probabilities, "s": s,
                                "alpha": weights["alpha"], "beta": weights["beta"]},
                       name=f"{model.name}_attention")


# === Presets: "paper" is section 4.2 (CBT); the others fit a CPU ===

PRESETS = {
    "tiny": dict(embedding_dim=8, units=8),
    "small": dict(embedding_dim=128, units=128, dropout=0.1),
    "base": dict(embedding_dim=128, units=128, dropout=0.1),
    "paper": dict(embedding_dim=384, units=256, dropout=0.1),
}
