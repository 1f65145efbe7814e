"""The forward pass of any model, as a SavedModel or ONNX, from every backend.

`export_model(model, path, format)` is Keras' own `model.export`, with what
kerattn adds around it: on JAX it runs inside `stablehlo_for_tensorflow()`;
on PyTorch a SavedModel is written from the model's `.keras` file under
TensorFlow in a subprocess (`run_under_tensorflow`), and ONNX by Keras'
torch exporter. `input_signature_like(x)` fixes the shapes to export at.
"""

import keras
import numpy as np

from kerattn import checks
from kerattn.export.command_line import run_under_tensorflow
from kerattn.export.stablehlo import stablehlo_for_tensorflow

__all__ = ["export_model", "input_signature_like"]


def export_model(model, path, format="tf_saved_model", **kwargs):
    """`model.export(path, format)` that works from every backend.

    Args:
        model: a Keras model (any zoo model).
        path: the SavedModel directory or `.onnx` file to write.
        format: "tf_saved_model" or "onnx".
        **kwargs: passed to `model.export` (e.g. `input_signature`).

    On JAX, runs inside `stablehlo_for_tensorflow()`. On PyTorch, a
    SavedModel is written from the model's `.keras` file loaded under
    TensorFlow in a subprocess (Keras needs torch_xla for it otherwise); ONNX
    is written by Keras' torch exporter (`torch.onnx`).

    Returns:
        `path`.

    Example:

    >>> model = kerattn.zoo.han_classifier(50, 3, embedding_dim=8, word_units=4,
    ...     sentence_units=4, attention_units=4, max_sentences=2, max_words=5)
    >>> export_model(model, "han")
    'han'
    >>> import tensorflow as tf
    >>> ids = tf.ones((1, 2, 5), tf.int32)
    >>> loaded = tf.saved_model.load("han")
    >>> loaded.serve({"document_ids": ids}).shape
    TensorShape([1, 3])
    """
    checks.one_of("format", format, ("tf_saved_model", "onnx"))
    if keras.backend.backend() == "torch" and format == "tf_saved_model":
        checks.require(not kwargs, "kwargs", "empty from the torch backend "
                       "(the SavedModel is written from the .keras file)",
                       sorted(kwargs))
        return run_under_tensorflow("model", model, path, {})
    if format == "onnx":
        # Keras' ONNX exporter refuses a model never called (it reads the
        # private `Layer._called`); one call on zeros is cheap either way.
        model(_zeros_like_inputs(model, kwargs.get("input_signature")))
    with stablehlo_for_tensorflow():
        model.export(path, format=format, verbose=False, **kwargs)
    return path


def _zeros_like_inputs(model, signature=None):
    specs = signature[0] if signature else model.input
    if isinstance(specs, (list, tuple)) and len(specs) == 1 and isinstance(
            specs[0], dict):
        specs = specs[0]
    return keras.tree.map_structure(
        lambda s: np.zeros([2 if d is None else d for d in s.shape], s.dtype),
        specs)


def input_signature_like(inputs):
    """Fixed-shape `keras.InputSpec`s for a dict of example arrays.

    Keras' torch ONNX exporter fixes every unknown dimension to 1; export at
    the shapes you will serve instead:
    `export_model(model, "m.onnx", "onnx", input_signature=input_signature_like(x))`.

    Args:
        inputs: a dict of arrays, by input name.

    Returns:
        A one-element list holding the dict of `keras.InputSpec`s (the
        form `model.export(input_signature=...)` takes for dict inputs).

    Example:

    >>> x = {"source_ids": np.ones((4, 12), "int32")}
    >>> spec = input_signature_like(x)[0]["source_ids"]
    >>> spec.shape, spec.dtype
    ((4, 12), 'int32')
    """
    return [{k: keras.InputSpec(shape=np.shape(v), dtype=str(np.asarray(v).dtype),
                                name=k)
             for k, v in inputs.items()}]
