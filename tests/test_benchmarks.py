"""The benchmark runner still runs: `benchmarks/run.py --quick` on each backend.

Each backend's runner runs some of the ten figures (9 is torch's alone), so that one CI run
smoke-tests every figure and every backend's runner within CI's time
(`python benchmarks/run.py --quick` runs them all). Each case is heavy:
it runs once, in the pytest process tests/placement.py puts it in, and
starts the runner for the backend in its id.

No timing is asserted (timings belong in `benchmarks/`): the run must
finish with every figure's rows present, no error row, positive finite
figures, ratios equal to ours / peer, and the kerattn and peer models it
compares equal in size (checked inside the figures).
"""

import json
import math
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


FIGURES_BY_BACKEND = {"tensorflow": [1, 10], "jax": [2, 4, 5, 6], "torch": [3, 7, 8, 9]}


@pytest.mark.parametrize("backend", list(FIGURES_BY_BACKEND))
def test_runner_quick(backend, tmp_path):
    FIGURES = FIGURES_BY_BACKEND[backend]
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "benchmarks", "run.py"), "--quick",
         "--backends", backend, "--figures", ",".join(map(str, FIGURES)),
         "--output", str(tmp_path)],
        capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "run_quick.json").read_text())
    rows = report["rows"]
    assert {r["figure"] for r in rows} == set(FIGURES)
    assert report["environments"][backend]["backend"] == backend
    for r in rows:
        assert "error" not in r, r
        assert r["ours"] > 0 and math.isfinite(r["ours"]), r
        if r["peer"] is not None:
            assert math.isclose(r["ratio"], r["ours"] / r["peer"]), r
    # Figure 5 measures memory in a fresh process per (layer, n): a peak
    # inherited from the worker (ru_maxrss survives fork+exec) read as 0 MiB.
    if 5 in FIGURES:
        sizes = [r for r in rows if r["figure"] == 5 and "peer_mib" in r]
        assert sizes and all(r["ours_mib"] > 0 and r["peer_mib"] > 0
                             for r in sizes), sizes
    # The beam search peer decodes the same hypotheses (PAD/BOS banned on
    # both sides, tokens compared up to the first EOS).
    if 4 in FIGURES:
        beam = next(r for r in rows if r["figure"] == 4 and r["peer"])
        assert beam["same_best_hypothesis"] == 1.0, beam
    # Figure 8 names the attention kernel each layer ran, read from the
    # profile: both layers run one of torch's fused kernels (on a CPU,
    # flash_attention_for_cpu), with and without a padding mask.
    if 8 in FIGURES:
        kernels = [r for r in rows if r["figure"] == 8]
        assert len(kernels) == 2 and all(
            r["ours_kernel"] == r["peer_kernel"] != "no fused op"
            for r in kernels), kernels
    # Figure 10 reads each model's own process' high-water mark.
    if 10 in FIGURES:
        memory = [r for r in rows if r["figure"] == 10]
        assert len(memory) == 2 and all(r["ours_peak_mib"] > 0 for r in memory), memory
    # Figure 9 compiles the step with torch.compile and counts its breaks.
    if 9 in FIGURES:
        compiled = [r for r in rows if r["figure"] == 9]
        assert len(compiled) == 1 and compiled[0]["compile_s"] > 0, compiled
    assert f"| {backend} | {FIGURES[0]} |" in (tmp_path / "run_quick.md").read_text()
