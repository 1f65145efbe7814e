"""Collect zoo/<model>/results.json into the tables of zoo/README.md.

    python zoo/summarize.py

Three things are written from results.json alone, so that every measured
number in a README is the field its column names (tests/test_zoo_table.py
checks them): the "our result" cell of each model's row in zoo/README.md's
first table (`result_cell`), the translation table between the results
markers (`table`), and each model's row of the project README's short
table (`readme_cell`).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import runner  # noqa: E402  (zoo/runner.py: the records)
from runner import plural, shown  # noqa: E402
PROJECT_README = os.path.join(os.path.dirname(HERE), "README.md")
ORDER = ["seq2seq", "cho_encoder_decoder", "bahdanau_nmt", "luong_nmt",
         "transformer_nmt", "convs2s_nmt"]
# The rows of the project README's short table, written from results.json.
README_ROWS = ORDER + ["show_attend_tell", "han_classifier",
                       "self_attentive_classifier", "aoa_reader",
                       "pointer_generator", "g2p", "g2p_phrases"]
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def _beam(r):
    """The beam figure, marked when it was the better of beam and greedy."""
    fallback = r.get("beam_greedy_fallback", True)
    return shown(r, "bleu_beam5") + (" (beam or greedy, the better)" if fallback
                                    else " (pure beam 5)")


def result_cell(name, r):
    """The "our result (recipe)" cell of `name`'s row, from its results.json."""
    if r is None:   # a recipe not run yet
        return "not measured yet"
    if "bleu_beam5" in r:
        seeds = f", mean of {r['seeds']} seeds" if r.get("seeds", 1) > 1 else ""
        return f"sacreBLEU {_beam(r)}, {shown(r, 'bleu_greedy')} greedy{seeds}"
    if name == "show_attend_tell":
        soft, hard = r["results"]["soft"]["beam1"], r["results"]["hard"]["beam1"]
        return (f"soft: exact caption {soft['exact_caption_accuracy']}, attention "
                f"on the word's own digit {soft['own_digit_share_correct']} "
                f"(in the correct captions); hard: "
                f"{hard['exact_caption_accuracy']} / "
                f"{hard['own_digit_share_correct']}")
    if name == "han_classifier":
        b = r["baselines"]
        seeds = (f", mean of {len(r['seeds'])} seeds" if "seeds" in r else "")
        return (f"accuracy {shown(r, 'han_test_accuracy')}{seeds} (TF-IDF + LR "
                f"{b['tfidf_logistic_regression']}, majority {b['majority_class']})")
    if name == "self_attentive_classifier":
        return _self_attentive(r) + (
            f" (TF-IDF + LR {r['baselines']['tfidf_logistic_regression']}, "
            f"majority {r['baselines']['majority_class']})")
    if name == "aoa_reader":
        b, sd = r["baselines"], r.get("aoa_test_accuracy_sd", {})
        spread = (f" ± {sd['all']}, mean of {len(r['seeds'])} seeds"
                  if "seeds" in r else "")
        return (f"accuracy {r['aoa_test_accuracy']['all']}{spread} (bigram "
                f"{b['bigram']['all']}, most frequent {b['most_frequent']['all']})")
    if name == "pointer_generator":
        return _rouge_rows(r)
    if name == "g2p":
        return _g2p_rows(r)
    if name == "g2p_phrases":
        return _phrase_rows(r, lengths=("2", "4", "8"))
    raise KeyError(f"no result cell for {name}")


def _self_attentive(r):
    """Accuracy and hop overlap of the penalty's run and of the run
    without it, where both ran (same other settings)."""
    def run_text(run):
        return (f"penalty {run['settings']['penalty']:g}: accuracy "
                f"{shown(run, 'accuracy')}, hop overlap {shown(run, 'overlap')} "
                f"({plural(len(run['per_seed']), 'seed')})")

    same = [run for run in r["runs"] if {k: v for k, v in run["settings"].items()
                                         if k != "penalty"} ==
            {k: v for k, v in r["settings"].items() if k != "penalty"}]
    same.sort(key=lambda run: -run["settings"]["penalty"])
    return "; ".join(run_text(run) for run in same)


# zoo/g2p's batch and rate (its DEFAULTS), and the decay its early-stopped
# runs halve by (its CONVERGED budget): a row trained otherwise says so.
_G2P = runner.recipe_module("g2p")
G2P_BATCH, G2P_RATE = _G2P.DEFAULTS["batch_size"], _G2P.DEFAULTS["learning_rate"]
G2P_DECAY = _G2P.CONVERGED["lr_decay"]
# The short names of zoo/g2p's rows.
G2P_NAMES = {"global": "global", "location-sensitive": "location-sensitive",
             "hard-monotonic": "hard monotonic", "mocha": "MoChA"}


def _g2p_rows(r):
    """WER / PER (%) of zoo/g2p's runs (± sd over seeds), each with its
    number of seeds: every run of several seeds, and of the one-seed runs
    the best (lowest WER) of each preset and attention; the others are
    counted, and are in RESULTS.md. A
    run at another preset, trained with early stopping (to convergence, or
    stopped by its cap first: `_g2p_ended`; on another monitor than the
    validation loss), at another batch and rate than the recipe's or
    another decay than halving,
    decoded with a beam, reading letters ahead or on a wait-k schedule,
    with the end of the word marked or with a latency loss says so; the
    joint n-gram baseline follows the runs where it was measured."""
    def seeds(run):
        return len(run.get("seeds", [run.get("seed")]))

    def kind(run):
        return run["settings"]["preset"], run["settings"]["attention"]

    best = {}
    for run in r["runs"]:
        if seeds(run) == 1 and (kind(run) not in best
                                or run["wer"] < best[kind(run)]["wer"]):
            best[kind(run)] = run
    runs = [x for x in r["runs"] if seeds(x) > 1 or best[kind(x)] is x]
    parts = []
    for run in runs:
        s = run["settings"]
        tags = ([s["preset"]] if s["preset"] != "g2p" else []) + (
            [_g2p_ended(run)] if s.get("patience") else []) + (
            [f"monitor {s['monitor']}"] if s.get("monitor", "val_loss") != "val_loss"
            else []) + (
            [f"batch {s.get('batch_size', G2P_BATCH)}, rate "
             f"{s.get('learning_rate', G2P_RATE):g}"]
            if (s.get("batch_size", G2P_BATCH), s.get("learning_rate", G2P_RATE))
            != (G2P_BATCH, G2P_RATE) else []) + (
            [f"decay {s['lr_decay']:g}" + (f", patience {s['patience']}"
                                           if s.get("patience") else "")]
            if s.get("lr_decay") not in (None, G2P_DECAY) else []) + (
            [f"beam {s['beam_width']}"] if s.get("beam_width", 1) > 1 else []) + (
            [f"lookahead {s['lookahead']}"] if s.get("lookahead") else []) + (
            [f"wait-{s['wait_k']} at {s.get('wait_rate', 1.0):g} letters a phoneme"]
            if s.get("wait_k") else []) + (
            ["the word's end marked"] if s.get("end_marker") else []) + (
            [f"latency loss {s['latency_weight']:g}"] if s.get("latency_weight") else [])
        name = G2P_NAMES[s["attention"]] + (f" ({', '.join(tags)})" if tags else "")
        parts.append(f"{name} {shown(run, 'wer', 2)} / {shown(run, 'per', 2)}"
                     f" ({plural(seeds(run), 'seed')})")
    left = len(r["runs"]) - len(runs)
    return "WER / PER % " + "; ".join(parts) + _g2p_baseline(r, "(Phonetisaurus) ") + (
        f"; {plural(left, 'more one-seed run')} in RESULTS.md" if left else "")


def _g2p_baseline(r, tool=""):
    """"; joint n-gram baseline [tool ]WER / PER" where zoo/g2p measured
    it (`joint_ngram.py`), else ""."""
    b = r.get("baselines", {}).get("joint_ngram")
    return f"; joint n-gram baseline {tool}{b['wer']:.2f} / {b['per']:.2f}" if b else ""


def _g2p_ended(run):
    """How a run trained with early stopping ended, over its seeds: "to
    convergence" only where early stopping ended every seed
    (`runner.stopped_by`); else the cap that ended them."""
    s = run["settings"]
    ends = {runner.stopped_by(s, row) for row in run.get("per_seed") or [{}]}
    if ends == {"early"}:
        return "to convergence"
    caps = [{"minutes": f"{s.get('minutes') or 0:g}-minute cap",
             "epochs": f"{s.get('epochs')}-epoch cap"}[end]
            for end in ("minutes", "epochs") if end in ends]
    if not caps:   # seeds that do not say what ended them
        return "early stopping"
    return ("early stopping or " if "early" in ends else "") + " or ".join(caps)


def _g2p_best(r):
    """The project README's short form of zoo/g2p's runs: the best (lowest
    WER) offline run and the best streaming one, the joint n-gram baseline
    where it was measured, the others counted."""
    best = []
    for streaming in (False, True):
        runs = [x for x in r["runs"]
                if (x["settings"]["preset"] == "g2p-streaming") == streaming]
        if runs:
            best.append(min(runs, key=lambda x: x["wer"]))
    text = _g2p_rows({"runs": best}).replace("WER / PER % ", "")
    first, *rest = text.split("; ")
    return (f"WER / PER % best: {first}" + "".join(
        f"; best streaming: {x}" for x in rest) + _g2p_baseline(r)
        + f"; {plural(len(r['runs']) - len(best), 'more run')} in zoo/g2p")


# The short names of zoo/g2p_phrases' rows.
PHRASE_NAMES = dict(G2P_NAMES, gmm="GMM v2b", dca="DCA", forward="forward",
                    **{"stepwise-monotonic": "stepwise monotonic"})


def _phrase_rows(r, lengths, most_seeds_only=False):
    """WER % of zoo/g2p_phrases' runs on phrases of each of `lengths` words
    (2 is the longest trained), with the seeds of each. `most_seeds_only`
    (the project README's short cell): the runs with the most seeds, then
    how many more zoo/g2p_phrases has."""
    def seeds(run):
        return len(run.get("seeds", [run.get("seed")]))

    if most_seeds_only:
        most = max(seeds(x) for x in r["runs"])
        kept = [x for x in r["runs"] if seeds(x) == most]
        rest = len(r["runs"]) - len(kept)
        r = dict(r, runs=kept)
        more = f"; {plural(rest, 'more attention')} in zoo/g2p_phrases" if rest else ""
        return _phrase_rows(r, lengths) + more
    counts = {seeds(x) for x in r["runs"]}
    alike = len(counts) == 1   # the seeds said once
    parts = [f"{PHRASE_NAMES[x['settings']['attention']]} " + " / ".join(
        shown(x["by_length"][n], "wer", 2) for n in lengths)
        + ("" if alike else f" ({plural(seeds(x), 'seed')})") for x in r["runs"]]
    tail = ""
    if alike:
        n = counts.pop()
        tail = " (one seed each)" if n == 1 else f" ({n} seeds each)"
    return f"WER % at {' / '.join(lengths)} words: " + "; ".join(parts) + tail


def _rouge_rows(r):
    """Table 1's rows on the Debian synopses: ROUGE-1 / 2 / L of each model
    (± sd over seeds), then the lead sentence's."""
    def triple(x):
        return " / ".join(shown(x, k, 2) for k in ("rouge1", "rouge2", "rougeL"))

    models = r["models"]
    lead = r["meta"]["lead"]["lead_sentence"]
    seeds = (f" ({plural(len(r['seeds']), 'seed')})" if "seeds" in r
             else f" (one seed, {r.get('seed', 1)})")
    control = ([f"+ the phase without coverage {triple(models['plain_phase'])}"]
               if "plain_phase" in models else [])
    return "; ".join([f"ROUGE-1 / 2 / L attention {triple(models['attention'])}",
                     f"+ pointer-generator {triple(models['pointer_generator'])}",
                     *control,
                     f"+ coverage {triple(models['coverage'])}{seeds}",
                     "lead sentence " + " / ".join(
                         f"{lead[k]:.2f}" for k in ("rouge1", "rouge2", "rougeL"))])


def _ahead_of_bigram(r):
    """Which kinds of question beat the bigram baseline in every seed by
    more than that seed's paired 95% interval, and which do not."""
    runs = r.get("per_seed") or [r]
    kinds = [k for k in r["paired_vs_bigram"] if k != "all"]
    ahead = [k for k in kinds
             if all(run["paired_vs_bigram"][k][0] > run["paired_vs_bigram"][k][1]
                    for run in runs)]
    behind = [k for k in kinds
              if any(run["paired_vs_bigram"][k][0] < -run["paired_vs_bigram"][k][1]
                     for run in runs)]
    unclear = [k for k in kinds if k not in ahead and k not in behind]

    every = " in every seed" if len(runs) > 1 else ""
    parts = [f"ahead of the bigram baseline on {runner.join_and(ahead)}{every}"] if ahead else []
    if behind:
        parts.append(f"behind it on {runner.join_and(behind)}")
    if unclear:
        parts.append(f"{runner.join_and(unclear)} not told apart")
    return ", ".join(parts)


def readme_cell(name, r):
    """A model's "our result" cell in the project README, from its
    results.json."""
    if r is None:   # a recipe not run yet
        return "not measured yet"
    if "bleu_beam5" in r:
        return f"sacreBLEU {shown(r, 'bleu_greedy')} greedy, {_beam(r)}"
    if name == "show_attend_tell":   # the row of soft attention
        soft = r["results"]["soft"]
        seeds = (f" ({plural(soft['seeds'], 'seed')})" if soft.get("seeds", 1) > 1
                 else "")
        return (f"exact caption {shown(soft['beam1'], 'exact_caption_accuracy')}, "
                f"{shown(soft['beam1'], 'own_digit_share_all')} of each word's "
                f"attention on its own digit{seeds}")
    if name == "han_classifier":
        seeds = f", mean of {plural(len(r['seeds']), 'seed')}" if "seeds" in r else ""
        return (f"accuracy {shown(r, 'han_test_accuracy')}{seeds} (TF-IDF + LR "
                f"{r['baselines']['tfidf_logistic_regression']})")
    if name == "self_attentive_classifier":   # the defaults' run, and without the penalty
        off = next((run for run in r["runs"] if run["settings"] == dict(
            r["settings"], penalty=0.0)), None)
        seeds = plural(len(r["per_seed"]), "seed")
        return (f"accuracy {shown(r, 'accuracy')}, hop overlap {shown(r, 'overlap')} "
                f"(penalty {r['settings']['penalty']:g}, {seeds})"
                + (f"; without it {shown(off, 'accuracy')}, {shown(off, 'overlap')}"
                   if off else ""))
    if name == "aoa_reader":
        sd = r.get("aoa_test_accuracy_sd", {})
        spread = (f" ± {sd['all']}, {plural(len(r['seeds']), 'seed')}"
                  if "seeds" in r else "")
        return (f"accuracy {r['aoa_test_accuracy']['all']}{spread} (bigram "
                f"{r['baselines']['bigram']['all']}); {_ahead_of_bigram(r)}")
    if name == "pointer_generator":
        return _rouge_rows(r)
    if name == "g2p":
        return _g2p_best(r)
    if name == "g2p_phrases":
        return _phrase_rows(r, lengths=("2", "8"), most_seeds_only=True)
    raise KeyError(f"no README cell for {name}")


def with_readme_cells(text):
    """The project README with each zoo model's result rewritten (rows
    `| \`name\` ... | task | result |` of the models in `README_ROWS`)."""
    lines = []
    for line in text.splitlines():
        cells = line.split(" | ")
        if line.startswith("| `") and len(cells) == 3:
            name = cells[0].split("`")[1]
            if name in README_ROWS:
                cells[2] = readme_cell(name, results_of(name)) + " |"
                line = " | ".join(cells)
        lines.append(line)
    return "\n".join(lines) + "\n"


def results_of(name):
    """zoo/<name>/results.json, as its recipe recorded it."""
    return runner.load(os.path.join(HERE, name))


def with_result_cells(text):
    """`text` (the README) with each model row's result cell rewritten."""
    lines = []
    for line in text.splitlines():
        cells = line.split(" | ")
        if line.startswith("| [`") and len(cells) == 6:
            name = cells[0].split("`")[1]
            cells[3] = result_cell(name, results_of(name))
            line = " | ".join(cells)
        lines.append(line)
    return "\n".join(lines) + "\n"


def table():
    results = {}
    for name in sorted(os.listdir(HERE)):
        r = runner.load(os.path.join(HERE, name)) if os.path.isdir(
            os.path.join(HERE, name)) else None
        if r and "bleu_beam5" in r:  # the translation recipes; others have their own
            results[r["model"]] = r
    buckets = ["1-5", "6-10", "11-15", "16-20", "21-30", "31-50"]
    lines = ["| model | greedy BLEU | beam5 BLEU (pure, or marked) | " +
             " | ".join(f"beam5, {b} words" for b in buckets) +
             " | parameters | epochs | train minutes |",
             "|---" * (6 + len(buckets)) + "|"]
    for name in sorted(results, key=lambda n: ORDER.index(n) if n in ORDER else 99):
        r = results[name]
        by = r["bleu_beam5_by_source_length"]
        lines.append(
            f"| [{name}]({name}/RESULTS.md) | {shown(r, 'bleu_greedy')} | "
            f"{_beam(r)} | " +
            " | ".join(str(by.get(b, {}).get("bleu", "n/a")) for b in buckets) +
            f" | {r['parameters']:,} | {r['epochs']} | {r['train_minutes']} |")
    missing = [n for n in ORDER if n not in results]
    if missing:
        lines.append("")
        lines.append("Not measured yet: " + ", ".join(missing) + ".")
    return "\n".join(lines)


def main():
    path = os.path.join(HERE, "README.md")
    with open(path) as f:
        text = f.read()
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    text = with_result_cells(head + BEGIN + "\n" + table() + "\n" + END + tail)
    with open(path, "w") as f:
        f.write(text)
    with open(PROJECT_README) as f:
        text = with_readme_cells(f.read())
    with open(PROJECT_README, "w") as f:
        f.write(text)
    print(table())


if __name__ == "__main__":
    main()
