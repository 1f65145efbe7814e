"""Loops over time, on every backend: `scan_carry` (a step emits what it
carries) and `masked_scan` (padded steps keep each row's state).

`keras.ops.scan` everywhere but TensorFlow. There, Keras' `ops.scan` is a
`tf.while_loop` without `maximum_iterations`, and its gradient does not
compile under XLA (`model.compile(jit_compile=True)`: "XLA compilation
requires a fixed tensor list size"); `tf.scan` sets it. This is the one
module of the layers package that imports a backend.
"""

import keras
from keras import ops, tree


def scan_carry(fn, init, xs):
    """`carry = fn(carry, x_t)` over the leading axis of `xs`.

    Args:
        fn: `(carry, x_t) -> carry`, a nest of tensors of fixed structure,
            shapes and dtypes.
        init: the first carry.
        xs: a nest of tensors `(T, ...)`, `T >= 1`.

    Returns:
        `(final carry, history)`: `history` is every step's carry stacked
        on a new leading axis `(T, ...)`.

    Example:

    >>> import numpy as np
    >>> final, history = scan_carry(lambda c, x: c + x, np.float32(0),
    ...                             np.arange(1, 4, dtype="float32"))
    >>> float(final), ops.convert_to_numpy(history).tolist()
    (6.0, [1.0, 3.0, 6.0])
    """
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        history = tf.scan(fn, xs, initializer=init)
    else:
        def step(carry, x_t):
            carry = fn(carry, x_t)
            return carry, carry

        _, history = ops.scan(step, init, xs)
    return tree.map_structure(lambda h: h[-1], history), history


def masked_scan(step_fn, state, xs, keep=None, outputs=None):
    """`(state, outputs_t) = step_fn(state, x_t)` over axis 1 of `xs`, where
    a padded step keeps its row's state and gives zero outputs.

    Args:
        step_fn: `(state, x_t) -> (next state, outputs_t)`; `state` and
            `outputs_t` nests of `(batch, ...)` tensors.
        state: the first state; each next state is cast to its dtypes.
        xs: a nest of `(batch, T, ...)` tensors; `x_t` the step's slices.
        keep: optional boolean `(batch, T)`; False: the row's step is
            padding (its state is kept, its outputs are zeros).
        outputs: zeros shaped as one step's outputs, of the dtypes they are
            kept in (the loop's first carry).

    Returns:
        `(final state, outputs (batch, T, ...))`.

    Example:

    >>> import numpy as np
    >>> xs = np.ones((2, 3, 1), "float32")
    >>> keep = np.array([[True, True, False], [True, True, True]])
    >>> final, sums = masked_scan(lambda s, x: (s + x, s + x), np.zeros((2, 1), "float32"),
    ...                           xs, keep, np.zeros((2, 1), "float32"))
    >>> ops.convert_to_numpy(final)[:, 0].tolist(), ops.convert_to_numpy(sums)[0, :, 0].tolist()
    ([2.0, 3.0], [1.0, 2.0, 0.0])
    """
    steps = tree.map_structure(lambda v: ops.moveaxis(v, 1, 0), xs)
    if keep is not None:
        steps = (steps, ops.moveaxis(ops.cast(keep, "bool"), 1, 0))

    def rows(keep_t, like):   # (batch,) -> (batch, 1, ...) like `like`
        return ops.reshape(keep_t, (-1,) + (1,) * (len(like.shape) - 1))

    def body(carry, x):
        old, zeros = carry
        x_t, keep_t = x if keep is not None else (x, None)
        new, out = step_fn(old, x_t)
        out = tree.map_structure(lambda o, z: ops.cast(o, z.dtype), out, zeros)
        if keep_t is not None:
            new = tree.map_structure(
                lambda n, o: ops.where(rows(keep_t, o), n, o), new, old)
            out = tree.map_structure(
                lambda o: ops.where(rows(keep_t, o), o, ops.zeros_like(o)), out)
        new = tree.map_structure(lambda n, o: ops.cast(n, o.dtype), new, old)
        return new, out

    final, history = scan_carry(body, (state, outputs), steps)
    return final[0], tree.map_structure(lambda h: ops.moveaxis(h, 0, 1),
                                        history[1])
