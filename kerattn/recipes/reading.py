"""Recipe: the AoA Reader on King James Bible cloze questions.

Fetches and unpacks the Debian packages (bible-kjv, bible-kjv-text,
wordnet-base) if needed, builds CBT-style questions split by book, writes
them in the CBT format, computes the most-frequent and bigram baselines,
trains `kerattn.zoo.aoa_reader` and reports test accuracy per word kind.
"""

import argparse
import collections
import json
import os
import shlex

import keras
import numpy as np

from kerattn.datasets.cloze import (KINDS, baseline_accuracy, bigram_baseline,
                                    cloze_vocabulary, download_kjv, encode_cloze,
                                    kjv_cloze, most_frequent_baseline, read_cbt,
                                    write_cbt)
from kerattn.datasets.translation import free_first_width
from kerattn import checks, distribute
from kerattn.recipes.common import (compile_and_fit, interval95, mean_sd, split,
                                    write_results)

PRESET = "base"   # the model's named sizes (kerattn.zoo.presets)
# How kjv_cloze tells nouns and verbs (results.json's meta.kinds): a run
# with another rule measured another question set.
KINDS_RULE = ("verbs and nouns: at least 80% of the word's SemCor-tagged senses "
              "(WordNet's cntlist.rev), else WordNet lists it only as a verb / noun")
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


def prepare(path=None, directory=KJV, max_train=None, max_test=None):
    """The questions, vocabulary, arrays and baselines of the recipe.

    `path`: a CBT-format file (the user's data, the last 10% the test split
    and the 10% before it the validation split); None builds the King
    James Bible questions in `directory` (fetched with `apt-get download`
    when missing), writes them in the CBT format there and reads the test
    split back through the CBT loader.
    """
    if path:
        splits = split(read_cbt(path))
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
        max_train=None, max_test=None, seed=0, strategy=None, verbose=2):
    """`examples/fit.py aoa_reader`: the recipe's method on any data.

    Returns:
        `(model, summary, results, draw)`; `draw(path)` writes the document
        attention. On a torch DDP worker other than rank 0, `results` and
        `draw` are None.
    """
    strategy = strategy or distribute.no_distribution()
    prepared = prepare(data, max_train=max_train or (None if data else 20000),
                       max_test=max_test)
    with strategy.scope():
        model = build(prepared, preset)
        summary = train(model, prepared, epochs, batch_size,
                        learning_rate=learning_rate or 1e-3, strategy=strategy,
                        seed=seed, verbose=verbose)
    if not strategy.is_chief:
        return model, summary, None, None
    evaluated = evaluate(model, prepared)
    results = {"accuracy": evaluated["accuracy"]["all"],
               "accuracy_by_kind": evaluated["accuracy"],
               "test_per_kind": evaluated["test_per_kind"],
               "paired_vs_bigram": evaluated["paired_vs_bigram"],
               "baselines": evaluated["baselines"]}
    return model, summary, results, lambda path: draw(model, prepared, path)


def _parser(out_dir=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--data", default=KJV,
                        help="where the Debian packages are fetched and unpacked")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--minutes", type=float, default=None)
    parser.add_argument("--max-train", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=32,
                        help="questions a step (the paper: 32)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=1,
                        help="train this many seeds (from --seed); report the "
                             "mean and standard deviation over them")
    parser.add_argument("--out", default=out_dir or ".")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite RESULTS.md from results.json, no training")
    distribute.add_arguments(parser)
    return parser


# The flags that name a run's settings: seeds trained with the same settings
# (and question set) are one run, whichever command trained them.
SETTINGS = ("epochs", "minutes", "max_train", "batch_size")


def settings_of(command):
    """The `SETTINGS` of a recorded `command` (`python .../recipe.py FLAGS`)."""
    args = _parser().parse_args(shlex.split(command)[2:])
    return {k: getattr(args, k) for k in SETTINGS}


def _command(settings, seeds):
    """The one command that trains `seeds` with `settings`."""
    parser = _parser()
    flags = "".join(f" --{k.replace('_', '-')} {v:g}" if isinstance(v, float)
                    else f" --{k.replace('_', '-')} {v}"
                    for k, v in settings.items() if v != parser.get_default(k))
    if seeds[0] != 1:
        flags += f" --seed {seeds[0]}"
    if len(seeds) > 1:
        flags += f" --seeds {len(seeds)}"
    return f"python zoo/aoa_reader/recipe.py{flags}"


def _seed_rows(results):
    """The seeds of a recorded results.json, one dict each."""
    if "per_seed" in results:
        return results["per_seed"]
    return [{"seed": results.get("seed", 1),
             "aoa_test_accuracy": results["aoa_test_accuracy"],
             "paired_vs_bigram": results.get("paired_vs_bigram"),
             "train": results["train"]}]


def with_seeds(previous, meta, settings, rows, baselines):
    """results.json after training the seeds `rows` with `settings` on the
    question set `meta` describes.

    Seeds trained before on the same question set with the same settings join
    them (a seed trained again keeps its newest result); results on another
    question set, or with other settings, move to `"earlier"`. The top level
    holds the mean over the seeds: test accuracy per kind
    (`aoa_test_accuracy_sd` their sample deviation), AoA minus bigram per
    kind as `[mean difference, the widest of the seeds' paired 95%
    half-widths]`, and the training summary.
    """
    earlier, seeds = [], {}
    if previous is not None:
        earlier = previous.get("earlier", [])
        previous = {k: v for k, v in previous.items() if k != "earlier"}
        if previous.get("meta", {}).get("kinds") != meta["kinds"]:
            # Another question set: kept whole, its rule named.
            earlier = earlier + [dict(previous, kinds=previous.get("meta", {}).get(
                "kinds", "verbs and nouns: WordNet lists the word only as a "
                         "verb / noun"))]
        elif settings_of(previous.get("command", "python recipe.py")) == settings:
            seeds = {row["seed"]: row for row in _seed_rows(previous)}
        else:
            # The same questions, other settings: kept whole, its command named.
            earlier = earlier + [dict(previous, kinds=f"{meta['kinds']}; "
                                      f"`{previous.get('command', '')}`")]
    seeds.update({row["seed"]: row for row in rows})
    rows = [seeds[k] for k in sorted(seeds)]
    kinds = list(rows[0]["aoa_test_accuracy"])
    results = {"command": _command(settings, [r["seed"] for r in rows]),
               "meta": meta,
               "aoa_test_accuracy": {k: mean_sd([r["aoa_test_accuracy"][k]
                                                 for r in rows], 4)[0] for k in kinds}}
    if all(r.get("paired_vs_bigram") for r in rows):
        results["paired_vs_bigram"] = {
            k: [mean_sd([r["paired_vs_bigram"][k][0] for r in rows], 4)[0],
                max(r["paired_vs_bigram"][k][1] for r in rows)] for k in kinds}
    results["baselines"] = baselines
    trains = [r["train"] for r in rows]
    results["train"] = dict(
        trains[0], **{k: mean_sd([t[k] for t in trains], 4 if k == "final_val_accuracy"
                                 else 1)[0]
                      for k in ("epochs", "minutes", "steps", "final_val_accuracy")})
    if len(rows) > 1:
        results["aoa_test_accuracy_sd"] = {
            k: mean_sd([r["aoa_test_accuracy"][k] for r in rows], 4)[1] for k in kinds}
        results["seeds"] = [r["seed"] for r in rows]
        results["per_seed"] = rows
    else:
        results["seed"] = rows[0]["seed"]
    results["earlier"] = earlier
    return results


def main(argv=None, out_dir=None):
    args = _parser(out_dir).parse_args(argv)
    checks.positive_int("batch_size", args.batch_size)
    checks.positive_int("seeds", args.seeds)
    if args.report_only:
        with open(os.path.join(args.out, "results.json")) as f:
            results = json.load(f)
        write_results(args.out, results, report(results))
        return results
    strategy = distribute.from_arguments(args, "aoa_reader")
    os.makedirs(args.out, exist_ok=True)
    data = prepare(directory=args.data, max_train=args.max_train)
    print("baselines", data["baselines"])
    rows = []
    for seed in range(args.seed, args.seed + args.seeds):
        keras.utils.set_random_seed(seed)
        with strategy.scope():
            model = build(data)
            # Batches shuffled with seed - 1: seed 1 is the run recorded
            # before --seed existed, whose batches were shuffled with 0.
            summary = train(model, data, args.epochs, args.batch_size,
                            minutes=args.minutes, strategy=strategy, seed=seed - 1)
        if not strategy.is_chief:   # torch DDP: rank 0 evaluates and writes
            continue
        if not rows:   # the first seed's model is the one saved
            model.save(os.path.join(args.out, "model.keras"))
        evaluated = evaluate(model, data)
        print(f"seed {seed}: test accuracy {evaluated['accuracy']}", flush=True)
        rows.append({"seed": seed, "aoa_test_accuracy": evaluated["accuracy"],
                     "paired_vs_bigram": evaluated["paired_vs_bigram"],
                     "train": {"epochs": summary["epochs"],
                               "minutes": summary["train_minutes"],
                               "steps": summary["steps"],
                               "batch_size": args.batch_size,
                               "parameters": summary["parameters"],
                               "final_val_accuracy": summary["final_val_accuracy"]}})
    if not strategy.is_chief:
        return None
    questions = data["questions"]
    previous = None
    previous_path = os.path.join(args.out, "results.json")
    if os.path.exists(previous_path):
        with open(previous_path) as f:
            previous = json.load(f)
    meta = {"backend": keras.backend.backend(), "kinds": KINDS_RULE,
            "questions": {k: len(v) for k, v in questions.items()},
            "test_per_kind": evaluated["test_per_kind"],
            "vocabulary": len(data["vocab"]), "preset": PRESET, "sizes": sizes()}
    results = with_seeds(previous, meta, {k: getattr(args, k) for k in SETTINGS},
                         rows, evaluated["baselines"])
    write_results(args.out, results, report(results))
    return results


def difference_intervals(r, baseline):
    """`(kind, AoA - baseline, half-width of its 95% interval)` for each word
    kind and "all", from a results.json of this recipe: the paired interval
    when the results have it (`paired_vs_bigram`), else the two accuracies
    taken as independent."""
    n = r["meta"]["test_per_kind"]
    paired = r.get(f"paired_vs_{baseline}")
    if paired:
        return [(k, *paired[k]) for k in KINDS + ("all",) if k in paired]
    rows = []
    for kind in KINDS + ("all",):
        a, b = r["aoa_test_accuracy"].get(kind), r["baselines"][baseline].get(kind)
        if a is None or b is None or not n.get(kind):
            continue
        half = (interval95(a, n[kind]) ** 2 + interval95(b, n[kind]) ** 2) ** 0.5
        rows.append((kind, a - b, half))
    return rows


def report(r):
    m, t = r["meta"], r["train"]
    rows = [("most frequent candidate in context", r["baselines"]["most_frequent"]),
            ("bigram match, ties by frequency", r["baselines"]["bigram"]),
            ("**AoA Reader** (kerattn.zoo.aoa_reader)", r["aoa_test_accuracy"])]
    lines = [
        "# aoa_reader on King James Bible cloze questions", "",
        f"Measured by `{r.get('command', 'python zoo/aoa_reader/recipe.py')}` "
        f"(backend {m['backend']}, this 2-core CPU). Data: CBT-style questions "
        "built from Debian's bible-kjv (20 context verses, the 21st with one "
        "word blanked, 10 candidates of the same kind from the context; "
        f"{m.get('kinds', 'verbs and nouns: WordNet lists the word only as a verb / noun')}"
        "), split by book (test: "
        "Joshua, Job, Mark, Hebrews; valid: Judges, Luke): "
        f"{m['questions']['train']:,} train / {m['questions']['valid']:,} valid / "
        f"{m['questions']['test']:,} test questions, read back through the CBT "
        "loader.", "",
        "| test accuracy | " + " | ".join(KINDS) + " | all |",
        "|---|" + "---|" * (len(KINDS) + 1)]
    for name, acc in rows:
        lines.append(f"| {name} | " + " | ".join(
            f"{acc.get(k, float('nan')):.3f}" for k in KINDS + ("all",)) + " |")
    seeds = r.get("per_seed", [])
    if seeds:
        sd = r["aoa_test_accuracy_sd"]
        lines += ["", f"The AoA row is the mean of {len(seeds)} seeds "
                  f"({', '.join(str(x['seed']) for x in seeds)}); its standard "
                  "deviation over them: " + ", ".join(
                      f"{k} {sd[k]:.3f}" for k in KINDS + ("all",) if k in sd) + ".",
                  "", "| seed | " + " | ".join(KINDS) + " | all | steps | minutes |",
                  "|---|" + "---|" * (len(KINDS) + 3)]
        for x in seeds:
            acc = x["aoa_test_accuracy"]
            lines.append(f"| {x['seed']} | " + " | ".join(
                f"{acc.get(k, float('nan')):.3f}" for k in KINDS + ("all",))
                + f" | {x['train']['steps']:,} | {x['train']['minutes']} |")
    lines += [
        "", "Test questions per kind: " + ", ".join(
            f"{k} {m['test_per_kind'].get(k, 0):,}" for k in KINDS) + ". Random is 0.100.",
        "", "AoA minus the bigram baseline, with the 95% interval of the "
        "difference "
        + (f"(the mean over the {len(seeds)} seeds, with the widest of the "
           "seeds' own paired intervals: both answer the same questions, 1.96 x "
           "the standard deviation of the per-question difference / sqrt(n)): "
           if seeds else
           "(paired: both answer the same questions, 1.96 x the standard "
           "deviation of the per-question difference / sqrt(n)): "
           if r.get("paired_vs_bigram") else
           "(two accuracies on the same questions, taken as independent: a "
           "wider interval than a paired test's): ")
        + ", ".join(f"{k} {d:+.3f} ± {h:.3f}" for k, d, h in
                    difference_intervals(r, "bigram")) + ". A kind is ahead "
        "of the baseline where its interval excludes 0.",
        "", "DATA.md's baselines (its own construction): most frequent 0.344 / "
        "0.292 / 0.239 / 0.372, bigram 0.511 / 0.450 / 0.356 / 0.440 (names / "
        "nouns / verbs / prepositions). The recipe recomputes both on this test "
        "set (above); the AoA row is to be read against those.", "",
        f"Training{' (a seed, the mean)' if seeds else ''}: {t['steps']:,.0f} "
        f"steps of {t.get('batch_size', 32)} questions "
        f"({t['steps'] * t.get('batch_size', 32) / m['questions']['train']:.1f} "
        f"passes over the training "
        f"questions"
        + ("; the time budget ended it" if "--minutes" in r.get("command", "--minutes")
           else "") + "), "
        f"{t['minutes']} min, {t['parameters']:,} parameters, Adam 1e-3, clipnorm "
        f"5 (as the paper), vocabulary {m['vocabulary']:,} lower-cased words; "
        f"last validation accuracy {t['final_val_accuracy']:.3f}.", "",
        f"Sizes: `{m['sizes']}` (the paper: 384-d embeddings, 256 GRU units).", ""]
    if r.get("earlier"):
        lines += ["## Earlier runs, on other question sets or settings", "",
                  "| question set | test questions (names / nouns / verbs / "
                  "prepositions) | AoA | bigram | AoA minus bigram, 95% |",
                  "|---|---|---|---|---|"]
        for e in r["earlier"]:
            n = e["meta"]["test_per_kind"]
            lines.append(
                f"| {e['kinds']} | " + " / ".join(f"{n.get(k, 0):,}" for k in KINDS)
                + " | " + " / ".join(f"{e['aoa_test_accuracy'].get(k, float('nan')):.3f}"
                                     for k in KINDS + ("all",))
                + " | " + " / ".join(f"{e['baselines']['bigram'].get(k, float('nan')):.3f}"
                                     for k in KINDS + ("all",))
                + " | " + ", ".join(f"{k} {d:+.3f} ± {h:.3f}"
                                    for k, d, h in difference_intervals(e, "bigram"))
                + " |")
        lines += ["", "Accuracies are names / nouns / verbs / prepositions / all.", ""]
    return "\n".join(lines)
