"""StableHLO that the installed TensorFlow can read (the JAX backend only).

On JAX, Keras' `ExportArchive` converts functions with jax2tf: StableHLO
inside an `XlaCallModule` op. A JAX newer than the installed TensorFlow
writes StableHLO that TensorFlow cannot read (e.g. jax 0.10 writes 1.15,
TF 2.21 reads up to 1.13.7). `stablehlo_for_tensorflow()` lowers the target
version to the one the installed TensorFlow reports. Every kerattn export
runs inside it; wrap a plain `model.export` in it yourself.
"""

import contextlib

import keras

__all__ = ["stablehlo_for_tensorflow"]


def _tensorflow_stablehlo_version():
    try:
        from tensorflow.compiler.mlir.stablehlo import stablehlo
    except ImportError:  # pragma: no cover - older or newer TensorFlow
        return None
    return stablehlo.get_current_version()


def _version_tuple(text):
    return tuple(int(p) for p in str(text).split("."))


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
    consumer = _tensorflow_stablehlo_version()
    try:
        from jax._src.export import _export
    except ImportError:  # pragma: no cover - JAX moved its internals
        yield
        return
    hlo = _export.hlo
    original = hlo.get_version_from_compatibility_requirement

    class _Shim:
        def __getattr__(self, name):
            return getattr(hlo, name)

        @staticmethod
        def get_version_from_compatibility_requirement(requirement):
            version = original(requirement)
            if consumer and _version_tuple(consumer) < _version_tuple(version):
                return consumer
            return version

    _export.hlo = _Shim()
    try:
        yield
    finally:
        _export.hlo = hlo
