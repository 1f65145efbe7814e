"""Shared pieces of the benchmarks: timing, training steps, environment.

Every figure is the median of `repeats` timed calls after `warmup` untimed
ones (the first call traces and compiles). A result row is a dict:

    {"figure": 1, "name": ..., "ours": float, "peer": float or None,
     "peer_name": ..., "unit": "ms/step", "higher_is_better": False,
     "ratio": ours-vs-peer as the issue states it, "target": ..., ...}

`ratio` is always oriented so that the target reads "ratio <= target" for
time-like figures (ours / peer) and "ratio >= target" for throughput-like
ones (ours / peer), as `target_op` says.
"""

import time

import numpy as np


def backend():
    import keras

    return keras.backend.backend()


def jit_for_backend():
    """What the benchmarks compile with, the same for kerattn and its peers.

    TensorFlow: XLA; JAX: jit; torch: eager (Keras' torch trainer with
    `jit_compile=True` is `torch.compile`, which graph-breaks on Keras
    RNN loops and gained nothing in earlier probes).
    """
    return backend() in ("tensorflow", "jax")


def median_time(fn, repeats=5, warmup=2, sync=None):
    """Median wall time of `fn()` in seconds, after `warmup` calls.

    `sync(result)` blocks until the result is computed (asynchronous
    dispatch on JAX and on GPUs); by default the result is converted to
    NumPy.
    """
    sync = sync or block
    for _ in range(warmup):
        sync(fn())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        sync(fn())
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def block(result):
    """Wait for every tensor in `result` (any nest) to be computed.

    JAX and torch wait on the device itself: copying a result to the host
    would time the copy too, which on a GPU can exceed the computation
    (a 2048 x 2048 float32 product's 16 MB). TensorFlow has no such wait
    in eager code, so its results are converted to NumPy.
    """
    import keras

    name = backend()
    if name == "torch":
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return result
    for leaf in keras.tree.flatten(result):
        if name == "jax" and hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
        elif hasattr(leaf, "shape"):
            keras.ops.convert_to_numpy(leaf)
    return result


def train_step_time(model, x, y, loss, repeats=5, warmup=2, optimizer="sgd"):
    """Median seconds of one `train_on_batch` (forward, backward, update)."""
    model.compile(optimizer=optimizer, loss=loss, jit_compile=jit_for_backend())
    return median_time(lambda: model.train_on_batch(x, y), repeats, warmup,
                       sync=lambda r: r)


def versions():
    """Versions of everything that can change a figure
    (`kerattn.environment.versions`)."""
    from kerattn import environment

    return environment.versions()


def machine():
    """The machine and its accelerator (`kerattn.environment.machine`,
    without the versions, which a run records apart)."""
    from kerattn import environment

    described = environment.machine()
    return {k: described[k] for k in ("platform", "cpu", "cpus", "accelerator")}


def accelerator():
    """The accelerator the current backend computes on, or "cpu"."""
    from kerattn import environment

    return environment.accelerator()


def flash_attention_available(batch, length, heads, head_dim, dtype):
    """Whether `keras.ops.dot_product_attention` can take its flash path.

    kerattn's `MultiHeadAttention` calls the fused op with
    `flash_attention=None`, i.e. Keras picks flash when the backend,
    device and dtype allow it. Asking for it explicitly answers whether it
    would be picked for these shapes: on CPU it never is.
    """
    import keras

    q = keras.ops.zeros((batch, length, heads, head_dim), dtype)
    try:
        block(keras.ops.dot_product_attention(q, q, q, flash_attention=True))
        return True
    except Exception:
        return False


def row(figure, name, ours, peer, peer_name, unit, target=None,
        higher_is_better=False, **extra):
    """A result row; `ratio` is ours / peer (both in `unit`)."""
    ratio = None if not peer else ours / peer
    met = None
    if ratio is not None and target is not None:
        met = ratio >= target if higher_is_better else ratio <= target
    out = {"figure": figure, "name": name, "ours": ours, "peer": peer,
           "peer_name": peer_name, "unit": unit, "ratio": ratio,
           "target": target, "target_op": ">=" if higher_is_better else "<=",
           "met": met}
    out.update(extra)
    return out
