"""Figure 9 (torch only): training steps under `torch.compile` beside eager.

Keras' torch trainer compiles its train step with `torch.compile` when the
model is compiled with `jit_compile=True`; the other figures run torch
eagerly (`common.jit_for_backend`). Here, for figure 3's `bahdanau_nmt` step
at T=20, figure 2's `transformer_nmt` step, then figure 3 at T=50 and
figure 1's `MultiHeadAttention` step at T=128 (their models, sizes and
data; `CASES`):

- eager: the median step, as in figures 2 and 3;
- compiled: the first call (tracing and compilation, reported as
  `compile_s`), then the median step;
- graph breaks: Dynamo's count over the compiled step
  (`torch._dynamo.explain` of the step function), and how many of the
  breaks' user frames are in kerattn's own code (`in_kerattn`).

Each compiled model runs in a process of its own with a cap of
`COMPILE_CAP_S` seconds (a graph that does not compile in time is
reported, with the reason, not forced). `--quick` runs figure 1's
`MultiHeadAttention` step only, at T=16 and batch 2, compiled with
Dynamo's "eager" backend instead of Inductor: the same graph and the same
graph breaks (they are Dynamo's), without Inductor's C++ code generation;
its compile and step times are not the figure's. (Figure 3's tiny
recurrent model, which Dynamo traces a step at a time, took 106 s of a
quick run where this step takes 46 s, this CPU, 2026-12-06.)
"""

import json
import os
import subprocess
import sys

from benchmarks import common

COMPILE_CAP_S = 600
HERE = os.path.dirname(os.path.abspath(__file__))


CASES = ("bahdanau_nmt T=20", "transformer_nmt", "bahdanau_nmt T=50",
         "MultiHeadAttention T=128")


def _models(which, quick):
    """`(model, x, y, loss, optimizer)` of the case: figure 3's model at a
    length, figure 2's, or figure 1's layer."""
    import keras

    cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if which.startswith("bahdanau_nmt"):
        from benchmarks import bahdanau

        s = bahdanau.QUICK_SIZE if quick else bahdanau.SIZE
        length = 5 if quick else int(which.split("T=")[1])
        ours, _ = bahdanau._keras_models(s, length)
        x, y = bahdanau._data(s, length)
        return ours, x, y, cross_entropy, "adam"
    if which == "transformer_nmt":
        from benchmarks import transformer

        s = transformer.QUICK_SIZE if quick else transformer.SIZE
        model = transformer.kerattn_model(s)
        x, y = transformer.batch(s)
        return model, x, y, cross_entropy, "adam"
    import numpy as np

    from benchmarks import mha
    from kerattn.layers import MultiHeadAttention

    length, batch = (16, 2) if quick else (int(which.split("T=")[1]), mha.BATCH)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, length, mha.DIM)).astype("float32")
    y = rng.standard_normal((batch, length, mha.DIM)).astype("float32")
    model = mha._model(MultiHeadAttention(mha.HEADS, mha.DIM // mha.HEADS), length)
    return model, x, y, "mse", "sgd"


def measure(which, compiled, quick):
    """In this process: one model's step times (and graph breaks)."""
    import time

    import keras
    import torch

    keras.utils.set_random_seed(0)
    if quick and compiled:   # Dynamo's graph, no Inductor code generation
        import functools

        torch.compile = functools.partial(torch.compile, backend="eager")
    model, x, y, loss, optimizer = _models(which, quick)
    repeats, warmup = (1, 1) if quick else (5, 2)
    model.compile(optimizer=optimizer, loss=loss, jit_compile=compiled)
    out = {"model": which, "compiled": compiled}
    if compiled:
        start = time.perf_counter()
        model.train_on_batch(x, y)
        out["compile_s"] = time.perf_counter() - start
        torch._dynamo.reset()
        explained = torch._dynamo.explain(model.train_step)((x, y))
        frames = [f for reason in explained.break_reasons
                  for f in reason.user_stack]
        out["graph_breaks"] = explained.graph_break_count
        out["graphs"] = explained.graph_count
        out["in_kerattn"] = sum("/kerattn/" in f.filename for f in frames)
        out["break_reasons"] = sorted({r.reason.splitlines()[0][:160]
                                       for r in explained.break_reasons})[:10]
        model.compile(optimizer=optimizer, loss=loss, jit_compile=True)
        model.train_on_batch(x, y)           # compiled again after reset
    out["step_s"] = common.median_time(lambda: model.train_on_batch(x, y),
                                       repeats, warmup, sync=lambda r: r)
    return out


def _in_subprocess(which, compiled, quick):
    code = ("import json, sys; sys.path.insert(0, %r); "
            "from benchmarks import torch_compile; "
            "print('RESULT ' + json.dumps(torch_compile.measure(%r, %r, %r)))"
            % (os.path.dirname(HERE), which, compiled, quick))
    env = dict(os.environ, KERAS_BACKEND="torch")
    try:
        proc = subprocess.run([sys.executable, "-c", code], env=env, text=True,
                              capture_output=True, timeout=COMPILE_CAP_S)
    except subprocess.TimeoutExpired:
        return {"model": which, "compiled": compiled,
                "error": f"not compiled within {COMPILE_CAP_S} s"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"model": which, "compiled": compiled,
            "error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]}


def run(quick=False):
    if common.backend() != "torch":
        return []
    rows = []
    for which in CASES[-1:] if quick else CASES:
        eager = _in_subprocess(which, False, quick)
        compiled = _in_subprocess(which, True, quick)
        if "error" in eager or "error" in compiled:
            rows.append({"figure": 9, "name": f"{which} train step, torch.compile",
                         "error": eager.get("error") or compiled.get("error")})
            continue
        rows.append(common.row(
            9, f"{which} train step, torch.compile vs eager",
            1000 * compiled["step_s"], 1000 * eager["step_s"],
            "the same model, eager", "ms/step", **{
                k: compiled[k] for k in ("compile_s", "graph_breaks", "graphs",
                                         "in_kerattn", "break_reasons")},
            notes=f"compiled in {compiled['compile_s']:.0f} s"
                  f"{' (quick: Dynamo alone, no Inductor)' if quick else ''}; "
                  f"{compiled['graph_breaks']} graph breaks "
                  f"({compiled['in_kerattn']} user frames in kerattn)"))
    return rows
