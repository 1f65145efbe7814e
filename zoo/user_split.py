"""`examples/fit.py` as a user runs it on files of their own, recorded
beside the recipe's rows: the pointer-generator on the Debian pairs split
by source package with a hash of the user's, not the recipe's split.

    python zoo/user_split.py --seeds 0 1 2            # each seed not recorded yet
    python zoo/user_split.py --record RUN --seeds 0   # a fit.py run folder of this split
    python zoo/user_split.py --report-only            # the page again

The split (`write_split`): the Debian pairs of the recipe's filter (20-200
words a description, every split of `kerattn.datasets.debian_summaries`),
a pair to test when `sha1("user-split:" + its source package)` read as a
fraction is below 0.1, as train.tsv and test.tsv. Each seed runs

    python examples/fit.py pointer_generator --backend jax \\
        --data train.tsv --test-data test.tsv --seed N

with fit.py's defaults (preset small, 2 epochs, beam 4, the minimum
length and length penalty tuned on the validation split it takes from
train.tsv), and its results.json becomes a row of
zoo/pointer_generator/user_split.json, which the recipe's RESULTS.md
renders (`section`). The split's files are recorded by their SHA-1: a
run on other files (another apt list, another rule) is refused.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import runner  # noqa: E402  (zoo/runner.py)

FOLDER = os.path.join(HERE, "pointer_generator")
RECORD = "user_split.json"
TEST_SHARE = 0.1
RULE = ('a pair to test when the first 8 hex digits of `sha1("user-split:" + '
        f'source package)` as a fraction are below {TEST_SHARE}')
WORDS = (20, 200)


def to_test(source):
    """Whether the user's rule (`RULE`) puts source package `source` in the
    test file."""
    digest = hashlib.sha1(f"user-split:{source}".encode()).hexdigest()
    return int(digest[:8], 16) / 0xFFFFFFFF < TEST_SHARE


def write_split(folder):
    """train.tsv and test.tsv of the user's split in `folder`; returns the
    split's record (pairs and the files' SHA-1)."""
    from kerattn.datasets import debian_summaries

    data = debian_summaries(min_words=WORDS[0], max_words=WORDS[1])
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "train.tsv"), "w") as train, \
            open(os.path.join(folder, "test.tsv"), "w") as test:
        for split in ("train", "valid", "test"):
            for e in data[split]:
                (test if to_test(e["source"]) else train).write(
                    " ".join(e["text"].split()) + "\t"
                    + " ".join(e["summary"].split()) + "\n")
    return describe_split(os.path.join(folder, "train.tsv"),
                          os.path.join(folder, "test.tsv"))


def describe_split(train, test):
    """The split's record: each file's pairs and SHA-1."""
    record = {"rule": RULE, "words": list(WORDS)}
    for side, path in (("train", train), ("test", test)):
        with open(path, "rb") as f:
            content = f.read()
        record[f"{side}_pairs"] = content.count(b"\n")
        record[f"{side}_sha1"] = hashlib.sha1(content).hexdigest()
    return record


def row_of(run):
    """The row of a fit.py run folder `run` (its results.json)."""
    from kerattn import checks

    path = os.path.join(run, "results.json")
    checks.require(os.path.exists(path), "record", "a fit.py run folder "
                   "(with results.json)", run)
    with open(path) as f:
        r = json.load(f)
    checks.require(r.get("model") == "pointer_generator", "record",
                   "a pointer_generator run of examples/fit.py", r.get("model"))
    checks.require(r.get("test_data"), "record", "a run given its test file "
                   "(fit.py --test-data)", run)
    return {"seed": r.get("seed"), "backend": r["backend"], "rouge": r["rouge"],
            "baselines": r["baselines"],
            "tokens_per_summary": r["figures"]["tokens_per_summary"],
            "reference_tokens_per_summary": r["reference_figures"]["tokens_per_summary"],
            "min_length": r["min_length"], "length_penalty": r["length_penalty"],
            "beam_width": r["beam_width"], "epochs": r["epochs"], "steps": r["steps"],
            "size": r["size"], "train_minutes": r["train_minutes"],
            "minutes": r["minutes"], "test_pairs": r["test_pairs"],
            "machine": r.get("machine"), "data": r["data"],
            "test_data": r["test_data"]}


def add(run, seed, folder=FOLDER):
    """Record fit.py run folder `run` as `seed` of the split in `folder`'s
    user_split.json: refused if its files are not the recorded split's or
    the seed is recorded already."""
    from kerattn import checks

    row = row_of(run)
    split = describe_split(row.pop("data"), row.pop("test_data"))
    table = require_split(split, folder, "record", run)
    checks.require(row["seed"] in (None, seed), "seeds",
                   f"the seed the run trained ({row['seed']})", seed)
    checks.require(seed not in [r["seed"] for r in table["per_seed"]], "seeds",
                   "a seed not recorded yet", seed)
    table["per_seed"] = sorted(table["per_seed"] + [dict(row, seed=seed)],
                               key=lambda r: r["seed"])
    runner.save(folder, table, RECORD)
    return table


def require_split(split, folder, name, value):
    """`folder`'s record (a new one for `split` where none is), refused
    (a ValueError naming `name`) when it holds another split."""
    from kerattn import checks

    table = runner.load(folder, RECORD) or {"split": split, "per_seed": []}
    checks.require(table["split"] == split, name, f"a run on the split "
                   f"{os.path.join(folder, RECORD)} records ({table['split']}; "
                   f"this run's files: {split})", value)
    return table


def ranking(penalty):
    """A tuned `length_penalty` as the pages write it: GNMT's alpha, See
    et al.'s "average" log-probability per token, or the "raw" one."""
    return ("average" if penalty == "average" else
            "raw" if not penalty else f"alpha {penalty:g}")


def section(folder):
    """The page's section on the user's split: nothing without a record."""
    table = runner.load(folder, RECORD)
    if not table:
        return ""
    split, rows = table["split"], table["per_seed"]

    def triple(x):
        return " / ".join(f"{x[k]:.2f}" for k in ("rouge1", "rouge2", "rougeL"))

    def ahead(r):
        return all(r["rouge"][k] > r["baselines"][b][k]
                   for k in ("rouge1", "rougeL")
                   for b in ("lead_sentence", "lead_words"))

    lines = [[r["seed"], triple(r["rouge"]), triple(r["baselines"]["lead_sentence"]),
              triple(r["baselines"]["lead_words"]), "yes" if ahead(r) else "no",
              f"{r['tokens_per_summary']:.2f} ({r['reference_tokens_per_summary']:.2f})",
              f"{r['min_length']}, {ranking(r['length_penalty'])}",
              f"{r['steps']:,}, {r['train_minutes']:.1f} / {r['minutes']:.1f}"]
             for r in rows]
    if len(rows) > 1:   # the lead baselines are the test file's, one for all seeds
        def over(get):
            return runner.spread([get(r) for r in rows], 2, fixed=True)
        lines.append(["mean ± sd", " / ".join(
            over(lambda r: r["rouge"][k]) for k in ("rouge1", "rouge2", "rougeL")),
            "", "", f"{sum(map(ahead, rows))} of {len(rows)}",
            over(lambda r: r["tokens_per_summary"]), "", ""])
    k = rows[0]["baselines"]["lead_words"]["k"]
    first = rows[0]
    return "\n" + "\n".join([
        "## Through examples/fit.py on a user's own split", "",
        "A user's split of the same Debian pairs by source package, with a "
        f"hash of their own (zoo/user_split.py: the pairs of {split['words'][0]}"
        f"-{split['words'][1]} words, {split['rule']}: "
        f"{split['train_pairs']:,} training-file pairs, {split['test_pairs']:,} "
        "test pairs), trained as a user would: `python examples/fit.py "
        f"pointer_generator --backend {first['backend']} --data train.tsv "
        f"--test-data test.tsv --seed N` with fit.py's defaults (preset "
        f"{first['size']}, {first['epochs']} epochs, beam {first['beam_width']}, "
        "the minimum length and ranking, GNMT's alpha or See et al.'s average "
        "log-probability per token, tuned on the validation split it draws "
        "from train.tsv), on " + runner.machines(rows, first["backend"])
        + ". Test ROUGE-1 "
        "/ 2 / L F1 beside the lead baselines fit.py scores on the same test "
        f"file (the lead sentence, the first {k} words); \"ahead\" is ahead of "
        "both on ROUGE-1 and ROUGE-L; steps and minutes are training / the "
        "whole run:", "",
        runner.table(["seed", "pointer-generator", "lead sentence",
                      f"first {k} words", "ahead of both", "tokens a summary "
                      "(references)", "min length, ranking",
                      "steps, minutes"], lines), "",
        f"The pointer-generator is ahead of both lead baselines on ROUGE-1 and "
        f"ROUGE-L in {sum(map(ahead, rows))} of "
        f"{runner.plural(len(rows), 'seed')} on this split."]) + "\n"


def render_page():
    """RESULTS.md again, through the recipe's `--report-only`."""
    subprocess.run([sys.executable, os.path.join(FOLDER, "recipe.py"),
                    "--report-only"], check=True, cwd=REPO)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--work", default=os.path.join(REPO, "outputs", "user_split"),
                   help="where the split's files and the run folders go")
    p.add_argument("--backend", default="jax")
    p.add_argument("--record", default=None,
                   help="a fit.py run folder of this split, recorded as --seeds")
    p.add_argument("--report-only", action="store_true")
    args = p.parse_args(argv)
    if args.report_only:
        return render_page()
    if args.record:
        if len(args.seeds) != 1:
            p.error("--record takes one seed")
        add(args.record, args.seeds[0])
        return render_page()
    train, test = (os.path.join(args.work, f) for f in ("train.tsv", "test.tsv"))
    if not os.path.exists(test):
        print(write_split(args.work))
    # Another split (another apt list) is refused before anything trains.
    table = require_split(describe_split(train, test), FOLDER, "work", args.work)
    recorded = [r["seed"] for r in table["per_seed"]]
    for seed in args.seeds:
        if seed in recorded:
            print(f"seed {seed} is recorded already")
            continue
        out = os.path.join(args.work, f"seed{seed}")
        subprocess.run([sys.executable, os.path.join(REPO, "examples", "fit.py"),
                        "pointer_generator", "--backend", args.backend, "--data",
                        train, "--test-data", test, "--seed", str(seed),
                        "--output-dir", out], check=True, cwd=REPO)
        add(out, seed)
        render_page()


if __name__ == "__main__":
    main()
