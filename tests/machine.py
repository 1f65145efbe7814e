#!/usr/bin/env python3
"""What the machine is today: two figures printed at the start of a test run.

These machines' speed moves from day to day (a 2048^3 float32 matmul under
TensorFlow measured 314 GFLOP/s one day and 102 another), and the suite is
mostly Python and compile time, which moves less. `tests/run_backends.py`
prints both figures before the suite, so a run's total can be read against
the day it ran on:

    python tests/machine.py          # one line: matmul GFLOP/s, Python loop

- matmul: the best of 5 float32 2048 x 2048 x 2048 products (2 n^3 flops),
  under TensorFlow when it is installed (the figure the history above
  quotes), else NumPy;
- python: the best of 3 runs of a fixed pure-Python loop (10^6 iterations of
  a dict update and an integer add), in seconds.
"""

import os
import time

N = 2048
LOOP = 5_000_000


def _best(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def matmul_gflops(n=N, repeats=5):
    """(GFLOP/s, engine) of an n^3 float32 matmul, best of `repeats`."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    try:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf
    except ImportError:
        fn, engine = (lambda: a @ b), "numpy"
    else:
        ta, tb = tf.constant(a), tf.constant(b)
        fn, engine = (lambda: tf.linalg.matmul(ta, tb).numpy()), "tensorflow"
    fn()  # warm up
    return 2 * n**3 / _best(fn, repeats) / 1e9, engine


def python_loop_seconds(repeats=3):
    """Seconds for a fixed pure-Python loop, best of `repeats`."""

    def loop():
        d, total = {}, 0
        for i in range(LOOP):
            d[i & 1023] = i
            total += i
        return total

    return _best(loop, repeats)


def describe():
    gflops, engine = matmul_gflops()
    loop = python_loop_seconds()
    return (f"machine: {os.cpu_count()} cores; {N}^3 float32 matmul "
            f"({engine}) {gflops:.0f} GFLOP/s; python loop ({LOOP:,} "
            f"iterations) {loop:.3f} s")


if __name__ == "__main__":
    print(describe(), flush=True)
