"""HAN: Yang, Yang, Dyer, He, Smola and Hovy (2016), as a Keras functional model.

"Hierarchical Attention Networks for Document Classification". Paper
defaults (section 3.3): 200-d word embeddings, GRUs of 50 units per
direction at both levels, word and sentence context vectors of 100, trained
with SGD (momentum 0.9) on batches of documents of similar length: the
"paper" preset. Named sizes (`PRESETS`, at the end of this file) and single
sizes are one keyword away:

    model = han_classifier(vocab_size=20000, num_classes=10, preset="small",
                           word_units=32, sentence_units=32)

Reading order (shapes for batch B, S sentences of W words):

    x_it = E w_it                                  (B, S, W, m)  "embedding"
    h_it = BiGRU(x_it)                             (B*S, W, 2u)  \\
    s_i  = sum_t alpha_it h_it                     (B, S, 2u)     | "encoder"
    h_i  = BiGRU(s_i)                              (B, S, 2u')    | (HierarchicalAttention)
    v    = sum_i alpha_i h_i                       (B, 2u')      /
    p    = softmax(W_c v + b_c)                    (B, classes)  "classifier"

Padding is 0 at both levels: a padded word gets no word weight, a sentence
of padding gets no sentence weight, and a document of padding gives the
class prior of the bias (never NaN).
"""

import keras

from kerattn import checks
from kerattn.layers import HierarchicalAttention
from kerattn.zoo.model import ZooModel, from_preset


def han_classifier(
    vocab_size=50000,
    num_classes=5,
    embedding_dim=None,
    word_units=None,
    sentence_units=None,
    attention_units=None,
    dropout=None,
    max_sentences=None,
    max_words=None,
    preset="paper",
    name="han_classifier",
):
    """Hierarchical attention network (Yang et al., 2016): the classifier.

    Args:
        vocab_size: word ids are `< vocab_size`; 0 is PAD and is masked.
        num_classes: the number of classes.
        embedding_dim: the word embedding size (200 in the paper).
        word_units, sentence_units: GRU units per direction (50, 50).
        attention_units: the size of the word and sentence context vectors
            `u_w`, `u_s` (100).
        dropout: dropout on the word embeddings and on the document vector
            (the paper used none; useful on small data).
        max_sentences, max_words: optional fixed input sizes (None: any).
        preset: named sizes, one of `PRESETS` ("tiny", "small", "base",
            "paper"); a size given above overrides the preset's.
        name: the model's name.

    Returns:
        A functional `keras.Model`: `{"document_ids": (B, S, W)}` (int32,
        PAD = 0) -> class probabilities `(B, num_classes)`.
        `han_attention(model)` gives the word and sentence weights.

    Example:

    >>> model = han_classifier(100, 3, embedding_dim=8, word_units=4,
    ...                        sentence_units=4, attention_units=6)
    >>> model.output_shape
    (None, 3)
    """
    c = from_preset(PRESETS, preset, embedding_dim=embedding_dim,
                    word_units=word_units, sentence_units=sentence_units,
                    attention_units=attention_units, dropout=dropout)
    checks.sizes(vocab_size=vocab_size, num_classes=num_classes, **c)
    checks.require(num_classes >= 2, "num_classes", ">= 2", num_classes,
                   note="A softmax over one class is always 1.")
    checks.positive_int("max_sentences", max_sentences, allow_none=True)
    checks.positive_int("max_words", max_words, allow_none=True)

    # === Layers ===
    embedding = keras.layers.Embedding(vocab_size, c["embedding_dim"],
                                       mask_zero=True, name="embedding")
    embedding_dropout = keras.layers.Dropout(c["dropout"],
                                             name="embedding_dropout")
    encoder = HierarchicalAttention(c["word_units"], c["sentence_units"],
                                    c["attention_units"], name="encoder")
    document_dropout = keras.layers.Dropout(c["dropout"], name="document_dropout")
    classifier = keras.layers.Dense(num_classes, activation="softmax",
                                    name="classifier")

    # === Functional Model ===
    document_ids = keras.Input((max_sentences, max_words), dtype="int32",
                               name="document_ids")
    x = embedding_dropout(embedding(document_ids))   # (B, S, W, m), mask (B, S, W)
    # The weights are computed here too, so every call of the encoder has
    # the same outputs (han_attention calls it again and keeps them).
    v, _ = encoder(x, return_attention_scores=True)  # (B, 2u')
    probabilities = classifier(document_dropout(v))  # (B, classes)
    return ZooModel({"document_ids": document_ids}, probabilities, name=name)


def han_attention(model):
    """A model giving a HAN's probabilities and its word and sentence weights.

    Built from `model`'s own layers (shared weights), so it works on a model
    loaded from a `.keras` file too.

    Returns:
        A functional `keras.Model`: `{"document_ids": (B, S, W)}` ->
        `{"probabilities": (B, classes), "word_weights": (B, S, W),
        "sentence_weights": (B, S)}`. Padded positions have weight 0.

    Args:
        model: a `han_classifier` model.

    Example:

    >>> import numpy as np
    >>> model = han_classifier(100, 3, embedding_dim=8, word_units=4,
    ...                        sentence_units=4, attention_units=6)
    >>> ids = np.array([[[5, 6, 0], [7, 0, 0]]], "int32")   # 2 sentences
    >>> weights = han_attention(model).predict({"document_ids": ids}, verbose=0)
    >>> round(float(weights["sentence_weights"].sum()), 3), weights["word_weights"][0, 1]
    (1.0, array([1., 0., 0.], dtype=float32))
    """
    checks.model("model", model, "a kerattn.zoo.han_classifier model")
    names = {layer.name for layer in model.layers}
    checks.require(
        {"embedding", "encoder", "classifier"} <= names and isinstance(
            model.get_layer("encoder"), HierarchicalAttention),
        "model", "a kerattn.zoo.han_classifier model",
        note=f"Received a model named {model.name!r} with layers "
        f"{sorted(names)}.")
    document_ids = keras.Input(model.input["document_ids"].shape[1:],
                               dtype="int32", name="document_ids")
    x = model.get_layer("embedding")(document_ids)
    v, weights = model.get_layer("encoder")(x, return_attention_scores=True)
    probabilities = model.get_layer("classifier")(v)
    return ZooModel(
        {"document_ids": document_ids},
        {"probabilities": probabilities, "word_weights": weights["word"],
         "sentence_weights": weights["sentence"]},
        name=f"{model.name}_attention")


# === Presets: "paper" is section 3.3; the others fit a CPU ===

PRESETS = {
    "tiny": dict(embedding_dim=8, word_units=4, sentence_units=4,
                 attention_units=4),
    "small": dict(embedding_dim=100, word_units=50, sentence_units=50,
                  attention_units=100, dropout=0.5),
    "base": dict(embedding_dim=200, word_units=50, sentence_units=50,
                 attention_units=100, dropout=0.5),
    "paper": dict(embedding_dim=200, word_units=50, sentence_units=50,
                  attention_units=100, dropout=0.0),
}
