"""Run every benchmark on every installed backend and tabulate the ratios.

    python benchmarks/run.py                         # all figures, all backends
    python benchmarks/run.py --backends jax --figures 1,6
    python benchmarks/run.py --quick                 # tiny sizes: a smoke run

One process per backend (the backend is fixed when Keras is imported); in
it each figure's module measures kerattn and its named peer side by side.
Every figure is a median after warm-up (see `benchmarks/common.py`).
Writes `benchmarks/results/run.json` (machine, versions, every row) and
`benchmarks/results/run.md` (the table), and prints the table.

Figures (the modules say exactly what is timed):

1. `mha`: kerattn MultiHeadAttention vs keras.layers.MultiHeadAttention
   (and torch.nn.MultiheadAttention on torch), forward + backward.
2. `transformer`: `transformer_nmt` training step vs the same architecture
   from keras-hub's TransformerEncoder / TransformerDecoder.
3. `bahdanau`: `bahdanau_nmt` training throughput vs the TensorFlow
   tutorial-style Keras model (and the PyTorch tutorial model on torch).
4. `beam`: beam search vs keras-hub's BeamSampler on the same model step,
   and beam 5 vs greedy.
5. `windowed`: RestrictedSelfAttention / LocalAttention vs full attention,
   time and peak memory from n = 256 to 8192.
6. `flops`: the transformer training step's achieved FLOP/s over the
   backend's measured matmul FLOP/s.
7. `id_check`: one `fit` epoch on a `tf.data.Dataset` with the token-id
   check vs Keras' own `fit` without it, and the dataset's iteration.
8. `flash`: figure 1 at `mixed_bfloat16`, with and without a padding
   mask, naming the attention kernel each layer ran (flash where offered).
9. `torch_compile` (torch only): figures 2 and 3's training steps under
   `torch.compile` beside eager, with compile time and graph breaks.
10. `memory`: peak host memory of figures 2 and 3's training steps, ours
   and the peers.

Nothing here is asserted in the tests except that `--quick` runs.
"""

import argparse
import datetime
import importlib
import json
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
FIGURES = {1: "mha", 2: "transformer", 3: "bahdanau", 4: "beam",
           5: "windowed", 6: "flops", 7: "id_check", 8: "flash",
           9: "torch_compile", 10: "memory"}


def worker(figures, quick):
    """In one backend's process: run the figures, print one line per row."""
    sys.path.insert(0, REPO)
    from benchmarks import common

    print("ENV " + json.dumps({"backend": common.backend(),
                               "versions": common.versions(),
                               "machine": common.machine()}), flush=True)
    for figure in figures:
        module = importlib.import_module(f"benchmarks.{FIGURES[figure]}")
        start = time.perf_counter()
        try:
            rows = module.run(quick=quick)
        except Exception as e:  # report, and go on with the other figures
            traceback.print_exc()
            rows = [{"figure": figure, "name": FIGURES[figure],
                     "error": f"{type(e).__name__}: {str(e)[:300]}"}]
        for r in rows:
            r["backend"] = common.backend()
            r.setdefault("seconds_for_figure", time.perf_counter() - start)
            print("ROW " + json.dumps(r), flush=True)


def run_backend(backend, figures, quick, timeout):
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, os.path.join(HERE, "run.py"), "--worker",
           "--figures", ",".join(map(str, figures))] + (["--quick"] if quick else [])
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += f"\n{backend}: timed out after {timeout} s"
    info, rows = {}, []
    for line in out.splitlines():
        if line.startswith("ENV "):
            info = json.loads(line[4:])
        elif line.startswith("ROW "):
            rows.append(json.loads(line[4:]))
            print(f"[{backend}] {_short(rows[-1])}", flush=True)
    if proc.returncode:
        print(f"[{backend}] exited {proc.returncode}:\n{err[-4000:]}", flush=True)
        rows.append({"figure": 0, "backend": backend, "name": "process",
                     "error": err.strip().splitlines()[-1][:300] if err.strip()
                     else f"exit {proc.returncode}"})
    return info, rows


def _short(r):
    if "error" in r:
        return f"fig {r['figure']} {r['name']}: ERROR {r['error']}"
    ratio = "" if r.get("ratio") is None else f" ratio {r['ratio']:.2f}"
    peer = "" if r.get("peer") is None else f" vs {r['peer']:.4g} ({r['peer_name']})"
    return f"fig {r['figure']} {r['name']}: {r['ours']:.4g} {r['unit']}{peer}{ratio}"


def _fmt(x):
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"
    return str(x)


def table(rows):
    lines = ["| backend | fig | measurement | kerattn | peer | peer is | "
             "ratio | target | met | notes |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['backend']} | {r['figure']} | {r['name']} | "
                         f"error | | | | | | {r['error'][:120]} |")
            continue
        target = "-" if r.get("target") is None else f"{r['target_op']} {r['target']:g}"
        lines.append(
            f"| {r['backend']} | {r['figure']} | {r['name']} | "
            f"{_fmt(r['ours'])} {r['unit']} | {_fmt(r.get('peer'))} | "
            f"{r.get('peer_name') or '-'} | {_fmt(r.get('ratio'))} | {target} | "
            f"{_fmt(r.get('met'))} | {r.get('notes', '')} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backends", default="tensorflow,jax,torch")
    p.add_argument("--figures", default=",".join(map(str, FIGURES)))
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes, one repeat: checks the code, not speed")
    p.add_argument("--output", default=os.path.join(HERE, "results"))
    p.add_argument("--timeout", type=int, default=3600,
                   help="seconds per backend")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    figures = [int(f) for f in args.figures.split(",")]
    if args.worker:
        return worker(figures, args.quick)

    start = time.time()
    environments, rows = {}, []
    for backend in args.backends.split(","):
        info, backend_rows = run_backend(backend, figures, args.quick,
                                         args.timeout)
        environments[backend] = info
        rows += backend_rows
    first = next(iter(environments.values()), {})
    report = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": "python benchmarks/run.py " + " ".join(sys.argv[1:]),
        "seconds": time.time() - start,
        "machine": first.get("machine"),
        "environments": environments,
        "rows": rows,
    }
    os.makedirs(args.output, exist_ok=True)
    stem = "run_quick" if args.quick else "run"
    with open(os.path.join(args.output, stem + ".json"), "w") as f:
        json.dump(report, f, indent=1)
    md = table(rows)
    header = [f"Run {report['date']}, `{report['command']}`, "
              f"{report['seconds'] / 60:.1f} min."]
    if report["machine"]:
        m = report["machine"]
        header.append(f"Machine: {m['cpu']}, {m['cpus']} CPUs, accelerator: "
                      f"{m['accelerator']}; {m['platform']}.")
    for backend, info in environments.items():
        v = info.get("versions", {})
        header.append(f"{backend}: " + ", ".join(f"{k} {x}" for k, x in v.items()))
    text = "\n\n".join(header) + "\n\n" + md + "\n"
    with open(os.path.join(args.output, stem + ".md"), "w") as f:
        f.write(text)
    print("\n" + text)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
