"""`kerattn.load_model` refuses hostile `.keras` files (tests/hostile_files.py).

Each case is a real zoo model's archive, tampered. The loader must refuse it
from kerattn's own check (`kerattn.archive.read_config`, before Keras opens
the file: `keras.saving.load_model` is never called) with a ValueError
naming the file and the reason, run nothing (the marker the payload would
create before returning does not exist, the payload module is not
imported, the callables a payload names were never called, safe mode
is still on), write nothing outside a temporary directory (removed on
return; the work directory, its parent and the parent's parent are
watched), and read at most a bounded number of bytes from the archive.
"""

import builtins
import importlib
import json
import os
import subprocess
import sys
import tempfile
import types
import zipfile

import keras
import pytest

import kerattn
from kerattn import archive
from kerattn.datasets import vocabulary_from_json

import hostile_files

READ_LIMIT = 4 * 2 ** 20   # bytes: the base model's archive is about 0.1 MB


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return hostile_files.base_archive(str(tmp_path_factory.mktemp("base")))


class _CountingReads:
    """Counts the bytes every zip entry returns while patched in."""

    def __init__(self, monkeypatch):
        self.total = 0
        for method in ("read", "read1"):
            original = getattr(zipfile.ZipExtFile, method)

            def counted(f, n=-1, _original=original):
                data = _original(f, n)
                self.total += len(data)
                return data
            monkeypatch.setattr(zipfile.ZipExtFile, method, counted)


def _files(directory):
    """Every file and folder under `directory`, with its size."""
    found = {}
    for d, folders, fs in os.walk(directory):
        for name in folders + fs:
            full = os.path.join(d, name)
            found[full] = os.lstat(full).st_size if name in fs else None
    return found


def _resolve(dotted):
    """The module or object `dotted` names (`keras.layers.TFSMLayer`)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            target = getattr(target, part)
        return target
    raise ImportError(dotted)


class _Recorder:
    """Stands in for the callables a payload names (`CALLABLES`) and
    records each call. `os.system` is not run; the others are (the import
    system calls `exec`, a refused load must still raise), and a `Popen`
    is waited for, so that its command's marker exists on return."""

    def __init__(self, monkeypatch, case):
        self.calls = []
        for owner, name in hostile_files.CALLABLES.get(case, ()):
            target = _resolve(owner)
            monkeypatch.setattr(target, name, self._wrap(
                f"{owner}.{name}", getattr(target, name)))

    def _wrap(self, what, original):
        calls = self.calls
        if what == "os.system":
            def record(*args, **kwargs):
                calls.append((what, args))
                return 0
        elif what == "builtins.exec":
            def record(*args, **kwargs):
                if not (args and isinstance(args[0], types.CodeType)):
                    calls.append((what, args))   # imports exec code objects
                return original(*args, **kwargs)
        elif what == "subprocess.Popen":
            class record(original):
                def __init__(self, *args, **kwargs):
                    calls.append((what, args, kwargs))
                    super().__init__(*args, **kwargs)
                    self.wait()
        else:
            def record(*args, **kwargs):
                calls.append((what, args))
                return original(*args, **kwargs)
        return record


def _safe_mode():
    from keras.src.saving import serialization_lib

    return serialization_lib.in_safe_mode()


# The reason each refusal names, from kerattn's own check (`archive`);
# "wrong-shapes" is the one file kerattn's check passes and Keras refuses.
REASONS = {
    "os-function": "it names the function 'system' from module 'os'",
    "subprocess-class": "it names 'Popen' from module 'subprocess'",
    "builtins-function": "it names the function 'exec' from module 'builtins'",
    "unsafe-switch": "'enable_unsafe_deserialization' from module 'keras.config'",
    "lambda-layer": "it holds a 'Lambda' object",
    "foreign-module": f"from module {hostile_files.PAYLOAD_MODULE!r}",
    "tfsm-layer": "it holds a 'TFSMLayer' object",
    "dotdot-entry": "the entry '../escape.txt' is not a plain relative path",
    "absolute-entry": "the entry '/tmp/kerattn_escape.txt' is not a plain "
                      "relative path",
    "symlink-entry": "the entry 'assets/link' is a symbolic link",
    "truncated-zip": "not a complete zip archive",
    "zip-bomb": "zip bomb",
    "oversized-config": "max_config_bytes",
    "deep-config": "config.json",
    "wrong-shapes": "Keras: A total of 1 objects could not be loaded",
    "hdf5-external-link": "ExternalLink",
    "hdf5-shape-bomb": "shape bomb",
}
KERAS_REFUSES = ("wrong-shapes",)


@pytest.mark.parametrize("case", sorted(hostile_files.CASES))
def test_load_model_refuses_a_hostile_file(case, base, tmp_path, monkeypatch):
    work, scratch = tmp_path / "work", tmp_path / "scratch"
    work.mkdir()
    scratch.mkdir()
    marker = str(work / "PAYLOAD_RAN")
    _, make = hostile_files.CASES[case]
    path = make(base, str(work), marker)
    monkeypatch.syspath_prepend(str(work))     # the payload module is findable
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    safe_mode = _safe_mode()
    keras_loads = []
    keras_load = keras.saving.load_model
    monkeypatch.setattr(keras.saving, "load_model", lambda *a, **k: (
        keras_loads.append(a), keras_load(*a, **k))[1])
    # The work directory, its parent (scratch and work's siblings) and the
    # parent's parent (the session's temporary folder).
    before = (_files(tmp_path), sorted(os.listdir(tmp_path.parent)))
    reads = _CountingReads(monkeypatch)
    recorder = _Recorder(monkeypatch, case)
    try:
        with pytest.raises(ValueError) as caught:
            kerattn.load_model(path, **hostile_files.LOAD_KWARGS.get(case, {}))
    finally:
        monkeypatch.undo()   # the recorders out before the checks
    message = str(caught.value)
    # kerattn's own refusal, with this case's reason; Keras never opened
    # the file (only the weights that do not fit reach Keras).
    assert message.startswith(f"{path}: refused, not loaded: "), message
    assert REASONS[case] in message, message
    if case in KERAS_REFUSES:
        assert len(keras_loads) == 1
    else:
        assert not keras_loads
        assert ": Keras:" not in message
    # Nothing ran.
    assert not recorder.calls, recorder.calls
    assert _safe_mode() is safe_mode
    assert not os.path.exists(marker)
    assert hostile_files.PAYLOAD_MODULE not in sys.modules
    # Nothing written, and nothing read past the bound.
    assert (_files(tmp_path), sorted(os.listdir(tmp_path.parent))) == before
    assert not os.listdir(scratch)
    assert not os.path.exists("/tmp/kerattn_escape.txt")
    assert reads.total <= READ_LIMIT, reads.total


def test_every_case_has_its_reason_and_a_payload_check():
    """Each case's reason is above; each payload that names a callable
    without carrying code has its recorder (`CALLABLES`), and the recorded
    names exist."""
    assert set(REASONS) == set(hostile_files.CASES)
    assert set(KERAS_REFUSES) <= set(REASONS)
    assert set(hostile_files.CALLABLES) <= set(hostile_files.CASES)
    for pairs in hostile_files.CALLABLES.values():
        for owner, name in pairs:
            assert callable(getattr(_resolve(owner), name)), (owner, name)


def test_the_recorders_catch_a_payload_that_runs(base, tmp_path, monkeypatch):
    """What the hostile-file test would see if a loader ran the payloads:
    each named callable, called as a loader would, is recorded, and the
    Popen command's marker exists when the call returns."""
    marker = str(tmp_path / "PAYLOAD_RAN")
    recorders = {case: _Recorder(monkeypatch, case)
                 for case in hostile_files.CALLABLES}
    from keras.src.saving import serialization_lib

    os.system("true")
    builtins.exec("1")
    with serialization_lib.SafeModeScope(True):   # restores safe mode
        keras.config.enable_unsafe_deserialization()
    with pytest.raises(Exception):                # no SavedModel there
        keras.layers.TFSMLayer(str(tmp_path / "missing"))
    subprocess.Popen(hostile_files._marker_command(marker))
    assert os.path.exists(marker)
    for case, recorder in recorders.items():
        assert recorder.calls, case



def test_the_untampered_archive_loads_and_predicts_the_same(base):
    model = kerattn.load_model(base)
    again = keras.saving.load_model(base)
    assert type(model).__name__ == "BahdanauNMT"
    x = {"source_ids": keras.ops.convert_to_numpy(
             keras.ops.ones((2, 5), "int32")),
         "target_in_ids": keras.ops.convert_to_numpy(
             keras.ops.ones((2, 4), "int32"))}
    a = keras.ops.convert_to_numpy(model.predict(x, verbose=0))
    b = keras.ops.convert_to_numpy(again.predict(x, verbose=0))
    assert abs(a - b).max() == 0


def test_trusted_custom_objects_are_accepted(base, tmp_path):
    """A name the caller passes in `custom_objects` is trusted."""
    class Payload(keras.initializers.Zeros):
        pass

    path = hostile_files.CASES["foreign-module"][1](
        base, str(tmp_path), str(tmp_path / "m"))
    with zipfile.ZipFile(path) as z:
        config = json.loads(z.read("config.json"))
    archive.check_config(config, path, allowed=("Payload",))
    sys.modules.pop(hostile_files.PAYLOAD_MODULE, None)


def test_keras_below_the_floor_is_refused(base, monkeypatch):
    monkeypatch.setattr(keras, "__version__", "3.8.0")
    with pytest.raises(RuntimeError, match=r"keras>=3\.15\.1.*keras 3\.8\.0"):
        kerattn.load_model(base)
    monkeypatch.setattr(keras, "__version__", "3.15.1")
    kerattn.load_model(base, compile=False)


@pytest.mark.parametrize("version, ok", [
    ("3.15.1", True), ("3.16.0.dev2026112401", True), ("4.0.0", True),
    ("3.15.0", False), ("3.14.9", False), ("3.12.4", False), ("2.15.0", False),
    ("nonsense", False)])
def test_version_floor(version, ok):
    assert (archive.version_tuple(version) >= archive.KERAS_FLOOR) is ok


def test_the_floor_matches_pyproject():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(here, "pyproject.toml")) as f:
        text = f.read()
    floor = ".".join(map(str, archive.KERAS_FLOOR))
    assert f'"keras>={floor}"' in text


@pytest.mark.parametrize("text, words", [
    ("[" * 100_000 + "]" * 100_000, "not JSON"),
    ("x" * (64 * 2 ** 20 + 1), "at most"),
    ('{"tokens": 5, "lowercase": false}', "non-empty strings"),
    ('{"tokens": ["a", 7], "lowercase": false}', "non-empty strings"),
    ('{"tokens": ["a", ""], "lowercase": false}', "non-empty strings"),
    ('{"tokens": ["a", "a"], "lowercase": false}', "duplicates"),
    ('{"tokens": ["a"], "lowercase": "yes"}', "lowercase"),
    ('{"tokens": ["%s"], "lowercase": false, "__class__": "os.system"}',
     "keys"),
    ('{"tokens": ["a"], "wordpiece": ["b"], "lowercase": false}', "keys"),
    ('["tokens"]', "not an object"),
    ("\udcff", "not JSON"),
])
def test_a_hostile_vocabulary_json_is_refused(text, words):
    """The export command line's `--source-vocab` / `--target-vocab` files."""
    with pytest.raises(ValueError, match=words):
        vocabulary_from_json(text)


# --- What kerattn writes is clean ---------------------------------------------

@pytest.fixture(scope="session")
def own_keras_files(tmp_path_factory):
    """Every zoo case saved under this backend (tests/zoo_cases.py), in the
    directory the run shares (written once per run)."""
    import zoo_cases

    directory = os.environ.get("KERATTN_SHARED_TEST_DIR") or str(
        tmp_path_factory.mktemp("keras_files"))
    zoo_cases.ensure_saved(directory, keras.backend.backend())
    return directory


def _objects_and_strings(value, objects, strings):
    if isinstance(value, dict):
        if "class_name" in value:
            objects.append(value)
        for key, item in value.items():
            strings.append(key)
            _objects_and_strings(item, objects, strings)
    elif isinstance(value, list):
        for item in value:
            _objects_and_strings(item, objects, strings)
    elif isinstance(value, str):
        strings.append(value)


@pytest.mark.parametrize("name", sorted(__import__("zoo_cases").CASES))
def test_every_zoo_config_is_clean_and_loads_in_safe_mode(own_keras_files, name):
    """Only keras and kerattn objects, no code, no file path; plain Keras
    loads it with safe_mode=True and no custom_objects."""
    import numpy as np
    import zoo_cases

    path, x, _, saved_output = zoo_cases.load_case(
        own_keras_files, keras.backend.backend(), name)
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["config.json", "metadata.json",
                                        "model.weights.h5"]
        config = json.loads(z.read("config.json"))
    objects, strings = [], []
    _objects_and_strings(config, objects, strings)
    assert objects
    for obj in objects:
        module = obj.get("module")
        assert module is None or module.split(".")[0] in ("keras", "kerattn"), obj
        registered = obj.get("registered_name")
        assert registered is None or ">" not in registered or \
            registered.startswith("kerattn>"), obj
        assert obj["class_name"] not in ("Lambda", "function", "__lambda__",
                                         "TFSMLayer", "TorchModuleWrapper"), obj
    paths = [s for s in strings if "/" in s or "\\" in s or s.startswith("~")
             or os.path.exists(s)]
    assert not paths, paths
    archive.read_config(path)          # kerattn's own check accepts it
    model = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(zoo_cases.predict(model, x), saved_output,
                               atol=1e-5, rtol=1e-5)


def test_the_export_command_line_refuses_a_hostile_vocabulary(base, tmp_path):
    import subprocess

    bad = tmp_path / "vocab.json"
    bad.write_text('{"tokens": ["a"], "lowercase": false, "__class__": "os.system"}')
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, KERAS_BACKEND="tensorflow",
               PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "kerattn.export", "translator", base,
         str(tmp_path / "out"), "--source-vocab", str(bad), "--target-vocab",
         str(bad)], capture_output=True, text=True, env=env, timeout=300,
        cwd=str(tmp_path))
    assert proc.returncode != 0
    assert "`text` must be the JSON of a WordVocabulary" in proc.stderr
    assert not (tmp_path / "out").exists()
