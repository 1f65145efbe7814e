"""Recipe: a HAN on Debian package descriptions ("topical-10").

Builds the set from apt's lists (one description per source package, split
by a hash of the source name), computes the TF-IDF + logistic-regression
baseline on the same split, trains `kerattn.zoo.han_classifier` with early
stopping on the validation split, and reports test accuracy beside the
baseline and the majority class, with a highlighted test document.
"""

import argparse
import collections
import os
import time

import keras
import numpy as np

from kerattn.datasets import (
    build_word_vocabulary,
    debian_descriptions,
    debian_topical10,
    encode_documents,
    tokenize_document,
)
from kerattn import distribute
from kerattn.recipes.common import write_results
from kerattn.recipes.translation import TimeBudget

SIZES = dict(embedding_dim=200, word_units=50, sentence_units=50,
             attention_units=100, dropout=0.5)


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
MAX_SENTENCES, MAX_WORDS = 10, 40


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


def main(argv=None, out_dir=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--minutes", type=float, default=None)
    parser.add_argument("--embeddings", choices=["lsa", "random"], default="lsa")
    parser.add_argument("--schedule", choices=["two-stage", "fine-tune"],
                        default="two-stage",
                        help="LSA embeddings: fixed first, then fine-tuned; or "
                             "fine-tuned from the start")
    parser.add_argument("--out", default=out_dir or ".")
    distribute.add_arguments(parser)
    args = parser.parse_args(argv)
    strategy = distribute.from_arguments(args, "han_classifier")
    os.makedirs(args.out, exist_ok=True)
    from kerattn.zoo import han_attention, han_classifier

    data = debian_topical10()
    labels = data["labels"]
    # Unlabelled text: every description of a source package in the training
    # split, whatever its section (none of the valid or test packages).
    unlabelled = [d["text"] for d in debian_descriptions() if d["split"] == "train"]
    vocab = build_word_vocabulary([tokenize_document(t) for t in unlabelled],
                                  min_count=3)
    _, x_train, y_train = arrays(data["train"], vocab, labels)
    _, x_valid, y_valid = arrays(data["valid"], vocab, labels)
    test_docs, x_test, y_test = arrays(data["test"], vocab, labels)
    majority = collections.Counter(y_train).most_common(1)[0][0]
    baselines = {
        "majority_class": float(np.mean(y_test == majority)),
        "tfidf_logistic_regression": tfidf_baseline(data["train"], data["test"]),
    }
    print("baselines", baselines)

    keras.utils.set_random_seed(1)
    two_stage = args.embeddings == "lsa" and args.schedule == "two-stage"
    budget = TimeBudget(None if args.minutes is None else 60 * args.minutes)
    inputs, valid = {"document_ids": x_train}, ({"document_ids": x_valid}, y_valid)
    fit_data = dict(x=inputs, y=y_train, batch_size=64, validation_data=valid)
    if strategy.kind != "none":
        fit_data = dict(
            x=strategy.shard(distribute.ArrayBatches(inputs, y_train, 64, seed=1)),
            validation_data=strategy.shard(distribute.ArrayBatches(
                valid[0], valid[1], 256, shuffle=False)))
    start = time.time()
    # Stage 1 (two-stage): the LSA embeddings fixed, the rest trained. Stage
    # 2 (or the only stage): everything, the embeddings at a lower rate.
    # Fine-tuning the embeddings from the start overfits within 3 epochs.
    stages = [(False, 1e-3), (True, 2e-4)] if two_stage else [(True, 1e-3)]
    history = {"val_accuracy": [], "loss": []}
    with strategy.scope():
        model = han_classifier(len(vocab), len(labels), **SIZES)
        if args.embeddings == "lsa":
            model.get_layer("embedding").embeddings.assign(
                lsa_embeddings(unlabelled, vocab, SIZES["embedding_dim"]))
        for trainable, rate in stages:
            model.get_layer("embedding").trainable = trainable
            model.compile(keras.optimizers.Adam(rate, clipnorm=5.0),
                          "sparse_categorical_crossentropy", metrics=["accuracy"])
            # torch DDP: wrapped again, for the weights trainable now.
            strategy.prepare(model)
            stop = keras.callbacks.EarlyStopping("val_accuracy", patience=3,
                                                 restore_best_weights=True)
            fitted = model.fit(**fit_data, epochs=args.epochs,
                               callbacks=[budget, stop], verbose=2)
            for key in history:
                history[key] += fitted.history[key]
    if not strategy.is_chief:   # torch DDP: rank 0 evaluates and writes
        return None
    minutes = round((time.time() - start) / 60, 2)
    probabilities = model.predict({"document_ids": x_test}, batch_size=256, verbose=0)
    accuracy = float(np.mean(np.argmax(probabilities, -1) == y_test))
    valid_accuracy = float(max(history["val_accuracy"]))
    model.save(os.path.join(args.out, "model.keras"))

    # A highlighted test document (the first one the model gets right).
    weights = han_attention(model).predict({"document_ids": x_test[:32]}, verbose=0)
    pick = next((i for i in range(32) if np.argmax(probabilities[i]) == y_test[i]), 0)
    try:
        from kerattn.plot import document_highlight

        document_highlight(test_docs[pick][:MAX_SENTENCES],
                           weights["word_weights"][pick],
                           weights["sentence_weights"][pick],
                           os.path.join(args.out, "highlight.png"),
                           title=f"{data['test'][pick]['package']}: predicted "
                                 f"{labels[int(np.argmax(probabilities[pick]))]}, "
                                 f"true {labels[y_test[pick]]}")
    except ImportError:
        pass

    results = {
        "meta": {"backend": keras.backend.backend(), "embeddings": args.embeddings,
                 "unlabelled_texts": len(unlabelled),
                 "documents": {k: len(data[k]) for k in ("train", "valid", "test")},
                 "vocabulary": len(vocab), "max_sentences": MAX_SENTENCES,
                 "max_words": MAX_WORDS, "sizes": SIZES},
        "han_test_accuracy": round(accuracy, 4),
        "han_best_valid_accuracy": round(valid_accuracy, 4),
        "baselines": {k: round(v, 4) for k, v in baselines.items()},
        "train": {"epochs": len(history["loss"]), "minutes": minutes,
                  "schedule": args.schedule if args.embeddings == "lsa" else "one stage",
                  "parameters": int(model.count_params())},
    }
    write_results(args.out, results, report(results))
    return results


def report(r):
    m = r["meta"]
    d = m["documents"]
    return "\n".join([
        "# han_classifier on Debian topical-10", "",
        "Measured by `python zoo/han_classifier/recipe.py` (backend "
        f"{m['backend']}, this 2-core CPU). Data: Debian bookworm long package "
        "descriptions, one per source package, labelled by Section (utils, "
        "science, net, devel, admin, games, x11, sound, misc, text); split by "
        f"a hash of the source name: {d['train']:,} train / {d['valid']:,} "
        f"valid / {d['test']:,} test documents.", "",
        "| model | test accuracy |", "|---|---|",
        f"| majority class | {r['baselines']['majority_class']:.3f} |",
        f"| TF-IDF + logistic regression (computed by the recipe) | "
        f"{r['baselines']['tfidf_logistic_regression']:.3f} |",
        f"| **HAN** (kerattn.zoo.han_classifier) | **{r['han_test_accuracy']:.3f}** |",
        "", "DATA.md's figure for the baseline is 0.712 (on its own split of "
        "8,092 documents); target: above the baseline, moonshot 0.75.", "",
        f"Training: {r['train']['epochs']} epochs in all (early stopping on "
        f"validation accuracy, patience 3, per stage; best "
        f"{r['han_best_valid_accuracy']:.3f}), "
        f"{r['train']['minutes']} min, {r['train']['parameters']:,} parameters, "
        f"Adam (the paper used SGD with momentum). Embeddings: "
        f"{m['embeddings']}, schedule {r['train']['schedule']} (two-stage: fixed "
        f"while the rest trains at 1e-3, then everything at 2e-4) "
        f"(LSA: a {m['sizes']['embedding_dim']}-d truncated SVD of TF-IDF over "
        f"{m['unlabelled_texts']:,} unlabelled descriptions of training-split "
        f"source packages, all sections, where the paper used word2vec on its "
        f"corpora), vocabulary {m['vocabulary']:,} words (seen at least 3 times "
        f"in that text), "
        f"documents cut to {m['max_sentences']} sentences of {m['max_words']} words.",
        "", f"Sizes: `{m['sizes']}`.", "",
        "`highlight.png`: word and sentence weights on a test document.", ""])
