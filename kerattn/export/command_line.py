"""The PyTorch route: a `.keras` file exported under TensorFlow, in a subprocess.

Keras cannot write a SavedModel from torch without torch_xla. The model is
saved as a `.keras` file, and `python -m kerattn.export KIND MODEL.keras OUT
--options OPTIONS.json` (`kerattn/export/__main__.py`) loads it under
`KERAS_BACKEND=tensorflow` and exports it there. `run_under_tensorflow` is
that call; it imports nothing of kerattn, so any module may use it.
"""

import json
import os
import subprocess
import sys
import tempfile


def run_under_tensorflow(kind, model, path, options):
    """Export `model` as `kind` ("translator", "captioner" or "model") at `path`.

    Args:
        kind: what the command line builds around the loaded model.
        model: the Keras model (saved to a temporary `.keras` file).
        path: the SavedModel directory to write.
        options: a JSON-able dict (vocabularies as `to_json()` strings,
            `beam_width`, `max_length`, ...) read by the command line.

    Returns:
        `path`.

    Raises:
        RuntimeError: with the subprocess' error output, when it fails.
    """
    with tempfile.TemporaryDirectory(prefix="kerattn_export_") as tmp:
        keras_path = os.path.join(tmp, "model.keras")
        model.save(keras_path)
        options_path = os.path.join(tmp, "options.json")
        with open(options_path, "w") as f:
            json.dump(options, f)
        env = dict(os.environ, KERAS_BACKEND="tensorflow")
        result = subprocess.run(
            [sys.executable, "-m", "kerattn.export", kind, keras_path,
             os.path.abspath(path), "--options", options_path],
            env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(
                f"Exporting under TensorFlow failed:\n{result.stderr[-3000:]}")
    return path
