"""Recipe: the AoA Reader on King James Bible cloze questions.

Fetches and unpacks the Debian packages (bible-kjv, bible-kjv-text,
wordnet-base) if needed, builds CBT-style questions split by book (or reads
a user's CBT file), writes them in the CBT format, computes the
most-frequent and bigram baselines, trains `kerattn.zoo.aoa_reader` and
measures test accuracy per word kind. Seeds, results.json and RESULTS.md
are zoo/runner.py's (zoo/aoa_reader/recipe.py).
"""

import collections
import os

import keras
import numpy as np

from kerattn.datasets.cloze import (baseline_accuracy, bigram_baseline,
                                    cloze_vocabulary, download_kjv, encode_cloze,
                                    kjv_cloze, most_frequent_baseline, read_cbt,
                                    write_cbt)
from kerattn.datasets.translation import free_first_width
from kerattn import distribute
from kerattn.recipes.common import (compile_and_fit, fitted,
                                    require_training_file, split_in_order)

PRESET = "base"   # the model's named sizes (kerattn.zoo.presets)
KJV = os.path.expanduser("~/.kerattn/kjv")


def sizes(preset=PRESET):
    """The aoa_reader sizes of `preset`, every keyword resolved."""
    from kerattn.zoo import presets

    named = presets("aoa_reader")
    return dict(named["paper"], **named[preset])


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


def prepare(path=None, directory=KJV, max_train=None, max_test=None,
            test_path=None):
    """The questions, vocabulary, arrays and baselines of the recipe.

    `path`: a CBT-format file (the user's data: the last 10% the test split
    and the 10% before it the validation split, `common.split_in_order`, as
    neighbouring questions share passages); None builds the King
    James Bible questions in `directory` (fetched with `apt-get download`
    when missing), writes them in the CBT format there and reads the test
    split back through the CBT loader. `test_path`: the user's own test
    questions, a CBT-format file (with `path`): all of them are tested on,
    the last 10% of `path` is the validation split.
    """
    if path:
        splits = split_in_order(read_cbt(path), test=read_cbt(test_path)
                                if test_path else None)   # passages overlap
        min_count = 1
    else:
        root = os.path.join(directory, "root")
        if not os.path.exists(os.path.join(root, "usr", "bin", "bible")):
            root = download_kjv(directory)
        splits = kjv_cloze(root)
        for name in ("train", "valid", "test"):
            write_cbt(splits[name], os.path.join(directory, f"kjv_cloze_{name}.txt"))
        test = read_cbt(os.path.join(directory, "kjv_cloze_test.txt"))
        for q, original in zip(test, splits["test"]):
            q["kind"] = original["kind"]
        splits["test"] = test
        min_count = 2
    splits = {"train": splits["train"][:max_train], "valid": splits["valid"],
              "test": splits["test"][:max_test]}
    vocab = cloze_vocabulary(splits["train"], min_count=min_count)
    test = splits["test"]
    return {"questions": splits, "vocab": vocab, "source": path or "kjv cloze",
            "arrays": {k: encode_cloze(v, vocab) for k, v in splits.items()},
            "baselines": {"most_frequent": baseline_accuracy(test, most_frequent_baseline),
                          "bigram": baseline_accuracy(test, bigram_baseline)}}


def build(data, preset=PRESET, **overrides):
    """`kerattn.zoo.aoa_reader` for the data's vocabulary."""
    from kerattn.zoo import aoa_reader

    return aoa_reader(len(data["vocab"]), preset=preset, **overrides)


def train(model, data, epochs=3, batch_size=32, learning_rate=1e-3, minutes=None,
          strategy=None, seed=0, verbose=2):
    """Adam with clipnorm 5 (as the paper) on length-sorted batches."""
    from kerattn.losses import MaskedSparseCrossentropy

    history, summary = compile_and_fit(
        model, ClozeBatches(data["arrays"]["train"], batch_size, seed=seed),
        ClozeBatches(data["arrays"]["valid"], 128, shuffle=False),
        loss=MaskedSparseCrossentropy(pad_id=-1, from_logits=False),
        metrics=["sparse_categorical_accuracy"], learning_rate=learning_rate,
        clipnorm=5.0, epochs=epochs, minutes=minutes, strategy=strategy,
        verbose=verbose)
    summary["final_val_accuracy"] = round(float(
        history.history["val_sparse_categorical_accuracy"][-1]), 4)
    return summary


def evaluate(model, data):
    """Test accuracy, overall and per word kind (when the questions say)."""
    test = data["questions"]["test"]
    batches = ClozeBatches(data["arrays"]["test"], 128, shuffle=False)
    probabilities = model.predict(batches, verbose=0)
    predicted = np.empty(len(test), "int64")
    predicted[np.concatenate(batches.batches)] = np.argmax(probabilities, -1)
    hits, bigram = collections.defaultdict(list), collections.defaultdict(list)
    for q, p, a in zip(test, predicted, data["arrays"]["test"]["answer_index"]):
        right = bigram_baseline(q) == q["answer"]
        for kind in ([q["kind"]] if "kind" in q else []) + ["all"]:
            hits[kind].append(p == a)
            bigram[kind].append(right)
    return {"accuracy": {k: round(float(np.mean(v)), 4) for k, v in hits.items()},
            "test_per_kind": {k: len(v) for k, v in hits.items()},
            "paired_vs_bigram": {k: paired_difference(hits[k], bigram[k])
                                 for k in hits},
            "baselines": {b: {k: round(v, 4) for k, v in r.items()}
                          for b, r in data["baselines"].items()}}


def paired_difference(a, b):
    """`[mean(a - b), half-width of its 95% interval]` for two models'
    per-question hits (0/1) on the same questions: the paired interval,
    1.96 * sd(a - b) / sqrt(n), narrower than treating them as independent."""
    d = np.asarray(a, "float64") - np.asarray(b, "float64")
    half = 1.96 * float(np.std(d, ddof=1)) / len(d) ** 0.5 if len(d) > 1 else float("nan")
    return [round(float(d.mean()), 4), round(half, 4)]


def draw(model, data, path):
    """The document attention `s` of the first test question, as a strip."""
    import matplotlib.pyplot as plt

    from kerattn.plot import attention_heatmap
    from kerattn.zoo import aoa_attention

    one = {k: v[:1] for k, v in data["arrays"]["test"].items() if k != "answer_index"}
    s = aoa_attention(model).predict(one, verbose=0)["s"][0]
    words = [w.lower() for verse in data["questions"]["test"][0]["context"]
             for w in verse.split(" ")]
    attention_heatmap(s[None, :len(words)], words, ["s"])
    plt.gcf().set_size_inches(max(8, len(words) * 0.12), 2)
    plt.savefig(path, dpi=80)
    plt.close("all")
    return path


def fit(data=None, preset="small", epochs=3, batch_size=32, learning_rate=None,
        max_train=None, max_test=None, seed=0, strategy=None, verbose=2,
        test_data=None):
    """`examples/fit.py aoa_reader`: the recipe's method on any data.

    `data` and `test_data` are as `prepare`'s `path` and `test_path`.

    Returns:
        `(model, summary, results, draw)`; `draw(path)` writes the document
        attention. On a torch DDP worker other than rank 0, `results` and
        `draw` are None.
    """
    require_training_file(data, test_data)
    strategy = strategy or distribute.no_distribution()
    prepared = prepare(data, max_train=max_train or (None if data else 20000),
                       max_test=max_test, test_path=test_data)
    with strategy.scope():
        model = build(prepared, preset)
        summary = train(model, prepared, epochs, batch_size,
                        learning_rate=learning_rate or 1e-3, strategy=strategy,
                        seed=seed, verbose=verbose)
    vocabularies = {"vocab": prepared["vocab"]}
    if not strategy.is_chief:
        return fitted(model, summary, None, None, "reading", vocabularies)
    evaluated = evaluate(model, prepared)
    results = {"accuracy": evaluated["accuracy"]["all"],
               "accuracy_by_kind": evaluated["accuracy"],
               "test_per_kind": evaluated["test_per_kind"],
               "paired_vs_bigram": evaluated["paired_vs_bigram"],
               "baselines": evaluated["baselines"]}
    return fitted(model, summary, results,
                  lambda path: draw(model, prepared, path), "reading",
                  vocabularies)
