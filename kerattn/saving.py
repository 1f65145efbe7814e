"""Load a `.keras` file saved under any backend, ready to `fit` under this one;
write any file atomically (`atomic_path`)."""

import contextlib
import json
import os
import secrets
import shutil
import tempfile
import zipfile

import keras

from kerattn import archive, checks


def _is_keras_optimizer(config):
    module = str(config.get("module", ""))
    name = config.get("class_name")
    return (module.startswith("keras.") and isinstance(name, str)
            and isinstance(getattr(keras.optimizers, name, None), type))


def _portable_compile_config(compile_config, jit_compile):
    compile_config = dict(compile_config)
    optimizer = compile_config.get("optimizer")
    # Keras writes the optimizer a model was compiled with by its module:
    # under PyTorch, a module of the torch backend whose class only works
    # with torch tensors. One of Keras' own optimizers is read back from
    # `keras.optimizers`, which gives the loading backend's class.
    if isinstance(optimizer, dict) and _is_keras_optimizer(optimizer):
        optimizer = dict(optimizer, module="keras.optimizers")
        compile_config["optimizer"] = optimizer
    # `jit_compile` was chosen for the backend that saved the file (JAX's
    # default is True; torch's "auto" means False); the loading backend
    # decides for itself.
    compile_config["jit_compile"] = jit_compile
    return compile_config


# The layers that tell which generative model a file whose top-level class is
# `ZooModel` holds; the first match wins.
_LEGACY_CLASSES = (
    ({"summary", "decoder", "deep_output", "maxout"}, "ChoEncoderDecoder"),
    ({"encoder", "decoder", "deep_output", "maxout"}, "BahdanauNMT"),
    ({"encoder_1", "decoder", "output_projection"}, "LuongNMT"),
    ({"encoder_projection", "decoder_projection", "attention_1"}, "ConvS2SNMT"),
    ({"source_embedding", "encoder_1", "decoder_1:TransformerDecoderBlock"},
     "TransformerNMT"),
    ({"encoder_1", "decoder_1", "output_projection"}, "Seq2Seq"),
    ({"decoder", "embedding", "deep_output_h", "output_projection"},
     "ShowAttendTell"),
)


def upgrade_legacy_config(config):
    """The generative class of a `ZooModel` config, found by its layers.

    A `.keras` file whose top-level class is `ZooModel` (a plain
    functional model, which cannot decode by itself) may hold a generative
    zoo model, recognised by its layer names. Used when loading
    (`load_model`): it renames the top-level class of such a config to its
    generative model class (`BahdanauNMT`, ...), whose `encode` / `step`
    read the same named layers. Other configs are returned unchanged.

    Args:
        config: the parsed `config.json` of a `.keras` file.

    Returns:
        `(config, changed)`.
    """
    if config.get("class_name") != "ZooModel":
        return config, False
    layers = config.get("config", {}).get("layers", [])
    names = set()
    for layer in layers:
        name = layer.get("name") or layer.get("config", {}).get("name")
        names.update({name, f"{name}:{layer.get('class_name')}"})
    for needed, class_name in _LEGACY_CLASSES:
        if needed <= names:
            config = dict(config, class_name=class_name,
                          registered_name=f"kerattn>{class_name}")
            return config, True
    return config, False


def load_model(filepath, compile=True, safe_mode=True, jit_compile="auto",
               custom_objects=None, max_config_bytes=archive.MAX_CONFIG_BYTES,
               max_unpacked_bytes=archive.MAX_UNPACKED_BYTES):
    """Load a kerattn `.keras` file saved under TensorFlow, JAX or PyTorch.

    `keras.saving.load_model` restores a model compiled under another
    backend with that backend's choices, which break `fit`: a file saved
    under PyTorch carries the torch optimizer class, and one saved under JAX
    carries `jit_compile=True`. This loads the same file with the portable
    optimizer class (its state, e.g. Adam's moments and iteration count,
    restored as usual) and `jit_compile` chosen for this backend, so
    training continues where it stopped. A file whose top-level class is a
    plain `ZooModel` holding a generative zoo model's layers loads as that
    model's class (`upgrade_legacy_config`).

    The file is treated as untrusted: before Keras opens it,
    `kerattn.archive.read_config` checks the archive (complete, no path
    outside it, no link, no zip bomb, bounded reads), its `config.json`
    (only keras and kerattn objects, no `Lambda` or marshalled code, no
    unsafe function, no layer that loads another file) and its weights
    file (no external link or dataset, no shape bomb), and refuses what
    fails with a ValueError naming the file and the reason. It runs only
    under a Keras at or above `kerattn.archive.KERAS_FLOOR`, whose releases
    carry the fixes for the published `safe_mode` bypasses. Nothing is
    written outside a temporary directory, removed on return.

    Args:
        filepath: a `.keras` file.
        compile: restore the optimizer, loss and metrics it was compiled with.
        safe_mode: Keras' safe mode (no arbitrary code is run while loading;
            zoo models contain no `Lambda` layer). `False` also skips the
            check of the objects `config.json` names (the archive's
            structure and sizes are checked either way): only for files
            you trust.
        jit_compile: the `jit_compile` to compile with ("auto": this
            backend's default).
        custom_objects: as for `keras.saving.load_model` (kerattn's own
            layers are registered already); their names are also accepted
            in `config.json`.
        max_config_bytes: the largest `config.json` read (64 MiB).
        max_unpacked_bytes: the most the archive's entries, and the
            weights' declared datasets, may inflate to (16 GiB).

    Returns:
        The `keras.Model`.

    Raises:
        ValueError: "FILE: refused, not loaded: why" for a hostile or
            damaged file; Keras' own refusals (weights that do not fit the
            config) come as "FILE: refused, not loaded: Keras: ...".
        RuntimeError: the installed Keras is below the floor.

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
    checks.require(str(path).endswith(".keras"), "filepath", "a .keras file",
                   path)
    checks.require(os.path.isfile(path), "filepath", "an existing .keras file",
                   path, note="`filepath` does not exist, or is not a file.")
    import kerattn.zoo  # noqa: F401  (registers the models)

    archive.require_safe_keras()
    config = archive.read_config(
        path, max_config_bytes=max_config_bytes,
        max_unpacked_bytes=max_unpacked_bytes,
        allowed=tuple(custom_objects or ()) if safe_mode else None)
    config, changed = upgrade_legacy_config(config)
    compile_config = config.get("compile_config")
    if compile and compile_config:
        config["compile_config"] = _portable_compile_config(compile_config,
                                                            jit_compile)
        changed = True
    kwargs = dict(compile=compile, safe_mode=safe_mode,
                  custom_objects=custom_objects)
    if not changed:
        return _keras_load(path, path, kwargs)
    with tempfile.TemporaryDirectory(prefix="kerattn_load_") as tmp:
        portable = os.path.join(tmp, "model.keras")
        with zipfile.ZipFile(path) as source, zipfile.ZipFile(portable, "w") as out:
            for item in source.infolist():   # checked and bounded above
                if item.filename == "config.json":
                    out.writestr(item, json.dumps(config))
                else:
                    with source.open(item) as src, out.open(item, "w") as dst:
                        shutil.copyfileobj(src, dst)
        return _keras_load(path, portable, kwargs)


def _keras_load(path, portable, kwargs):
    """`keras.saving.load_model`, its refusals named for the user's file."""
    try:
        return keras.saving.load_model(portable, **kwargs)
    except ValueError as error:
        first = str(error).strip().split("\n\n")[0]
        checks.bad_file(path, f"refused, not loaded: Keras: {first}")


# The start of `atomic_path`'s temporary names (hidden files).
TEMPORARY_PREFIX = ".tmp-"


def _fsync(path, directory=False):
    """Flush `path` (a file, or on POSIX a directory) to the disk."""
    if directory and os.name != "posix":
        return   # Windows cannot open a directory; its rename is durable enough
    fd = os.open(path, os.O_RDONLY if directory else os.O_RDWR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path):
    """Write `path` atomically: through a temporary name, then one rename.

    Inside the `with`, write the file at the path it gives, with any writer
    (`open`, `json.dump`, `np.savez`, `model.save`, `model.save_weights`):
    a new name in the same directory, `.tmp-<pid>-<random>-<name>`, which
    ends as `path` does, so Keras' `.keras` / `.weights.h5` suffix checks
    and `np.savez`' `.npz` pass. When the block ends, the file is flushed to
    disk and `os.replace`d onto `path` (then the directory is flushed):
    readers see the old file or the new one, never part of one, and a kill
    at any moment leaves the old file whole (at worst a temporary file
    beside it). On an exception the temporary file is removed and `path` is
    unchanged. Nested blocks write every file before renaming any (the
    innermost first): the renames alone are left between two states.

    Args:
        path: the file to write (its directory must exist).

    Example:

    >>> import json
    >>> with atomic_path("results.json") as temporary:
    ...     with open(temporary, "w") as f:
    ...         json.dump({"loss": 0.5}, f)
    >>> with open("results.json") as f:
    ...     json.load(f)
    {'loss': 0.5}
    >>> with atomic_path("weights.npz") as temporary:   # ends in .npz too
    ...     np.savez(temporary, w=np.ones(2))
    >>> np.load("weights.npz")["w"]
    array([1., 1.])
    """
    path = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(
        directory, f"{TEMPORARY_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{name}")
    try:
        yield temporary
        _fsync(temporary)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    _fsync(directory, directory=True)
