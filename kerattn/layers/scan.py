"""A loop over time whose step emits what it carries, on every backend.

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
