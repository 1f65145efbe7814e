"""Export to TensorFlow SavedModel and ONNX, from any backend.

Three things a user wants from a trained kerattn model, each one call:

- `export_translator(translator, path)`: a SavedModel whose `serve`
  signature takes a batch of `tf.string` sentences and returns a batch of
  `tf.string` translations. Tokenisation (the vocabulary as a lookup table,
  `WordVocabulary`'s splitting as RE2 regexes, WordPiece through
  tensorflow-text), the encoder, greedy or beam search, and detokenisation
  all run inside the graph. It loads with `tf.saved_model.load` in a
  process that has tensorflow and tensorflow-text only. Also
  `Translator.export(path)`.
- `export_captioner(captioner, path)`: images in, caption strings out. Also
  `Captioner.export(path)`.
- `export_model(model, path, format="tf_saved_model" | "onnx")`: the
  forward pass of any zoo model (HAN and AoA: token ids in, probabilities
  out), through Keras' own `model.export`.

How each backend gets there:

- TensorFlow: the decode function (`keras.ops` code, `while_loop`s) is traced
  by Keras' `ExportArchive` into a `tf.function`.
- JAX: the same `ExportArchive` converts it with `jax2tf` (StableHLO inside
  an `XlaCallModule` op). A JAX newer than the installed TensorFlow writes
  StableHLO that TensorFlow cannot read (today: jax 0.10 writes 1.15, TF
  2.21 reads up to 1.13.7); `stablehlo_for_tensorflow()` lowers the target
  version to the one the installed TensorFlow reports. Every export here
  runs inside it; wrap a plain `model.export` in it yourself.
- PyTorch: Keras cannot write a SavedModel from torch without torch_xla.
  The model goes through its `.keras` file, loaded under TensorFlow in a
  subprocess (`python -m kerattn.export ...`): the functions above do this
  for you when the backend is torch.

The decode function is exported at fixed shapes, `(batch_size,
max_source_length)` ids in, `(batch_size, max_length)` ids out, so that
XLA-compiled loops and jax2tf need no shape polymorphism; the string
signature splits any batch into chunks of `batch_size` (a `tf.map_fn`) and
truncates sources to `max_source_length` tokens.

This module imports tensorflow (lazily): it is the export path, not a layer.
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile

import keras
import numpy as np

from kerattn.datasets.vocabulary import WordVocabulary

__all__ = ["export_translator", "export_captioner", "export_model", "input_signature_like",
           "stablehlo_for_tensorflow", "TextCodec", "vocabulary_from_json"]

# --- WordVocabulary.tokenize in RE2 (TensorFlow's regex engine) -------------
# Python's `re` is Unicode-aware: \w is letters, numbers and "_", \s is
# str.isspace(), \d is Nd. RE2's classes are ASCII, so they are spelled out.
_SPACE = r"\t\n\x{0b}\x{0c}\r\x{1c}-\x{1f}\x{85}\p{Z}"
_WORD = r"\pL\pN_"
TOKEN_RE2 = (r"%(?:\p{Nd}+\$)?[-+ #0]*\p{Nd}*(?:\.\p{Nd}+)?[a-zA-Z]"
             rf"|[{_WORD}]+|[^{_WORD}{_SPACE}]")
_MARK = "\x01"  # inserted before each token, then split on


# --- StableHLO that the installed TensorFlow can read (JAX only) ------------

def _tensorflow_stablehlo_version():
    try:
        from tensorflow.compiler.mlir.stablehlo import stablehlo
    except ImportError:  # pragma: no cover - older or newer TensorFlow
        return None
    return stablehlo.get_current_version()


def _version_tuple(text):
    return tuple(int(p) for p in str(text).split("."))


@contextlib.contextmanager
def stablehlo_for_tensorflow():
    """Make JAX serialize StableHLO the installed TensorFlow can run.

    jax2tf (used by `model.export` on the JAX backend) writes StableHLO for
    consumers at most four weeks older than JAX. When TensorFlow is older
    than that, loading the SavedModel fails with "failed to deserialize
    portable artifact". Inside this context, JAX targets
    `min(its own target, TensorFlow's StableHLO version)`. A no-op on other
    backends, or when either side lacks the version API.

    Args:
        None; a context manager (`with stablehlo_for_tensorflow(): ...`).

    Example:

    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> with stablehlo_for_tensorflow():  # what jax2tf serializes in here loads in TF
    ...     outputs = model(np.ones((1, 4), "float32"))
    >>> tuple(outputs.shape)
    (1, 2)
    """
    if keras.backend.backend() != "jax":
        yield
        return
    consumer = _tensorflow_stablehlo_version()
    try:
        from jax._src.export import _export
    except ImportError:  # pragma: no cover - JAX moved its internals
        yield
        return
    hlo = _export.hlo
    original = hlo.get_version_from_compatibility_requirement

    class _Shim:
        def __getattr__(self, name):
            return getattr(hlo, name)

        @staticmethod
        def get_version_from_compatibility_requirement(requirement):
            version = original(requirement)
            if consumer and _version_tuple(consumer) < _version_tuple(version):
                return consumer
            return version

    _export.hlo = _Shim()
    try:
        yield
    finally:
        _export.hlo = hlo


# --- Text in TensorFlow ------------------------------------------------------

class TextCodec:
    """A vocabulary's encode and decode as TensorFlow string ops.

    Matches `WordVocabulary` (`encode_batch`, `decode`) and
    `WordPieceVocabulary` exactly on the texts the tests try, including
    printf specifiers, punctuation, runs of whitespace and non-ASCII
    letters. Built inside the `tf.Module` that is saved, so the lookup table
    travels with the SavedModel.

    Args:
        vocab: a `WordVocabulary` or `WordPieceVocabulary`.

    Example:

    >>> import tensorflow as tf
    >>> from kerattn.datasets import WordVocabulary
    >>> vocab = WordVocabulary.build(["Cannot open %s", "File not found"])
    >>> codec = TextCodec(vocab)
    >>> ids = codec.encode(tf.constant(["Cannot open %s"]), length=5)
    >>> ids.numpy().tolist() == [vocab.encode("Cannot open %s") + [0, 0]]
    True
    >>> codec.decode(ids).numpy()
    array([b'Cannot open %s'], dtype=object)
    """

    def __init__(self, vocab):
        import tensorflow as tf

        self.tf = tf
        self.vocab = vocab
        self.wordpiece = hasattr(vocab, "tokenizer")
        self.itos = tf.constant(list(vocab.itos))
        if self.wordpiece:
            import tensorflow_text as tf_text

            self.pieces = tf_text.FastWordpieceTokenizer(
                vocab=list(vocab.itos), suffix_indicator="##",
                unknown_token=vocab.UNK, no_pretokenization=True,
                support_detokenization=False)
        else:
            self.table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(list(vocab.itos)),
                    tf.range(len(vocab.itos), dtype=tf.int32)),
                default_value=vocab.unk_id)

    @property
    def resources(self):
        """The TensorFlow objects a saved `tf.Module` must track."""
        return [self.pieces if self.wordpiece else self.table]

    def words(self, texts):
        """`(N,)` strings -> `(N, None)` ragged words, "▁" marking a space."""
        tf = self.tf
        if self.vocab.lowercase:
            texts = tf.strings.lower(texts, encoding="utf-8")
        marked = tf.strings.regex_replace(texts, f"({TOKEN_RE2})", _MARK + r"\1")
        pieces = tf.strings.split(marked, sep=_MARK)     # (N, 1 + words)
        # Each piece after the first is a token and the spaces after it.
        tokens = tf.strings.regex_replace(pieces[:, 1:], f"[{_SPACE}]+$", "")
        spaced = tf.strings.regex_full_match(pieces[:, :-1], f"(?s).*[{_SPACE}]")
        marker = tf.where(spaced.flat_values, WordVocabulary.SPACE, "")
        return tokens.with_flat_values(
            tf.strings.join([marker, tokens.flat_values]))

    def encode_ragged(self, texts):
        """`(N,)` strings -> `(N, None)` ragged int32 ids (`encode_batch`)."""
        tf = self.tf
        words = self.words(texts)
        if self.wordpiece:
            ids = self.pieces.tokenize(words).merge_dims(1, 2)
            return tf.cast(ids, tf.int32)
        return tf.ragged.map_flat_values(self.table.lookup, words)

    def encode(self, texts, length):
        """`(N,)` strings -> `(N, length)` int32 ids, PAD after, truncated.

        A text without tokens becomes `[UNK]`, as in `Translator`.
        """
        tf = self.tf
        ids = self.encode_ragged(texts)
        dense = ids.to_tensor(default_value=self.vocab.pad_id,
                              shape=[None, length])
        empty = tf.equal(ids.row_lengths(), 0)[:, None]
        first = tf.equal(tf.range(length), 0)[None, :]
        return tf.where(empty & first, self.vocab.unk_id, dense)

    def decode(self, ids):
        """`(N, T)` ids -> `(N,)` strings: stops at EOS, skips PAD and BOS."""
        tf = self.tf
        v = self.vocab
        ids = tf.cast(ids, tf.int32)
        before_eos = tf.equal(tf.cumsum(tf.cast(tf.equal(ids, v.eos_id), tf.int32),
                                        axis=1), 0)
        keep = before_eos & tf.not_equal(ids, v.pad_id) & tf.not_equal(ids, v.bos_id)
        inside = (ids >= 0) & (ids < len(v.itos))
        words = tf.gather(self.itos, tf.where(inside, ids, v.unk_id))
        if self.wordpiece:
            words = tf.strings.regex_replace(words, "^##", "")
        text = tf.strings.reduce_join(tf.ragged.boolean_mask(words, keep), axis=1)
        text = tf.strings.regex_replace(text, WordVocabulary.SPACE, " ")
        return tf.strings.regex_replace(text, f"^[{_SPACE}]+|[{_SPACE}]+$", "")


# --- The fixed-shape decode function, through Keras' ExportArchive ----------

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


def _check_positive(**values):
    from kerattn.layers.attention_utils import check_positive_int

    for name, value in values.items():
        check_positive_int(name, value)


def _search_fn(model, vocab, beam_width, max_length, search_kwargs):
    from keras import ops

    from kerattn.decoding.generate import generate
    from kerattn.decoding.translator import strategy_of

    strategy, options = strategy_of(search_kwargs.pop("strategy", None),
                                    beam_width, search_kwargs)

    def decode(source):
        tokens = generate(model, source, max_length=max_length,
                          strategy=strategy, bos_id=vocab.bos_id,
                          eos_id=vocab.eos_id, pad_id=vocab.pad_id,
                          **options)["tokens"]
        return ops.cast(tokens, "int32")

    return decode


def export_translator(translator, path, beam_width=1, max_length=None,
                      max_source_length=64, batch_size=16, **search_kwargs):
    """Save a `Translator` as a SavedModel that translates strings.

    Args:
        translator: a `kerattn.decoding.Translator`.
        path: the SavedModel directory to write.
        beam_width: 1 is greedy decoding.
        max_length: output tokens; the translator's default if None.
        max_source_length: sources are truncated to this many tokens.
        batch_size: the compiled chunk; any batch size is served.
        **search_kwargs: as for `Translator.__call__` (`length_penalty`,
            `coverage_penalty`, `no_repeat_ngram_size`, `min_length`).

    The SavedModel has a `serve` function and signature (also
    `serving_default`): `text`, a `(N,)` `tf.string` tensor ->
    `{"translation": (N,) tf.string, "tokens": (N, max_length) int32}`.

    Returns:
        `path`.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> src = WordVocabulary.build(["Permission denied", "File not found"])
    >>> tgt = WordVocabulary.build(["Permission refusée", "Fichier introuvable"])
    >>> model = kerattn.zoo.bahdanau_nmt(len(src), len(tgt), embedding_dim=8,
    ...                                  units=8, alignment_units=8, maxout_units=4)
    >>> translator = kerattn.decoding.Translator(model, src, tgt, max_length=6)
    >>> export_translator(translator, "en_fr", beam_width=2, batch_size=2,
    ...                   max_source_length=8)
    'en_fr'
    >>> import tensorflow as tf, tensorflow_text  # in any process, no kerattn
    >>> loaded = tf.saved_model.load("en_fr")   # keep it: its variables live here
    >>> served = loaded.serve(tf.constant(["File not found"]))
    >>> served["translation"].shape, served["tokens"].shape
    (TensorShape([1]), TensorShape([1, 6]))
    """
    max_length = max_length or translator.max_length
    _check_positive(beam_width=beam_width, max_length=max_length,
                    max_source_length=max_source_length, batch_size=batch_size)
    if keras.backend.backend() == "torch":
        return _export_via_tensorflow("translator", translator.model, path, dict(
            source_vocab=translator.source_vocab.to_json(),
            target_vocab=translator.target_vocab.to_json(),
            beam_width=beam_width, max_length=max_length,
            max_source_length=max_source_length, batch_size=batch_size,
            search_kwargs=search_kwargs))
    decode = _search_fn(translator.model, translator.target_vocab,
                        beam_width, max_length, dict(search_kwargs))
    return _write_string_model(
        translator.model, decode, path,
        keras.InputSpec(shape=(batch_size, max_source_length), dtype="int32"),
        translator.source_vocab, translator.target_vocab, max_length,
        metadata=dict(kind="translator", beam_width=beam_width,
                      max_length=max_length, max_source_length=max_source_length,
                      batch_size=batch_size, search=search_kwargs))


def export_captioner(captioner, path, beam_width=1, max_length=None,
                     batch_size=16, **search_kwargs):
    """Save a `Captioner` as a SavedModel: images in, caption strings out.

    Args:
        captioner: a `kerattn.decoding.Captioner`.
        path: the SavedModel directory to write.
        beam_width: 1 is greedy decoding.
        max_length: caption tokens; the captioner's default if None.
        batch_size: the compiled chunk; any batch size is served.
        **search_kwargs: as for `Captioner.__call__`.

    The SavedModel's `serve` takes `images`, `(N, H, W, C)` float32 (or
    `(N, L, D)` features), and returns `{"caption": (N,) tf.string,
    "tokens": (N, max_length) int32}`.

    Returns:
        `path`.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> vocab = WordVocabulary.build(["one two", "three"])
    >>> model = kerattn.zoo.show_attend_tell(len(vocab), feature_shape=(6, 8),
    ...     embedding_dim=8, units=8, attention_units=8)
    >>> captioner = kerattn.decoding.Captioner(model, vocab, max_length=4)
    >>> export_captioner(captioner, "captioner", batch_size=2)
    'captioner'
    >>> import tensorflow as tf
    >>> features = tf.zeros((3, 6, 8))
    >>> loaded = tf.saved_model.load("captioner")
    >>> loaded.serve(features)["caption"].shape
    TensorShape([3])
    """
    max_length = max_length or captioner.max_length
    _check_positive(beam_width=beam_width, max_length=max_length,
                    batch_size=batch_size)
    if keras.backend.backend() == "torch":
        return _export_via_tensorflow("captioner", captioner.model, path, dict(
            vocab=captioner.vocab.to_json(), beam_width=beam_width,
            max_length=max_length, batch_size=batch_size,
            search_kwargs=search_kwargs))
    shape = tuple(captioner.model.encoder_input_shape)
    decode = _search_fn(captioner.model, captioner.vocab, beam_width,
                        max_length, dict(search_kwargs))
    return _write_string_model(
        captioner.model, decode, path,
        keras.InputSpec(shape=(batch_size,) + shape, dtype="float32"),
        None, captioner.vocab, max_length,
        metadata=dict(kind="captioner", beam_width=beam_width,
                      max_length=max_length, batch_size=batch_size,
                      search=search_kwargs))


def _write_string_model(model, decode, path, input_spec, source_vocab,
                        target_vocab, max_length, metadata):
    import tensorflow as tf

    batch_size = input_spec.shape[0]
    with tempfile.TemporaryDirectory(prefix="kerattn_core_") as tmp:
        _export_core(model, decode, input_spec, tmp)
        core = tf.saved_model.load(tmp)

    module = tf.Module()
    module.core = core
    module.target = TextCodec(target_vocab)
    module.target_resources = module.target.resources
    module.metadata = tf.Variable(json.dumps(metadata), trainable=False)
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


# --- The forward pass of any model --------------------------------------------

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
    if format not in ("tf_saved_model", "onnx"):
        raise ValueError('`format` must be "tf_saved_model" or "onnx"; got '
                         f"{format!r}.")
    if keras.backend.backend() == "torch" and format == "tf_saved_model":
        if kwargs:
            raise ValueError("From the torch backend, `export_model` takes no "
                             f"extra arguments; got {sorted(kwargs)}.")
        return _export_via_tensorflow("model", model, path, {})
    if format == "onnx" and not getattr(model, "_called", True):
        # Keras' JAX and torch ONNX exporters want a model called once.
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


# --- PyTorch: through the .keras file, under TensorFlow --------------------

def _export_via_tensorflow(kind, model, path, options):
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


def vocabulary_from_json(text):
    """A `WordVocabulary` or `WordPieceVocabulary` from its `to_json()`.

    Args:
        text: the JSON string of either vocabulary's `to_json()`.

    Returns:
        The vocabulary, of the class that wrote it.

    Example:

    >>> from kerattn.datasets import WordVocabulary
    >>> vocab = WordVocabulary.build(["Permission denied"])
    >>> vocabulary_from_json(vocab.to_json()).itos == vocab.itos
    True
    """
    from kerattn.datasets import WordPieceVocabulary, WordVocabulary

    data = json.loads(text)
    if "wordpiece" in data:
        return WordPieceVocabulary.from_json(text)
    if "tokens" in data:
        return WordVocabulary.from_json(text)
    raise ValueError("`text` must be a WordVocabulary or WordPieceVocabulary "
                     f"JSON; got keys {sorted(data)}.")


def main(argv=None):
    """`python -m kerattn.export {translator,captioner,model} MODEL.keras OUT`."""
    parser = argparse.ArgumentParser(
        description="Export a kerattn .keras file (saved under any backend) "
                    "as a TensorFlow SavedModel. Run with KERAS_BACKEND=tensorflow.")
    parser.add_argument("kind", choices=["translator", "captioner", "model"])
    parser.add_argument("model", help="the .keras file")
    parser.add_argument("output", help="the SavedModel directory to write")
    parser.add_argument("--options", help="JSON file: vocabularies as "
                        "to_json() strings, beam_width, max_length, ...")
    parser.add_argument("--source-vocab", help="JSON file (translator)")
    parser.add_argument("--target-vocab", help="JSON file (translator, captioner)")
    parser.add_argument("--beam-width", type=int)
    parser.add_argument("--max-length", type=int)
    args = parser.parse_args(argv)
    if keras.backend.backend() == "torch":
        parser.error("run under KERAS_BACKEND=tensorflow (or jax)")

    options = {}
    if args.options:
        with open(args.options) as f:
            options = json.load(f)
    for key, file in (("source_vocab", args.source_vocab),
                      ("target_vocab", args.target_vocab)):
        if file:
            with open(file) as f:
                options[key if args.kind == "translator" else "vocab"] = f.read()
    for key in ("beam_width", "max_length"):
        if getattr(args, key) is not None:
            options[key] = getattr(args, key)

    from kerattn.saving import load_model

    model = load_model(args.model, compile=False)
    search_kwargs = options.pop("search_kwargs", {})
    if args.kind == "translator":
        from kerattn.decoding import Translator

        translator = Translator(model, vocabulary_from_json(options.pop("source_vocab")),
                                vocabulary_from_json(options.pop("target_vocab")))
        export_translator(translator, args.output, **options, **search_kwargs)
    elif args.kind == "captioner":
        from kerattn.decoding import Captioner

        captioner = Captioner(model, vocabulary_from_json(options.pop("vocab")))
        export_captioner(captioner, args.output, **options, **search_kwargs)
    else:
        export_model(model, args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
