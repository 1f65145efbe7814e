"""Lin et al. (2017): the self-attentive sentence classifier, as a Keras functional model.

"A Structured Self-attentive Sentence Embedding" (section 2 and 4.2). A
BiLSTM reads the words; `r` attention hops each take a weighted sum of its
states; the `r` sums, flattened, go through a ReLU layer to the classes.
The penalty `||A A^T - I||_F^2` (eq. 8) pushes the hops onto different
words. Paper sizes (the Yelp setting of section 4.2: 100-d word vectors,
a BiLSTM of 300 units per direction, `d_a` = 350, `r` = 30 hops, a ReLU
layer of 3,000 units, the penalty's coefficient 1): the "paper" preset.
Named sizes (`PRESETS`, at the end of this file) and single sizes are one
keyword away:

    model = self_attentive_classifier(vocab_size=20000, num_classes=5,
                                      preset="base", hops=10)

Reading order (shapes for batch B, n words):

    x_t = E w_t                                    (B, n, m)      "embedding"
    H   = BiLSTM(x)                                (B, n, 2u)     "encoder"
    A   = softmax(W_s2 tanh(W_s1 H^T))             (B, r, n)  \\   "attention"
    M   = A H                                      (B, r, 2u) /   (SelfAttentiveEmbedding)
    h   = ReLU(W_h flatten(M) + b_h)               (B, hidden)    "hidden"
    p   = softmax(W_c h + b_c)                     (B, classes)   "classifier"

Padding is id 0: a padded word gets no weight in any hop, and a sentence
of padding gives `M = 0` (never NaN), and is left out of the penalty.
"""

import keras

from kerattn import checks
from kerattn.layers import LSTM, SelfAttentiveEmbedding
from kerattn.zoo.model import ZooModel, from_preset


def self_attentive_classifier(
    vocab_size=50000,
    num_classes=5,
    embedding_dim=None,
    lstm_units=None,
    attention_units=None,
    hops=None,
    penalty=None,
    hidden_units=None,
    dropout=None,
    max_words=None,
    preset="paper",
    name="self_attentive_classifier",
):
    """The self-attentive sentence embedding's classifier (Lin et al., 2017).

    Args:
        vocab_size: word ids are `< vocab_size`; 0 is PAD and is masked.
        num_classes: the number of classes.
        embedding_dim: the word embedding size (100 in the paper's Yelp
            setting).
        lstm_units: BiLSTM units per direction, `u` (300).
        attention_units: `d_a`, the attention MLP's hidden size (350).
        hops: `r`, the number of attention rows (30).
        penalty: the coefficient of `||A A^T - I||_F^2` in the loss (1.0;
            0 turns it off).
        hidden_units: the ReLU layer between `M` and the classes (3,000).
        dropout: dropout on the word embeddings and on `flatten(M)` and
            the hidden layer (0.5).
        max_words: an optional fixed input length (None: any).
        preset: named sizes, one of `PRESETS` ("tiny", "small", "base",
            "paper"); a size given above overrides the preset's.
        name: the model's name.

    Returns:
        A functional `keras.Model`: `{"token_ids": (B, n)}` (int32, PAD =
        0) -> class probabilities `(B, num_classes)`; the penalty is in
        `model.losses`, which `fit` adds to the loss.
        `self_attentive_attention(model)` gives the `r` attention rows.

    Example:

    >>> model = self_attentive_classifier(100, 3, preset="tiny")
    >>> model.output_shape
    (None, 3)
    """
    c = from_preset(PRESETS, preset, embedding_dim=embedding_dim,
                    lstm_units=lstm_units, attention_units=attention_units,
                    hops=hops, hidden_units=hidden_units, dropout=dropout,
                    penalty=penalty)
    checks.sizes(vocab_size=vocab_size, num_classes=num_classes,
                 **{k: v for k, v in c.items() if k != "penalty"})
    checks.require(num_classes >= 2, "num_classes", ">= 2", num_classes,
                   note="A softmax over one class is always 1.")
    checks.number("penalty", c["penalty"], low=0.0)
    checks.positive_int("max_words", max_words, allow_none=True)

    # === Layers ===
    embedding = keras.layers.Embedding(vocab_size, c["embedding_dim"],
                                       mask_zero=True, name="embedding")
    embedding_dropout = keras.layers.Dropout(c["dropout"],
                                             name="embedding_dropout")
    encoder = keras.layers.Bidirectional(
        LSTM(c["lstm_units"], return_sequences=True), name="encoder")
    attention = SelfAttentiveEmbedding(c["attention_units"], c["hops"],
                                       penalty=c["penalty"], name="attention")
    flatten = keras.layers.Flatten(name="flatten")
    sentence_dropout = keras.layers.Dropout(c["dropout"], name="sentence_dropout")
    hidden = keras.layers.Dense(c["hidden_units"], activation="relu", name="hidden")
    hidden_dropout = keras.layers.Dropout(c["dropout"], name="hidden_dropout")
    classifier = keras.layers.Dense(num_classes, activation="softmax",
                                    name="classifier")

    # === Functional Model ===
    token_ids = keras.Input((max_words,), dtype="int32", name="token_ids")
    x = embedding_dropout(embedding(token_ids))      # (B, n, m), mask (B, n)
    h = encoder(x)                                   # (B, n, 2u), mask kept
    # The rows are computed here too, so every call of the attention has
    # the same outputs (self_attentive_attention calls it again).
    m, _ = attention(h, return_attention_scores=True)  # (B, r, 2u)
    v = hidden_dropout(hidden(sentence_dropout(flatten(m))))
    probabilities = classifier(v)                    # (B, classes)
    return ZooModel({"token_ids": token_ids}, probabilities, name=name)


def self_attentive_attention(model):
    """A model giving a self-attentive classifier's probabilities and its
    `r` attention rows `A`.

    Built from `model`'s own layers (shared weights), so it works on a model
    loaded from a `.keras` file too.

    Args:
        model: a `self_attentive_classifier` model.

    Returns:
        A functional `keras.Model`: `{"token_ids": (B, n)}` ->
        `{"probabilities": (B, classes), "weights": (B, r, n)}`; each row
        of `weights` sums to 1 over the words, and padded words have
        weight 0.

    Example:

    >>> import numpy as np
    >>> model = self_attentive_classifier(100, 3, preset="tiny")
    >>> ids = np.array([[5, 6, 7, 0]], "int32")
    >>> rows = self_attentive_attention(model).predict({"token_ids": ids},
    ...                                                verbose=0)["weights"]
    >>> rows.shape, float(rows[0, :, 3].max()), np.allclose(rows.sum(-1), 1)
    ((1, 2, 4), 0.0, True)
    """
    checks.model("model", model, "a kerattn.zoo.self_attentive_classifier model")
    names = {layer.name for layer in model.layers}
    checks.require(
        {"embedding", "encoder", "attention", "flatten", "hidden",
         "classifier"} <= names and isinstance(
            model.get_layer("attention"), SelfAttentiveEmbedding),
        "model", "a kerattn.zoo.self_attentive_classifier model",
        note=f"Received a model named {model.name!r} with layers "
        f"{sorted(names)}.")
    token_ids = keras.Input(model.input["token_ids"].shape[1:], dtype="int32",
                            name="token_ids")
    h = model.get_layer("encoder")(model.get_layer("embedding")(token_ids))
    m, weights = model.get_layer("attention")(h, return_attention_scores=True)
    v = model.get_layer("hidden")(model.get_layer("flatten")(m))
    probabilities = model.get_layer("classifier")(v)
    return ZooModel({"token_ids": token_ids},
                    {"probabilities": probabilities, "weights": weights},
                    name=f"{model.name}_attention")


# === Presets: "paper" is section 4.2's Yelp setting; the others fit a CPU ===

PRESETS = {
    "tiny": dict(embedding_dim=8, lstm_units=4, attention_units=6, hops=2,
                 hidden_units=8, dropout=0.0),
    "small": dict(embedding_dim=100, lstm_units=64, attention_units=100,
                  hops=10, hidden_units=256),
    "base": dict(embedding_dim=200, lstm_units=100, attention_units=150,
                 hops=30, hidden_units=500),
    "paper": dict(embedding_dim=100, lstm_units=300, attention_units=350,
                  hops=30, penalty=1.0, hidden_units=3000, dropout=0.5),
}
