"""Figure 6: achieved FLOP/s of the transformer training step.

The model and batch of figure 2 (`benchmarks/transformer.py`). Its FLOPs
are counted analytically: every matrix product of the forward pass (2
FLOPs per multiply-add), times 3 for a training step (the backward pass
costs two forward passes: gradients with respect to inputs and weights).
Softmax, layer norm, biases and the optimizer are not counted (they are a
few percent and not matmul-bound). The attention products are counted at
full T x S (the kernels compute the masked half too).

The machine's reference is the backend's own `keras.ops.matmul` of two
square float32 matrices (n = 1024 and 2048, the faster one), compiled the
same way as the training step. The figure is the ratio of the two rates.
"""

from benchmarks import common
from benchmarks.transformer import QUICK_SIZE, SIZE, kerattn_model, step_time


def forward_flops(s):
    """Matmul FLOPs of one forward pass of `transformer_nmt` at size `s`."""
    b, n, d, ff, v, L = (s["batch"], s["length"], s["d_model"], s["ff_dim"],
                         s["vocab"], s["num_layers"])
    S = T = n
    attention = lambda tq, tk: 2 * 2 * tq * tk * d      # Q K^T and A V
    projections = lambda t: 2 * t * d * d               # one d x d projection
    ffn = lambda t: 2 * 2 * t * d * ff
    encoder = 4 * projections(S) + attention(S, S) + ffn(S)
    decoder = (4 * projections(T) + attention(T, T)          # self-attention
               + 2 * projections(T) + 2 * projections(S)     # cross: Q, O; K, V
               + attention(T, S) + ffn(T))
    output = 2 * T * d * v
    return b * (L * (encoder + decoder) + output)


def matmul_flops_per_second(repeats, warmup, sizes=(1024, 2048)):
    import keras
    import numpy as np

    best = 0.0
    for n in sizes:
        a = keras.ops.convert_to_tensor(
            np.random.default_rng(0).standard_normal((n, n)).astype("float32"))
        fn = keras.ops.matmul
        if common.backend() == "tensorflow":
            import tensorflow as tf

            fn = tf.function(fn, jit_compile=True)
        elif common.backend() == "jax":
            import jax

            fn = jax.jit(fn)
        seconds = common.median_time(lambda: fn(a, a), repeats, warmup)
        best = max(best, 2 * n ** 3 / seconds)
    return best


def run(quick=False):
    import keras

    s = QUICK_SIZE if quick else SIZE
    repeats, warmup = (1, 1) if quick else (5, 2)
    keras.utils.set_random_seed(0)
    seconds = step_time(kerattn_model(s), s, repeats, warmup)
    flops = 3 * forward_flops(s)
    achieved = flops / seconds
    peak = matmul_flops_per_second(repeats, warmup,
                                   sizes=(64,) if quick else (1024, 2048))
    return [common.row(
        6, "transformer_nmt train step FLOP/s", achieved / 1e9, peak / 1e9,
        "keras.ops.matmul (square, compiled)", "GFLOP/s", target=0.6,
        higher_is_better=True, step_ms=1000 * seconds,
        train_gflop_per_step=flops / 1e9)]
