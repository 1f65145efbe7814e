"""The translation task, shared by the six zoo/<model>/recipe.py of NMT.

Each trains `kerattn.zoo.<model>` with `kerattn.recipes.translation` on
this machine's gettext English -> French catalogs and scores sacreBLEU,
greedy and beam search, overall and by source length. A run is named by
its config (the builder, data and training settings); seeds of the same
config join, and the figures become their mean ± sample deviation.
results.json is flat: the run's figures, `config`, and with several seeds
`seeds`, `by_seed` (the headline figures) and `per_seed` (each seed's row).
RESULTS.md sets the seq2seq baseline beside the model and prints
ablation.json (zoo/ablation.py) when the model has one.
"""

import os
import string

import runner

# The training flags the runner passes on, in config order.
TRAINING = ("batch_size", "learning_rate", "label_smoothing", "warmup_steps")
# Figures that are the mean of the seeds beside every BLEU.
AVERAGED = ("final_loss", "final_val_loss", "train_minutes")


def task(name, doc):
    """The recipe of `kerattn.zoo.<name>`; `doc` is its docstring, whose
    first paragraph opens RESULTS.md."""
    from kerattn.recipes import translation

    about = " ".join(doc.split("\n\n")[0].split())
    return runner.Task(
        name=name, about=about, options=options,
        defaults=dict(translation.settings(name), epochs=6, seed=0),
        prepare=prepare,
        train_seed=lambda *a: train_seed(name, *a),
        settings=lambda args: config(name, args),
        record=lambda saved, run: record(name, saved, run),
        render=lambda results, folder: render(name, about, results, folder),
        data_sizes=data_sizes)


def data_sizes(data):
    """The figures that say which data a seed saw: the machine's gettext
    catalogs are its packages', and installing one (GTK 3 adds two) moves
    the split (upgrading one changes its text: `runner.data_sizes` adds the
    splits' fingerprint)."""
    return {"train_pairs": data["train_pairs"], "test_pairs": len(data["test"])}


def options(p):
    p.add_argument("--lang", default="fr")
    p.add_argument("--max-tokens", type=int, default=20)
    p.add_argument("--max-train", type=int, default=None)
    p.add_argument("--max-test", type=int, default=None)
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--tokenizer", choices=("word", "wordpiece"), default="word",
                   help="word-level vocabulary or keras-hub WordPiece")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--learning-rate", type=float)
    p.add_argument("--label-smoothing", type=float)
    p.add_argument("--warmup-steps", type=int,
                   help="linear warm-up steps, then cosine decay")
    p.add_argument("--beam-width", type=int, default=5)


def prepare(args):
    from kerattn.recipes import translation

    data = translation.prepare(args.lang, args.vocab_size, args.max_tokens,
                               args.tokenizer, max_train=args.max_train,
                               max_test=args.max_test)
    print(f"{data['train_pairs']} training pairs, {len(data['test'])} test pairs")
    return data


def train_seed(name, args, data, seed, strategy, keep):
    from kerattn.recipes import translation

    with strategy.scope():
        model = translation.build(name, data, args.preset)
        if keep:
            model.summary()
        summary = translation.train(
            model, data, epochs=args.epochs, minutes=args.minutes,
            batch_size=args.batch_size, learning_rate=args.learning_rate,
            label_smoothing=args.label_smoothing, warmup_steps=args.warmup_steps,
            verbose=2 if os.environ.get("CI") else "auto", strategy=strategy,
            seed=seed)
    if not strategy.is_chief:
        return None
    if keep:   # the model, and the vocabularies a Translator needs
        from kerattn import atomic_path

        with atomic_path(os.path.join(keep, "model.keras")) as path:
            model.save(path)
        for side in ("source", "target"):
            with (atomic_path(os.path.join(keep, f"{side}_vocab.json")) as path,
                  open(path, "w") as f):
                f.write(data[f"{side}_vocab"].to_json())
    import keras

    return {"backend": keras.backend.backend(),
            "replicas": strategy.num_replicas,
            "budget": {"epochs": args.epochs, "minutes": args.minutes},
            **summary, **translation.evaluate(model, data, beam_width=args.beam_width)}


def config(name, args):
    """The settings that name a run (results.json's `config`, less `seed`)."""
    from kerattn.zoo import presets

    named = presets(name)
    sizes = dict(named["paper"], **named[args.preset])
    builder = (f"kerattn.zoo.{name}(V_x, V_y, preset={args.preset!r}): "
               + ", ".join(f"{k}={v!r}" for k, v in sizes.items()))
    return {"builder": builder, "lang": args.lang, "max_tokens": args.max_tokens,
            "vocab_size": args.vocab_size, "tokenizer": args.tokenizer,
            **{k: getattr(args, k) for k in TRAINING}}


# -----------------------------------------------------------------------------
# results.json


def record(name, saved, run):
    """results.json: the run's seeds, joined to the recorded seeds of the
    same config (given the same budget, on the same pairs, backend and
    replicas); a recorded run of another config is replaced. Seeds join on
    the budget they were given, not the epochs they trained: a time cap
    ends seeds at different epochs."""
    earlier, commands = [], []
    if saved and _without_seed(saved["config"]) == run.settings:
        earlier = saved.get("per_seed") or [_only_seed(saved)]
        earlier = [r for r in earlier if _budget(r) == _budget(run.rows[0])]
        commands = saved.get("commands", [saved["command"]])
    rows = runner.join_seeds(earlier, run.rows,
                             match=("train_pairs", "backend", "replicas"))
    results = aggregate(rows) if len(rows) > 1 else dict(rows[0])
    if len(rows) > 1:
        results["per_seed"] = rows
    config = dict(run.settings, seed=results.pop("seed"))
    commands = runner.join_commands(commands, run.command)
    results["command"] = run.command
    if len(commands) > 1:
        results["commands"] = commands
    return {"model": name, "config": config, **results}


def _budget(row):
    """The (epochs, minutes) a seed was given; a row recorded before the
    budget was had no time cap, so its epochs trained were those given."""
    budget = row.get("budget") or {"epochs": row.get("epochs"), "minutes": None}
    return budget["epochs"], budget["minutes"]


def _without_seed(config):
    return {k: v for k, v in config.items() if k != "seed"}


def _only_seed(saved):
    """The row of a one-seed results.json."""
    return dict({k: v for k, v in saved.items()
                 if k not in ("model", "config", "command", "commands")},
                seed=saved["config"]["seed"])


def aggregate(rows):
    """One record from several seeds' rows: each BLEU (also by source
    length) and the training summary become their mean, with the sample
    standard deviation beside it in `<key>_sd`; everything else is the
    first seed's; `by_seed` keeps each seed's headline figures."""
    def averaged(key, values):
        if isinstance(values[0], dict):        # BLEU by source length
            out = {}
            for k in values[0]:
                out.update(averaged(k, [v[k] for v in values]))
            return {key: out}
        if key == "sentences":
            return {key: values[0]}
        mean, sd = runner.mean_sd(values, 2)
        return {key: mean, f"{key}_sd": sd}

    result = dict(rows[0])
    headline = [k for k in rows[0] if k in AVERAGED or (
        k.startswith("bleu_") and not k.endswith("length"))]
    for key in rows[0]:
        if key in AVERAGED or key.startswith("bleu_"):
            result.update(averaged(key, [r[key] for r in rows]))
    result["seeds"] = len(rows)
    result["by_seed"] = [{k: r[k] for k in ["seed", *headline]} for r in rows]
    return result


# -----------------------------------------------------------------------------
# RESULTS.md

PAGE = string.Template("""\
# $name: results

$about

Measured by `$command` on $machine, written by the recipe itself.

## Data

gettext English -> $lang message catalogs of this machine
(`kerattn.datasets.gettext_pairs`, fixed hash split): $train_pairs
training pairs of at most $max_tokens tokens a side;
$tokenizer vocabularies of $vocab_size tokens per language. Test: the
$test_sentences test pairs of at most 20 words a side.

## Model and budget

`$builder`; Adam $learning_rate$schedule, clipnorm 1.0,
batch $batch_size, $epochs epochs ($steps
steps, $train_minutes minutes of training).

## sacreBLEU on the test split

$bleu_table

The $search column is pure beam search (`never_worse_than_greedy=False`, no greedy fallback).$seeds
$ablation
## BLEU by source length ($search)

All $length_bucket_sentences test pairs of at most 50 source
words (the model trained on at most $max_tokens tokens).

$bucket_table

## Examples ($search)

$examples
""")


def render(name, about, r, folder):
    c = r["config"]
    beam = next(k for k in r if k.startswith("bleu_beam")
                and not k.endswith("length") and not k.endswith("_sd"))
    search = beam[len("bleu_"):]
    baseline = None if name == "seq2seq" else runner.load(
        os.path.join(os.path.dirname(os.path.abspath(folder)), "seq2seq"))
    return PAGE.substitute(
        name=name, about=about,
        command="` and `".join(r.get("commands") or [r["command"]]),
        machine=runner.machines(r.get("per_seed") or [r], r["backend"]),
        lang=c["lang"], train_pairs=f"{r['train_pairs']:,}",
        max_tokens=c["max_tokens"], tokenizer=c["tokenizer"],
        vocab_size=f"{c['vocab_size']:,}", test_sentences=f"{r['test_sentences']:,}",
        builder=c["builder"], learning_rate=c["learning_rate"],
        schedule=_schedule(c), batch_size=c["batch_size"], epochs=r["epochs"],
        steps=f"{r['steps']:,}", train_minutes=r["train_minutes"],
        bleu_table=_bleu_table(name, r, baseline, beam), search=search,
        seeds=_seeds(r, beam, search), ablation=ablation_section(folder, r),
        length_bucket_sentences=f"{r['length_bucket_sentences']:,}",
        bucket_table=_bucket_table(r, baseline, search, beside=name != "seq2seq"),
        examples="\n".join(f"- en: {e['source']}\n  - reference: {e['reference']}"
                           f"\n  - {name}: {e['hypothesis']}"
                           for e in r[f"examples_{search}"]))


def _schedule(c):
    text = ""
    if c.get("warmup_steps"):
        text = (f" (linear warm-up over {c['warmup_steps']} steps, "
                "then cosine decay to a tenth)")
    if c.get("label_smoothing"):
        text += f", label smoothing {c['label_smoothing']}"
    return text


def _bleu_table(name, r, baseline, beam):
    rows = [[name, runner.shown(r, "bleu_greedy"), runner.shown(r, beam),
             f"{r['parameters']:,}", r["epochs"], r["train_minutes"]]]
    if baseline:
        rows.append(["seq2seq (no attention, baseline)", baseline["bleu_greedy"],
                     baseline.get(beam, "n/a"), f"{baseline['parameters']:,}",
                     baseline["epochs"], baseline["train_minutes"]])
    return runner.table(["model", "greedy", f"{beam[len('bleu_'):]} (alpha 0.6)",
                         "parameters", "epochs", "train minutes"], rows)


def _seeds(r, beam, search):
    if r.get("seeds", 1) == 1:
        return ""
    per_seed = ", ".join(f"seed {x['seed']}: {x['bleu_greedy']} / {x.get(beam, 'n/a')}"
                         for x in r["by_seed"])
    return (f"\n\nEvery BLEU is the mean ± standard deviation of {r['seeds']} "
            f"seeds (greedy / {search}: {per_seed}); the examples are the first "
            "seed's.")


def _bucket_table(r, baseline, search, beside=True):
    """BLEU by source length, `beside` seq2seq's (the no-attention
    baseline, n/a where it has no results; not on seq2seq's own page)."""
    key = f"bleu_{search}_by_source_length"
    rows = [[bucket, row["sentences"], runner.shown(row, "bleu"),
             *([(baseline or {}).get(key, {}).get(bucket, {}).get("bleu", "n/a")]
               if beside else [])]
            for bucket, row in r[key].items()]
    return runner.table(["source words", "sentences", "BLEU",
                         *(["seq2seq BLEU"] if beside else [])], rows)


# -----------------------------------------------------------------------------
# The ablation (zoo/ablation.py writes ablation.json beside results.json)

ABLATION = ("Written by `python zoo/ablation.py $model VARIANT ...`: changes to "
            "the recipe, each trained with seed 0 (or the seed "
            "its name gives) for the epochs shown (the 1-epoch rows rank the "
            "changes, they are not the result), scored by greedy sacreBLEU on "
            "the test split (and beam search where the beam column says so). "
            "A row is one seed: a difference between rows smaller than the "
            "spread between seeds of one setting is no comparison.")
ALIGNMENT = ("Alignment on the 16-20-word bucket (greedy; a source word is dropped "
             "below 0.5 of a word's attention summed over the translation, "
             "repeated above 1.5; a repeated output word occurs more often than "
             "in the reference; where recorded, an output word attends nowhere "
             "when its attention sums below 0.5, and the expected-alignment "
             "BLEU decodes a monotonic attention in its training mode instead "
             "of the hard one), mean ± standard deviation over the seeds shown:")


BY_LENGTH = ("By source length, the rows that recorded it (a phase, `name@E+N`, "
             "starts from the weights of its converged variant `name@E` of the "
             "same seed and trains up to N more batches, each training pair "
             "at most once, with the option on or, for the control, without "
             "it; zoo/ablation.py's `PHASES`{steps}): "
             "greedy BLEU, beam BLEU where scored, and the alignment rates "
             "above, mean ± standard deviation over the seeds shown:")


SELECTION = ("How the hard monotonic attention decides over training "
             "(`selection.png`; zoo/ablation.py's `SelectionWatch`, on 256 "
             "validation pairs teacher-forced in the training mode, the "
             "expected alignment without noise): the stopping probabilities "
             "`p` where the alignment's mass arrives (median, and 90th "
             "percentile dashed), the share of output steps with some "
             "`p >= 0.5` (a hard decision would stop there), the expected "
             "mass that stops somewhere a step (the rest is a zero context), "
             "and the bias `r`, before training and at each epoch's end.")


def row_key(name, epochs, phase_steps=None, seed=0):
    """A row's key in ablation.json (zoo/ablation.py writes it):
    `name@epochs`, `+phase_steps` for a phase, ` seed N` for a seed other
    than 0; `row_seed` reads it back.

    >>> row_key("coverage-phase", 6, phase_steps=1000, seed=1)
    'coverage-phase@6+1000 seed 1'
    >>> row_key("recipe", 6)
    'recipe@6'
    """
    key = f"{name}@{epochs}"
    if phase_steps is not None:
        key += f"+{phase_steps}"
    return with_seed(key, seed)


def with_seed(row, seed):
    """The key of seed `seed` of the row `row` (a key without a seed)."""
    return row + (f" seed {seed}" if seed else "")


def row_seed(key):
    """`(row, seed)` of a key of ablation.json: the row its seeds share and
    the seed (0 where the key names none).

    >>> row_seed("coverage-phase@6+1000 seed 1")
    ('coverage-phase@6+1000', 1)
    >>> row_seed("recipe@6")
    ('recipe@6', 0)
    """
    row, _, seed = key.partition(" seed ")
    return row, int(seed or 0)


def ablation_section(folder, results=None):
    """The tables of `folder`'s ablation.json, or nothing: a row a variant
    (the last, the recipe's own `results`, for comparison at its budget),
    then the rows that recorded alignment rates, over their seeds."""
    variants = runner.load(folder, "ablation.json")
    if variants is None:
        return ""
    # A beam column only where some row was scored with beam search.
    beam = any("bleu_beam" in row for row in variants.values())
    rows = [[name, row["what"], row["epochs"],
             _pairs(row.get("data", {}).get("train_pairs")), row["final_loss"],
             row["final_val_loss"], row["bleu_greedy"],
             *([_beam(row)] if beam else []),
             _long_bucket(row), row["minutes"]]
            for name, row in variants.items()]
    if results and "bleu_greedy_by_source_length" in results:
        seeds = results.get("seeds", 1)
        width = next((row["beam_width"] for row in variants.values()
                      if "beam_width" in row), None)
        rows.append(["the recipe (above)", f"its result, {runner.plural(seeds, 'seed')}",
                     results["epochs"], _pairs(results.get("train_pairs")),
                     runner.shown(results, "final_loss"),
                     runner.shown(results, "final_val_loss"),
                     runner.shown(results, "bleu_greedy"),
                     *([runner.shown(results, f"bleu_beam{width}")
                        if f"bleu_beam{width}" in results else "-"] if beam else []),
                     _long_bucket(results),
                     runner.shown(results, "train_minutes")])
    lines = ["", "## Ablation", "",
             string.Template(ABLATION).substitute(
                 model=os.path.basename(os.path.abspath(folder)))
             + _ablation_machines(variants), "",
             runner.table(["variant", "what changes", "epochs",
                           "training pairs", "train loss",
                           "val loss", "greedy BLEU",
                           *(["beam BLEU"] if beam else []),
                           "greedy BLEU, 16-20 source words", "minutes"], rows)]
    alignment = _alignment_table(variants)
    if alignment:
        lines += ["", ALIGNMENT, "", alignment]
    by_length = _by_length_table(variants)
    if by_length:
        lines += ["", BY_LENGTH.format(steps=_phase_steps(variants)), "", by_length]
    if any(row.get("selection") for row in variants.values()) and \
            os.path.exists(os.path.join(folder, "selection.png")):
        lines += ["", SELECTION, "", "![p over training](selection.png)"]
    findings = [text for text in (_monotonic_findings(variants),
                                  _phase_findings(variants)) if text]
    if findings:
        lines += ["", "What these rows show (read from the rows above; a row "
                  "named `seed N` is that seed, the others seed 0):", ""] + [
                      f"- {text}" for text in findings]
    return "\n".join(lines) + "\n"


def _monotonic_findings(variants):
    """The monotonic study in words, from its rows of seed 0 (`name@E`,
    `name@E+N`): nothing unless the scratch and the from-soft rows exist."""
    scratch = next((k for k in variants if k.startswith("hard-monotonic@")), None)
    soft_start = next((k for k in variants if k.startswith("monotonic-from-soft@")), None)
    if not scratch or not soft_start or not variants[scratch].get("selection"):
        return ""
    row, moved = variants[scratch], variants[soft_start]
    base = variants.get(moved["phase"]["from"])
    control = variants.get(f"plain-phase@{soft_start.split('@')[1]}")
    last = row["selection"][-1]
    text = ""
    if base:
        text = (f"Soft attention of the same seed (`{moved['phase']['from']}`): "
                f"{base['bleu_greedy']} greedy / {base.get('bleu_beam', '-')} beam "
                "BLEU. ")
    p90 = [x["p_quantiles"]["90"] for x in row["selection"]]
    rise = ("rise all through training" if len(p90) > 1 and all(
        x < y for x, y in zip(p90, p90[1:]))
        else f"go from {p90[0]} to {p90[-1]} (90th percentile)")
    text += (f"From scratch (`{scratch}`), the stopping probabilities {rise} "
            f"while `r` moves from {row['selection'][0]['r']} to "
            f"{last['r']}: after the last epoch the 90th percentile of `p` where "
            f"the mass arrives is {last['p_quantiles']['90']}, "
            f"{100 * last['decides']:.1f}% of steps have some `p >= 0.5`, and hard "
            f"decoding leaves {100 * row['alignment_rates']['attended_nowhere']:.1f}% "
            f"of output words attending nowhere (16-20 words): greedy BLEU "
            f"{row['bleu_greedy']} (expected alignment "
            f"{row.get('bleu_greedy_expected_alignment', '-')}).")
    others = [_against_soft(k, v, variants.get("recipe@" + k.split("@", 1)[1]))
              for k, v in variants.items()
              if k.startswith("hard-monotonic-") and "alignment_rates" in v]
    if others:
        text += (" One variable at a time, greedy / beam BLEU: "
                 + ", ".join(others) + ".")
    text += (f" Started from the converged soft model's energies "
             f"(`{soft_start}`), it decides from the first batches "
             f"({100 * moved['selection'][0]['decides']:.1f}% of steps before the "
             f"phase), leaves {100 * moved['alignment_rates']['attended_nowhere']:.1f}% "
             f"of output words attending nowhere, and decodes hard at "
             f"{moved['bleu_greedy']} greedy / {moved.get('bleu_beam', '-')} beam BLEU")
    if control:
        text += (f", against {control['bleu_greedy']} / "
                 f"{control.get('bleu_beam', '-')} for the soft model trained "
                 "the same batches on (`plain-phase`)")
    long_moved = moved.get("bleu_beam_by_source_length", {})
    long_control = (control or {}).get("bleu_beam_by_source_length", {})
    long = [b for b in ("21-30", "31-50") if b in long_moved and b in long_control]
    if long:
        gaps = [long_moved[b]["bleu"] - long_control[b]["bleu"] for b in long]
        where = ("ahead" if min(gaps) > 0 else "behind" if max(gaps) < 0 else
                 "level" if not any(gaps) else
                 "ahead on some lengths only" if max(gaps) > 0 else "behind or level")
        text += (f"; on the longest sources it is {where} (beam BLEU " + ", ".join(
            f"{b} words: {long_moved[b]['bleu']} against {long_control[b]['bleu']}"
            for b in long) + ")")
    return text + "." + _from_soft_by_seed(variants, soft_start)


def _from_soft_by_seed(variants, soft_start):
    """Each seed of the from-soft phase beside soft attention of its seed
    (the converged variant it started from), then the issue's target for
    every hard monotonic row of several seeds (`_target`)."""
    start = variants[soft_start]["phase"]["from"]
    moved, soft = _by_seed(variants, soft_start), _by_seed(variants, start)
    seeds = sorted(set(moved) & set(soft))
    if not seeds:
        return ""

    epochs = start.split("@", 1)[1]
    scratch = sorted({row_seed(k)[0] for k in variants
                      if k.startswith("hard-monotonic")})
    targets = [_target(variants, name, "recipe@" + name.split("@", 1)[1])
               for name in scratch if name.endswith("@" + epochs)]
    targets = [t for t in [_target(variants, soft_start, start), *targets] if t]
    return (" By seed, greedy / beam BLEU: " + ", ".join(
        _against_soft(with_seed(soft_start, s), moved[s], soft[s]) for s in seeds)
        + "." + (" Within 3 greedy BLEU of soft attention of its seed, with "
                 "under 5% of output words attending nowhere (the target): "
                 + "; ".join(targets) + "." if targets else ""))


def _target(variants, name, soft_name):
    """"`name` k of N seeds (a ± b greedy BLEU behind)": in how many seeds
    the rows `name` decode hard within 3 greedy BLEU of the soft rows
    `soft_name` of the same seed with under 5% of output words attending
    nowhere, and how far behind they are on average; "" for one seed."""
    rows, soft = _by_seed(variants, name), _by_seed(variants, soft_name)
    seeds = sorted(set(rows) & set(soft))
    if len(seeds) < 2:
        return ""
    behind = [soft[s]["bleu_greedy"] - rows[s]["bleu_greedy"] for s in seeds]
    met = sum(gap <= 3.0 and rows[s]["alignment_rates"].get("attended_nowhere", 1.0) < 0.05
              for gap, s in zip(behind, seeds))
    return (f"`{name}` {met} of {runner.plural(len(seeds), 'seed')} "
            f"({runner.spread(behind, 2)} greedy BLEU behind)")


def _against_soft(name, row, soft):
    """`name`'s greedy / beam BLEU and its share attending nowhere, and how
    far behind the soft recipe of the same seed and budget it is."""
    nowhere = row.get("alignment_rates", {}).get("attended_nowhere")
    text = (f"`{name}` {row['bleu_greedy']} / {row.get('bleu_beam', '-')} ("
            + ("attending nowhere not recorded" if nowhere is None
               else f"{100 * nowhere:.1f}% attending nowhere"))
    if soft and "bleu_beam" in soft and "bleu_beam" in row:
        text += (f"; {soft['bleu_greedy'] - row['bleu_greedy']:.2f} / "
                 f"{soft['bleu_beam'] - row['bleu_beam']:.2f} behind soft "
                 "attention of its seed")
    return text + ")"


def _by_seed(variants, name):
    """`{seed: row}` of the rows of `name` in ablation.json (`name` is seed
    0, `name seed N` seed N)."""
    rows = {}
    for key, row in variants.items():
        base, seed = row_seed(key)
        if base == name:
            rows[seed] = row
    return rows


LONG = ("21-30", "31-50")   # source lengths above the training length


def _phase_steps(variants):
    """What the phases trained, from their rows: `; the phases trained
    ...` (the batches trained and the N asked), or nothing without a
    phase."""
    trained = {}
    for key, row in variants.items():
        if "phase" in row:
            phase = row["phase"]
            trained.setdefault((phase["steps"], phase.get("asked", phase["steps"])),
                               {})[row_seed(key)[0]] = None
    parts = [f"{steps:,} batch{'es' * (steps != 1)}"
             + ("" if steps == asked else f" of the {asked:,} asked, one pass "
                "over the training pairs,")
             + " in " + ", ".join(f"`{k}`" for k in keys)
             for (steps, asked), keys in sorted(trained.items())]
    return "; the phases trained " + "; ".join(parts) if parts else ""


def _phase_findings(variants):
    """The coverage phase against its control in words, over the seeds that
    have both, and whether it shows the shape See et al. and Tu et al.
    lead one to expect: dropped and repeated source words fall, and beam
    BLEU on the longest sources holds or rises."""
    cov = next((k for k in variants if k.startswith("coverage-phase@")
                and row_seed(k)[1] == 0), None)
    if not cov:
        return ""
    covered = _by_seed(variants, cov)
    control = _by_seed(variants, "plain-phase@" + cov.split("@")[1])
    seeds = sorted(set(covered) & set(control))
    if not seeds:
        return ""
    c, p = [covered[s] for s in seeds], [control[s] for s in seeds]

    def over(rows, get, digits=2):
        return runner.spread([get(r) for r in rows], digits)

    def bleu(rows):
        beam = (over(rows, lambda r: r["bleu_beam"])
                if all("bleu_beam" in r for r in rows) else "-")
        return f"{over(rows, lambda r: r['bleu_greedy'])} / {beam}"

    def rate(rows, key):
        return over(rows, lambda r: 100 * r["alignment_rates"][key], 1) + "%"

    rates = (("dropped source words", "dropped"),
             ("repeated source words", "repeated"),
             ("repeated output words", "repeated_output"))
    text = (f"Coverage switched on for the phase (`{cov}`) against the same "
            f"batches without it, {runner.plural(len(seeds), 'seed')} "
            f"({', '.join(map(str, seeds))}; mean ± sd): greedy / beam BLEU "
            f"{bleu(c)} against {bleu(p)}; on the 16-20-word sources " + ", ".join(
                f"{name} {rate(c, key)} against {rate(p, key)}" for name, key in rates))

    def long(row, bucket):
        return row.get("bleu_beam_by_source_length", {}).get(bucket, {}).get("bleu")

    buckets = [b for b in LONG if all(long(r, b) is not None for r in c + p)]
    if buckets:
        text += "; beam BLEU on the longest sources " + ", ".join(
            f"{b} words: {over(c, lambda r: long(r, b))} against "
            f"{over(p, lambda r: long(r, b))}" for b in buckets)
    fell = {key: sum(covered[s]["alignment_rates"][key]
                     < control[s]["alignment_rates"][key] for s in seeds)
            for key in ("dropped", "repeated")}
    held = sum(all(long(covered[s], b) >= long(control[s], b) for b in buckets)
               for s in seeds) if buckets else None
    counts = [fell["dropped"], fell["repeated"]] + ([held] if buckets else [])
    n = len(seeds)
    verdict = ("shown in every seed" if min(counts) == n
               else "not shown" if max(counts) == 0 else "not in every seed")
    return (text + f". The expected shape (dropped and repeated source words "
            f"fall, beam BLEU on the longest sources holds or rises): {verdict}: "
            f"dropped words fell in {fell['dropped']} of "
            f"{runner.plural(n, 'seed')}, repeated words in {fell['repeated']} "
            f"of {n}"
            + (f", long-source BLEU held or rose in {held} of {n}" if buckets else "")
            + ".")


def _pairs(count):
    """An ablation row's training pairs, "-" where it did not record them."""
    return "-" if count is None else f"{count:,}"


def _ablation_machines(variants):
    """`" The rows that recorded their machine ran on ..."` (and the sizes
    of the data they saw, which a machine's gettext catalogs set), or
    nothing."""
    measured = [row for row in variants.values() if "machine" in row]
    if not measured:
        return ""
    sizes = sorted({(row["data"]["train_pairs"], row["data"]["test_pairs"])
                    for row in measured if "data" in row})
    data = "; ".join(f"{train:,} training and {test:,} test pairs"
                     for train, test in sizes)
    return (f" The rows that recorded their machine ran on "
            f"{runner.machines(measured)}" + (f", with {data}" if data else "")
            + ". The training pairs column gives each row's data (\"-\": a "
            "row from before rows recorded it): compare rows of the same "
            "data only.")


def _by_length_table(variants):
    """A row per variant (over its seeds) and source-length bucket: BLEU
    and alignment rates, for the rows that recorded them by length."""
    groups = {}
    for name, row in variants.items():
        if "alignment_rates_by_source_length" in row:
            groups.setdefault(row_seed(name)[0], []).append(row)
    if not groups:
        return ""
    beam = any("bleu_beam_by_source_length" in r
               for g in groups.values() for r in g)
    rows = []
    for name, group in groups.items():
        for bucket, first in group[0]["alignment_rates_by_source_length"].items():
            if not first["sentences"]:
                continue
            rates = [r["alignment_rates_by_source_length"][bucket] for r in group]

            def bleu(key):
                values = [r.get(key, {}).get(bucket, {}).get("bleu") for r in group]
                return "-" if None in values else runner.spread(values, 2)

            rows.append([name, len(group), bucket, first["sentences"],
                         bleu("bleu_greedy_by_source_length"),
                         *([bleu("bleu_beam_by_source_length")] if beam else []),
                         *(runner.spread([a[k] for a in rates], 4)
                           for k in ("dropped", "repeated", "repeated_output"))])
    return runner.table(["variant", "seeds", "source words", "sentences",
                         "greedy BLEU", *(["beam BLEU"] if beam else []),
                         "dropped", "repeated", "repeated output words"], rows)


def _beam(row):
    """Beam BLEU and its width, or "-" where the row has none."""
    if "bleu_beam" not in row:
        return "-"
    return f"{row['bleu_beam']} (beam {row['beam_width']}, alpha 0.6)"


def _long_bucket(row):
    """Greedy BLEU on the 16-20-word sources, or "-" where not recorded."""
    bucket = row.get("bleu_greedy_by_source_length", {}).get("16-20")
    if not bucket:
        return "-"
    return f"{runner.shown(bucket, 'bleu')} ({bucket['sentences']} sentences)"


def _alignment_table(variants):
    """Greedy BLEU and the 16-20-word bucket's alignment rates of the rows
    that recorded them, over their seeds (`name@epochs seed N` is seed N of
    `name@epochs`)."""
    groups = {}
    for name, row in variants.items():
        if "alignment_rates" in row:
            groups.setdefault(row_seed(name)[0], []).append(row)
    if not groups:
        return ""
    # Columns that only some rows recorded: "-" for the others.
    nowhere = any("attended_nowhere" in r["alignment_rates"]
                  for g in groups.values() for r in g)
    expected = any("bleu_greedy_expected_alignment" in r
                   for g in groups.values() for r in g)

    def optional(values, digits):
        return "-" if None in values else runner.spread(values, digits)

    rows = []
    for name, group in groups.items():
        rates = [r["alignment_rates"] for r in group]
        rows.append([name, len(group),
                     runner.spread([r["bleu_greedy"] for r in group], 2),
                     *([optional([r.get("bleu_greedy_expected_alignment")
                                  for r in group], 2)] if expected else []),
                     optional([r["bleu_greedy_by_source_length"].get("16-20", {})
                               .get("bleu") for r in group], 2),
                     *(runner.spread([a[k] for a in rates], 4)
                       for k in ("dropped", "repeated", "repeated_output")),
                     *([optional([a.get("attended_nowhere") for a in rates], 4)]
                       if nowhere else [])])
    return runner.table(["variant", "seeds", "greedy BLEU",
                         *(["greedy BLEU, expected alignment"] if expected else []),
                         "greedy BLEU, 16-20",
                         "dropped", "repeated", "repeated output words",
                         *(["output words attending nowhere"] if nowhere else [])],
                        rows)
