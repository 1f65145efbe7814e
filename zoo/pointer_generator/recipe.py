"""The pointer-generator (See et al., 2017) on Debian descriptions -> synopses.

    apt-get update -o Acquire::Languages=en     # once: the English descriptions
    python zoo/pointer_generator/recipe.py --seeds 3

Writes RESULTS.md, results.json and attention.png next to this file.

The task: `kerattn.recipes.summarisation` builds the set from apt's lists
(split by source package, duplicates and near duplicates removed), scores
the lead baselines, then for each seed trains the rows of See et al.'s
Table 1 under one budget: the attention baseline (`copy=False`), the
pointer-generator, and the pointer-generator + coverage (the
pointer-generator's weights trained a short final phase with the coverage
loss, as the paper does), beside the phase's control (the same batches
without coverage). Each is scored with ROUGE on beam-search summaries of
the test split, decoded with the minimum length and length normalisation
it scores best with on the validation split (and with the plain search),
beside the copy, OOV and repeated-trigram figures of the paper's section
7.
"""

import os
import string
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import runner  # noqa: E402  (zoo/runner.py)
import user_split  # noqa: E402  (zoo/user_split.py)

# The settings that name a run, at the recipe's defaults: each model trains
# `epochs` epochs (`minutes` caps them, off by default); coverage then
# trains `coverage_steps` batches from the pointer-generator's weights.
# Each model's summaries are decoded with the minimum length and length
# normalisation it scores best with on the validation split ("tuned",
# `summarisation.tune_length`), or with the ones given.
DEFAULTS = {"preset": "small", "epochs": 2, "minutes": None, "coverage_steps": 200,
            "vocab_size": 10000, "max_source": 72, "beam_width": 4,
            "learning_rate": 2e-3, "min_length": "tuned",
            "length_penalty": "tuned"}
# The rows of Table 1, in order: results.json key, name, builder flags;
# and the control of the coverage phase: the pointer-generator trained the
# phase's batches without coverage (the phase's own rows, from the same
# seed), which separates coverage's effect from that of the extra batches.
MODELS = (("attention", "attention baseline (`copy=False`)", {"copy": False}),
          ("pointer_generator", "+ pointer-generator", {"copy": True}),
          ("plain_phase", "+ pointer-generator, the phase without coverage",
           {"copy": True, "coverage": False}),
          ("coverage", "+ pointer-generator + coverage",
           {"copy": True, "coverage": True}))
# See et al. (2017), Table 1: ROUGE F1 on CNN/Daily Mail (test).
PAPER = {"lead-3 baseline": (40.34, 17.70, 36.57),
         "seq2seq + attention baseline (50k vocabulary)": (31.33, 11.81, 28.83),
         "pointer-generator": (36.44, 15.66, 33.42),
         "pointer-generator + coverage": (39.53, 17.28, 36.38)}


def options(p):
    p.add_argument("--coverage-steps", type=int,
                   help="batches of the final phase with the coverage loss")
    p.add_argument("--vocab-size", type=int,
                   help="the one vocabulary of both sides, specials included")
    p.add_argument("--max-source", type=int,
                   help="descriptions keep their first tokens, this many")
    p.add_argument("--beam-width", type=int, help="the test summaries' beam")
    p.add_argument("--min-length", type=_tuned(int),
                   help="the fewest tokens a summary (default: tuned on the "
                   "validation split)")
    p.add_argument("--length-penalty", type=_tuned(float, "average"),
                   help="GNMT's alpha or 'average' (default: tuned on the "
                   "validation split)")
    p.add_argument("--learning-rate", type=float, help="Adam's rate")
    p.add_argument("--max-train", type=int, default=None,
                   help="train on the first pairs of the split, this many")
    p.add_argument("--max-test", type=int, default=None,
                   help="score the first test pairs, this many")
    p.add_argument("--lists-dir", default=None,
                   help="apt's list directory (default: the system's)")


def _tuned(kind, *words):
    """An argparse type: "tuned", one of `words`, or a `kind` number."""
    def parse(text):
        return text if text in ("tuned", *words) else kind(text)
    return parse


def check(args, parser):
    from kerattn import checks

    for name in ("coverage_steps", "vocab_size", "max_source", "beam_width"):
        checks.positive_int(name, getattr(args, name))
    checks.positive_number("learning_rate", args.learning_rate)
    if args.min_length != "tuned":
        checks.nonnegative_int("min_length", args.min_length)
    if args.length_penalty not in ("tuned", "average"):
        checks.nonnegative_number("length_penalty", args.length_penalty)
    checks.require(args.beam_width > 1 or args.length_penalty in ("tuned", 0.0),
                   "length_penalty", "0 or tuned with beam_width 1 (greedy "
                   "search ranks nothing)", args.length_penalty)


def prepare(args):
    from kerattn.recipes import summarisation

    data = summarisation.prepare(vocab_size=args.vocab_size,
                                 max_source=args.max_source,
                                 max_train=args.max_train, max_test=args.max_test,
                                 lists_dir=args.lists_dir)
    data["lead"] = summarisation.lead(data)
    print("lead baselines", {k: data["lead"][k]
                             for k in ("lead_sentence", "lead_words")})
    return data


def train_seed(args, data, seed, strategy, keep):
    from kerattn.recipes import summarisation

    row, models = {}, {}
    for key, _, flags in MODELS:
        with strategy.scope():
            if "coverage" in flags:   # the final phase, from the pointer-generator
                model = summarisation.with_coverage(models["pointer_generator"],
                                                    data, args.preset,
                                                    coverage=flags["coverage"])
                summary = summarisation.train(
                    model, data, steps=args.coverage_steps,
                    learning_rate=args.learning_rate, strategy=strategy,
                    seed=seed, verbose=2)
            else:
                model = summarisation.build(data, args.preset, **flags)
                summary = summarisation.train(
                    model, data, epochs=args.epochs, minutes=args.minutes,
                    learning_rate=args.learning_rate, strategy=strategy,
                    seed=seed, verbose=2)
        models[key] = model
        if not strategy.is_chief:
            continue
        length = search_settings(args, model, data)
        evaluated = summarisation.evaluate(model, data, args.beam_width,
                                           min_length=length["min_length"],
                                           length_penalty=length["length_penalty"])
        plain = evaluated   # the search as before: no minimum, raw log-prob
        if (length["min_length"], length["length_penalty"]) != (0, 0.0):
            plain = summarisation.evaluate(model, data, args.beam_width)
        row[key] = {**evaluated["rouge"], **evaluated["figures"],
                    **{f"plain_{k}": v for k, v in plain["rouge"].items()},
                    "plain_tokens_per_summary":
                        plain["figures"]["tokens_per_summary"],
                    "length": length,
                    "epochs": summary["epochs"], "steps": summary["steps"],
                    "minutes": summary["train_minutes"],
                    "parameters": summary["parameters"],
                    "examples": evaluated["examples"]}
        row.setdefault("reference_figures", evaluated["reference_figures"])
        row.setdefault("test_pairs", evaluated["test_pairs"])
        print(key, length["min_length"], length["length_penalty"],
              evaluated["rouge"], evaluated["figures"], "plain", plain["rouge"],
              flush=True)
    if not strategy.is_chief:
        return None
    if keep:
        from kerattn import atomic_path

        with atomic_path(os.path.join(keep, "model.keras")) as path:
            models["coverage"].save(path)
        try:
            summarisation.draw(models["coverage"], data,
                               os.path.join(keep, "attention.png"))
        except ImportError:   # no matplotlib
            pass
    return row


def search_settings(args, model, data):
    """The `min_length` and `length_penalty` a model's test summaries are
    decoded with: those given, and `tune_length`'s choice on the
    validation split for those left "tuned" (with what it tried)."""
    from kerattn.recipes import summarisation

    given = {"min_length": args.min_length, "length_penalty": args.length_penalty}
    tuned = {k: v for k, v in given.items() if v == "tuned"}
    if not tuned:
        return dict(given, valid_rougeL={}, valid_pairs=0)
    grid = {k: (v,) for k, v in given.items() if v != "tuned"}
    return summarisation.tune_length(model, data, args.beam_width, grid)


def settings(args):
    named = {k: getattr(args, k) for k in DEFAULTS}
    for key in ("max_train", "max_test"):   # a part of the data: another run
        if getattr(args, key) is not None:
            named[key] = getattr(args, key)
    return named


# -----------------------------------------------------------------------------
# results.json


def record(saved, run):
    """One run a setting; this command's seeds join those of its settings."""
    data = run.data
    # The data of this run's seeds (another --max-test is another test set).
    meta = {"backend": runner.backend(), "report": data["report"],
            "pairs": {"train": len(data["train_pairs"]),
                      "valid": len(data["valid_pairs"]),
                      "test": len(data["test"])},
            "vocabulary": len(data["vocab"]), "max_summary": data["max_summary"],
            "lead": data["lead"], "rouge_stemmer": True}
    runs, joined = runner.join_run(saved, run, aggregate, meta=meta)
    return runner.with_defaults_on_top(runs, joined, DEFAULTS)


# Student's t, 97.5% quantile, by degrees of freedom.
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447,
         7: 2.365, 8: 2.306, 9: 2.262}
FIGURES = ("rouge1", "rouge2", "rougeL", "copied", "oov", "unk",
           "repeated_trigrams", "tokens_per_summary", "minutes", "epochs", "steps",
           "plain_rouge1", "plain_rouge2", "plain_rougeL",
           "plain_tokens_per_summary")


def aggregate(rows):
    """Each model's figures over the seeds (mean, and `_sd` over several);
    `per_seed` keeps the rows."""
    models = {}
    for key, _, _ in MODELS:
        seeds = [r[key] for r in rows]
        figures = {"parameters": seeds[0]["parameters"]}
        figures.update(runner.figures_over(seeds, FIGURES, 4))
        models[key] = figures
    return dict({"models": models, "reference_figures": rows[0]["reference_figures"],
                 "test_pairs": rows[0]["test_pairs"]}, **runner.seed_fields(rows))


# -----------------------------------------------------------------------------
# RESULTS.md

PAGE = string.Template("""\
# pointer_generator on Debian descriptions -> synopses

Measured by `$command` on $machine. Data: every \
Debian bookworm binary package whose long description has 20-200 words \
($packages), exact duplicates ($exact) and near duplicates (word 5-gram \
Jaccard >= 0.8, MinHash LSH, $near; the search took $seconds s) removed \
within and across splits, split by a hash of the source package: \
$train train / $valid valid / $test test pairs (training pairs keep \
synopses of at most $max_summary tokens; every test pair is scored). \
Leakage left: $leak of test synopses are also a training synopsis \
(case aside).

ROUGE F1 x 100 (Google's `rouge-score`, Porter stemmer on) on the \
$test_pairs test synopses, beam $beam; $seeds_text. $decoding \
The reference synopses have $reference_tokens tokens on average.

| model | ROUGE-1 | ROUGE-2 | ROUGE-L | tokens a summary | min length / ranking | plain search: ROUGE-L, tokens |
|---|---|---|---|---|---|---|
| lead: first sentence of the description | $lead_sentence | | | |
| lead: first $k words ($k chosen by ROUGE-L on validation) | $lead_words | $k | | |
$rows

$intervals

Per seed (ROUGE-1 / 2 / L):

$per_seed

## Copying, unknown words and repetition (See et al., section 7)

Shares of the summaries' tokens: found in the (cut) source; written from \
outside the vocabulary (an OOV of the source, copied: the attention \
baseline cannot); the unknown-word token; and the share of trigrams that \
repeat an earlier trigram of the same summary (the paper's Figure 4).

$figures

## Budget

Each model trains under the same budget: $epochs epochs$minutes on \
length-bucketed batches of 64, Adam \
$learning_rate with clipping; the coverage row then trains $coverage_steps \
more batches with the coverage loss (lambda 1) from the \
pointer-generator's weights, as the paper's short final phase (the \
paper's has 3,000 steps)$control \
Preset `$preset` ($parameters parameters with copying), one vocabulary \
of $vocabulary words for both sides, descriptions cut to their first \
$max_source tokens. Steps and minutes a seed: $budget.
$user_split
## The paper, and why this data differs

See et al.'s Table 1 (CNN / Daily Mail, ROUGE F1, pyrouge):

$paper

Their articles average 781 tokens and their summaries 56 (3-4 \
sentences); here the descriptions have $description_words words and \
the synopses $reference_tokens tokens on average, written as a title \
rather than a lead. Their models trained for days on a GPU (230,000 \
steps, then 3,000 with coverage); these train minutes on a CPU.

`attention.png`: attention over three short test descriptions (coverage \
model, the first seed of the command that last trained it), each output \
word labelled with its p_gen (1: \
generated from the vocabulary, 0: copied).
""")


def decoding_text(settings):
    """How the test summaries were decoded, in words."""
    tuned = [what for key, what in (("min_length", "minimum length"),
                                    ("length_penalty", "ranking"))
             if settings.get(key, "tuned") == "tuned"]
    if "min_length" not in settings:   # a run recorded before the tuning
        return "Summaries are decoded by the plain search (no minimum, raw log-probability)."
    given = [f"{what} {settings[key]}" for key, what in
             (("min_length", "minimum length"), ("length_penalty", "ranking"))
             if settings[key] != "tuned"]
    text = "Each model's summaries are decoded with "
    if tuned:
        text += (f"the {' and '.join(tuned)} (ranking: GNMT's length penalty "
                 "alpha, or See et al.'s average log-probability per token) "
                 "that gave it the best ROUGE-L on the first 500 validation "
                 "pairs (`summarisation.tune_length`; per seed where they "
                 "differ)")
        text += f", the {' and '.join(given)} given" if given else ""
    else:
        text += f"the {' and '.join(given)} given"
    return text + ", beside the plain search's (no minimum, raw log-probability)."


def decoded_with(rows):
    """'min length / ranking' of each seed's row, once where all agree."""
    def one(x):
        length = x.get("length")
        if not length:
            return "0 / raw"
        return f"{length['min_length']} / {user_split.ranking(length['length_penalty'])}"
    each = [one(x) for x in rows]
    return each[0] if len(set(each)) == 1 else ", ".join(each)


def render(r, folder=None):
    from kerattn.recipes import summarisation

    m, settings = r["meta"], r["settings"]
    seeds = r.get("seeds", [r.get("seed")])
    rep, pairs, models = m["report"] or {}, m["pairs"], r["models"]

    def triple(x, digits=2):
        return " | ".join(runner.shown(x, k, digits) for k in ("rouge1", "rouge2",
                                                               "rougeL"))

    def plain(x):
        return " | ".join(f"{x[k]:.2f}" for k in ("rouge1", "rouge2", "rougeL"))

    def plain_search(x):
        if "plain_rougeL" not in x:
            return ""
        return (f"{runner.shown(x, 'plain_rougeL', 2)}, "
                f"{x['plain_tokens_per_summary']:.2f}")

    # The rows this run has (a run recorded before the control row lacks it).
    present = [(key, name, flags) for key, name, flags in MODELS if key in models]
    rows = "\n".join(
        f"| {name} | {triple(models[key])} | "
        f"{runner.shown(models[key], 'tokens_per_summary', 2)} | "
        f"{decoded_with([x[key] for x in r['per_seed']])} | "
        f"{plain_search(models[key])} |" for key, name, _ in present)
    n = len(seeds)
    t = T_975.get(n - 1, 1.96)
    intervals = "One seed: no interval over seeds."
    if n > 1:
        dof = (f"t with {n - 1} degrees of freedom" if n - 1 in T_975
               else "normal approximation")
        intervals = f"95% intervals of the mean over the seeds ({dof}): " + "; ".join(
            f"{name.strip('+ ')} ROUGE-L {models[key]['rougeL']:.2f} ± "
            f"{t * models[key].get('rougeL_sd', 0) / n ** 0.5:.2f}"
            for key, name, _ in present) + "."
    per_seed = runner.table(
        ["seed", *[name for _, name, _ in present]],
        [[x["seed"], *[" / ".join(f"{x[key][k]:.2f}" for k in
                                  ("rouge1", "rouge2", "rougeL"))
                       for key, _, _ in present]] for x in r["per_seed"]])
    share = lambda v: f"{100 * v:.1f}%"   # noqa: E731
    ref = r["reference_figures"]
    figures = runner.table(
        ["summaries of", "copied from the source", "OOV words written",
         "UNK tokens", "repeated trigrams", "tokens a summary"],
        [[name, *[share(models[key][k]) for k in ("copied", "oov", "unk",
                                                  "repeated_trigrams")],
          f"{models[key]['tokens_per_summary']:.2f}"] for key, name, _ in present]
        + [["the reference synopses", *[share(ref[k]) for k in
                                        ("copied", "oov", "unk",
                                         "repeated_trigrams")],
            f"{ref['tokens_per_summary']:.2f}"]])
    budget = "; ".join(f"{name.strip('+ ')} {models[key]['steps']:g} steps, "
                       f"{models[key]['minutes']:.2f} min"
                       for key, name, _ in present)
    lead = m["lead"]
    return PAGE.substitute(
        command=runner.command_for(TASK, settings, seeds),
        machine=runner.machines(r.get("per_seed"), m["backend"]),
        packages=f"{rep.get('packages', 0):,} packages",
        exact=f"{rep.get('exact_duplicates', 0):,}",
        near=f"{rep.get('near_duplicates', 0):,}", seconds=rep.get("seconds"),
        train=f"{pairs['train']:,}", valid=f"{pairs['valid']:,}",
        test=f"{pairs['test']:,}", max_summary=m["max_summary"],
        leak=share(rep.get("test_summaries_in_train", 0.0)),
        test_pairs=f"{r['test_pairs']:,}", beam=settings["beam_width"],
        decoding=decoding_text(settings),
        reference_tokens=f"{ref['tokens_per_summary']:.2f}",
        description_words="-".join(map(str, summarisation.DESCRIPTION_WORDS)),
        seeds_text=(f"mean ± sd of {n} seeds" if n > 1 else f"one seed ({seeds[0]})"),
        lead_sentence=plain(lead["lead_sentence"]),
        k=lead["lead_words"]["k"], lead_words=plain(lead["lead_words"]),
        rows=rows, intervals=intervals, per_seed=per_seed,
        figures=figures, epochs=settings["epochs"],
        minutes=(f" (at most {settings['minutes']:g} minutes)"
                 if settings.get("minutes") else ""),
        learning_rate=settings["learning_rate"],
        coverage_steps=settings["coverage_steps"], preset=settings["preset"],
        parameters=f"{models['pointer_generator']['parameters']:,}",
        vocabulary=f"{m['vocabulary']:,}", max_source=settings["max_source"],
        budget=budget, user_split=user_split.section(folder) if folder else "",
        control=(", and the row \"the phase without coverage\" trains the same "
                 "batches from the same weights without it: coverage's effect is "
                 "the difference between those two rows, not between the "
                 "coverage row and the pointer-generator."
                 if "plain_phase" in models else
                 "; this run has no control row, so part of the coverage "
                 "row's difference may be its extra batches."),
        paper=runner.table(["model", "ROUGE-1", "ROUGE-2", "ROUGE-L"],
                           [[k, *(f"{x:.2f}" for x in v)]
                            for k, v in PAPER.items()]))


TASK = runner.Task(
    name="pointer_generator", about=__doc__.split("\n")[0], options=options,
    defaults=dict(DEFAULTS, seed=1), check=check, prepare=prepare,
    train_seed=train_seed, settings=settings, record=record, render=render,
    data_sizes=lambda data: {"test_pairs": len(data["test"])})

if __name__ == "__main__":
    runner.main(TASK, __file__)
