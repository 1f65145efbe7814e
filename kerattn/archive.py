"""A `.keras` file as untrusted input: checked before Keras opens it.

`kerattn.load_model` reads files that others trained. Keras' own
`safe_mode` has been bypassed repeatedly (the CVEs in `KERAS_FLOOR`'s
comment), so this module checks the archive first, from its zip directory,
its `config.json` and its weights file's structure, and refuses anything a
kerattn model never contains. Nothing in the file is imported, called or
unpacked to disk while checking, and every read is bounded:

- the archive: a complete zip (not truncated), no encrypted entry, at most
  `MAX_ENTRIES` entries, each a relative path inside the archive (no `..`,
  no absolute path, no drive, no backslash), no symbolic link, no name
  twice, only the entries Keras writes (`config.json`, `metadata.json`,
  `model.weights.h5` or `.npz`, `assets/...`);
- sizes, from the zip directory before anything is inflated: `config.json`
  at most `max_config_bytes`, all entries together at most
  `max_unpacked_bytes`, and no entry over 1 MiB inflating more than
  `MAX_RATIO` times its packed size (a zip bomb). Python's zip reader never
  returns more than an entry's declared size, so these bound what is read;
- `config.json`: valid UTF-8 JSON, nested at most `MAX_DEPTH` deep; every
  object it names comes from `keras` or `kerattn` (or `custom_objects`);
  no `Lambda` layer or marshalled `__lambda__` code; functions only from
  Keras' modelling modules (activations, losses, metrics, initializers,
  regularizers, constraints, ops), so never `enable_unsafe_deserialization`
  or `get_file`; no layer that loads another file or a pickle
  (`TFSMLayer`, `TorchModuleWrapper`, ...);
- `model.weights.h5`: no external or soft link, no external or virtual
  dataset, and datasets whose declared sizes add up to at most
  `max_unpacked_bytes` (a shape bomb).

What passes is then loaded by `keras.saving.load_model` with `safe_mode`,
under a Keras at or above `KERAS_FLOOR`. A SavedModel is a program, not
data: loading an untrusted one is out of scope.
"""

import collections
import json
import posixpath
import re
import stat
import zipfile

from kerattn import checks

# The lowest Keras whose every later release carries the fixes below
# (checked by tag containment in keras-team/keras; 3.12.4 is the only older
# release with all of them, 3.13.x and 3.14.x lack the last ones):
#   >= 3.9.0   CVE-2025-1550  config.json importing any module's function
#   >= 3.11.0  CVE-2025-8747  safe-mode bypass through keras.utils.get_file
#   >= 3.11.0  CVE-2025-9906  config calling enable_unsafe_deserialization
#   >= 3.11.3  CVE-2025-9905  safe_mode ignored for .h5 files
#   >= 3.11.3  CVE-2025-49655 TorchModuleWrapper's torch.load of a pickle
#   >= 3.13.2  CVE-2026-1669  HDF5 external links reading local files
#   >= 3.13.2  CVE-2026-1462  TFSMLayer loading an attacker's SavedModel
#   >= 3.15.0  keras issue #23055: tar hard links, HDF5 virtual datasets,
#              shape and npz bombs, symlink traversal, decompression bombs,
#              Lambda.from_config failing open
#   >= 3.15.1  decompression bombs on the asset path (PR #23101), every
#              intermediate HDF5 group checked (PR #23168)
KERAS_FLOOR = (3, 15, 1)

__all__ = ["KERAS_FLOOR", "require_safe_keras", "read_config", "check_config",
           "version_tuple"]

MAX_ENTRIES = 10_000
MAX_RATIO = 100
MAX_DEPTH = 200
MAX_CONFIG_BYTES = 64 * 2 ** 20
MAX_UNPACKED_BYTES = 16 * 2 ** 30

_ENTRIES = ("config.json", "metadata.json", "model.weights.h5",
            "model.weights.npz")
_PACKAGES = ("keras", "kerattn")
# Keras modules whose functions are modelling functions, safe to name.
_FUNCTION_MODULES = ("activations", "losses", "metrics", "initializers",
                     "regularizers", "constraints", "ops")
# Layers that load another file, a program or a pickle when built.
_LOADERS = ("TFSMLayer", "TorchModuleWrapper", "JaxLayer", "FlaxLayer",
            "Lambda")


def version_tuple(text):
    """A version string as a tuple of three ints, for comparing.

    Args:
        text: a version such as `keras.__version__`; what follows the
            numbers (`rc1`, `.dev2026`, `+local`) is ignored, and a string
            that starts with no number gives `(0, 0, 0)`.

    Returns:
        `(major, minor, patch)`.

    Example:

    >>> version_tuple("3.16.0.dev2026112401")
    (3, 16, 0)
    """
    match = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", str(text).strip())
    return tuple(int(g or 0) for g in match.groups()) if match else (0, 0, 0)


def require_safe_keras(version=None):
    """Refuse to load untrusted files under a Keras below `KERAS_FLOOR`.

    Args:
        version: the version string to check (default: the installed
            `keras.__version__`).

    Raises:
        RuntimeError: the version is below the floor (Keras installed with
            `pip install --no-deps`, or pinned low by another package).

    Example:

    >>> require_safe_keras("3.15.1")
    >>> require_safe_keras("3.8.0")
    Traceback (most recent call last):
      ...
    RuntimeError: kerattn.load_model needs keras>=3.15.1 to load files safely; keras 3.8.0 is installed, which lacks fixes for published safe_mode bypasses (see kerattn.archive.KERAS_FLOOR). Upgrade with `pip install -U "keras>=3.15.1"`.
    """
    if version is None:
        import keras

        version = keras.__version__
    if version_tuple(version) < KERAS_FLOOR:
        floor = ".".join(map(str, KERAS_FLOOR))
        raise RuntimeError(
            f"kerattn.load_model needs keras>={floor} to load files safely; "
            f"keras {version} is installed, which lacks fixes for published "
            "safe_mode bypasses (see kerattn.archive.KERAS_FLOOR). Upgrade "
            f'with `pip install -U "keras>={floor}"`.')


def _refuse(path, problem):
    checks.bad_file(path, f"refused, not loaded: {problem}")


def _check_entry(path, info, seen):
    name = info.filename
    parts = name.split("/")
    if (name.startswith("/") or "\\" in name or "\x00" in name
            or (len(name) > 1 and name[1] == ":")
            or ".." in parts or posixpath.normpath(name) != name.rstrip("/")):
        _refuse(path, f"the entry {name!r} is not a plain relative path "
                "inside the archive.")
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        _refuse(path, f"the entry {name!r} is a symbolic link.")
    if info.flag_bits & 0x1:
        _refuse(path, f"the entry {name!r} is encrypted.")
    if name in seen:
        _refuse(path, f"the entry {name!r} appears twice.")
    if name not in _ENTRIES and not name.startswith("assets/"):
        _refuse(path, f"the entry {name!r} is not one Keras writes "
                f"({', '.join(_ENTRIES)}, assets/...).")
    if info.file_size > 2 ** 20 and info.file_size > MAX_RATIO * max(
            info.compress_size, 1):
        _refuse(path, f"the entry {name!r} would inflate {info.compress_size:,} "
                f"bytes to {info.file_size:,} (more than {MAX_RATIO}x: a zip "
                "bomb).")
    seen.add(name)


def _depth(value, limit):
    """The nesting depth of JSON `value` (counting stops past `limit`)."""
    stack, deepest = [(value, 1)], 0
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _package(module):
    return str(module).split(".")[0]


def check_config(config, path="config.json", allowed=()):
    """Refuse a parsed `config.json` that names anything outside Keras and
    kerattn, marshalled code, an unsafe function or a loading layer.

    Args:
        config: the parsed JSON.
        path: the file, for the message.
        allowed: further class or registered names to accept (the keys of
            `custom_objects`).

    Raises:
        ValueError: naming the object refused.

    Example:

    >>> check_config({"module": "keras.layers", "class_name": "Dense",
    ...               "config": {"units": 2}})
    >>> check_config({"module": "os", "class_name": "function",
    ...               "config": "system"})
    Traceback (most recent call last):
      ...
    ValueError: config.json: refused, not loaded: it names the function 'system' from module 'os'; only Keras' modelling functions load.
    """
    queue = collections.deque([config])   # in file order: the first is named
    while queue:
        item = queue.popleft()
        if isinstance(item, list):
            queue.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        queue.extend(item.values())
        class_name = item.get("class_name")
        if not isinstance(class_name, str):
            continue
        module = item.get("module")
        registered = item.get("registered_name")
        inner = item.get("config")
        if class_name in _LOADERS or class_name == "__lambda__":
            _refuse(path, f"it holds a {class_name!r} object, which runs code "
                    "or loads another file (kerattn models have none).")
        if class_name == "function":
            what = inner if isinstance(inner, str) else repr(inner)
            if what in allowed or registered in allowed:
                continue
            pieces = str(module).split(".")
            if pieces[0] != "keras" or not (
                    set(pieces[1:3]) & set(_FUNCTION_MODULES)):
                _refuse(path, f"it names the function {what!r} from module "
                        f"{module!r}; only Keras' modelling functions load.")
            continue
        if class_name in allowed or registered in allowed:
            continue
        if module is not None and _package(module) not in _PACKAGES:
            _refuse(path, f"it names {class_name!r} from module {module!r}; "
                    "only keras and kerattn objects load.")
        if isinstance(registered, str) and ">" in registered and (
                registered.split(">")[0] not in _PACKAGES):
            _refuse(path, f"it names the registered object {registered!r}; "
                    "only keras and kerattn objects load.")


def _check_h5(path, archive, name, limit):
    import h5py

    with archive.open(name) as raw:
        try:
            f = h5py.File(raw, "r")
        except OSError as error:
            _refuse(path, f"{name} is not an HDF5 file ({error}).")
        with f:
            total, groups = 0, [f]
            while groups:
                group = groups.pop()
                for key in group.keys():
                    link = group.get(key, getlink=True)
                    if isinstance(link, (h5py.ExternalLink, h5py.SoftLink)):
                        _refuse(path, f"{name} links {group.name}/{key} "
                                f"elsewhere ({type(link).__name__}).")
                    item = group.get(key)
                    if isinstance(item, h5py.Group):
                        groups.append(item)
                    elif isinstance(item, h5py.Dataset):
                        if item.external or item.is_virtual:
                            _refuse(path, f"{name} has a dataset {item.name} "
                                    "stored outside the file.")
                        count = 1
                        for dim in item.shape or ():
                            count *= dim
                        total += count * item.dtype.itemsize
                        if total > limit:
                            _refuse(path, f"{name} declares more than {limit:,} "
                                    "bytes of weights (a shape bomb).")


def read_config(path, max_config_bytes=MAX_CONFIG_BYTES,
                max_unpacked_bytes=MAX_UNPACKED_BYTES, allowed=()):
    """Check the `.keras` archive at `path`; return its parsed config.

    Args:
        path: the `.keras` file.
        max_config_bytes: the largest `config.json` read.
        max_unpacked_bytes: the most all entries (and the weights' declared
            datasets) may inflate to.
        allowed: further class names to accept (`custom_objects`' keys);
            None skips the check of the objects `config.json` names (for a
            trusted file loaded with `safe_mode=False`).

    Returns:
        The parsed `config.json`, checked.

    Raises:
        ValueError: "PATH: refused, not loaded: why" for any of the module
            docstring's rules.

    Example:

    >>> model = kerattn.zoo.han_classifier(50, 3, preset="tiny")
    >>> model.save("han.keras")
    >>> read_config("han.keras")["class_name"]
    'ZooModel'
    """
    checks.positive_int("max_config_bytes", max_config_bytes)
    checks.positive_int("max_unpacked_bytes", max_unpacked_bytes)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        _refuse(path, f"not a complete zip archive ({error}).")
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ENTRIES:
            _refuse(path, f"{len(infos):,} entries (at most {MAX_ENTRIES:,}).")
        seen = set()
        for info in infos:
            _check_entry(path, info, seen)
        unpacked = sum(info.file_size for info in infos)
        if unpacked > max_unpacked_bytes:
            _refuse(path, f"its entries inflate to {unpacked:,} bytes (at most "
                    f"max_unpacked_bytes={max_unpacked_bytes:,}).")
        if "config.json" not in seen:
            _refuse(path, "it has no config.json.")
        size = archive.getinfo("config.json").file_size
        if size > max_config_bytes:
            _refuse(path, f"config.json is {size:,} bytes (at most "
                    f"max_config_bytes={max_config_bytes:,}).")
        try:
            with archive.open("config.json") as f:
                raw = f.read(max_config_bytes + 1)
            config = json.loads(raw.decode("utf-8"))
        except (zipfile.BadZipFile, EOFError, OSError, UnicodeDecodeError,
                ValueError, RecursionError) as error:
            _refuse(path, f"config.json cannot be read as JSON ({error}).")
        if _depth(config, MAX_DEPTH) > MAX_DEPTH:
            _refuse(path, f"config.json nests deeper than {MAX_DEPTH}.")
        if allowed is not None:
            check_config(config, path, allowed)
        if "model.weights.h5" in seen:
            try:
                _check_h5(path, archive, "model.weights.h5", max_unpacked_bytes)
            except (zipfile.BadZipFile, EOFError) as error:
                _refuse(path, f"model.weights.h5 is damaged ({error}).")
    return config
