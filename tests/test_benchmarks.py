"""The benchmark runner still runs: `benchmarks/run.py --quick` on this backend.

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

import keras

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_runner_quick_on_this_backend(tmp_path):
    backend = keras.backend.backend()
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "benchmarks", "run.py"), "--quick",
         "--backends", backend, "--output", str(tmp_path)],
        capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "run_quick.json").read_text())
    rows = report["rows"]
    assert {r["figure"] for r in rows} == {1, 2, 3, 4, 5, 6}
    assert report["environments"][backend]["backend"] == backend
    for r in rows:
        assert "error" not in r, r
        assert r["ours"] > 0 and math.isfinite(r["ours"]), r
        if r["peer"] is not None:
            assert math.isclose(r["ratio"], r["ours"] / r["peer"]), r
    # Figure 5 measures memory in a fresh process per (layer, n): a peak
    # inherited from the worker (ru_maxrss survives fork+exec) read as 0 MiB.
    sizes = [r for r in rows if r["figure"] == 5 and "peer_mib" in r]
    assert sizes and all(r["ours_mib"] > 0 and r["peer_mib"] > 0 for r in sizes), sizes
    # The beam search peer decodes the same hypotheses (PAD/BOS banned on
    # both sides, tokens compared up to the first EOS).
    beam = next(r for r in rows if r["figure"] == 4 and r["peer"])
    assert beam["same_best_hypothesis"] == 1.0, beam
    assert "| " + backend + " | 1 |" in (tmp_path / "run_quick.md").read_text()
