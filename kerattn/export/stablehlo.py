"""StableHLO that the installed TensorFlow can read (the JAX backend only).

On JAX, Keras' `ExportArchive` converts functions with jax2tf: StableHLO
inside an `XlaCallModule` op. TensorFlow reads StableHLO only up to its
own version (TF 2.21: 1.13.7), and JAX targets a version a few weeks older
than itself, which a JAX much newer than TensorFlow puts past what
TensorFlow reads. `stablehlo_for_tensorflow()` caps the target at the
installed TensorFlow's version. Every kerattn export runs inside it; wrap a
plain `model.export` in it yourself. (With jax 0.10.2 and TF 2.21 JAX's own
target already loads: the cap is a guard.)
"""

import contextlib

import keras

from kerattn import keras_fixes

__all__ = ["stablehlo_for_tensorflow"]


@contextlib.contextmanager
def stablehlo_for_tensorflow():
    """Make JAX serialize StableHLO the installed TensorFlow can run.

    jax2tf (used by `model.export` on the JAX backend) writes StableHLO for
    consumers at most four weeks older than JAX. When TensorFlow is older
    than that, loading the SavedModel fails with "failed to deserialize
    portable artifact". Inside this context, JAX targets
    `min(its own target, TensorFlow's StableHLO version)`. A no-op on other
    backends, or when either side lacks the version API.

    Args:
        None; a context manager (`with stablehlo_for_tensorflow(): ...`).

    Example:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> with stablehlo_for_tensorflow():  # what jax2tf serializes in here loads in TF
    ...     outputs = model(np.ones((1, 4), "float32"))
    >>> tuple(outputs.shape)
    (1, 2)
    """
    if keras.backend.backend() != "jax":
        yield
        return
    with keras_fixes.jax_stablehlo_target_at_most(
            keras_fixes.tensorflow_stablehlo_version()):
        yield
