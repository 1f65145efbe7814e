"""Recipe: the AoA Reader on King James Bible cloze questions.

Fetches and unpacks the Debian packages (bible-kjv, bible-kjv-text,
wordnet-base) if needed, builds CBT-style questions split by book, writes
them in the CBT format, computes the most-frequent and bigram baselines,
trains `kerattn.zoo.aoa_reader` and reports test accuracy per word kind.
"""

import argparse
import collections
import os
import time

import keras
import numpy as np

from kerattn.datasets import (
    baseline_accuracy,
    bigram_baseline,
    cloze_vocabulary,
    download_kjv,
    encode_cloze,
    kjv_cloze,
    most_frequent_baseline,
    read_cbt,
    write_cbt,
)
from kerattn.datasets.cloze import KINDS
from kerattn.datasets.translation import free_first_width
from kerattn import distribute
from kerattn.recipes.common import write_results
from kerattn.recipes.translation import TimeBudget

SIZES = dict(embedding_dim=128, units=128, dropout=0.1)


class ClozeBatches(keras.utils.PyDataset):
    """Batches of questions sorted into similar document lengths (less padding)."""

    def __init__(self, arrays, batch_size, shuffle=True, seed=0, **kwargs):
        super().__init__(**kwargs)
        self.arrays = arrays
        lengths = (arrays["document_ids"] > 0).sum(1)
        order = np.argsort(lengths, kind="stable")
        self.batches = [order[i:i + batch_size]
                        for i in range(0, len(order), batch_size)]
        self.rng = np.random.default_rng(seed)
        self.shuffle = shuffle
        if shuffle:
            self.rng.shuffle(self.batches)
        free_first_width(self.batches, self._width)

    def _width(self, rows):
        docs = self.arrays["document_ids"][rows]
        width = max(int((docs > 0).sum(1).max()), 1)
        return -(-width // 50) * 50  # few distinct shapes to compile

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, index):
        rows = self.batches[index]
        docs = self.arrays["document_ids"][rows]
        width = self._width(rows)
        x = {"document_ids": docs[:, :width],
             "query_ids": self.arrays["query_ids"][rows],
             "candidate_ids": self.arrays["candidate_ids"][rows]}
        return x, self.arrays["answer_index"][rows]

    def on_epoch_end(self):
        if self.shuffle:
            self.rng.shuffle(self.batches)
            free_first_width(self.batches, self._width)


def main(argv=None, out_dir=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--data", default=os.path.expanduser("~/.kerattn/kjv"),
                        help="where the Debian packages are fetched and unpacked")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--minutes", type=float, default=None)
    parser.add_argument("--max-train", type=int, default=None)
    parser.add_argument("--out", default=out_dir or ".")
    distribute.add_arguments(parser)
    args = parser.parse_args(argv)
    strategy = distribute.from_arguments(args, "aoa_reader")
    os.makedirs(args.out, exist_ok=True)
    from kerattn.losses import MaskedSparseCrossentropy
    from kerattn.zoo import aoa_reader

    root = os.path.join(args.data, "root")
    if not os.path.exists(os.path.join(root, "usr", "bin", "bible")):
        root = download_kjv(args.data)
    splits = kjv_cloze(root)
    for name in ("train", "valid", "test"):
        write_cbt(splits[name], os.path.join(args.data, f"kjv_cloze_{name}.txt"))
    test = read_cbt(os.path.join(args.data, "kjv_cloze_test.txt"))  # the CBT loader
    for q, original in zip(test, splits["test"]):
        q["kind"] = original["kind"]
    train = splits["train"][: args.max_train]
    baselines = {"most_frequent": baseline_accuracy(test, most_frequent_baseline),
                 "bigram": baseline_accuracy(test, bigram_baseline)}
    print("baselines", baselines)

    vocab = cloze_vocabulary(train, min_count=2)
    arrays = {k: encode_cloze(v, vocab) for k, v in
              (("train", train), ("valid", splits["valid"]), ("test", test))}
    keras.utils.set_random_seed(1)
    budget = TimeBudget(None if args.minutes is None else 60 * args.minutes)
    start = time.time()
    with strategy.scope():
        model = aoa_reader(len(vocab), **SIZES)
        model.compile(keras.optimizers.Adam(1e-3, clipnorm=5.0),
                      MaskedSparseCrossentropy(pad_id=-1, from_logits=False),
                      metrics=["sparse_categorical_accuracy"])
        strategy.prepare(model)
        history = model.fit(
            strategy.shard(ClozeBatches(arrays["train"], 32)),
            validation_data=strategy.shard(ClozeBatches(arrays["valid"], 128,
                                                        shuffle=False)),
            epochs=args.epochs, callbacks=[budget], verbose=2)
    if not strategy.is_chief:   # torch DDP: rank 0 evaluates and writes
        return None
    minutes = round((time.time() - start) / 60, 2)
    model.save(os.path.join(args.out, "model.keras"))

    test_batches = ClozeBatches(arrays["test"], 128, shuffle=False)
    probabilities = model.predict(test_batches, verbose=0)
    order = np.concatenate(test_batches.batches)
    predicted = np.empty(len(test), "int64")
    predicted[order] = np.argmax(probabilities, -1)
    hits = collections.defaultdict(list)
    for q, p, a in zip(test, predicted, arrays["test"]["answer_index"]):
        hits[q["kind"]].append(p == a)
        hits["all"].append(p == a)
    accuracy = {k: round(float(np.mean(v)), 4) for k, v in hits.items()}
    results = {
        "meta": {"backend": keras.backend.backend(),
                 "questions": {"train": len(train), "valid": len(splits["valid"]),
                               "test": len(test)},
                 "test_per_kind": {k: len(v) for k, v in hits.items()},
                 "vocabulary": len(vocab), "sizes": SIZES},
        "aoa_test_accuracy": accuracy,
        "baselines": {b: {k: round(v, 4) for k, v in r.items()}
                      for b, r in baselines.items()},
        "train": {"epochs": len(history.history["loss"]), "minutes": minutes,
                  "steps": budget.steps, "parameters": int(model.count_params()),
                  "final_val_accuracy": round(float(
                      history.history["val_sparse_categorical_accuracy"][-1]), 4)},
    }
    write_results(args.out, results, report(results))
    return results


def report(r):
    m, t = r["meta"], r["train"]
    rows = [("most frequent candidate in context", r["baselines"]["most_frequent"]),
            ("bigram match, ties by frequency", r["baselines"]["bigram"]),
            ("**AoA Reader** (kerattn.zoo.aoa_reader)", r["aoa_test_accuracy"])]
    lines = [
        "# aoa_reader on King James Bible cloze questions", "",
        "Measured by `python zoo/aoa_reader/recipe.py` (backend "
        f"{m['backend']}, this 2-core CPU). Data: CBT-style questions built from "
        "Debian's bible-kjv (20 context verses, the 21st with one word blanked, "
        "10 candidates of the same kind from the context), split by book (test: "
        "Joshua, Job, Mark, Hebrews; valid: Judges, Luke): "
        f"{m['questions']['train']:,} train / {m['questions']['valid']:,} valid / "
        f"{m['questions']['test']:,} test questions, read back through the CBT "
        "loader.", "",
        "| test accuracy | " + " | ".join(KINDS) + " | all |",
        "|---|" + "---|" * (len(KINDS) + 1)]
    for name, acc in rows:
        lines.append(f"| {name} | " + " | ".join(
            f"{acc.get(k, float('nan')):.3f}" for k in KINDS + ("all",)) + " |")
    lines += [
        "", "Test questions per kind: " + ", ".join(
            f"{k} {m['test_per_kind'].get(k, 0):,}" for k in KINDS) + ". Random is 0.100.",
        "", "DATA.md's baselines (its own construction): most frequent 0.344 / "
        "0.292 / 0.239 / 0.372, bigram 0.511 / 0.450 / 0.356 / 0.440 (names / "
        "nouns / verbs / prepositions). The recipe recomputes both on this test "
        "set (above); the AoA row is to be read against those.", "",
        f"Training: {t['steps']:,} steps of 32 questions "
        f"({t['steps'] * 32 / m['questions']['train']:.1f} passes over the training "
        f"questions; the time budget ended it), "
        f"{t['minutes']} min, {t['parameters']:,} parameters, Adam 1e-3, clipnorm "
        f"5 (as the paper), vocabulary {m['vocabulary']:,} lower-cased words; "
        f"last validation accuracy {t['final_val_accuracy']:.3f}.", "",
        f"Sizes: `{m['sizes']}` (the paper: 384-d embeddings, 256 GRU units).", ""]
    return "\n".join(lines)
