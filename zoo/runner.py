"""One runner for every recipe in zoo/: seeds, runs, results.json, RESULTS.md.

A recipe, `zoo/<model>/recipe.py`, is a `Task` (what its task trains and
measures, with `kerattn.recipes.<task>`, and how its RESULTS.md reads) and
one call, `runner.main(TASK, __file__)`. The runner does the rest, the same
way for every task:

    python zoo/<model>/recipe.py [flags]
        parse the runner's flags and the task's                  `parser`
        prepare the data once                                    task.prepare
        refuse to join seeds to a run on other data              `data_sizes`
        for each seed: seed Keras, train, evaluate               task.train_seed
          join the seed to those results.json holds for the      task.record,
            same settings (a seed trained again keeps its newest,  `join_seeds`
            each with the machine it was measured on)
          write results.json, then RESULTS.md from it alone       task.render
          (so a command stopped later keeps the seeds it ended)
          or, if the seed's training paused (its backup kept),    `Paused`
          record nothing and exit with status 75 (`PAUSED`): the
          same command goes on
    python zoo/<model>/recipe.py --report-only
        RESULTS.md again from results.json; nothing is trained

RESULTS.md is rendered from results.json and nothing else, so that every
committed RESULTS.md regenerates byte for byte (tests/test_zoo_table.py),
and zoo/summarize.py reads the same records (`load`).
"""

import argparse
import dataclasses
import importlib.util
import json
import os
import sys
from typing import Callable

import numpy as np

ZOO = os.path.dirname(os.path.abspath(__file__))


# -----------------------------------------------------------------------------
# What a task tells the runner


@dataclasses.dataclass
class Task:
    """A task's description: its flags, one seed's training, its records.

    Attributes:
        name: the zoo model the recipe trains (`kerattn.zoo.<name>`); the
            command is `python zoo/<name>/recipe.py`.
        about: one line for `--help`.
        options: `options(parser)` adds the task's own flags.
        defaults: the parser's defaults for the runner's flags
            (`epochs`, `preset`, `seed`) and the task's.
        prepare: `prepare(args)` -> the data, once a command.
        train_seed: `train_seed(args, data, seed, strategy, keep)` trains
            and evaluates one seed (Keras already seeded) and returns its
            row, a dict of its figures (None on a worker other than rank
            0); `keep` is the folder to write the model and pictures into
            (the command's first seed), else None. It raises `Paused`
            where the seed's training paused, to go on later.
        settings: `settings(args)` -> the flags that name a run: seeds of
            the same settings are one run, whichever command trained them.
        record: `record(saved, run)` -> results.json: the recorded
            results (`saved`, or None) with this command's `Run` joined.
        render: `render(results, folder)` -> RESULTS.md, from results.json
            alone (`folder` holds results.json and any pictures).
        check: `check(args, parser)` refuses flags that do not go together
            (`parser.error`), before anything trains.
        presets: the `--preset` choices (the builder's named sizes).
        data_sizes: `data_sizes(data)` -> the figures that say which data
            a seed saw (such as `{"test_pairs": 4339}`: a machine's apt
            lists or gettext catalogs change). The runner writes them into
            every seed's row, with the splits' fingerprint where `prepare`
            gives one (`data["data_sha256"]`: an upgraded package changes
            the text, not always the sizes), and, before anything trains,
            refuses to add seeds to a recorded run of the same settings
            whose seeds saw other data (`data_sizes`, `refuse_other_data`).
    """

    name: str
    about: str
    options: Callable
    prepare: Callable
    train_seed: Callable
    settings: Callable
    record: Callable
    render: Callable
    defaults: dict = dataclasses.field(default_factory=dict)
    check: Callable = None
    presets: tuple = ("tiny", "small", "base", "paper")
    data_sizes: Callable = None


class Paused(Exception):
    """Raised by `Task.train_seed` when the seed's training paused at an
    epoch's end with its backup kept (`--pause-after`): the seed is not
    recorded, the command exits with status `PAUSED`, and the same command
    goes on from the backup."""


# The exit status of a paused command: sysexits.h's EX_TEMPFAIL ("try
# again later"), so that a script can tell a pause from an end (0) or a
# failure.
PAUSED = 75


@dataclasses.dataclass
class Run:
    """One command's seeds: what `Task.record` joins to the recorded runs."""

    settings: dict      # Task.settings(args)
    rows: list          # one dict a seed, "seed" first, in seed order
    command: str        # how to train them again
    args: argparse.Namespace
    data: object        # Task.prepare(args)


# -----------------------------------------------------------------------------
# The command line


def parser(task, folder):
    """The recipe's command line: the runner's flags, then the task's."""
    p = argparse.ArgumentParser(description=task.about)
    p.add_argument("--epochs", type=int, help="training epochs")
    p.add_argument("--minutes", type=float, default=None,
                   help="optional wall-clock cap on training")
    p.add_argument("--preset", choices=task.presets, default="base",
                   help="the model's named sizes (kerattn.zoo.presets)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seeds", type=int, default=1,
                   help="train this many seeds (from --seed); report their "
                   "mean and standard deviation")
    p.add_argument("--out", "--output", dest="out", default=folder,
                   help="where results go (default: the recipe's folder)")
    p.add_argument("--report-only", action="store_true",
                   help="rewrite RESULTS.md from results.json, train nothing")
    task.options(p)
    from kerattn import distribute

    distribute.add_arguments(p)
    p.set_defaults(**task.defaults)
    return p


def command(task, argv):
    """The command that trains these seeds again: where it wrote is not
    part of the run, so `--out` is left out."""
    shown, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--out", "--output"):
            skip = True
        elif not arg.startswith(("--out=", "--output=")):
            shown.append(arg)
    return " ".join([f"python zoo/{task.name}/recipe.py", *shown])


def command_for(task, settings, seeds):
    """The one command that trains `seeds` with `settings` (flag -> value):
    each flag, `--seed` and `--seeds` left out at the parser's default."""
    p = parser(task, ".")

    def flag(key, value):   # a switch (store_true) is its name alone
        name = f"--{key.replace('_', '-')}"
        if isinstance(value, bool):
            return name
        return f"{name} {value:g}" if isinstance(value, float) else f"{name} {value}"

    flags = [flag(k, v) for k, v in settings.items() if v != p.get_default(k)]
    if seeds[0] != p.get_default("seed"):
        flags.append(f"--seed {seeds[0]}")
    if len(seeds) > 1:
        flags.append(f"--seeds {len(seeds)}")
    return " ".join([f"python zoo/{task.name}/recipe.py", *flags])


# -----------------------------------------------------------------------------
# Running a recipe


def main(task, recipe_file=None, argv=None, folder=None):
    """Run `task`'s recipe with the flags `argv` (default `sys.argv[1:]`).

    Results go to `--out`, by default `folder`, else the folder of
    `recipe_file`, else zoo/<task.name>.
    Only the chief (`strategy.is_chief`) writes; returns results.json as
    written (None on any other worker).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    folder = folder or (os.path.dirname(os.path.abspath(recipe_file)) if recipe_file
                        else os.path.join(ZOO, task.name))
    p = parser(task, folder)
    args = p.parse_args(argv)
    if args.report_only:
        return report_only(task, args.out)
    from kerattn import checks, distribute

    checks.positive_int("seeds", args.seeds)
    checks.positive_int("epochs", args.epochs)
    if task.check:
        task.check(args, p)
    strategy = distribute.from_arguments(args, task.name)   # before the backend starts
    import keras

    print(f"backend {keras.backend.backend()}, {strategy.num_replicas} replica(s) "
          f"in {strategy.processes} process(es)")
    if strategy.is_chief:   # the only one that writes
        os.makedirs(args.out, exist_ok=True)
    data = task.prepare(args)
    sizes = data_sizes(task.data_sizes, data)
    if sizes and strategy.is_chief:
        refuse_other_data(load(args.out), task.settings(args), sizes, args.out)
    from kerattn import environment

    measured_on = environment.machine()   # recorded with each seed
    rows = []
    for seed in range(args.seed, args.seed + args.seeds):
        keras.utils.set_random_seed(seed)
        try:
            row = task.train_seed(args, data, seed, strategy,
                                  None if rows else args.out)
        except Paused as paused:   # nothing new to record or render
            print(f"seed {seed} paused: {paused} Run the same command to go "
                  f"on (exit status {PAUSED}).", flush=True)
            raise SystemExit(PAUSED) from None
        # The chief evaluates and writes alone; the others wait here, not in
        # the next seed's first collective step (under the engine's timeout).
        strategy.barrier(f"seed {seed} evaluated")
        if row is None:   # not the chief
            continue
        rows.append({"seed": seed, **row, **sizes, "machine": measured_on})
        print(f"seed {seed}: {_headline(row)}", flush=True)
        # Each seed is recorded as it ends (it joins the run's earlier
        # seeds), so a command stopped later keeps the seeds it finished.
        if strategy.is_chief:
            run = Run(task.settings(args), rows[-1:], command(task, argv), args,
                      data)
            save(args.out, task.record(load(args.out), run))
            report_only(task, args.out)
    if not strategy.is_chief:
        return None
    return report_only(task, args.out)


def _headline(row):
    """A seed's figures for the log: its numbers, not its tables."""
    return {k: v for k, v in row.items() if not isinstance(v, (list, dict))} or ""


def report_only(task, folder):
    """RESULTS.md from `folder`'s results.json alone (as read back, so that a
    report written after training and one written later are the same);
    returns results.json."""
    results = load(folder)
    if results is None:
        raise FileNotFoundError(f"`--report-only`: no results.json in {folder!r} "
                                "to report (train first).")
    write(folder, results, task.render(results, folder))
    return results


# -----------------------------------------------------------------------------
# The records


def recipe_module(name):
    """zoo/<name>/recipe.py as a module, loaded anew by its path (every
    recipe is a `recipe.py`, so none is imported by its name)."""
    spec = importlib.util.spec_from_file_location(
        f"recipe_{name}", os.path.join(ZOO, name, "recipe.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(folder, name="results.json"):
    """`folder`'s results.json (or another JSON record), or None."""
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def save(folder, record, name="results.json"):
    """Write a JSON record (one space an indent, as every record is),
    atomically (`kerattn.atomic_path`)."""
    from kerattn import atomic_path

    with atomic_path(os.path.join(folder, name)) as path, open(path, "w") as f:
        json.dump(record, f, indent=1)


def write(folder, results, markdown):
    """results.json and RESULTS.md into `folder`, each atomically."""
    from kerattn import atomic_path

    save(folder, results)
    with atomic_path(os.path.join(folder, "RESULTS.md")) as path, open(path, "w") as f:
        f.write(markdown)
    print(f"wrote {os.path.join(folder, 'RESULTS.md')}")


def join_seeds(earlier, rows, match=()):
    """The seeds of one run: `earlier` rows joined by this command's `rows`.

    A seed trained again keeps its newest row; an earlier row whose `match`
    keys differ from the new rows' (another budget, backend, ...) is
    dropped. Returned in seed order.
    """
    earlier = [r for r in earlier
               if all(r.get(k) == rows[0].get(k) for k in match)]
    by_seed = {r["seed"]: r for r in earlier}
    by_seed.update({r["seed"]: r for r in rows})
    return [by_seed[seed] for seed in sorted(by_seed)]


def recorded_seeds(saved, settings):
    """The rows of the seeds results.json (`saved`, or None) holds for
    `settings`: of its run of those settings where it keeps `runs` (one a
    setting), or of its one run where it keeps one (a translation
    recipe's: `config`, the settings with the first seed's, and
    `per_seed` once there is more than one seed)."""
    saved = saved or {}
    if "runs" in saved:
        same = next((r for r in saved["runs"] if r.get("settings") == settings), {})
        return same.get("per_seed", [])
    config = dict(saved.get("config", {}))
    seed = config.pop("seed", None)
    if not saved or config != settings:
        return []
    return saved.get("per_seed") or [dict(saved, seed=seed)]


def data_sizes(sizes_of, data):
    """What says which data a seed saw, written into each seed's row: the
    task's sizes (`sizes_of(data)`, its `Task.data_sizes`; None for none)
    and the fingerprint of the splits its `prepare` kept (`data_sha256`,
    `kerattn.datasets.data_fingerprint`), where it records one."""
    sizes = dict(sizes_of(data)) if sizes_of else {}
    if isinstance(data, dict) and "data_sha256" in data:
        sizes["data_sha256"] = data["data_sha256"]
    return sizes


def refuse_other_data(saved, settings, sizes, folder):
    """A ValueError if results.json (`saved`) holds a seed of `settings`
    (`recorded_seeds`) whose `sizes` keys differ from `sizes` (this
    command's data): seeds of two data sets are not one run, and joining
    would mix them (or drop the earlier ones, where `join_seeds`' `match`
    names the size)."""
    for row in recorded_seeds(saved, settings):
        other = {k: row[k] for k in sizes if k in row and row[k] != sizes[k]}
        if other:
            raise ValueError(
                f"`--out`: {os.path.join(folder, 'results.json')} holds seed "
                f"{row['seed']} of these settings on other data ("
                + ", ".join(f"{k} {v} there, {sizes[k]} now"
                            for k, v in other.items())
                + "). Give another `--out`, or move that results.json aside.")


def join_commands(earlier, command):
    """The commands whose seeds a run holds, this one last."""
    return [c for c in earlier if c and c != command] + [command]


def join_run(saved, run, summarise, meta=None, match=(), commands=True):
    """results.json's `runs` (one run a setting) with this command's seeds
    joined to the run of its settings: that run's earlier seeds and this
    command's (`join_seeds` with `match`), summarised by `summarise(rows)`
    (a dict: the figures over the seeds and `seed_fields`), then the
    settings, `meta` (when given) and the commands (`join_commands`, with
    `commands`). Returns `(runs, joined)`: every run, this one last, and
    this one."""
    runs = saved["runs"] if saved else []
    same = next((r for r in runs if r["settings"] == run.settings), {})
    rows = join_seeds(same.get("per_seed", []), run.rows, match=match)
    joined = dict(summarise(rows), settings=run.settings)
    if meta is not None:
        joined["meta"] = meta
    if commands:
        joined["commands"] = join_commands(same.get("commands", []), run.command)
    runs = [r for r in runs if r["settings"] != run.settings] + [joined]
    return runs, joined


def with_defaults_on_top(runs, joined, defaults, **fields):
    """results.json of a recipe that keeps every run (`join_run`'s `runs`
    and `joined`): `fields`, then the figures of the run of `defaults` (or
    of `joined`, until the defaults ran) at the top level, then `runs`."""
    top = next((r for r in runs if r["settings"] == defaults), joined)
    return {**fields, **top, "runs": runs}


def backend():
    """The Keras backend this process runs (for a record's meta)."""
    import keras

    return keras.backend.backend()


def machine_list(rows, backend=None):
    """What `rows` (a run's seeds, as results.json holds them) were measured
    on: each machine once, in the order first met
    (`kerattn.environment.describe`), a seed trained in several calls
    (`calls`: resumed from its backup) each call's, then the one it was
    evaluated on; a row or call written before machines were recorded
    reads as the project's 2-core CPU with `backend`."""
    from kerattn import environment

    return list(dict.fromkeys(environment.describe(machine, backend)
                              for row in rows or [{}]
                              for machine in [*(c.get("machine") for c in
                                                row.get("calls", ())),
                                              row.get("machine")]))


def machines(rows, backend=None):
    """`machine_list(rows, backend)` for a page, joined by "; ", then the
    fingerprints of the splits `rows` saw (`data_sha256`, each once; an
    ablation's row keeps it in its `data`), where they recorded one, and
    how many of the rows did: the page says which data, as the record
    does."""
    text = "; ".join(machine_list(rows, backend))
    rows = rows or []
    found = [r.get("data_sha256") or (r.get("data") or {}).get("data_sha256")
             for r in rows]
    prints = list(dict.fromkeys(f for f in found if f))
    if prints:
        some = sum(map(bool, found))
        text += (f"; the data's fingerprint{'s' if len(prints) > 1 else ''} "
                 f"(`data_sha256`) {', '.join(prints)}" + (
                     "" if some == len(rows) else
                     f" (recorded by {some} of the {len(rows)} seeds; the others "
                     "were measured before fingerprints were recorded)"))
    return text


def seed_fields(rows):
    """How a run names its seeds in results.json: `seeds` (their list) for
    several, `seed` for one; then `per_seed`, the rows themselves."""
    named = ({"seeds": [r["seed"] for r in rows]} if len(rows) > 1
             else {"seed": rows[0]["seed"]})
    return dict(named, per_seed=rows)


def stopped_by(settings, row):
    """What ended one seed's training (`row`, one of results.json's
    `per_seed`, trained under its run's `settings`): `"minutes"` (the time
    cap, `settings["minutes"]`, reached), `"epochs"` (every epoch of the
    budget trained), `"early"` (neither, under `patience`: Keras'
    `EarlyStopping` ended it), or None where the record cannot tell.

    Read from the budget, not from the recorded validation losses: those
    are rounded (a small improvement reads as a tie)."""
    cap = settings.get("minutes")
    if cap and row.get("minutes", 0) >= cap:
        return "minutes"
    budget = settings.get("epochs")
    if budget and row.get("epochs") is not None and row["epochs"] >= budget:
        return "epochs"
    if settings.get("patience") and row.get("epochs") is not None:
        return "early"
    return None


# -----------------------------------------------------------------------------
# Figures over seeds


def mean_sd(values, digits):
    """`(mean, sample standard deviation)` of several seeds' figure, rounded
    to `digits`; the deviation is None for a single value."""
    mean = round(float(np.mean(values)), digits)
    sd = round(float(np.std(values, ddof=1)), digits) if len(values) > 1 else None
    return mean, sd


def figures_over(rows, names, digits, value=lambda row, name: row[name]):
    """`{name: mean, name_sd: deviation}` of each figure in `names` over
    the seeds' `rows` (`value(row, name)` reads one; no `_sd` for one
    seed), rounded to `digits`."""
    figures = {}
    for name in names:
        mean, sd = mean_sd([value(r, name) for r in rows], digits)
        figures[name] = mean
        if sd is not None:
            figures[f"{name}_sd"] = sd
    return figures


def mean_of(rows, key, digits):
    """The mean of `row[key]` over `rows`, rounded to `digits`."""
    return mean_sd([r[key] for r in rows], digits)[0]


def shown(results, key, digits=None):
    """`results[key]` as RESULTS.md shows it: with ` ± sd` when the record
    has its spread over seeds (`<key>_sd`); `digits` fixes the decimals."""
    def text(value):
        return str(value) if digits is None else f"{value:.{digits}f}"

    sd = results.get(f"{key}_sd")
    return text(results[key]) + ("" if sd is None else f" ± {text(sd)}")


def spread(values, digits, fixed=False):
    """`"mean"` or `"mean ± sd"` of `values`, rounded to `digits` (`fixed`:
    written with all of them, 28.10 rather than 28.1)."""
    mean, sd = mean_sd(values, digits)
    text = (lambda v: f"{v:.{digits}f}") if fixed else str
    return text(mean) if sd is None else f"{text(mean)} ± {text(sd)}"


def table(header, rows):
    """A Markdown table: `header` and `rows` are lists of cells."""
    return "\n".join(["| " + " | ".join(header) + " |",
                      "|" + "---|" * len(header),
                      *("| " + " | ".join(str(c) for c in row) + " |"
                        for row in rows)])


def join_and(words):
    """"a", "a and b", "a, b and c"."""
    return (", ".join(words[:-1]) + " and " + words[-1]) if len(words) > 1 else words[0]


def plural(count, word):
    return f"{count} {word}{'s' * (count != 1)}"
