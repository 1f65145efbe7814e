"""Show, Attend and Tell (soft and hard) on digit-strip captions.

    python zoo/show_attend_tell/recipe.py                 # both, 8 epochs
    python zoo/show_attend_tell/recipe.py --attention soft --minutes 5

Writes RESULTS.md, results.json and attention overlays next to this file.

The task: `kerattn.recipes.captioning` trains soft and/or hard attention on
strips composed from the training digits and measures, on strips of
held-out digits, the exact-caption accuracy (greedy and beam 3) and the
share of each word's attention on its own digit. A run is named by where
its settings leave the preset's (`run_name`); results.json keeps every run
in `study`, its top level the run of the defaults (or the newest, until
the defaults ran).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import runner  # noqa: E402  (zoo/runner.py)

STRIP_SHAPE = (8, 45)   # digit_strips: 8 x 9 pixels a digit, up to five
# The greedy (beam1) figures of a seed, as (results key, name in `by_seed`).
FIGURES = (("exact_caption_accuracy", "exact"),
           ("own_digit_share_all", "own digit"),
           ("own_digit_share_correct", "own digit (correct)"))


def options(p):
    p.add_argument("--attention", choices=["soft", "hard", "both"], default="both")
    p.add_argument("--train", type=int, default=40000)
    p.add_argument("--test", type=int, default=1000)
    p.add_argument("--jitter", type=int, default=0,
                   help="training strips: digits move up to this many pixels")
    p.add_argument("--pretrain-encoder", action="store_true",
                   help="pretrain the CNN on single digits and fix it, "
                   "instead of training it with the captioner")
    p.add_argument("--fresh-compositions", action="store_true",
                   help="compose new training strips every epoch")
    p.add_argument("--initial-state", choices=("mean", "learned", "zeros"),
                   default="mean", help="how the LSTM starts (the paper: "
                   "from the mean annotation)")
    p.add_argument("--expectation-rate", type=float, default=None,
                   help="hard attention: the probability that a caption "
                   "trains on the expected context (default: the preset's; "
                   "the paper's is 0.5)")
    p.add_argument("--samples-per-caption", type=int, default=1,
                   help="hard attention: location samples per caption, side "
                   "by side in a batch (the paper's N of eq. 11)")
    p.add_argument("--doubly-stochastic", type=float, default=None,
                   help="lambda of eq. 14 (default: the preset's; 0 turns the "
                   "penalty off)")
    p.add_argument("--encoder-pool-sizes", default=None,
                   help="the CNN's pooling windows, e.g. '2x2,4x1' (a 1 x 22 "
                   "grid); default: the preset's (base: '1x1,8x9', a 1 x 5 "
                   "grid, one location per digit cell)")


def check(args, parser):
    from kerattn import checks

    if args.pretrain_encoder and args.distribute != "none":
        parser.error("--pretrain-encoder trains on one device; leave out "
                     "--distribute with it")
    if args.encoder_pool_sizes:
        parse_pools(args.encoder_pool_sizes)
    checks.positive_int("samples_per_caption", args.samples_per_caption)
    if args.attention == "soft" and (args.expectation_rate is not None
                                     or args.samples_per_caption > 1):
        parser.error("--expectation-rate and --samples-per-caption are hard "
                     "attention's; leave them out with --attention soft")


def parse_pools(text):
    """`"1x1, 8x9"` -> `((1, 1), (8, 9))`: the `--encoder-pool-sizes` windows.

    Raises:
        ValueError: text that is not comma-separated `HxW` windows of
            positive integers.
    """
    from kerattn import checks

    try:
        pools = tuple(tuple(int(v) for v in p.strip().split("x"))
                      for p in str(text).split(","))
    except ValueError:
        pools = ()
    checks.require(pools and all(len(p) == 2 and min(p) >= 1 for p in pools),
                   "encoder_pool_sizes", "windows like '2x3,4x3'", text)
    return pools


def pools_text(pools):
    """`((1, 1), (8, 9))` -> `"1x1,8x9"` (the `--encoder-pool-sizes` form)."""
    return ",".join(f"{h}x{w}" for h, w in pools)


def prepare(args):
    from kerattn.datasets import WordVocabulary, digit_strips

    train, test = digit_strips(args.train, args.test, train_jitter=args.jitter)
    return {"train": train, "test": test,
            "vocab": WordVocabulary.build(train["captions"])}


def attentions(args):
    return ["soft", "hard"] if args.attention == "both" else [args.attention]


def train_seed(args, data, seed, strategy, keep):
    """One seed of each attention: `{attention: its figures}`."""
    row = {}
    for attention in attentions(args):
        row[attention] = train_one(attention, args, data, seed, strategy, keep)
        if row[attention] is None:   # a worker other than rank 0
            return None
    return row


def train_one(attention, args, data, seed, strategy, keep):
    """Train and evaluate one model; `keep` gets its model_<attention>.keras
    and attention overlay."""
    import keras

    from kerattn.recipes import captioning
    from kerattn.zoo import show_attend_tell

    keras.utils.set_random_seed(seed)   # the same start for either attention
    image_shape = data["train"]["images"].shape[1:]
    encoder = (captioning.pretrained_encoder(image_shape, seed)
               if args.pretrain_encoder else None)
    pools = parse_pools(args.encoder_pool_sizes) if args.encoder_pool_sizes else None
    with strategy.scope():
        model = show_attend_tell(
            len(data["vocab"]), attention=attention, image_shape=image_shape,
            seed=seed, encoder=encoder, preset=args.preset,
            initial_state=args.initial_state, expectation_rate=args.expectation_rate,
            doubly_stochastic=args.doubly_stochastic, encoder_pool_sizes=pools)
        summary = captioning.train(
            model, data["train"], data["vocab"], args.epochs, minutes=args.minutes,
            strategy=strategy, seed=seed, fresh=args.fresh_compositions,
            samples_per_caption=args.samples_per_caption)
    if not strategy.is_chief:
        return None
    result = captioning.evaluate(model, data["vocab"], data["test"])
    maps, words = result.pop("_maps"), result.pop("_words")
    if keep:
        from kerattn import atomic_path

        with atomic_path(os.path.join(keep, f"model_{attention}.keras")) as path:
            model.save(path)
        try:
            from kerattn.plot import attention_overlay

            attention_overlay(data["test"]["images"][0], maps[0], words[0],
                              os.path.join(keep, f"attention_{attention}.png"))
        except ImportError:   # no matplotlib
            pass
    return {"train": {k: summary[k] for k in ("epochs", "train_minutes",
                                              "final_loss", "parameters")},
            **result}


def settings(args):
    """What names a run (`run_name`); a flag left out takes its preset's value."""
    from kerattn.recipes import captioning

    named = {k: getattr(args, k) for k in (
        "attention", "train", "epochs", "initial_state", "fresh_compositions",
        "pretrain_encoder", "jitter", "preset", "expectation_rate",
        "samples_per_caption", "doubly_stochastic", "encoder_pool_sizes")}
    preset = captioning.sizes(args.preset)
    for key in ("expectation_rate", "doubly_stochastic"):
        if named[key] is None:
            named[key] = preset[key]
    named["encoder_pool_sizes"] = pools_text(   # one spelling a grid
        parse_pools(named["encoder_pool_sizes"]) if named["encoder_pool_sizes"]
        else preset["encoder_pool_sizes"])
    return named


def run_name(settings):
    """The study table's name of a run: its settings where they differ from
    its preset's. Settings of hard attention alone are named for runs that
    train it."""
    from kerattn.recipes import captioning

    preset = captioning.sizes(settings["preset"])
    parts = [f"{settings['train']:,} strips x {settings['epochs']} epochs",
             f"initial state {settings['initial_state']}"]
    if settings["fresh_compositions"]:
        parts.append("new compositions every epoch")
    if settings["pretrain_encoder"]:
        parts.append("encoder pretrained and fixed")
    if settings["jitter"]:
        parts.append(f"jitter {settings['jitter']}")
    if settings["preset"] != captioning.PRESET:
        parts.append(f"preset {settings['preset']}")
    if settings["encoder_pool_sizes"] != pools_text(preset["encoder_pool_sizes"]):
        parts.append(f"encoder pools {settings['encoder_pool_sizes']}")
    if settings["doubly_stochastic"] != preset["doubly_stochastic"]:
        parts.append(f"doubly stochastic lambda {settings['doubly_stochastic']}")
    hard = []
    if settings.get("attention", "both") != "soft":
        if settings["expectation_rate"] != preset["expectation_rate"]:
            hard.append(f"expected context p={settings['expectation_rate']}")
        if settings["samples_per_caption"] > 1:
            hard.append(f"{settings['samples_per_caption']} samples per caption")
    return ", ".join(parts) + ("; hard: " + ", ".join(hard) if hard else "")


# -----------------------------------------------------------------------------
# results.json


def record(saved, run):
    """Every run stays in `study`, named by `run_name`; this command's seeds
    join its run, per attention. The top level is the run of the default
    settings, or this one until the defaults ran; `overlays` says which
    run drew each picture."""
    import keras

    from kerattn.recipes import captioning

    args, saved = run.args, saved or {}
    pools = parse_pools(args.encoder_pool_sizes) if args.encoder_pool_sizes else None
    meta = {"backend": keras.backend.backend(), "beam_greedy_fallback": False,
            "train": args.train, "test": args.test, "preset": args.preset,
            "sizes": dict(captioning.sizes(args.preset),
                          **({"encoder_pool_sizes": pools} if pools else {}),
                          **({"doubly_stochastic": args.doubly_stochastic}
                             if args.doubly_stochastic is not None else {})),
            "jitter": args.jitter, "fresh_compositions": args.fresh_compositions,
            "initial_state": args.initial_state, "settings": run.settings,
            "command": run.command,
            "encoder": "pretrained on single training digits, then fixed"
                       if args.pretrain_encoder else "trained with the captioner"}
    other_runs = saved.get("meta", {}).get("other_runs")
    if other_runs:
        meta["other_runs"] = other_runs
    study = saved.get("study", {})
    name = run_name(run.settings)
    entry = study.get(name, {})
    results = dict(entry.get("results", {}))
    for attention in attentions(args):
        rows = [{"seed": row["seed"], **row[attention]} for row in run.rows]
        earlier = results.get(attention, {}).get("per_seed", [])
        results[attention] = combine_seeds(runner.join_seeds(earlier, rows))
    study[name] = {"command": run.command,
                   "commands": runner.join_commands(
                       entry.get("commands", [entry.get("command")]), run.command),
                   "meta": meta, "results": results}
    defaults = settings(runner.parser(TASK, ".").parse_args([]))
    headline = study.get(run_name(defaults), study[name])
    return {"meta": dict(headline["meta"], other_runs=other_runs,
                         commands=headline.get("commands")),
            "results": headline["results"], "study": study,
            "overlays": dict(saved.get("overlays", {}),
                             **{a: name for a in attentions(args)})}


def combine_seeds(rows):
    """One attention's result from its seeds: each figure's mean with its
    standard deviation (`<figure>_sd`), the first seed's examples,
    `by_seed` (the headline figures) and `per_seed` (the seeds' rows)."""
    import json

    result = json.loads(json.dumps(rows[0]))
    for beam in ("beam1", "beam3"):
        result[beam].update(runner.figures_over(
            rows, list(rows[0][beam]), 4, lambda r, key: r[beam][key]))
    for key, digits in (("train_minutes", 2), ("final_loss", 4)):
        result["train"][key] = runner.mean_of([r["train"] for r in rows], key, digits)
    result["seeds"] = len(rows)
    result["by_seed"] = [{"seed": r["seed"], **{name: r["beam1"][key]
                                               for key, name in FIGURES}}
                         for r in rows]
    result["per_seed"] = rows
    return result


# -----------------------------------------------------------------------------
# RESULTS.md


def grid_text(pools, image_shape=STRIP_SHAPE):
    """What the encoder's max pooling (`pools`, no padding) makes of an
    `image_shape` strip: `" (a 1 x 5 annotation grid: ...)."`."""
    (h, w), (ph, pw) = image_shape[:2], (1, 1)
    for a, b in pools:
        h, w, ph, pw = h // a, w // b, ph * a, pw * b
    return (f" (a {h} x {w} annotation grid: each location pools {ph} x {pw} "
            f"pixels of the {image_shape[0]} x {image_shape[1]} strip).")


def render(saved, folder):
    meta, results, study = saved["meta"], saved["results"], saved.get("study")
    lines = [_headline(meta, results), _training(results)]
    if study:
        lines.append(_study(meta, study))
    if meta.get("other_runs"):
        lines.append(_other_runs(meta["other_runs"]))
    overlays = _overlays(saved.get("overlays", {}), folder)
    if overlays:
        lines.append(overlays)
    sizes = meta["sizes"]
    lines.append(
        f"\nEncoder: {meta['encoder']}. Initial LSTM state: {meta['initial_state']} "
        "(`initial_state`; the paper's is the mean annotation). Sizes: preset "
        f"{meta['preset']!r}, `{sizes}`"
        + (grid_text(sizes["encoder_pool_sizes"]) if sizes.get("encoder_pool_sizes")
           else ".") + "\n")
    return "\n".join(lines)


def _headline(meta, results):
    seeds = max(r.get("seeds", 1) for r in results.values())
    commands = meta.get("commands") or [meta["command"]]
    data = (f"{meta['train']} training strips composed from 1,437 training digits, "
            f"{meta['test']} test strips from the 360 held-out digits "
            "(scikit-learn's UCI digits), 3-5 digits per strip"
            + (f"; training digits jittered by up to {meta['jitter']} pixel(s) in "
               "their cells, test strips plain" if meta["jitter"] else "")
            + ("; new training strips composed every epoch from the same "
               "training digits" if meta["fresh_compositions"] else "") + "."
            + (f" Every figure is the mean ± standard deviation of {seeds} seeds."
               if seeds > 1 else ""))
    rows = [[attention, "greedy" if beam == "beam1" else "beam 3",
             runner.shown(r[beam], "exact_caption_accuracy", 3),
             runner.shown(r[beam], "own_digit_share_correct", 3),
             runner.shown(r[beam], "own_digit_share_all", 3)]
            for attention, r in results.items() for beam in ("beam1", "beam3")]
    return "\n".join([
        "# show_attend_tell on digit-strip captions", "",
        "Measured by " + " and ".join(f"`{c}`" for c in commands)
        + " on " + runner.machines(
            [row for r in results.values() for row in r.get("per_seed", [])],
            meta["backend"]) + f". Data: {data}", "",
        runner.table(["attention", "decoding", "exact-caption accuracy",
                      "attention on own digit (correct captions)", "(all captions)"],
                     rows), "",
        _targets(results), ""])


# attention -> (exact-caption accuracy, share of each word's attention on its
# own digit), the means of TARGET_SEEDS seeds the recipe aims at (greedy).
TARGETS = {"soft": (0.95, 0.70), "hard": (0.90, 0.50)}
TARGET_SEEDS = 3


def _targets(results):
    """The targets, and whether each greedy mean (all captions) meets it,
    for an attention with 3 seeds (fewer: not scored)."""
    met = []
    for attention, (exact, own) in TARGETS.items():
        r = results.get(attention)
        if r and r.get("seeds", 1) >= TARGET_SEEDS:
            figures = [(r["beam1"]["exact_caption_accuracy"], exact, "exact"),
                       (r["beam1"]["own_digit_share_all"], own, "own digit")]
            met.append(f"{attention} " + ", ".join(
                f"{what} {value:.4f} {'met' if value >= target else 'missed'}"
                for value, target, what in figures))
        elif r:
            met.append(f"{attention} not scored ({runner.plural(r.get('seeds', 1), 'seed')})")
    (soft_exact, soft_own), (hard_exact, hard_own) = TARGETS["soft"], TARGETS["hard"]
    return (f"Targets ({TARGET_SEEDS}-seed means, greedy): soft >= {soft_exact:.2f} "
            f"exact captions and >= {soft_own:.2f} of each word's attention on its "
            f"own digit (all captions); hard >= {hard_exact:.2f} and >= "
            f"{hard_own:.2f}." + (" Here: " + "; ".join(met) + "." if met else ""))


def _training(results):
    lines = ["Training:", ""]
    for attention, r in results.items():
        t = r["train"]
        per_seed = ""
        if len(r.get("by_seed", [])) > 1:
            per_seed = " Per seed (exact / own digit): " + ", ".join(
                f"seed {x['seed']}: {x['exact']:.3f} / {x['own digit']:.3f}"
                for x in r["by_seed"]) + "."
        lines.append(f"- {attention}: {t['epochs']} epochs, "
                     f"{round(t['train_minutes'], 2)} min a seed, final loss "
                     f"{t['final_loss']}, {t['parameters']:,} parameters.{per_seed}")
    return "\n".join(lines)


def _study(meta, study):
    rows = [[name, attention, r.get("seeds", 1),
             runner.shown(r["beam1"], "exact_caption_accuracy", 3),
             runner.shown(r["beam1"], "own_digit_share_all", 3),
             round(r["train"]["train_minutes"], 2)]
            for name, entry in study.items() for attention in ("soft", "hard")
            for r in [entry["results"].get(attention)] if r]
    return "\n".join([
        "", "## What each change bought", "",
        "Each row is one setting of this recipe (greedy decoding, the same "
        f"{meta['test']:,} test strips), its figures the mean ± standard deviation "
        "over its seeds; the table above is the row of the recipe's defaults. A "
        "run is named by where its settings differ from the preset's (the sizes "
        "at the end).", "",
        runner.table(["run", "attention", "seeds", "exact",
                      "own digit (all captions)", "minutes a seed"], rows), "",
        "Each run's commands are in results.json (`study`); a run's seeds may "
        "come from several commands (`--seed`)."])


def _other_runs(other_runs):
    return "\n".join([
        "", "Earlier single-seed runs (same test strips; before the study above):",
        "", runner.table(["run", "soft exact", "soft own-digit", "hard exact",
                          "hard own-digit"],
                         [[r["run"], f"{r['soft'][0]:.3f}", f"{r['soft'][1]:.3f}",
                           f"{r['hard'][0]:.3f}", f"{r['hard'][1]:.3f}"]
                          for r in other_runs])])


def _overlays(overlays, folder):
    drawn = {a: name for a, name in overlays.items()
             if os.path.exists(os.path.join(folder, f"attention_{a}.png"))}
    if not drawn:
        return ""
    lines = ["", "Where each word looked, on the first test strip (the tint's "
             "opacity follows the weight, so the digit stays visible); each "
             "picture is of the latest run that drew it:", ""]
    for a, name in drawn.items():
        lines += [f"- {a}, run \"{name}\" (the first seed of the command that drew "
                  "it):", "", f"  ![{a} attention](attention_{a}.png)", ""]
    return "\n".join(lines)


TASK = runner.Task(
    name="show_attend_tell", about=__doc__.split("\n")[0], options=options,
    defaults=dict(epochs=8, seed=1), check=check, prepare=prepare,
    train_seed=train_seed, settings=settings, record=record, render=render)

if __name__ == "__main__":
    runner.main(TASK, __file__)
