"""The self-attentive sentence embedding (Lin et al., 2017) on Debian topical-10.

    apt-get update -o Acquire::Languages=en     # once: the English descriptions
    python zoo/self_attentive_classifier/recipe.py                # penalty 0.1
    python zoo/self_attentive_classifier/recipe.py --penalty 0    # without it
    python zoo/self_attentive_classifier/recipe.py --penalty 1    # the paper's

Writes RESULTS.md, results.json and hops.png next to this file.

The task is `han_classifier`'s (`kerattn.recipes.classification`: the same
split, vocabulary, 200-d LSA word vectors, two stages and early stopping);
the model reads each document's words in one row (`classification.flatten`)
through a BiLSTM, `r` attention hops and a ReLU layer. A run is named by
its settings (`DEFAULTS`' keys); each records how alike its hops are on the
test documents (`classification.hop_overlap`), the penalty's effect. The
page sets the HAN (zoo/han_classifier/results.json) and TF-IDF + logistic
regression beside it.
"""

import os
import string
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import runner  # noqa: E402  (zoo/runner.py)

# The settings that name a run, at the recipe's defaults: the penalty's
# coefficient is kerattn.recipes.classification.SELF_ATTENTIVE_PENALTY
# (0.1, not the paper's 1; RESULTS.md has the three runs).
DEFAULTS = {"penalty": 0.1, "embeddings": "lsa", "patience": 3, "epochs": 30}
MODEL = "self_attentive_classifier"


def options(p):
    p.add_argument("--penalty", type=float,
                   help="the coefficient of ||A A^T - I||_F^2 (Lin et al. "
                   "2017, eq. 8); 0: off")
    p.add_argument("--embeddings", choices=["lsa", "random"])
    p.add_argument("--patience", type=int,
                   help="epochs without a better validation accuracy before "
                   "a stage stops (it keeps its best weights)")
    p.add_argument("--max-train", type=int, default=None,
                   help="train on the first N training documents (a smoke run)")


def check(args, parser):
    from kerattn import checks

    checks.number("penalty", args.penalty, low=0.0)
    checks.positive_int("patience", args.patience)


def prepare(args):
    from kerattn.recipes import classification

    data = classification.prepare(max_train=args.max_train)
    print("baselines", data["baselines"])
    return data


def train_seed(args, data, seed, strategy, keep):
    from kerattn.recipes import classification

    with strategy.scope():
        model = classification.build(data, args.preset, model=MODEL,
                                     penalty=args.penalty)
        summary = classification.train(
            model, data, args.epochs, args.embeddings, minutes=args.minutes,
            patience=args.patience, strategy=strategy, seed=seed)
    if not strategy.is_chief:
        return None
    evaluated = classification.evaluate(model, data)
    if keep:
        from kerattn import atomic_path

        with atomic_path(os.path.join(keep, "model.keras")) as path:
            model.save(path)
        try:
            classification.draw_hops(model, data, os.path.join(keep, "hops.png"))
        except ImportError:   # no matplotlib
            pass
    return {"accuracy": evaluated["accuracy"],
            "best_valid_accuracy": summary["best_val_accuracy"],
            "hops": classification.hops(model, data),
            "epochs": summary["epochs"], "minutes": summary["train_minutes"],
            "parameters": summary["parameters"], "baselines": evaluated["baselines"],
            "test_documents": evaluated["test_documents"]}


def settings(args):
    named = {k: getattr(args, k) for k in DEFAULTS}
    if args.preset != "base":
        named["preset"] = args.preset
    if args.max_train:
        named["max_train"] = args.max_train
    return named


# -----------------------------------------------------------------------------
# results.json


def record(saved, run):
    """Every run stays under `runs`, one per distinct settings; this
    command's seeds join the run of its settings."""
    from kerattn.recipes import classification

    runs, joined = runner.join_run(saved, run, aggregate, commands=False)
    args = run.args
    meta = {"backend": runner.backend(), **classification.describe(run.data),
            "max_tokens": classification.MAX_TOKENS, "preset": args.preset,
            "sizes": _sizes(args.preset)}
    return runner.with_defaults_on_top(runs, joined, DEFAULTS, meta=meta)


def _sizes(preset):
    """The builder's sizes at `preset`; the penalty is a setting of the run."""
    from kerattn.zoo import presets

    named = presets(MODEL)
    sizes = dict(named["paper"], **named[preset])
    del sizes["penalty"]
    return sizes


def aggregate(rows):
    """One run from its seeds: test accuracy, best validation accuracy and
    the hops' overlap and penalty (mean, and `_sd` over several seeds), the
    first seed's baselines, the means of epochs and minutes."""
    results = runner.figures_over(rows, ("accuracy", "best_valid_accuracy"), 4)
    results.update(runner.figures_over(
        rows, ("overlap", "penalty"), 4, lambda row, name: row["hops"][name]))
    results.update(baselines=rows[0]["baselines"],
                   train={"epochs": runner.mean_of(rows, "epochs", 1),
                          "minutes": runner.mean_of(rows, "minutes", 2),
                          "parameters": rows[0]["parameters"]})
    return dict(results, **runner.seed_fields(rows))


# -----------------------------------------------------------------------------
# RESULTS.md

PAGE = string.Template("""\
# self_attentive_classifier on Debian topical-10

Measured by `$command` on $machine. Data: `han_classifier`'s \
(zoo/han_classifier/RESULTS.md): Debian bookworm long package descriptions \
labelled by Section, $train train / $valid valid / $test test documents; \
each document's first $max_tokens words (of its first $max_sentences \
sentences of $max_words words) in one row.

| model | test accuracy |
|---|---|
| majority class | $majority |
| TF-IDF + logistic regression (computed by the recipe) | $tfidf |
| HAN (zoo/han_classifier, its recipe's defaults) | $han |
| **BiLSTM + SelfAttentiveEmbedding** (kerattn.zoo.self_attentive_classifier), penalty $penalty | **$accuracy** |

$spread

Training: $epochs epochs in all$a_seed (early stopping on validation \
accuracy, patience $patience, per stage; best $best), $minutes min$a_seed, \
$parameters parameters, Adam, the HAN recipe's two stages (the $dim-d LSA \
word vectors fixed while the rest trains at 1e-3, then everything at 2e-4; \
the paper used word2vec and SGD). Sizes: `$sizes`.

## The penalty and how distinct the hops are

Lin et al. (2017, section 4.3) find that without the penalty the $hops \
hops collapse onto the same few words. The recipe's coefficient is 0.1, \
not the paper's 1: the penalty starts near $hops_less_one (all hops alike) \
against a cross-entropy near 2, and at 1 it swamps the class signal while \
it falls, so early stopping keeps an early epoch's weights. Each row is one run of this recipe \
on the same split; *overlap* is the weight two hops share on a test \
document (`sum_j min(a_ij, a_kj)`: 0 for hops on different words, 1 for \
the same hop), averaged over the pairs of hops and the documents; *P* is \
the mean `||A A^T - I||_F^2` (eq. 8) on the test documents.

$runs

`hops.png`: the $hops rows on three test documents the model classifies \
correctly (the run of the defaults, its first seed; each map scaled to its \
largest weight).
""")


def _han():
    han = runner.load(os.path.join(runner.ZOO, "han_classifier"))
    if not han:
        return "-"
    seeds = han.get("seeds", [han.get("seed")])
    return (f"{runner.shown(han, 'han_test_accuracy', 3)} "
            f"({runner.plural(len(seeds), 'seed')})")


def run_name(settings):
    return ", ".join(f"{k} {v}" for k, v in settings.items())


def render(r, folder=None):
    m, d, settings = r["meta"], r["meta"]["documents"], r["settings"]
    seeds = r.get("seeds", [r.get("seed")])
    if len(seeds) > 1:
        per_seed = ", ".join(f"seed {x['seed']}: {x['accuracy']:.3f}"
                             for x in r["per_seed"])
        spread = f"Mean ± sd of {len(seeds)} seeds; per seed: {per_seed}."
    else:
        spread = f"One seed ({seeds[0]}), labelled so."
    rows = [[run_name(run["settings"]), len(run["per_seed"]),
             runner.shown(run, "accuracy", 3), runner.shown(run, "overlap", 3),
             runner.shown(run, "penalty", 2), run["train"]["epochs"],
             run["train"]["minutes"]]
            for run in sorted(r["runs"], key=lambda run: run["settings"]["penalty"])]
    return PAGE.substitute(
        command=runner.command_for(TASK, settings, seeds),
        machine=runner.machines(r.get("per_seed"), m["backend"]),
        train=f"{d['train']:,}", valid=f"{d['valid']:,}", test=f"{d['test']:,}",
        max_tokens=m["max_tokens"], max_sentences=m["max_sentences"],
        max_words=m["max_words"],
        majority=f"{r['baselines']['majority_class']:.3f}",
        tfidf=f"{r['baselines']['tfidf_logistic_regression']:.3f}",
        han=_han(), penalty=f"{settings['penalty']:g}",
        accuracy=runner.shown(r, "accuracy", 3), spread=spread,
        epochs=r["train"]["epochs"], a_seed=" a seed" if len(seeds) > 1 else "",
        patience=settings["patience"], best=runner.shown(r, "best_valid_accuracy", 3),
        minutes=r["train"]["minutes"], parameters=f"{r['train']['parameters']:,}",
        dim=m["sizes"]["embedding_dim"], sizes=m["sizes"], hops=m["sizes"]["hops"],
        hops_less_one=m["sizes"]["hops"] - 1,
        runs=runner.table(["run", "seeds", "test accuracy", "overlap", "P",
                           "epochs a seed", "minutes a seed"], rows))


TASK = runner.Task(
    name=MODEL, about=__doc__.split("\n")[0], options=options,
    defaults=dict(DEFAULTS, seed=1), check=check, prepare=prepare,
    train_seed=train_seed, settings=settings, record=record, render=render,
    data_sizes=lambda data: {"test_documents": len(data["y"]["test"])})

if __name__ == "__main__":
    runner.main(TASK, __file__)
