"""What a figure was measured on: the machine, its accelerator, the versions.

The zoo's recipes record `machine()` with every seed they train (in
results.json, which each RESULTS.md renders through `describe`), and the
benchmarks with every run, so that a figure read later names the device
it came from.
"""

import importlib.metadata
import os
import platform
import sys

__all__ = ["machine", "versions", "accelerator", "describe"]

_BACKEND_PACKAGES = {"tensorflow": ("tensorflow",), "jax": ("jax", "jaxlib"),
                     "torch": ("torch",)}
_BACKEND_NAMES = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}


def machine():
    """The machine the current process computes on.

    Args:
        None: it reads the process' own machine and Keras backend.

    Returns:
        A dict: `platform` (`platform.platform()`), `cpu` (the processor's
        model name), `cpus` (`os.cpu_count()`), `accelerator` (the device
        the Keras backend computes on, or "cpu"), `backend` (Keras') and
        `versions` (`versions()`).

    Example:

    >>> m = kerattn.environment.machine()
    >>> sorted(m)
    ['accelerator', 'backend', 'cpu', 'cpus', 'platform', 'versions']
    >>> m["backend"] == keras.backend.backend()
    True
    """
    import keras

    return {"platform": platform.platform(), "cpu": _cpu_name(),
            "cpus": os.cpu_count(), "accelerator": accelerator(),
            "backend": keras.backend.backend(), "versions": versions()}


def versions():
    """The versions of everything that can change a figure: Python, Keras,
    NumPy, the backend's packages, keras-hub and kerattn (those installed;
    one not yet imported is read from its installed metadata, not
    imported: keras-hub would bring TensorFlow into a JAX or torch
    process).

    Args:
        None: it reads the installed packages.

    Example:

    >>> v = kerattn.environment.versions()
    >>> v["keras"] == keras.__version__, v["kerattn"] == kerattn.__version__
    (True, True)
    """
    import keras
    import numpy as np

    # This module's package, imported before it (no import here: the
    # package imports `callbacks`, which records the machine).
    kerattn = sys.modules[__name__.rpartition(".")[0]]
    out = {"python": platform.python_version(), "keras": keras.__version__,
           "numpy": np.__version__, "kerattn": kerattn.__version__}
    for name in _BACKEND_PACKAGES.get(keras.backend.backend(), ()) + ("keras_hub",):
        if name in sys.modules:
            out[name] = getattr(sys.modules[name], "__version__", "?")
            continue
        try:
            out[name] = importlib.metadata.version(name.replace("_", "-"))
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def accelerator():
    """The accelerator the Keras backend computes on (its name), or "cpu".

    Args:
        None: it asks the backend for its first device.

    Example:

    >>> name = kerattn.environment.accelerator()
    >>> isinstance(name, str) and name != ""
    True
    """
    import keras

    name = keras.backend.backend()
    try:
        if name == "jax":
            import jax

            device = jax.devices()[0]
            return "cpu" if device.platform == "cpu" else str(device.device_kind)
        if name == "torch":
            import torch

            return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
        if name == "tensorflow":
            import tensorflow as tf

            gpus = tf.config.list_physical_devices("GPU")
            if gpus:
                details = tf.config.experimental.get_device_details(gpus[0])
                return details.get("device_name", gpus[0].name)
    except Exception:  # a probe: a description, never a failure of the run
        pass
    return "cpu"


def describe(record, backend=None):
    """One line for a page: the device, the backend and Keras' versions.

    Args:
        record: a `machine()` dict (as results.json holds it), or None for
            a record written before machines were recorded.
        backend: the backend an unrecorded machine ran (the record's own
            otherwise).

    Example:

    >>> describe({"accelerator": "cpu", "cpu": "a Xeon", "cpus": 2, "backend": "jax",
    ...           "versions": {"keras": "3.15.1", "jax": "0.10.2"}})
    '2 cores of a Xeon with JAX 0.10.2 and Keras 3.15.1'
    >>> describe(None, "torch")
    "this project's 2-core CPU with backend torch (the machine was not recorded)"
    """
    if not record:   # every figure recorded without one came from these machines
        backend = f" with backend {backend}" if backend else ""
        return f"this project's 2-core CPU{backend} (the machine was not recorded)"
    if record["accelerator"] == "cpu":
        device = f"{record['cpus']} cores of {record['cpu']}"
    else:
        device = f"one {record['accelerator']}"
    backend = record["backend"]
    package = _BACKEND_PACKAGES.get(backend, (backend,))[0]
    version = record["versions"].get(package, "?")
    return (f"{device} with {_BACKEND_NAMES.get(backend, backend)} {version} "
            f"and Keras {record['versions']['keras']}")


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
