"""Hostile `.keras` files, each made from a real zoo model's archive.

`CASES` maps a case's name to `(what it is, make(base, directory, marker))`:
`make` writes the tampered archive into `directory` and returns its path.
Where a payload carries code or a command, running it creates the file
`marker` before it returns (a command runs `python -c`, which writes the
marker, under `subprocess.Popen`; the test's `Popen` waits for it), so a
test proves nothing ran by the marker's absence. `CALLABLES` names the
callables the payloads name (`os.system` and `builtins.exec` as
activations, which carry no command, `subprocess.Popen`,
`enable_unsafe_deserialization`, `TFSMLayer`): the test replaces each with
a recorder that must not be called. Used by
`tests/test_hostile_files.py`; run as a script it prints docs/export.md's
table of what `kerattn.load_model` and `keras.saving.load_model` do with each:

    KERAS_BACKEND=jax python tests/hostile_files.py
"""

import base64
import io
import json
import marshal
import os
import shutil
import stat
import sys
import zipfile

import numpy as np

# The package a "module outside keras and kerattn" case names: importing it
# would create the marker (the test puts it on sys.path).
PAYLOAD_MODULE = "kerattn_hostile_payload"


def _entries(base):
    with zipfile.ZipFile(base) as z:
        return {i.filename: z.read(i.filename) for i in z.infolist()}


def _write(path, entries, extra=()):
    """An archive of `entries` (name -> bytes) plus `extra` ZipInfo items."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
        for info, data in extra:
            z.writestr(info, data)
    return path


def _with_config(base, path, edit):
    entries = _entries(base)
    config = json.loads(entries["config.json"])
    edit(config)
    entries["config.json"] = json.dumps(config).encode()
    return _write(path, entries)


def _layers(config):
    return config["config"]["layers"]


def _first(config, class_name):
    return next(layer for layer in _layers(config)
                if layer["class_name"] == class_name)


def _touch_code(marker):
    """A marshalled function (Keras' `__lambda__` form) creating `marker`."""
    fn = eval(f"lambda x: (__import__('pathlib').Path({marker!r}).touch(), x)[1]")
    code = base64.b64encode(marshal.dumps(fn.__code__)).decode("ascii")
    return {"class_name": "__lambda__", "config": {"value": [code, None, None]}}


def _marker_command(marker):
    """A command that creates `marker` (then exits)."""
    return [sys.executable, "-c",
            f"import pathlib; pathlib.Path({marker!r}).touch()"]


def _function(module, name):
    return {"module": module, "class_name": "function", "config": name,
            "registered_name": "function"}


def _activation(module, name):
    def edit(config):
        _first(config, "Dense")["config"]["activation"] = _function(module, name)
    return edit


def _make_os(base, directory, marker):
    return _with_config(base, os.path.join(directory, "os.keras"),
                        _activation("os", "system"))


def _make_subprocess(base, directory, marker):
    def edit(config):
        layer = _first(config, "Dense")
        layer.update(module="subprocess", class_name="Popen",
                     config={"args": _marker_command(marker)},
                     registered_name=None)
    return _with_config(base, os.path.join(directory, "subprocess.keras"), edit)


def _make_builtins(base, directory, marker):
    return _with_config(base, os.path.join(directory, "builtins.keras"),
                        _activation("builtins", "exec"))


def _make_unsafe_switch(base, directory, marker):
    """CVE-2025-9906's shape: switch safe mode off, then marshalled code."""
    def edit(config):
        dense = [layer for layer in _layers(config)
                 if layer["class_name"] == "Dense"]
        dense[0]["config"]["activation"] = _function(
            "keras.config", "enable_unsafe_deserialization")
        dense[-1]["config"]["activation"] = _touch_code(marker)
    return _with_config(base, os.path.join(directory, "unsafe.keras"), edit)


def _replace_dropout(class_name, layer_config):
    """An edit turning the first Dropout into `class_name` with
    `layer_config` (its name kept), in the functional graph's place."""
    def edit(config):
        layer = _first(config, "Dropout")
        layer.update(module="keras.layers", class_name=class_name,
                     registered_name=None)
        layer["config"] = {"name": layer["config"]["name"], **layer_config}
    return edit


def _make_lambda(base, directory, marker):
    return _with_config(base, os.path.join(directory, "lambda.keras"),
                        _replace_dropout("Lambda", {
                            "function": _touch_code(marker), "arguments": {}}))


def _make_foreign_module(base, directory, marker):
    with open(os.path.join(directory, f"{PAYLOAD_MODULE}.py"), "w") as f:
        f.write(f"import pathlib\npathlib.Path({marker!r}).touch()\n"
                "class Payload:\n    @classmethod\n"
                "    def from_config(cls, config):\n        return cls()\n")

    def edit(config):
        _first(config, "Dense")["config"]["kernel_initializer"] = {
            "module": PAYLOAD_MODULE, "class_name": "Payload", "config": {},
            "registered_name": None}
    return _with_config(base, os.path.join(directory, "foreign.keras"), edit)


def _make_tfsm(base, directory, marker):
    """CVE-2026-1462's shape: a layer that loads another SavedModel."""
    return _with_config(base, os.path.join(directory, "tfsm.keras"),
                        _replace_dropout("TFSMLayer", {
                            "filepath": os.path.join(directory, "attacker_model")}))


def _make_entry(name, data=b"owned"):
    def make(base, directory, marker):
        info = zipfile.ZipInfo("placeholder")
        info.filename = name          # ZipInfo() would clean the name
        return _write(os.path.join(directory, "entry.keras"), _entries(base),
                      [(info, data)])
    return make


def _make_symlink(base, directory, marker):
    info = zipfile.ZipInfo("assets/link")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return _write(os.path.join(directory, "symlink.keras"), _entries(base),
                  [(info, b"/etc/passwd")])


def _make_truncated(base, directory, marker):
    path = os.path.join(directory, "truncated.keras")
    with open(base, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:len(data) // 2])
    return path


def _make_bomb(base, directory, marker):
    """64 MiB of zeros packed into about 64 KB."""
    info = zipfile.ZipInfo("assets/bomb")
    info.compress_type = zipfile.ZIP_DEFLATED
    return _write(os.path.join(directory, "bomb.keras"), _entries(base),
                  [(info, bytes(64 * 2 ** 20))])


def _make_big_config(base, directory, marker):
    """config.json of 2 MiB (the test loads with `max_config_bytes=1 MiB`),
    stored unpacked so that it is no zip bomb."""
    entries = _entries(base)
    config = json.loads(entries["config.json"])
    config["padding"] = " " * (2 * 2 ** 20)
    path = os.path.join(directory, "big_config.keras")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries.items():
            z.writestr(name, json.dumps(config) if name == "config.json" else data)
    return path


def _make_deep_config(base, directory, marker):
    entries = _entries(base)
    entries["config.json"] = b'{"a": ' * 100_000 + b"1" + b"}" * 100_000
    return _write(os.path.join(directory, "deep.keras"), entries)


def _make_wrong_shapes(base, directory, marker):
    """The config's output layer made 3 units wider than its weights."""
    def edit(config):
        layer = [layer for layer in _layers(config)
                 if layer["class_name"] == "Dense"][-1]
        layer["config"]["units"] += 3
    return _with_config(base, os.path.join(directory, "shapes.keras"), edit)


def _edit_h5(base, path, edit):
    import h5py

    entries = _entries(base)
    buffer = io.BytesIO(entries["model.weights.h5"])
    with h5py.File(buffer, "a") as f:
        edit(f)
    entries["model.weights.h5"] = buffer.getvalue()
    return _write(path, entries)


def _make_external_link(base, directory, marker):
    """CVE-2026-1669's shape: a weight read from another HDF5 file."""
    import h5py

    secret = os.path.join(directory, "secret.h5")
    with h5py.File(secret, "w") as f:
        f["data"] = np.arange(4, dtype="float32")

    def edit(f):
        f["stolen"] = h5py.ExternalLink(secret, "/data")
    return _edit_h5(base, os.path.join(directory, "external.keras"), edit)


def _make_shape_bomb(base, directory, marker):
    """A 4 TiB dataset declared in a few KB (chunked, never written)."""
    def edit(f):
        f.create_dataset("bomb", shape=(2 ** 20, 2 ** 20), dtype="float32",
                         chunks=(1, 1024))
    return _edit_h5(base, os.path.join(directory, "shape_bomb.keras"), edit)


CASES = {
    "os-function": ("config names `os.system` (as an activation)", _make_os),
    "subprocess-class": ("config names `subprocess.Popen` as a layer",
                         _make_subprocess),
    "builtins-function": ("config names `builtins.exec`", _make_builtins),
    "unsafe-switch": ("config calls `keras.config.enable_unsafe_deserialization`, "
                      "then marshalled code", _make_unsafe_switch),
    "lambda-layer": ("a `Lambda` layer with marshalled code", _make_lambda),
    "foreign-module": ("an object from a module outside keras and kerattn "
                       "(importing it runs code)", _make_foreign_module),
    "tfsm-layer": ("a `TFSMLayer` loading another SavedModel", _make_tfsm),
    "dotdot-entry": ("an entry named `../escape.txt`", _make_entry("../escape.txt")),
    "absolute-entry": ("an entry named `/tmp/kerattn_escape.txt`",
                       _make_entry("/tmp/kerattn_escape.txt")),
    "symlink-entry": ("an entry that is a symbolic link to `/etc/passwd`",
                      _make_symlink),
    "truncated-zip": ("the archive cut in half", _make_truncated),
    "zip-bomb": ("an entry inflating 64 KB to 64 MiB", _make_bomb),
    "oversized-config": ("a 2 MiB `config.json` (limit 1 MiB)",
                         _make_big_config),
    "deep-config": ("a `config.json` nested 100,000 deep", _make_deep_config),
    "wrong-shapes": ("weights whose shapes do not match the config",
                     _make_wrong_shapes),
    "hdf5-external-link": ("an HDF5 external link to another file",
                           _make_external_link),
    "hdf5-shape-bomb": ("an HDF5 dataset declaring 4 TiB", _make_shape_bomb),
}

# The callables each case names: (module or class, attribute), which the
# test replaces with a recorder. `TFSMLayer`'s `__new__` is
# patched on the class, since Keras finds the class through its own
# registry, not the module (and reads `__init__`'s signature).
CALLABLES = {
    "os-function": [("os", "system")],
    "subprocess-class": [("subprocess", "Popen")],
    "builtins-function": [("builtins", "exec")],
    "unsafe-switch": [("keras.config", "enable_unsafe_deserialization"),
                      ("keras.src.saving.serialization_lib",
                       "enable_unsafe_deserialization")],
    "tfsm-layer": [("keras.layers.TFSMLayer", "__new__")],
}

# What each case loads with (the oversized config's limit is lowered so the
# test need not write 64 MiB).
LOAD_KWARGS = {"oversized-config": {"max_config_bytes": 2 ** 20}}


def base_archive(directory):
    """A real zoo model's `.keras` file: bahdanau_nmt at its tiny preset."""
    import keras

    from kerattn import zoo

    path = os.path.join(directory, "base.keras")
    if not os.path.exists(path):
        model = zoo.bahdanau_nmt(30, 30, preset="tiny", dropout=0.1)
        model.compile("adam", "sparse_categorical_crossentropy")
        model.save(path)
        keras.backend.clear_session()
    return path


def _outcome(load, path, marker, **kwargs):
    try:
        load(path, **kwargs)
        result = "loaded"
    except Exception as error:  # noqa: BLE001 (the table records any refusal)
        result = f"{type(error).__name__}: {str(error).splitlines()[0][:90]}"
    ran = " **and ran the payload**" if os.path.exists(marker) else ""
    return result + ran


def table(directory):
    """docs/export.md's markdown table: each case under both loaders."""
    import keras

    import kerattn

    base = base_archive(directory)
    sys.path.insert(0, directory)
    rows = ["| case | `kerattn.load_model` | `keras.saving.load_model` "
            f"(Keras {keras.__version__}) |", "|---|---|---|"]
    for name, (what, make) in CASES.items():
        marker = os.path.join(directory, f"{name}.marker")
        path = make(base, directory, marker)
        ours = _outcome(kerattn.load_model, path, marker,
                        **LOAD_KWARGS.get(name, {}))
        theirs = _outcome(keras.saving.load_model, path, marker)
        sys.modules.pop(PAYLOAD_MODULE, None)
        rows.append(f"| {what} | {ours.replace('|', '/')} | "
                    f"{theirs.replace('|', '/')} |")
    return "\n".join(rows)


if __name__ == "__main__":
    import tempfile

    work = tempfile.mkdtemp(prefix="kerattn_hostile_")
    try:
        print(table(work))
    finally:
        shutil.rmtree(work)
