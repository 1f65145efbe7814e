"""Compiled decoding: one function per backend's own compiler.

The loops of `kerattn.decoding.search` are `keras.ops.while_loop`s over
fixed-size buffers, so a whole "encode, then search" function compiles:

- TensorFlow: `tf.function(jit_compile=True)` (XLA).
- JAX: `jax.jit`, with the model's variables passed in as arguments
  through a `keras.StatelessScope` (the weights are not baked into the
  program as constants, and a compiled function sees weights that change
  after it was compiled).
- PyTorch: eager, under `torch.inference_mode()` (no autograd graph is
  recorded for the hundreds of small step ops). `torch.compile` of a
  data-dependent loop this long compiles for minutes per shape, which a
  translation call cannot repay; the eager loop is what we ship.

This is the one module of the decoding package that imports a backend.
"""

import keras

from kerattn import checks


def compile_decoder(fn, variables, jit_compile=True):
    """Compile `fn(*tensors) -> nest of tensors` for the current backend.

    Args:
        fn: a function of tensors only (Python options baked in), that
            calls Keras layers whose weights are among `variables`.
        variables: the `keras.Variable`s `fn` reads (e.g. `model.variables`).
        jit_compile: False returns `fn` unchanged, for debugging and for
            comparisons.

    Returns:
        A function with the signature of `fn`. Each new input shape compiles
        once (callers pad inputs to a few shapes).

    Example:

    >>> import numpy as np
    >>> dense = keras.layers.Dense(3)
    >>> dense.build((None, 4))
    >>> fn = compile_decoder(lambda x: keras.ops.argmax(dense(x), -1), dense.variables)
    >>> tuple(fn(np.ones((2, 4), "float32")).shape)
    (2,)
    """
    checks.function("fn", fn, "a function of tensors")
    checks.boolean("jit_compile", jit_compile)
    checks.require(
        isinstance(variables, (list, tuple))
        and all(isinstance(v, keras.Variable) for v in variables),
        "variables", "a list of keras.Variable (e.g. `model.variables`)",
        note=f"Received {type(variables).__name__}.")
    backend = keras.backend.backend()
    if not jit_compile:
        return fn
    if backend == "torch":
        import torch

        def run_torch(*args):
            with torch.inference_mode():
                return fn(*args)

        return run_torch
    if backend == "tensorflow":
        import tensorflow as tf

        # Not reduce_retracing: after a few shapes it would trace with unknown
        # dimensions, and the searches need static batch sizes (XLA does too).
        return tf.function(fn, jit_compile=True, reduce_retracing=False)
    if backend == "jax":
        import jax

        variables = list(variables)

        def pure(values, *args):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return fn(*args)

        jitted = jax.jit(pure)

        def run_jax(*args):
            return jitted([v.value for v in variables], *args)

        return run_jax
    return fn
