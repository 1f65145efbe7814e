"""Load a `.keras` file saved under any backend, ready to `fit` under this one."""

import json
import os
import shutil
import tempfile
import zipfile

import keras

# Keras writes the optimizer a model was compiled with by its module: under
# PyTorch that is `keras.src.backend.torch.optimizers.torch_adam`, a class
# that only works with torch tensors.
_BACKEND_OPTIMIZERS = "keras.src.backend."


def _portable_compile_config(compile_config, jit_compile):
    compile_config = dict(compile_config)
    optimizer = compile_config.get("optimizer")
    if isinstance(optimizer, dict) and str(
            optimizer.get("module", "")).startswith(_BACKEND_OPTIMIZERS):
        optimizer = dict(optimizer, module="keras.optimizers")
        compile_config["optimizer"] = optimizer
    # `jit_compile` was chosen for the backend that saved the file (JAX's
    # default is True; torch's "auto" means False); the loading backend
    # decides for itself.
    compile_config["jit_compile"] = jit_compile
    return compile_config


def load_model(filepath, compile=True, safe_mode=True, jit_compile="auto",
               custom_objects=None):
    """Load a kerattn `.keras` file saved under TensorFlow, JAX or PyTorch.

    `keras.saving.load_model` restores a model compiled under another
    backend with that backend's choices, which break `fit`: a file saved
    under PyTorch carries the torch optimizer class, and one saved under JAX
    carries `jit_compile=True`. This loads the same file with the portable
    optimizer class (its state, e.g. Adam's moments and iteration count,
    restored as usual) and `jit_compile` chosen for this backend, so
    training continues where it stopped.

    Args:
        filepath: a `.keras` file.
        compile: restore the optimizer, loss and metrics it was compiled with.
        safe_mode: Keras' safe mode (no arbitrary code is run while loading;
            zoo models contain no `Lambda` layer).
        jit_compile: the `jit_compile` to compile with ("auto": this
            backend's default).
        custom_objects: as for `keras.saving.load_model` (kerattn's own
            layers are registered already).

    Returns:
        The `keras.Model`.

    Example:

    >>> import numpy as np
    >>> model = kerattn.zoo.han_classifier(50, 3, embedding_dim=8, word_units=4,
    ...                                    sentence_units=4, attention_units=4)
    >>> model.compile("adam", "sparse_categorical_crossentropy")
    >>> x = {"document_ids": np.ones((4, 2, 5), "int32")}
    >>> y = np.array([0, 1, 2, 1])
    >>> _ = model.fit(x, y, verbose=0)
    >>> model.save("han.keras")       # under any backend
    >>> loaded = kerattn.load_model("han.keras")   # under any backend
    >>> _ = loaded.fit(x, y, verbose=0)           # training continues
    >>> int(loaded.optimizer.iterations)
    2
    """
    import kerattn.layers  # noqa: F401  (registers the layers)

    path = os.fspath(filepath)
    if not str(path).endswith(".keras"):
        raise ValueError(f"`filepath` must be a .keras file; got {path!r}.")
    if not os.path.isfile(path):
        raise ValueError(f"`filepath` does not exist: {path!r}.")
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
        compile_config = config.get("compile_config")
        if not compile or not compile_config:
            return keras.saving.load_model(
                path, compile=compile, safe_mode=safe_mode,
                custom_objects=custom_objects)
        config["compile_config"] = _portable_compile_config(compile_config,
                                                            jit_compile)
        with tempfile.TemporaryDirectory(prefix="kerattn_load_") as tmp:
            portable = os.path.join(tmp, "model.keras")
            with zipfile.ZipFile(portable, "w") as out:
                for item in archive.infolist():
                    if item.filename == "config.json":
                        out.writestr(item, json.dumps(config))
                    else:
                        with archive.open(item) as src, out.open(item, "w") as dst:
                            shutil.copyfileobj(src, dst)
            return keras.saving.load_model(
                portable, compile=True, safe_mode=safe_mode,
                custom_objects=custom_objects)
