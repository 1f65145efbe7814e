"""Time and peak memory of windowed attention vs full attention, by length.

    python benchmarks/windowed_attention.py                 # all backends
    python benchmarks/windowed_attention.py --backends jax --lengths 256,1024

For each backend and sequence length n, a fresh process builds one layer,
runs its forward pass (one warm-up, then the median of `--repeats` runs) and
reports the time and the growth of its peak memory over the process'
baseline (taken after imports, before the first call): its resident host
memory on a CPU, the backend allocator's device memory on a GPU (the
row's `memory` says which). Layers, all self-attention over `(1, n, 64)`:

- `full`: kerattn `ScaledDotProductAttention` (an n x n score matrix),
  with `return_attention_scores=True` so every backend materialises it;
- `restricted`: `RestrictedSelfAttention(window=16)` (Vaswani et al. 2017,
  Table 1: O(r n d));
- `local_p`: `LocalAttention("predictive", window=8)` (Luong et al. 2015).

Writes `benchmarks/results/windowed_attention.json` and prints a markdown
table. Linear growth means the windowed rows' time and memory roughly double
when n doubles, while `full` grows about 4x.
"""

import argparse
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

CHILD = r"""
import json, resource, sys, time
import numpy as np


def peak_rss_kib():
    # VmHWM belongs to this process' address space, which exec makes anew.
    # ru_maxrss does not: on Linux it keeps the parent's peak across
    # fork+exec, so a child of a large process (run.py's worker) would
    # measure no growth at all.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


import keras
from kerattn import layers


def device_bytes(peak):
    # On a GPU the layer's memory is the device's, not the host's: the
    # backend allocator's bytes in use (peak=False) or its peak (True).
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        if device.platform == "gpu":
            stats = device.memory_stats() or {}
            return stats.get("peak_bytes_in_use" if peak else "bytes_in_use")
    elif backend == "torch":
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
            return (torch.cuda.max_memory_allocated() if peak
                    else torch.cuda.memory_allocated())
    elif backend == "tensorflow":
        import tensorflow as tf

        if tf.config.list_physical_devices("GPU"):
            info = tf.config.experimental.get_memory_info("GPU:0")
            return info["peak" if peak else "current"]
    return None

method, n, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
x = np.random.default_rng(0).standard_normal((1, n, 64)).astype("float32")
if method == "full":
    layer = layers.ScaledDotProductAttention()
    run = lambda: layer(x, x, return_attention_scores=True)[0]
elif method == "restricted":
    layer = layers.RestrictedSelfAttention(window=16)
    run = lambda: layer(x)
else:
    layer = layers.LocalAttention("predictive", window=8)
    run = lambda: layer(x, x)
device_base = device_bytes(peak=False)
base = peak_rss_kib()
keras.ops.convert_to_numpy(run())  # build + warm-up
times = []
for _ in range(repeats):
    t = time.perf_counter()
    keras.ops.convert_to_numpy(run())
    times.append(time.perf_counter() - t)
peak = peak_rss_kib()
device_peak = device_bytes(peak=True)
if device_base is None:
    memory, peak_mib = "host", (peak - base) / 1024.0
else:
    memory, peak_mib = "device", (device_peak - device_base) / 2.0 ** 20
print(json.dumps({"seconds": float(np.median(times)), "peak_mib": peak_mib,
                  "memory": memory}))
"""


def measure(backend, method, n, repeats):
    # The parent (run.py's worker) may hold a GPU already: JAX would
    # reserve most of the device's memory in each process, and TensorFlow
    # all of it, so each child takes only what it allocates.
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
               XLA_PYTHON_CLIENT_PREALLOCATE="false",
               TF_FORCE_GPU_ALLOW_GROWTH="true")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, method, str(n), str(repeats)],
        env=env, capture_output=True, text=True, timeout=900,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1][:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backends", default="tensorflow,jax,torch")
    p.add_argument("--lengths", default="256,512,1024,2048,4096,8192")
    p.add_argument("--methods", default="full,restricted,local_p")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--output", default=os.path.join(HERE, "results",
                                                    "windowed_attention.json"))
    args = p.parse_args()
    lengths = [int(n) for n in args.lengths.split(",")]
    results = []
    for backend in args.backends.split(","):
        for method in args.methods.split(","):
            for n in lengths:
                r = measure(backend, method, n, args.repeats)
                r.update(backend=backend, method=method, n=n)
                results.append(r)
                print(json.dumps(r), flush=True)
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump({"machine": platform.platform(), "cpus": os.cpu_count(),
                   "results": results}, f, indent=1)

    print("\n| backend | method | " + " | ".join(f"n={n}" for n in lengths) + " |")
    print("|---|---|" + "---|" * len(lengths))
    for backend in args.backends.split(","):
        for method in args.methods.split(","):
            cells = []
            for n in lengths:
                r = next(x for x in results if x["backend"] == backend
                         and x["method"] == method and x["n"] == n)
                cells.append("error" if "error" in r else
                             f"{1000 * r['seconds']:.1f} ms / {r['peak_mib']:.0f} MiB")
            print(f"| {backend} | {method} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
