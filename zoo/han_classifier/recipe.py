"""HAN (Yang et al., 2016) on Debian package descriptions, topical-10.

    apt-get update -o Acquire::Languages=en     # once: the English descriptions
    python zoo/han_classifier/recipe.py

Writes RESULTS.md, results.json and highlight.png next to this file.

The task: `kerattn.recipes.classification` builds the set from apt's lists,
computes the TF-IDF + logistic-regression baseline on the same split and
trains the HAN with early stopping; a run is named by its settings
(`DEFAULTS`' keys). results.json keeps every run under `runs`, its top
level the run of the defaults (or the newest, until the defaults ran).
"""

import os
import string
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import runner  # noqa: E402  (zoo/runner.py)
from kerattn.recipes.classification import PATIENCE  # noqa: E402
from kerattn.recipes.common import interval95  # noqa: E402

# The settings that name a run, at the recipe's defaults.
DEFAULTS = {"embeddings": "lsa", "schedule": "two-stage", "patience": PATIENCE,
            "epochs": 30, "ema": 0.0}


def options(p):
    p.add_argument("--embeddings", choices=["lsa", "random"])
    p.add_argument("--schedule", choices=["two-stage", "fine-tune"],
                   help="LSA embeddings: fixed first, then fine-tuned; or "
                   "fine-tuned from the start")
    p.add_argument("--patience", type=int,
                   help="epochs without a better validation accuracy before "
                   "a stage stops (it keeps its best weights)")
    p.add_argument("--ema", type=float,
                   help="average the weights with this momentum (Polyak "
                   "averaging; 0: off)")


def check(args, parser):
    from kerattn import checks

    checks.rate("ema", args.ema)   # a momentum in [0, 1); 0 is off
    checks.positive_int("patience", args.patience)


def prepare(args):
    from kerattn.recipes import classification

    data = classification.prepare()
    print("baselines", data["baselines"])
    return data


def train_seed(args, data, seed, strategy, keep):
    from kerattn.recipes import classification

    with strategy.scope():
        model = classification.build(data, args.preset)
        summary = classification.train(
            model, data, args.epochs, args.embeddings, args.schedule,
            minutes=args.minutes, patience=args.patience, strategy=strategy,
            seed=seed, ema=args.ema)
    if not strategy.is_chief:
        return None
    evaluated = classification.evaluate(model, data)
    if keep:
        from kerattn import atomic_path

        with atomic_path(os.path.join(keep, "model.keras")) as path:
            model.save(path)
        try:
            classification.draw(model, data, os.path.join(keep, "highlight.png"))
        except ImportError:   # no matplotlib
            pass
    return {"accuracy": evaluated["accuracy"],
            "best_valid_accuracy": summary["best_val_accuracy"],
            "epochs": summary["epochs"], "minutes": summary["train_minutes"],
            "parameters": summary["parameters"], "schedule": summary["schedule"],
            "baselines": evaluated["baselines"],
            "test_documents": evaluated["test_documents"]}


def settings(args):
    named = {k: getattr(args, k) for k in DEFAULTS}
    if args.preset != "base":
        named["preset"] = args.preset
    return named


# -----------------------------------------------------------------------------
# results.json


def record(saved, run):
    """Every run stays under `runs`, one per distinct settings; this
    command's seeds join the run of its settings."""
    from kerattn.recipes import classification

    runs, joined = runner.join_run(saved, run, aggregate, commands=False)
    args = run.args
    meta = {"backend": runner.backend(), "embeddings": args.embeddings,
            **classification.describe(run.data), "preset": args.preset,
            "sizes": classification.sizes(args.preset)}
    return runner.with_defaults_on_top(runs, joined, DEFAULTS, meta=meta)


def aggregate(rows):
    """One run from its seeds: the test accuracy (mean, and `_sd` over
    several seeds), the best validation accuracy, the first seed's
    baselines, the means of epochs and minutes; `per_seed` keeps the rows."""
    first = rows[0]
    results = {
        "han_test_accuracy": runner.mean_of(rows, "accuracy", 4),
        "han_best_valid_accuracy": runner.mean_of(rows, "best_valid_accuracy", 4),
        "baselines": first["baselines"],
        "train": {"epochs": runner.mean_of(rows, "epochs", 1),
                  "minutes": runner.mean_of(rows, "minutes", 2),
                  "schedule": first["schedule"], "parameters": first["parameters"]}}
    if len(rows) > 1:
        results["han_test_accuracy_sd"] = runner.mean_sd(
            [r["accuracy"] for r in rows], 4)[1]
    return dict(results, **runner.seed_fields(rows))


# -----------------------------------------------------------------------------
# RESULTS.md

PAGE = string.Template("""\
# han_classifier on Debian topical-10

Measured by `$command` on $machine. Data: Debian \
bookworm long package descriptions, one per source package, labelled by \
Section (utils, science, net, devel, admin, games, x11, sound, misc, text); \
split by a hash of the source name: $train train / $valid valid / $test test \
documents.

| model | test accuracy |
|---|---|
| majority class | $majority |
| TF-IDF + logistic regression (computed by the recipe) | $tfidf |
$han

$spread

$targets

Training: $epochs epochs in all$a_seed (early stopping on validation \
accuracy, patience $patience, per stage; best $best), $minutes min$a_seed, \
$parameters parameters, Adam (the paper used SGD with momentum)$ema. \
Embeddings: $embeddings, schedule $schedule (two-stage: fixed while the rest \
trains at 1e-3, then everything at 2e-4) (LSA: a $dim-d truncated SVD of \
TF-IDF over $unlabelled unlabelled descriptions of training-split source \
packages, all sections, where the paper used word2vec on its corpora), \
vocabulary $vocabulary words (seen at least 3 times in that text), documents \
cut to $max_sentences sentences of $max_words words.

Sizes: `$sizes`.

`highlight.png`: word and sentence weights on a test document.
$runs""")

# The recipe's aim: the mean test accuracy of 3 seeds.
TARGET, TARGET_SEEDS = 0.75, 3

RUNS = """
## What each change bought

Each row is one setting of this recipe (`--embeddings`, `--schedule`, \
`--patience`, `--epochs`, `--ema`), on the same split; the table above is the \
row of the recipe's defaults.

"""


def render(r, folder=None):
    m, d, settings = r["meta"], r["meta"]["documents"], r["settings"]
    seeds = r.get("seeds", [r.get("seed")])
    accuracy = r["han_test_accuracy"]
    interval = interval95(accuracy, d["test"])
    if len(seeds) > 1:
        han = (f"| **HAN** (kerattn.zoo.han_classifier), mean ± sd of {len(seeds)} "
               f"seeds | **{runner.shown(r, 'han_test_accuracy', 3)}** |")
        per_seed = ", ".join(f"seed {x['seed']}: {x['accuracy']:.3f}"
                             for x in r["per_seed"])
        spread = (f"Per seed: {per_seed}. One run's 95% interval on {d['test']:,} "
                  f"test documents is about ± {interval:.3f}; every seed sees "
                  "the same split and baseline.")
    else:
        han = f"| **HAN** (kerattn.zoo.han_classifier) | **{accuracy:.3f}** |"
        spread = (f"One seed ({seeds[0]}); its 95% interval on {d['test']:,} test "
                  f"documents is ± {interval:.3f}.")
    tfidf = r["baselines"]["tfidf_logistic_regression"]
    targets = (f"Targets: above the TF-IDF baseline, and {TARGET} as the mean "
               f"of {TARGET_SEEDS} seeds. " + (
                   f"Here {accuracy:.4f}: "
                   + ("above" if accuracy > tfidf else "not above")
                   + f" the baseline's {tfidf:.4f}, "
                   + ("at or above" if accuracy >= TARGET else "below")
                   + f" {TARGET}." if len(seeds) >= TARGET_SEEDS else
                   f"Not scored: {runner.plural(len(seeds), 'seed')}."))
    ema = (f", weights averaged with momentum {settings['ema']} (Polyak averaging: "
           "validation, early stopping and the result use the average)"
           if settings.get("ema") else "")
    return PAGE.substitute(
        command=runner.command_for(TASK, settings, seeds),
        machine=runner.machines(r.get("per_seed"), m["backend"]),
        train=f"{d['train']:,}", valid=f"{d['valid']:,}", test=f"{d['test']:,}",
        majority=f"{r['baselines']['majority_class']:.3f}",
        tfidf=f"{tfidf:.3f}", targets=targets,
        han=han, spread=spread, epochs=r["train"]["epochs"],
        a_seed=" a seed" if len(seeds) > 1 else "", patience=settings["patience"],
        best=f"{r['han_best_valid_accuracy']:.3f}", minutes=r["train"]["minutes"],
        parameters=f"{r['train']['parameters']:,}", ema=ema,
        embeddings=settings["embeddings"], schedule=r["train"]["schedule"],
        dim=m["sizes"]["embedding_dim"], unlabelled=f"{m['unlabelled_texts']:,}",
        vocabulary=f"{m['vocabulary']:,}", max_sentences=m["max_sentences"],
        max_words=m["max_words"], sizes=m["sizes"],
        runs=f"{RUNS}{runs_table(r)}\n" if r.get("runs") else "")


def run_name(settings):
    return (f"{settings['embeddings']} embeddings, {settings['schedule']}, "
            f"patience {settings['patience']}, at most {settings['epochs']} "
            "epochs a stage"
            + (f", weights averaged (EMA {settings['ema']})"
               if settings.get("ema") else "")
            + (f", preset {settings['preset']}" if "preset" in settings else ""))


def runs_table(r):
    """A row for every recorded run (results.json's `runs`)."""
    return runner.table(
        ["run", "seeds", "test accuracy, mean ± sd", "per seed", "epochs a seed",
         "minutes a seed"],
        [[run_name(run["settings"]), len(run["per_seed"]),
          runner.shown(run, "han_test_accuracy", 3),
          ", ".join(f"{x['accuracy']:.3f}" for x in run["per_seed"]),
          run["train"]["epochs"], run["train"]["minutes"]] for run in r["runs"]])


TASK = runner.Task(
    name="han_classifier", about=__doc__.split("\n")[0], options=options,
    defaults=dict(DEFAULTS, seed=1), check=check, prepare=prepare,
    train_seed=train_seed, settings=settings, record=record, render=render,
    data_sizes=lambda data: {"test_documents": len(data["y"]["test"])})

if __name__ == "__main__":
    runner.main(TASK, __file__)
