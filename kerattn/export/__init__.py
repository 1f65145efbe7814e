"""Export to TensorFlow SavedModel and ONNX, from any backend.

Three things a user wants from a trained kerattn model, each one call:

- `translator.export(path)` (a `kerattn.decoding.Translator`): a SavedModel
  whose `serve` signature takes a batch of `tf.string` sentences and returns
  a batch of `tf.string` translations. Tokenisation (`TextCodec`), the
  encoder, greedy or beam search, and detokenisation all run inside the
  graph. It loads with `tf.saved_model.load` in a process that has
  tensorflow and tensorflow-text only.
- `captioner.export(path)`: images in, caption strings out.
- `export_model(model, path, format="tf_saved_model" | "onnx")`: the
  forward pass of any zoo model (HAN and AoA: token ids in, probabilities
  out), through Keras' own `model.export`.

The package is split by job, and knows nothing of `Translator` or
`Captioner` (as `keras.export` knows no model class: `Model.export` calls
into it):

- `serving.export_serving(model, decode, path, ...)`: a fixed-shape decode
  function and the vocabularies in, the string SavedModel out. The codecs'
  `export` methods build the decode function
  (`kerattn.decoding.decode_function`) and call it.
- `model.export_model`, `model.input_signature_like`: forward passes.
- `stablehlo.stablehlo_for_tensorflow`: the JAX -> TensorFlow StableHLO
  version patch every export runs in.
- `command_line.run_under_tensorflow` and `python -m kerattn.export`
  (`__main__.py`): PyTorch's route, through the `.keras` file under
  TensorFlow in a subprocess. `__main__` is the only module here that
  imports the codecs; nothing imports it.

`TextCodec` and `vocabulary_from_json` live in `kerattn.datasets`, beside
the vocabularies they mirror; `kerattn.export.TextCodec` and
`kerattn.export.vocabulary_from_json` are deprecated aliases of them.
"""

import warnings

from kerattn.export.model import export_model, input_signature_like
from kerattn.export.serving import export_serving  # noqa: F401
from kerattn.export.stablehlo import stablehlo_for_tensorflow

__all__ = ["export_model", "input_signature_like", "stablehlo_for_tensorflow"]

_MOVED_TO_DATASETS = ("TextCodec", "vocabulary_from_json")


def __getattr__(name):
    if name in _MOVED_TO_DATASETS:
        warnings.warn(f"kerattn.export.{name} is deprecated: use "
                      f"kerattn.datasets.{name}.", DeprecationWarning,
                      stacklevel=2)
        from kerattn.datasets import text_codec
        return getattr(text_codec, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
