"""Recipe: document classifiers on Debian package descriptions ("topical-10").

Builds the set from apt's lists (one description per source package, split
by a hash of the source name) or reads a user's JSONL, computes the TF-IDF +
logistic-regression baseline on the same split, trains
`kerattn.zoo.han_classifier` (or `self_attentive_classifier`, `build`'s
`model`) with early stopping on the validation split, and measures test
accuracy beside the baseline and the majority class; `draw` highlights a
test document (`draw_hops`: the self-attentive model's rows). Seeds,
results.json and RESULTS.md are zoo/runner.py's
(zoo/han_classifier/recipe.py, zoo/self_attentive_classifier/recipe.py).
"""

import collections

import keras
import numpy as np

from kerattn import checks, distribute
from kerattn.datasets.documents import (build_word_vocabulary, debian_descriptions,
                                        debian_topical10, encode_documents,
                                        read_jsonl, tokenize_document)
from kerattn.datasets.fingerprint import data_fingerprint
from kerattn.recipes.common import (compile_and_fit, fitted,
                                    require_training_file, split)

PRESET = "base"   # the model's named sizes (kerattn.zoo.presets)
MODELS = ("han_classifier", "self_attentive_classifier")   # `build`'s `model`
# Each stage stops after this many epochs without a better validation
# accuracy (and keeps its best weights); zoo/han_classifier/RESULTS.md
# compares patience 3 and 6 over 3 seeds.
PATIENCE = 6
# A document is cut to this many sentences of this many words.
MAX_SENTENCES, MAX_WORDS = 10, 40
# The self-attentive classifier reads the same words in one row, cut here
# (see `flatten`).
MAX_TOKENS = 160
# The self-attentive classifier's penalty coefficient, not the paper's 1:
# with 30 hops the penalty starts near 29 against a cross-entropy near 2,
# and at 1 it swamps the class signal while it falls
# (zoo/self_attentive_classifier/RESULTS.md has 0, 0.1 and 1).
SELF_ATTENTIVE_PENALTY = 0.1


def sizes(preset=PRESET):
    """The han_classifier sizes of `preset`, every keyword resolved."""
    from kerattn.zoo import presets

    named = presets("han_classifier")
    return dict(named["paper"], **named[preset])


def lsa_embeddings(texts, vocab, dim):
    """Word vectors from the SVD of a TF-IDF matrix of unlabelled texts (LSA).

    The paper initialised its embeddings with word2vec trained on its own
    corpora; this is the same idea, with what scikit-learn has: each word's
    row of `V S` from a truncated SVD of the document-term matrix, scaled to
    unit length. PAD/UNK/BOS/EOS rows are zero.
    """
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    words = vocab.itos[4:]

    def analyzer(text):
        return [w for sentence in tokenize_document(text) for w in sentence]

    vectorizer = TfidfVectorizer(vocabulary={w: i for i, w in enumerate(words)},
                                 analyzer=analyzer, sublinear_tf=True)
    matrix = vectorizer.fit_transform(texts)
    svd = TruncatedSVD(dim, random_state=0).fit(matrix)
    vectors = svd.components_.T * svd.singular_values_
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-8)
    table = np.zeros((len(vocab), dim), "float32")
    table[4:] = vectors
    return table


def tfidf_baseline(train, test):
    """TF-IDF + logistic regression (scikit-learn) test accuracy."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = TfidfVectorizer(sublinear_tf=True, min_df=2)
    x_train = vectorizer.fit_transform([e["text"] for e in train])
    classifier = LogisticRegression(max_iter=2000, C=10.0)
    classifier.fit(x_train, [e["label"] for e in train])
    predicted = classifier.predict(vectorizer.transform([e["text"] for e in test]))
    return float(np.mean(predicted == np.array([e["label"] for e in test])))


def arrays(examples, vocab, labels):
    docs = [tokenize_document(e["text"]) for e in examples]
    x = encode_documents(docs, vocab, MAX_SENTENCES, MAX_WORDS)
    y = np.array([labels.index(e["label"]) for e in examples], "int32")
    return docs, x, y


def flatten(x, max_tokens=MAX_TOKENS):
    """`(n, S, W)` document ids -> `(n, max_tokens)`: each document's words
    in order, its sentences joined, cut at `max_tokens` and padded with 0.

    Example:

    >>> flatten(np.array([[[5, 6, 0], [7, 0, 0]]]), 4)
    array([[5, 6, 7, 0]], dtype=int32)
    """
    out = np.zeros((len(x), max_tokens), "int32")
    for i, document in enumerate(np.asarray(x)):
        words = document[document != 0][:max_tokens]
        out[i, :len(words)] = words
    return out


def model_inputs(model, documents):
    """`(n, S, W)` document ids (`arrays`' second value) as `model` reads
    them: `{"document_ids": documents}` for a HAN, each document's words
    in one row (`flatten`) for a model with a `token_ids` input (a
    self-attentive classifier)."""
    if "token_ids" in model.input:
        return {"token_ids": flatten(documents)}
    return {"document_ids": documents}


def inputs(model, data, split):
    """The arrays of `split` ("train", "valid", "test") that `model` reads
    (`model_inputs`)."""
    return model_inputs(model, data["x"][split]["document_ids"])


def prepare(path=None, max_train=None, max_test=None, test_path=None):
    """The documents, vocabulary, arrays and baselines of the recipe.

    `path`: a JSONL file of `{"text", "label"}` (the user's data, 10% the
    test split and 10% the validation split by a hash of each text,
    `kerattn.recipes.common.split`); None
    builds topical-10 from this machine's apt lists. The unlabelled texts
    for the LSA embeddings are every training-split description (Debian) or
    the training texts (a file); the vocabulary is learned on them.
    `test_path`: the user's own test split, a JSONL file like `path` (with
    `path`): every document of it is tested on, `path` gives training and
    10% validation (`kerattn.recipes.common.split_with_test`: a text of
    both files is not trained on).
    """
    if path:
        def examples(file):
            return [{"text": t, "label": l} for t, l in zip(*read_jsonl(file))]

        found = examples(path)
        test = examples(test_path) if test_path else None
        data = split(found, key=lambda example: example["text"], test=test)
        data["labels"] = sorted({e["label"] for e in found + (test or [])})
        data["train"] = data["train"][:max_train]
        unlabelled, min_count = [e["text"] for e in data["train"]], 1
    else:
        data = debian_topical10()   # FileNotFoundError names the apt-get command
        data["train"] = data["train"][:max_train]
        # Every description of a source package in the training split,
        # whatever its section (none of the valid or test packages).
        unlabelled = [d["text"] for d in debian_descriptions() if d["split"] == "train"]
        min_count = 3
    data["test"] = data["test"][:max_test]
    labels = data["labels"]
    vocab = build_word_vocabulary([tokenize_document(t) for t in unlabelled],
                                  min_count=min_count)
    arrays_of = {k: arrays(data[k], vocab, labels) for k in ("train", "valid", "test")}
    y_train = arrays_of["train"][2]
    majority = collections.Counter(y_train).most_common(1)[0][0]
    return {"examples": data, "labels": labels, "vocab": vocab,
            "unlabelled": unlabelled, "source": path or "debian topical-10",
            # The documents kept and the texts the vocabulary was learned on.
            "data_sha256": data_fingerprint(
                {"unlabelled": unlabelled,
                 **{k: data[k] for k in ("train", "valid", "test")}}),
            "docs": {k: v[0] for k, v in arrays_of.items()},
            "x": {k: {"document_ids": v[1]} for k, v in arrays_of.items()},
            "y": {k: v[2] for k, v in arrays_of.items()},
            "baselines": {
                "majority_class": float(np.mean(arrays_of["test"][2] == majority)),
                "tfidf_logistic_regression": tfidf_baseline(data["train"],
                                                            data["test"])}}


def build(data, preset=PRESET, model="han_classifier", **overrides):
    """`kerattn.zoo.<model>` ("han_classifier" or
    "self_attentive_classifier") for the data's vocabulary and labels."""
    from kerattn import zoo

    checks.one_of("model", model, MODELS)
    return getattr(zoo, model)(len(data["vocab"]), len(data["labels"]),
                               preset=preset, **overrides)


def train(model, data, epochs=30, embeddings="lsa", schedule="two-stage",
          batch_size=64, learning_rate=1e-3, minutes=None, patience=PATIENCE,
          strategy=None, seed=1, verbose=2, ema=0.0):
    """The recipe's method: LSA embeddings, two stages, early stopping.

    Stage 1 (two-stage): the LSA embeddings fixed, the rest trained at
    `learning_rate`. Stage 2 (or the only stage): everything, the
    embeddings included, at a fifth of it. Fine-tuning the embeddings from
    the start overfits within 3 epochs. Each stage stops early on the
    validation accuracy (`patience`) and keeps its best weights. With
    `ema` (a momentum in (0, 1); 0 is off) both stages average the weights
    (Polyak averaging): validation, early stopping and the result use the
    average.
    """
    if embeddings == "lsa":
        dim = model.get_layer("embedding").output_dim
        model.get_layer("embedding").embeddings.assign(
            lsa_embeddings(data["unlabelled"], data["vocab"], dim))
    two_stage = embeddings == "lsa" and schedule == "two-stage"
    train_x, valid_x = inputs(model, data, "train"), inputs(model, data, "valid")
    stages = ([(False, learning_rate), (True, learning_rate / 5)] if two_stage
              else [(True, learning_rate)])
    history = {"val_accuracy": [], "loss": []}
    summary = {"epochs": 0, "steps": 0, "train_minutes": 0.0}
    for trainable, rate in stages:
        model.get_layer("embedding").trainable = trainable
        stop = keras.callbacks.EarlyStopping("val_accuracy", patience=patience,
                                             restore_best_weights=True)
        fitted, stage = compile_and_fit(   # torch DDP: wrapped again per stage
            model, distribute.ArrayBatches(train_x, data["y"]["train"],
                                           batch_size, seed=seed),
            distribute.ArrayBatches(valid_x, data["y"]["valid"], 256,
                                    shuffle=False),
            loss="sparse_categorical_crossentropy", metrics=["accuracy"],
            learning_rate=rate, clipnorm=5.0, epochs=epochs, minutes=minutes,
            callbacks=[stop], strategy=strategy, verbose=verbose,
            ema_momentum=ema or None)
        for key in history:
            history[key] += fitted.history[key]
        for key in ("epochs", "steps", "train_minutes"):
            summary[key] += stage[key]
    summary.update(parameters=int(model.count_params()),
                   final_loss=round(float(history["loss"][-1]), 4),
                   best_val_accuracy=round(float(max(history["val_accuracy"])), 4),
                   schedule=schedule if embeddings == "lsa" else "one stage")
    return summary


def describe(data):
    """The data a run saw, for its record: the unlabelled texts (the LSA
    vectors'), the documents of each split, the vocabulary's size and the
    cut of each document."""
    examples = data["examples"]
    return {"unlabelled_texts": len(data["unlabelled"]),
            "documents": {k: len(examples[k]) for k in ("train", "valid", "test")},
            "vocabulary": len(data["vocab"]), "max_sentences": MAX_SENTENCES,
            "max_words": MAX_WORDS}


def evaluate(model, data):
    """Test accuracy beside the baselines computed on the same split."""
    probabilities = model.predict(inputs(model, data, "test"), batch_size=256,
                                  verbose=0)
    accuracy = float(np.mean(np.argmax(probabilities, -1) == data["y"]["test"]))
    return {"accuracy": round(accuracy, 4),
            "test_documents": int(len(data["y"]["test"])),
            "baselines": {k: round(v, 4) for k, v in data["baselines"].items()}}


def draw(model, data, path):
    """Word and sentence weights on the first test document it gets right."""
    from kerattn.plot import document_highlight
    from kerattn.zoo import han_attention

    x = data["x"]["test"]["document_ids"][:32]
    probabilities = model.predict({"document_ids": x}, verbose=0)
    weights = han_attention(model).predict({"document_ids": x}, verbose=0)
    truth, labels = data["y"]["test"], data["labels"]
    pick = next((i for i in range(len(x)) if np.argmax(probabilities[i]) == truth[i]), 0)
    example = data["examples"]["test"][pick]
    title = (f"{example.get('package', 'document')}: predicted "
             f"{labels[int(np.argmax(probabilities[pick]))]}, true {labels[truth[pick]]}")
    return document_highlight(data["docs"]["test"][pick][:MAX_SENTENCES],
                              weights["word_weights"][pick],
                              weights["sentence_weights"][pick], path, title=title)


def hop_overlap(weights):
    """How alike a self-attentive model's `r` rows are: the mean, over the
    documents and the pairs of rows, of the weight two rows share
    (`sum_j min(a_ij, a_kj)`: 0 when they attend to different words, 1
    when they are the same row), and the mean penalty `||A A^T - I||_F^2`
    (Lin et al. 2017, eq. 8).

    Args:
        weights: `(n, r, words)` rows, each summing to 1 (or 0 for an
            empty document, which is left out).

    Example:

    >>> a = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [0.5, 0.5]]])
    >>> hop_overlap(a)
    {'overlap': 0.5, 'penalty': 1.0}
    """
    a = np.asarray(weights, "float64")
    a = a[a.sum(axis=(1, 2)) > 0]
    r = a.shape[1]
    pairs = [(i, k) for i in range(r) for k in range(i + 1, r)]
    shared = np.mean([np.minimum(a[:, i], a[:, k]).sum(-1) for i, k in pairs]) \
        if pairs else 0.0
    gram = a @ a.transpose(0, 2, 1)
    penalty = np.mean(((gram - np.eye(r)) ** 2).sum(axis=(1, 2)))
    return {"overlap": round(float(shared), 4), "penalty": round(float(penalty), 4)}


def hops(model, data, split="test"):
    """`hop_overlap` of a self-attentive classifier's rows on `split`."""
    from kerattn.zoo import self_attentive_attention

    rows = self_attentive_attention(model).predict(
        inputs(model, data, split), batch_size=256, verbose=0)["weights"]
    return hop_overlap(rows)


def draw_hops(model, data, path, documents=3, words=40):
    """The `r` rows of a self-attentive classifier on the first test
    documents it gets right: a heat map a document (rows: hops; columns:
    its first `words` words; each map scaled to its largest weight)."""
    from kerattn.plot import save_attention_heatmaps
    from kerattn.zoo import self_attentive_attention

    x = inputs(model, data, "test")["token_ids"][:64]
    out = self_attentive_attention(model).predict({"token_ids": x}, verbose=0)
    truth, itos = data["y"]["test"], data["vocab"].itos
    right = [i for i in range(len(x)) if np.argmax(out["probabilities"][i]) == truth[i]]
    examples = []
    for i in (right or list(range(len(x))))[:documents]:
        ids = [int(t) for t in x[i] if t][:words]
        weights = out["weights"][i]
        examples.append((weights / max(float(weights.max()), 1e-8),
                         [itos[t] for t in ids],
                         [f"hop {k + 1}" for k in range(len(weights))]))
    return save_attention_heatmaps(examples, path, columns=1)


def fit(data=None, preset="small", epochs=30, batch_size=64, learning_rate=None,
        max_train=None, max_test=None, seed=0, strategy=None, verbose=2,
        model="han_classifier", test_data=None):
    """`examples/fit.py han_classifier` (or `self_attentive_classifier`,
    `model`): the recipe's method on any data.

    `data` and `test_data` are as `prepare`'s `path` and `test_path`.

    A self-attentive classifier reads each document's first `MAX_TOKENS`
    words in one row (`flatten`) and trains with the penalty's coefficient
    of its recipe, `SELF_ATTENTIVE_PENALTY`.

    Returns:
        `(model, summary, results, draw)`; `draw(path)` writes the
        highlighted document (a HAN) or the attention rows of three test
        documents (a self-attentive classifier). On a torch DDP worker
        other than rank 0, `results` and `draw` are None.
    """
    checks.one_of("model", model, MODELS)
    require_training_file(data, test_data)
    strategy = strategy or distribute.no_distribution()
    prepared = prepare(data, max_train, max_test, test_path=test_data)
    overrides, drawing = (({"penalty": SELF_ATTENTIVE_PENALTY}, draw_hops)
                          if model == "self_attentive_classifier" else ({}, draw))
    with strategy.scope():
        built = build(prepared, preset, model=model, **overrides)
        summary = train(built, prepared, epochs, batch_size=batch_size,
                        learning_rate=learning_rate or 1e-3, strategy=strategy,
                        seed=seed, verbose=verbose)
    vocabularies = {"vocab": prepared["vocab"]}
    labels = prepared["labels"]
    if not strategy.is_chief:
        return fitted(built, summary, None, None, "classification",
                      vocabularies, labels)
    return fitted(built, summary, evaluate(built, prepared),
                  lambda path: drawing(built, prepared, path), "classification",
                  vocabularies, labels)
