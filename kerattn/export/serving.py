"""The serving export: a decode function between strings (or images) and strings.

`export_serving(model, decode, path, ...)` writes a TensorFlow SavedModel
whose `serve` signature takes a batch of `tf.string` sentences (or images)
and returns the decoded `tf.string` texts. It knows no Translator, no
Captioner and no search: it receives

- `decode`, a `keras.ops` function of the model's layers from fixed-shape
  inputs `(batch_size, ...)` to int32 tokens `(batch_size, max_length)`
  (`Translator.export` and `Captioner.export` build it with
  `kerattn.decoding.decode_function`), and
- the vocabularies, which become `kerattn.datasets.TextCodec`s in the graph.

How each backend gets there: on TensorFlow the decode function is traced by
Keras' `ExportArchive` into a `tf.function`; on JAX the same archive
converts it with jax2tf, inside `stablehlo_for_tensorflow()`. PyTorch cannot
write a SavedModel without torch_xla: the codecs' `export` methods send the
model through its `.keras` file to a TensorFlow subprocess
(`kerattn.export.command_line.run_under_tensorflow`).

The decode function is exported at fixed shapes so that XLA-compiled loops
and jax2tf need no shape polymorphism; the string signature splits any batch
into chunks of `batch_size` (a `tf.map_fn`) and truncates sources to the
exported length.
"""

import json
import tempfile

import keras

from kerattn import checks
from kerattn.export.stablehlo import stablehlo_for_tensorflow


def _export_core(model, fn, input_spec, path):
    """Write `fn` (keras.ops code over `model`'s layers) as a SavedModel."""
    archive = keras.export.ExportArchive()
    archive.track(model)
    with stablehlo_for_tensorflow():
        kwargs = ({"jax2tf_kwargs": {"with_gradient": False}}
                  if keras.backend.backend() == "jax" else {})
        archive.add_endpoint("decode", fn, input_signature=[input_spec], **kwargs)
        archive.write_out(path, verbose=False)


def _chunked(tf, core, x, batch_size, out_length, pad_value):
    """Run the fixed-batch `core` over any number of rows of `x`."""
    n = tf.shape(x)[0]
    padded = (n + batch_size - 1) // batch_size * batch_size
    paddings = [[0, padded - n]] + [[0, 0]] * (len(x.shape) - 1)
    x = tf.pad(x, paddings, constant_values=pad_value)
    chunks = tf.reshape(x, tf.concat([[padded // batch_size, batch_size],
                                      tf.shape(x)[1:]], 0))
    out = tf.map_fn(core, chunks, fn_output_signature=tf.TensorSpec(
        (batch_size, out_length), tf.int32))
    return tf.reshape(out, [padded, out_length])[:n]


def export_serving(model, decode, path, input_spec, target_vocab, max_length,
                   source_vocab=None, metadata=None):
    """Write `decode` with text in and out as a TensorFlow SavedModel.

    Args:
        model: the Keras model whose variables `decode` reads (tracked by
            the archive).
        decode: a function of one fixed-shape tensor (`input_spec`) to int32
            tokens `(batch_size, max_length)`, written with `keras.ops`.
        path: the SavedModel directory to write.
        input_spec: a `keras.InputSpec` with a fixed shape: `(batch_size,
            max_source_length)` int32 ids for text, `(batch_size, ...)`
            float32 for images.
        target_vocab: the output vocabulary (`WordVocabulary` or
            `WordPieceVocabulary`).
        max_length: the tokens `decode` writes per row.
        source_vocab: the input vocabulary; None means images in.
        metadata: a JSON-able dict kept in the SavedModel (`metadata`).

    The SavedModel's `serve` (also `serving_default`) takes `text`, `(N,)`
    `tf.string` -> `{"translation", "tokens"}`, or `images` -> `{"caption",
    "tokens"}`, for any `N`.

    Returns:
        `path`.
    """
    import tensorflow as tf

    from kerattn.datasets.text_codec import TextCodec

    if keras.backend.backend() == "torch":
        raise RuntimeError("export_serving traces `decode` under TensorFlow or "
                           "JAX; from torch, go through the .keras file "
                           "(run_under_tensorflow, as Translator.export does).")
    checks.positive_int("max_length", max_length)
    batch_size = input_spec.shape[0]
    with tempfile.TemporaryDirectory(prefix="kerattn_core_") as tmp:
        _export_core(model, decode, input_spec, tmp)
        core = tf.saved_model.load(tmp)

    module = tf.Module()
    module.core = core
    module.target = TextCodec(target_vocab)
    module.target_resources = module.target.resources
    module.metadata = tf.Variable(json.dumps(metadata or {}), trainable=False)
    if source_vocab is not None:  # strings in
        module.source = TextCodec(source_vocab)
        module.source_resources = module.source.resources
        length = input_spec.shape[1]

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def serve(text):
            ids = module.source.encode(text, length)
            tokens = _chunked(tf, module.core.decode, ids, batch_size,
                              max_length, source_vocab.pad_id)
            return {"translation": module.target.decode(tokens), "tokens": tokens}
    else:  # images in
        @tf.function(input_signature=[tf.TensorSpec(
            (None,) + tuple(input_spec.shape[1:]), tf.float32, name="images")])
        def serve(images):
            tokens = _chunked(tf, module.core.decode, images, batch_size,
                              max_length, 0.0)
            return {"caption": module.target.decode(tokens), "tokens": tokens}

    module.serve = serve
    tf.saved_model.save(
        module, path, signatures={"serve": serve, "serving_default": serve},
        options=tf.saved_model.SaveOptions(experimental_custom_gradients=False))
    return path
