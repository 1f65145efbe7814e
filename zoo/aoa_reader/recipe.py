"""AoA Reader (Cui et al., 2017) on King James Bible cloze questions.

    python zoo/aoa_reader/recipe.py --minutes 25

Fetches bible-kjv, bible-kjv-text and wordnet-base with apt-get download
(into ~/.kerattn/kjv), writes the questions in the CBT format there, and
RESULTS.md / results.json next to this file.

The task: `kerattn.recipes.reading` builds the questions, the most-frequent
and bigram baselines, trains the reader and scores it per word kind. A run
is named by its `SETTINGS` on one question set (`KINDS_RULE`); results.json
holds it at the top level, and a run of other settings or questions moves
to `earlier`, whole.
"""

import collections
import os
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import runner  # noqa: E402  (zoo/runner.py)
from kerattn.datasets.cloze import KINDS  # noqa: E402
from kerattn.recipes.common import interval95  # noqa: E402

# How kjv_cloze tells nouns and verbs (results.json's meta.kinds): a run
# with another rule measured another question set.
KINDS_RULE = ("verbs and nouns: at least 80% of the word's SemCor-tagged senses "
              "(WordNet's cntlist.rev), else WordNet lists it only as a verb / noun")
# The flags that name a run's settings.
SETTINGS = ("epochs", "minutes", "max_train", "batch_size", "preset")


def options(p):
    p.add_argument("--data", default=os.path.expanduser("~/.kerattn/kjv"),
                   help="where the Debian packages are fetched and unpacked")
    p.add_argument("--max-train", type=int, default=None)
    p.add_argument("--batch-size", type=int, default=32,
                   help="questions a step (the paper: 32)")


def check(args, parser):
    from kerattn import checks

    checks.positive_int("batch_size", args.batch_size)


def prepare(args):
    from kerattn.recipes import reading

    data = reading.prepare(directory=args.data, max_train=args.max_train)
    print("baselines", data["baselines"])
    return data


def train_seed(args, data, seed, strategy, keep):
    from kerattn.recipes import reading

    with strategy.scope():
        model = reading.build(data, args.preset)
        # Batches are shuffled with seed - 1 (seed 1's are the first run's).
        summary = reading.train(model, data, args.epochs, args.batch_size,
                                minutes=args.minutes, strategy=strategy,
                                seed=seed - 1)
    if not strategy.is_chief:
        return None
    if keep:
        from kerattn import atomic_path

        with atomic_path(os.path.join(keep, "model.keras")) as path:
            model.save(path)
    evaluated = reading.evaluate(model, data)
    return {"aoa_test_accuracy": evaluated["accuracy"],
            "paired_vs_bigram": evaluated["paired_vs_bigram"],
            "train": {"epochs": summary["epochs"], "minutes": summary["train_minutes"],
                      "steps": summary["steps"], "batch_size": args.batch_size,
                      "parameters": summary["parameters"],
                      "final_val_accuracy": summary["final_val_accuracy"]}}


def settings(args):
    return {k: getattr(args, k) for k in SETTINGS}


# -----------------------------------------------------------------------------
# results.json


def record(saved, run):
    """The seeds recorded on the same questions with the same settings join
    this command's; a recorded run of other questions or settings moves to
    `earlier`, whole, its question rule (and command) named."""
    meta = _meta(run)
    earlier, rows = [], run.rows
    if saved is not None:
        earlier = saved.pop("earlier", [])
        if saved["meta"].get("kinds") != meta["kinds"]:
            earlier = earlier + [dict(saved, kinds=saved["meta"].get("kinds"))]
        elif settings_of(saved["command"]) == run.settings:
            rows = runner.join_seeds(saved["per_seed"], run.rows)
        else:
            earlier = earlier + [dict(saved, kinds=f"{meta['kinds']}; "
                                      f"`{saved['command']}`")]
    return dict(aggregate(rows, meta, run.settings, run.data), earlier=earlier)


def _meta(run):
    """The question set, its counts per kind and the model's sizes."""
    from kerattn.recipes import reading

    import keras

    questions = run.data["questions"]
    per_kind = collections.Counter()
    for q in questions["test"]:
        per_kind.update(([q["kind"]] if "kind" in q else []) + ["all"])
    return {"backend": keras.backend.backend(), "kinds": KINDS_RULE,
            "questions": {k: len(v) for k, v in questions.items()},
            "test_per_kind": dict(per_kind), "vocabulary": len(run.data["vocab"]),
            "preset": run.args.preset, "sizes": reading.sizes(run.args.preset)}


def aggregate(rows, meta, settings, data):
    """One run from its seeds: the mean test accuracy per kind (and
    `aoa_test_accuracy_sd` over several seeds), AoA minus bigram per kind as
    `[mean difference, the widest of the seeds' paired 95% half-widths]`,
    the baselines and the mean training summary; `per_seed` keeps the rows."""
    kinds = list(rows[0]["aoa_test_accuracy"])

    def per_kind(k):
        return [r["aoa_test_accuracy"][k] for r in rows]

    results = {"command": runner.command_for(TASK, settings, [r["seed"] for r in rows]),
               "meta": meta,
               "aoa_test_accuracy": {k: runner.mean_sd(per_kind(k), 4)[0]
                                     for k in kinds},
               "paired_vs_bigram": {
                   k: [runner.mean_sd([r["paired_vs_bigram"][k][0] for r in rows], 4)[0],
                       max(r["paired_vs_bigram"][k][1] for r in rows)] for k in kinds},
               "baselines": {b: {k: round(v, 4) for k, v in r.items()}
                             for b, r in data["baselines"].items()}}
    trains = [r["train"] for r in rows]
    results["train"] = dict(trains[0], **{
        k: runner.mean_of(trains, k, 4 if k == "final_val_accuracy" else 1)
        for k in ("epochs", "minutes", "steps", "final_val_accuracy")})
    if len(rows) > 1:
        results["aoa_test_accuracy_sd"] = {k: runner.mean_sd(per_kind(k), 4)[1]
                                           for k in kinds}
    return dict(results, **runner.seed_fields(rows))


def settings_of(command):
    """The `SETTINGS` of a recorded `command` (`python .../recipe.py FLAGS`)."""
    return settings(runner.parser(TASK, ".").parse_args(shlex.split(command)[2:]))


# -----------------------------------------------------------------------------
# RESULTS.md


def difference_intervals(r, baseline):
    """`(kind, AoA - baseline, half-width of its 95% interval)` for each word
    kind and "all": the paired interval when the record has it
    (`paired_vs_bigram`), else the two accuracies taken as independent."""
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


def _accuracies(acc, sep=" | "):
    return sep.join(f"{acc.get(k, float('nan')):.3f}" for k in KINDS + ("all",))


def _differences(r):
    return ", ".join(f"{k} {d:+.3f} ± {h:.3f}"
                     for k, d, h in difference_intervals(r, "bigram"))


def render(r, folder=None):
    m, t = r["meta"], r["train"]
    seeds = r["per_seed"] if "seeds" in r else []
    rows = [("most frequent candidate in context", r["baselines"]["most_frequent"]),
            ("bigram match, ties by frequency", r["baselines"]["bigram"]),
            ("**AoA Reader** (kerattn.zoo.aoa_reader)", r["aoa_test_accuracy"])]
    q = m["questions"]
    lines = [
        "# aoa_reader on King James Bible cloze questions", "",
        f"Measured by `{r['command']}` on "
        f"{runner.machines(r.get('per_seed'), m['backend'])}. "
        "Data: CBT-style questions built from Debian's bible-kjv (20 context "
        "verses, the 21st with one word blanked, 10 candidates of the same kind "
        f"from the context; {m['kinds']}), split by book (test: Joshua, Job, Mark, "
        f"Hebrews; valid: Judges, Luke): {q['train']:,} train / {q['valid']:,} "
        f"valid / {q['test']:,} test questions, read back through the CBT loader.",
        "", runner.table(["test accuracy", *KINDS, "all"],
                         [[name, _accuracies(acc)] for name, acc in rows])]
    if seeds:
        sd = r["aoa_test_accuracy_sd"]
        lines += ["", f"The AoA row is the mean of {len(seeds)} seeds "
                  f"({', '.join(str(x['seed']) for x in seeds)}); its standard "
                  "deviation over them: " + ", ".join(
                      f"{k} {sd[k]:.3f}" for k in KINDS + ("all",) if k in sd) + ".",
                  "", runner.table(
                      ["seed", *KINDS, "all", "steps", "minutes"],
                      [[x["seed"], _accuracies(x["aoa_test_accuracy"]),
                        f"{x['train']['steps']:,}", x["train"]["minutes"]]
                       for x in seeds])]
    if seeds:
        interval = (f"(the mean over the {len(seeds)} seeds, with the widest of the "
                    "seeds' own paired intervals: both answer the same questions, "
                    "1.96 x the standard deviation of the per-question difference "
                    "/ sqrt(n)): ")
    else:
        interval = ("(paired: both answer the same questions, 1.96 x the standard "
                    "deviation of the per-question difference / sqrt(n)): ")
    passes = t["steps"] * t["batch_size"] / q["train"]
    lines += [
        "", "Test questions per kind: " + ", ".join(
            f"{k} {m['test_per_kind'].get(k, 0):,}" for k in KINDS) + ". Random is 0.100.",
        "", "AoA minus the bigram baseline, with the 95% interval of the difference "
        + interval + _differences(r) + ". A kind is ahead of the baseline where "
        "its interval excludes 0.",
        "", "The recipe computes both baselines on this test set (above); the "
        "AoA row is read against those.", "",
        f"Training{' (a seed, the mean)' if seeds else ''}: {t['steps']:,.0f} "
        f"steps of {t['batch_size']} questions ({passes:.1f} passes over the "
        "training questions"
        + ("; the time budget ended it" if "--minutes" in r["command"] else "")
        + f"), {t['minutes']} min, {t['parameters']:,} parameters, Adam 1e-3, "
        f"clipnorm 5 (as the paper), vocabulary {m['vocabulary']:,} lower-cased "
        f"words; last validation accuracy {t['final_val_accuracy']:.3f}.", "",
        f"Sizes: `{m['sizes']}` (the paper: 384-d embeddings, 256 GRU units).", ""]
    if r.get("earlier"):
        lines += ["## Earlier runs, on other question sets or settings", "",
                  runner.table(
                      ["question set", "test questions (names / nouns / verbs / "
                       "prepositions)", "AoA", "bigram", "AoA minus bigram, 95%"],
                      [[e["kinds"], " / ".join(f"{e['meta']['test_per_kind'].get(k, 0):,}"
                                               for k in KINDS),
                        _accuracies(e["aoa_test_accuracy"], " / "),
                        _accuracies(e["baselines"]["bigram"], " / "), _differences(e)]
                       for e in r["earlier"]]),
                  "", "Accuracies are names / nouns / verbs / prepositions / all.", ""]
    return "\n".join(lines)


TASK = runner.Task(
    name="aoa_reader", about=__doc__.split("\n")[0], options=options,
    defaults=dict(epochs=3, seed=1), check=check, prepare=prepare,
    train_seed=train_seed, settings=settings, record=record, render=render)

if __name__ == "__main__":
    runner.main(TASK, __file__)
