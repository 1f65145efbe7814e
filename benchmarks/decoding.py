"""Translation decoding speed: compiled vs eager, per backend, as ratios.

    python benchmarks/decoding.py                      # all backends
    python benchmarks/decoding.py --backends jax --batch 32

For each backend a fresh process builds `bahdanau_nmt` and
`transformer_nmt` at the recipes' sizes (random weights: speed does not
depend on them), and translates one batch of real gettext sentences with
`Translator` greedy and beam search (width 5), eagerly
(`jit_compile=False`) and compiled (`kerattn.decoding.compiled`: XLA under
TensorFlow, `jax.jit` under JAX; on torch the "compiled" column is the
same eager loop under `torch.inference_mode`). The first compiled call (tracing and compiling)
is reported apart; then the median of `--repeats` calls. Writes
`benchmarks/results/decoding.json` and prints a markdown table with the
speed-up of compiled over eager in the same process.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, sys, time
import numpy as np
import keras
import kerattn
from kerattn.datasets import WordVocabulary, gettext_pairs
from kerattn.decoding import Translator

batch, repeats = int(sys.argv[1]), int(sys.argv[2])
pairs = gettext_pairs("fr")["test"]
texts = [s for s, _ in pairs if 6 <= len(s.split()) <= 10][:batch]
src = WordVocabulary.build([s for s, _ in gettext_pairs("fr")["train"]], 8000)
tgt = WordVocabulary.build([t for _, t in gettext_pairs("fr")["train"]], 8000)
models = {
    "bahdanau_nmt": lambda: kerattn.zoo.bahdanau_nmt(
        len(src), len(tgt), embedding_dim=128, units=256, alignment_units=256,
        maxout_units=256),
    "transformer_nmt": lambda: kerattn.zoo.transformer_nmt(
        len(src), len(tgt), num_layers=3, d_model=256, num_heads=4, ff_dim=512),
}
rows = []
for name, build in models.items():
    keras.utils.set_random_seed(0)
    model = build()
    for search, kwargs in (("greedy", {}),
                           ("beam5", {"beam_width": 5, "length_penalty": 0.6})):
        row = {"backend": keras.backend.backend(), "model": name,
               "search": search, "batch": len(texts)}
        for mode, jit in (("eager", False), ("compiled", True)):
            translator = Translator(model, src, tgt, max_length=32,
                                    jit_compile=jit)
            start = time.perf_counter()
            first = translator(texts, **kwargs)
            row[f"{mode}_first_s"] = time.perf_counter() - start
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                out = translator(texts, **kwargs)
                times.append(time.perf_counter() - start)
            assert out == first
            row[f"{mode}_s"] = float(np.median(times))
            row[f"{mode}_out"] = out
        row["same_output"] = row.pop("eager_out") == row.pop("compiled_out")
        rows.append(row)
print("RESULT " + json.dumps(rows))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backends", default="tensorflow,jax,torch")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    rows = []
    for backend in args.backends.split(","):
        env = dict(os.environ, KERAS_BACKEND=backend)
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(args.batch), str(args.repeats)],
            env=env, capture_output=True, text=True)
        lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
        if proc.returncode or not lines:
            print(f"{backend} failed:\n{proc.stderr[-3000:]}")
            continue
        rows += json.loads(lines[-1][len("RESULT "):])
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "decoding.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("| backend | model | search | eager s/batch | compiled s/batch | "
          "speed-up | first compiled call s | same output |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['backend']} | {r['model']} | {r['search']} | "
              f"{r['eager_s']:.2f} | {r['compiled_s']:.2f} | "
              f"{r['eager_s'] / r['compiled_s']:.1f}x | "
              f"{r['compiled_first_s']:.1f} | {r['same_output']} |")


if __name__ == "__main__":
    main()
