"""Export: string SavedModels, forward passes, ONNX, .keras across backends."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import zoo_cases as zc
from kerattn import load_model, zoo
from kerattn.datasets import (
    SymbolVocabulary,
    TextCodec,
    WordPieceVocabulary,
    WordVocabulary,
    vocabulary_from_json,
)
from kerattn.decoding import Captioner, Translator
from kerattn.export import export_model, input_signature_like

tf = pytest.importorskip(
    "tensorflow", reason="SavedModels are TensorFlow's format: install the "
    "tensorflow extra (CI does)")
BACKEND = keras.backend.backend()
BACKENDS = ("tensorflow", "jax", "torch")

TEXTS = [
    "Cannot open %s: permission denied", "open the file", "", "   ",
    "  leading and trailing  ", "tabs\tand\nnew lines", "100% done (%d/%d)",
    "%1$s of %2$s", "value: %-10.3f", "don't stop", "naïve café über straße",
    "Ünïcödé  WORDS_with_under_scores 42", "a\u00a0b\u2003c", "«quoted» — dash",
    "x" * 30 + " y", "file.txt;rm -rf /", "日本語のテキスト", "emoji 🙂 ok",
]


def _fuzz(seed, count=200):
    rng = np.random.default_rng(seed)
    pool = list("abcXYZ019_%$.-+ #:;'\"()é日\t\n\u00a0") + ["%s", "%d", "%5.2f",
                                                           "%1$s", "  "]
    return ["".join(rng.choice(pool, rng.integers(0, 12))) for _ in range(count)]


def _padded(rows, length, pad, unk):
    out = np.full((len(rows), length), pad, "int32")
    for i, row in enumerate(rows):
        row = (row or [unk])[:length]
        out[i, : len(row)] = row
    return out


def _random_ids(vocab, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, len(vocab.itos) + 3, (64, 9)).astype("int32")
    ids[::3, 4] = vocab.eos_id
    ids[1::4, 0] = vocab.bos_id
    ids[2::5, 2] = vocab.pad_id
    ids[3::7, 1] = vocab.unk_id   # shown as a word of its own by both
    return ids


def _assert_codec_matches(vocab, texts, length, seed):
    """TextCodec's encode and decode equal the Python vocabulary's."""
    codec = TextCodec(vocab)
    got = codec.encode(tf.constant(texts), length).numpy()
    rows = vocab.encode_batch(texts)
    if getattr(vocab, "end_marker", False):   # truncated before the marker
        rows = [row[:-1][:length - 1] + row[-1:] for row in rows]
    want = _padded(rows, length, vocab.pad_id, vocab.unk_id)
    assert len(got) == len(want) == len(texts) > 0
    for text, g, w in zip(texts, got, want):
        assert g.tolist() == w.tolist(), repr(text)
    ids = _random_ids(vocab, seed)
    decoded = [s.decode() for s in codec.decode(tf.constant(ids)).numpy()]
    assert decoded == [vocab.decode(row) for row in ids]


@pytest.mark.parametrize("lowercase", [False, True])
def test_text_codec_matches_word_vocabulary(lowercase):
    texts = TEXTS + _fuzz(0)
    vocab = WordVocabulary.build(texts[::2] + ["Open", "FILE"], lowercase=lowercase)
    _assert_codec_matches(vocab, texts, 16, seed=1)


@pytest.mark.parametrize("lowercase,end_marker", [(False, False), (True, False),
                                                  (False, True)])
def test_text_codec_matches_symbol_vocabularies(lowercase, end_marker):
    """Letters (each character a symbol; EOS last where they mark the end)
    and phonemes (symbols between whitespace, any run of it), unknown
    symbols and empty texts included."""
    words = ["Read", "live", "o'neil", "café", "", "xyz", "ab cd", "日本",
             "deliveries"]   # longer than the 8 ids: truncated
    letters = SymbolVocabulary.build(words[:4], separator="", lowercase=lowercase,
                                     end_marker=end_marker)
    _assert_codec_matches(letters, words, 8, seed=3)
    phonemes = ["R IY D", "  L IH\tV ", "", "K AE F EY", "AH ZH\u00a0Q", "OW"]
    vocab = SymbolVocabulary.build(phonemes[:3], lowercase=lowercase)
    _assert_codec_matches(vocab, phonemes, 6, seed=4)


def test_text_codec_matches_wordpiece_vocabulary():
    texts = TEXTS + _fuzz(1, 100)
    vocab = WordPieceVocabulary.build(texts[::2] * 3, vocabulary_size=60)
    _assert_codec_matches(vocab, texts, 24, seed=2)
    assert vocabulary_from_json(vocab.to_json()).itos == vocab.itos


# --- Translator.export: strings in, strings out, in a fresh interpreter ------

SOURCES = ["open the file", "cannot open file %s", "permission denied",
           "the file is not a directory", "", "Open  the FILE: denied",
           "unknown words everywhere", "open %s"]
TARGETS = ["ouvrir le fichier", "impossible d'ouvrir le fichier %s",
           "permission refusée", "le fichier n'est pas un répertoire"]

# The serving process: tensorflow and tensorflow-text only; kerattn is made
# unimportable (keras stays: tensorflow-text imports it).
SERVE = """
import json, sys
sys.modules["kerattn"] = None
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the WordPiece ops)
jobs = json.loads(sys.argv[1])
out = {}
for name, (path, texts) in jobs.items():
    model = tf.saved_model.load(path)
    result = model.serve(tf.constant(texts, tf.string))
    by_signature = model.signatures["serve"](text=tf.constant(texts[:2], tf.string))
    empty = model.serve(tf.constant([], tf.string))["translation"]
    out[name] = {
        "translations": [t.decode() for t in result["translation"].numpy()],
        "signature": [t.decode() for t in by_signature["translation"].numpy()],
        "empty": int(empty.shape[0]),
        "metadata": json.loads(model.metadata.numpy().decode()),
    }
print("RESULT" + json.dumps(out))
"""

EXPORTS = {
    # name -> (builder, vocabulary class, export options)
    "bahdanau_greedy": (lambda s, t: zoo.bahdanau_nmt(
        s, t, embedding_dim=16, units=24, alignment_units=12, maxout_units=10),
        "word", {}),
    "transformer_beam": (lambda s, t: zoo.transformer_nmt(
        s, t, num_layers=2, d_model=16, num_heads=2, ff_dim=32),
        "wordpiece", {"beam_width": 3, "length_penalty": 0.6}),
    # See et al.'s attention baseline: one vocabulary, extended ids read
    # (an OOV is UNK whichever id it has), none written.
    "pointer_generator_baseline": (lambda s, t: zoo.pointer_generator(
        s, preset="tiny", copy=False), "shared", {}),
    # Grapheme-to-phoneme: letters in, phonemes out, a hard monotonic
    # attention over a one-way encoder that reads a letter ahead.
    "g2p_beam": (lambda s, t: zoo.luong_nmt(
        s, t, preset="g2p-streaming", units=8, embedding_dim=6,
        attention="hard-monotonic", lookahead=1), "symbols", {"beam_width": 2}),
    # ...and a wait-k decoder over letters that end in EOS (the tokeniser in
    # the graph appends it as the vocabulary does).
    "g2p_wait_marked": (lambda s, t: zoo.luong_nmt(
        s, t, preset="g2p-streaming", units=8, embedding_dim=6,
        wait_k=2, wait_rate=1.2), "marked", {}),
}
WORDS = ["read", "phoneme", "", "xyz", "live", "thought", "readme", "oh"]
PRONUNCIATIONS = ["R IY D", "L IH V", "F OW N IY M", "TH AO T"]


@pytest.fixture(scope="module")
def exported_translators(tmp_path_factory):
    root = tmp_path_factory.mktemp("translators")
    jobs, want = {}, {}
    for name, (build, kind, options) in EXPORTS.items():
        if kind == "word":
            src, tgt = WordVocabulary.build(SOURCES[:4]), WordVocabulary.build(TARGETS)
        elif kind == "shared":
            src = tgt = WordVocabulary.build(SOURCES[:4] + TARGETS)
        elif kind in ("symbols", "marked"):
            src = SymbolVocabulary.build(WORDS[:2] + WORDS[4:6], separator="",
                                         end_marker=kind == "marked")
            tgt = SymbolVocabulary.build(PRONUNCIATIONS)
        else:
            src = WordPieceVocabulary.build(SOURCES[:4] * 4, vocabulary_size=40)
            tgt = WordPieceVocabulary.build(TARGETS * 4, vocabulary_size=40)
        keras.utils.set_random_seed(3)
        translator = Translator(build(len(src), len(tgt)), src, tgt, max_length=9)
        path = str(root / name)
        translator.export(path, batch_size=4, **options)  # 8 texts: 2 chunks
        texts = WORDS if kind in ("symbols", "marked") else SOURCES
        jobs[name] = (path, texts)
        want[name] = translator(texts, **options)
    return jobs, want


def test_translator_savedmodel_serves_strings_in_a_fresh_process(exported_translators):
    jobs, want = exported_translators
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-I", "-c", SERVE, json.dumps(jobs)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    line = [x for x in result.stdout.splitlines() if x.startswith("RESULT")][-1]
    served = json.loads(line[len("RESULT"):])
    for name in EXPORTS:
        assert served[name]["translations"] == want[name], name
        assert served[name]["signature"] == want[name][:2]
        assert served[name]["empty"] == 0
        assert served[name]["metadata"]["kind"] == "translator"


def test_translator_export_bad_arguments(tmp_path):
    src = WordVocabulary.build(SOURCES)
    translator = Translator(zoo.bahdanau_nmt(len(src), len(src), embedding_dim=4,
                                             units=4, alignment_units=4,
                                             maxout_units=2), src, src)
    for bad in ({"beam_width": 0}, {"batch_size": 1.5}, {"max_source_length": -1}):
        with pytest.raises(ValueError, match=f"`{next(iter(bad))}` must be"):
            translator.export(str(tmp_path / "x"), **bad)


def test_captioner_savedmodel_captions_images(tmp_path):
    vocab = WordVocabulary.build(["one two three", "four five six seven"])
    keras.utils.set_random_seed(0)
    model = zoo.show_attend_tell(len(vocab), **zc.SAT)
    captioner = Captioner(model, vocab, max_length=6)
    images = np.random.default_rng(0).uniform(0, 1, (5, 8, 20, 1)).astype("float32")
    path = captioner.export(str(tmp_path / "captioner"), batch_size=2)
    served = tf.saved_model.load(path)
    result = served.serve(tf.constant(images))
    got = [c.decode() for c in result["caption"].numpy()]
    assert got == captioner(images)
    beam_path = captioner.export(str(tmp_path / "beam"), beam_width=2)
    served_beam = tf.saved_model.load(beam_path)
    got = [c.decode() for c in served_beam.serve(tf.constant(images))["caption"].numpy()]
    assert got == captioner(images, beam_width=2)


# --- The forward pass of every zoo model -----------------------------------

# On torch each export is a TensorFlow subprocess over the .keras file (the
# same path for every model, and the .keras files of every model are tested
# across backends below): three models there, all of them elsewhere.
FORWARD = (sorted(zc.CASES) if BACKEND != "torch"
           else ["bahdanau_nmt", "han_classifier", "aoa_reader"])


@pytest.mark.parametrize("name", FORWARD)
def test_forward_savedmodel(name, tmp_path):
    """`export_model(format="tf_saved_model")`; torch goes through .keras."""
    model, x, _ = zc.build(name)
    want = zc.predict(model, x)
    path = export_model(model, str(tmp_path / name))
    served = tf.saved_model.load(path)
    got = served.serve({k: tf.constant(v) for k, v in x.items()}).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)
    if name == "han_classifier":  # ids in, class probabilities out
        np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-5)


# Which zoo models Keras' ONNX exporters convert on each backend, run in
# onnxruntime to 1e-4 (docs/export.md's table gives the failures and why).
ONNX_WORKS = {
    "tensorflow": ["luong_nmt", "luong_nmt_local_p", "seq2seq",
                   "transformer_nmt", "convs2s_nmt", "show_attend_tell_soft",
                   "han_classifier", "self_attentive_classifier", "aoa_reader"],
    "jax": ["luong_nmt", "cho_encoder_decoder"],
    "torch": ["bahdanau_nmt", "luong_nmt", "seq2seq", "cho_encoder_decoder",
              "transformer_nmt", "convs2s_nmt", "show_attend_tell_soft",
              "show_attend_tell_hard", "han_classifier", "self_attentive_classifier",
              "aoa_reader"],
}


@pytest.mark.parametrize("name", ONNX_WORKS[BACKEND])
def test_onnx_runs_in_onnxruntime(name, tmp_path):
    ort = pytest.importorskip("onnxruntime", reason="the onnx extra")
    model, x, _ = zc.build(name)
    want = zc.predict(model, x)
    path = str(tmp_path / f"{name}.onnx")
    kwargs = {} if BACKEND == "tensorflow" else {
        "input_signature": input_signature_like(x)}  # fixed shapes
    export_model(model, path, format="onnx", **kwargs)
    session = ort.InferenceSession(path)
    got = session.run(None, {i.name: x[i.name] for i in session.get_inputs()})[0]
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


def test_export_model_bad_format(tmp_path):
    model, _, _ = zc.build("han_classifier")
    with pytest.raises(ValueError, match="`format` must be"):
        export_model(model, str(tmp_path / "m"), format="tflite")


# --- .keras files across backends -------------------------------------------

@pytest.fixture(scope="session")
def keras_files(tmp_path_factory):
    """Every zoo case saved under each backend (written once per CI run).

    `tests/run_backends.py` shares one directory between its three pytest
    processes (KERATTN_SHARED_TEST_DIR): each writes its own backend's
    files as its run starts (tests/conftest.py), and waits here for the
    others' (`zoo_cases.ensure_saved`).
    """
    directory = os.environ.get("KERATTN_SHARED_TEST_DIR") or str(
        tmp_path_factory.mktemp("keras_files"))
    for backend in BACKENDS:
        zc.ensure_saved(directory, backend)
    return directory


# Another backend's files: a file saved and loaded under the same backend is
# each zoo test's `.keras` round trip, and `kerattn.load_model`'s doctest
# continues training from one (tests/test_docstrings.py). Each model is
# loaded from one of the two other backends, in turn: over the three
# backends' runs every model's file from every backend is loaded once
# elsewhere, and every (saved under, loaded under) pair is covered by about
# half of the models.
OTHER_BACKENDS = [b for b in BACKENDS if b != keras.backend.backend()]
CROSS_CASES = [(OTHER_BACKENDS[(i + BACKENDS.index(keras.backend.backend())) % 2], name)
               for i, name in enumerate(sorted(zc.CASES))]


@pytest.mark.parametrize("source,name", CROSS_CASES)
def test_keras_file_loads_and_trains_across_backends(keras_files, source, name):
    """Saved under `source`, loaded here: same outputs, and `fit` continues."""
    path, x, y, saved_output = zc.load_case(keras_files, source, name)
    model = load_model(path)  # safe_mode=True: no code runs while loading
    assert not any(isinstance(layer, keras.layers.Lambda)
                   for layer in model._flatten_layers())
    np.testing.assert_allclose(zc.predict(model, x), saved_output,
                               atol=1e-5, rtol=1e-5)
    assert int(model.optimizer.iterations) == 1  # the saved optimizer state
    before = [zc.to_numpy(v) for v in model.trainable_variables]
    history = model.fit(x, y, batch_size=zc.B, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert int(model.optimizer.iterations) == 3
    after = [zc.to_numpy(v) for v in model.trainable_variables]
    assert any(not np.allclose(a, b) for a, b in zip(after, before, strict=True))


def test_keras_file_loads_with_plain_keras_in_safe_mode(keras_files):
    """Without kerattn.load_model too: the layers are registered, no Lambda."""
    path, x, _, saved_output = zc.load_case(keras_files, BACKEND, "bahdanau_nmt")
    model = keras.saving.load_model(path, safe_mode=True, compile=False)
    np.testing.assert_allclose(zc.predict(model, x), saved_output, atol=1e-5)


def test_load_model_bad_input(tmp_path):
    with pytest.raises(ValueError, match="`filepath` must be a .keras file"):
        load_model(str(tmp_path / "model.h5"))
    with pytest.raises(ValueError, match="`filepath` does not exist"):
        load_model(str(tmp_path / "missing.keras"))
