"""Every zoo model at a tiny size, with inputs, targets and a loss.

Used by the export and cross-backend tests, and run as a script to write
each model's `.keras` file (compiled, trained one step) with its inputs and
outputs under the current backend:

    KERAS_BACKEND=torch python tests/zoo_cases.py OUT_DIR

`ensure_saved(directory, backend)` writes one backend's files once, however
many processes ask for them at once.
"""

import fcntl
import os
import subprocess
import sys

import keras
import numpy as np

from kerattn import zoo
from kerattn.losses import MaskedSparseCrossentropy

B = 4  # batch


def _translation(rng, vocab=30):
    src = rng.integers(4, vocab, (B, 7)).astype("int32")
    src[1, 4:] = 0
    tgt = rng.integers(4, vocab, (B, 6)).astype("int32")
    tgt[:, 0] = 2
    tgt[2, 3:] = 0
    y = np.concatenate([tgt[:, 1:], np.full((B, 1), 3, "int32")], 1) * (tgt > 0)
    return {"source_ids": src, "target_in_ids": tgt}, y


def _captioning(rng, hard=False):
    images = rng.uniform(0, 1, (B, 8, 20, 1)).astype("float32")
    caption_in = rng.integers(4, 12, (B, 5)).astype("int32")
    caption_in[:, 0] = 2
    caption_out = np.concatenate([caption_in[:, 1:], np.full((B, 1), 3, "int32")], 1)
    x = {"images": images, "caption_in_ids": caption_in}
    if hard:
        x["caption_out_ids"] = caption_out
    return x, caption_out


def _han(rng):
    docs = rng.integers(1, 40, (B, 3, 5)).astype("int32")
    docs[0, 2] = 0       # an empty sentence
    docs[1, :, 3:] = 0   # short sentences
    return {"document_ids": docs}, rng.integers(0, 3, (B,)).astype("int32")


def _token_ids(rng):
    ids = rng.integers(1, 40, (B, 6)).astype("int32")
    ids[0, 4:] = 0       # a short row first
    ids[2, :] = 0        # an empty row
    return {"token_ids": ids}, rng.integers(0, 3, (B,)).astype("int32")


def _aoa(rng):
    docs = rng.integers(4, 30, (B, 12)).astype("int32")
    docs[1, 9:] = 0
    candidates = docs[:, :3].copy()
    query = rng.integers(4, 30, (B, 5)).astype("int32")
    x = {"document_ids": docs, "query_ids": query, "candidate_ids": candidates}
    return x, np.zeros((B,), "int32")


SAT = dict(image_shape=(8, 20, 1), seed=1)

# name -> (build(**overrides), data(rng) -> (x, y), loss); `build(dropout=0.0)`
# gives the same model without dropout (tests/distributed_worker.py). Sizes
# are each model's "tiny" preset; an override names what a case exercises
# (two layers where state passes between layers, a local window).
CASES = {
    "bahdanau_nmt": (lambda **kw: zoo.bahdanau_nmt(30, 30, preset="tiny", **kw),
                     _translation, "seq"),
    "luong_nmt": (lambda **kw: zoo.luong_nmt(30, 30, preset="tiny", num_layers=2,
                                             **kw), _translation, "seq"),
    "luong_nmt_local_p": (lambda **kw: zoo.luong_nmt(
        30, 30, preset="tiny", attention="local-p", window=2, **kw),
        _translation, "seq"),
    "seq2seq": (lambda **kw: zoo.seq2seq(30, 30, preset="tiny", num_layers=2, **kw),
                _translation, "seq"),
    "cho_encoder_decoder": (lambda **kw: zoo.cho_encoder_decoder(
        30, 30, preset="tiny", **kw), _translation, "seq"),
    "transformer_nmt": (lambda **kw: zoo.transformer_nmt(
        30, 30, preset="tiny", num_layers=2, **kw), _translation, "seq"),
    "convs2s_nmt": (lambda **kw: zoo.convs2s_nmt(
        30, 30, preset="tiny", encoder_layers=2, decoder_layers=2, **kw),
        _translation, "seq"),
    "show_attend_tell_soft": (lambda **kw: zoo.show_attend_tell(
        12, preset="tiny", **SAT, **kw), _captioning, "seq"),
    "show_attend_tell_hard": (lambda **kw: zoo.show_attend_tell(
        12, attention="hard", preset="tiny", **SAT, **kw),
        lambda rng: _captioning(rng, hard=True), "seq"),
    "han_classifier": (lambda **kw: zoo.han_classifier(40, 3, preset="tiny", **kw),
                       _han, "probabilities"),
    "self_attentive_classifier": (lambda **kw: zoo.self_attentive_classifier(
        40, 3, preset="tiny", **kw), _token_ids, "probabilities"),
    "aoa_reader": (lambda **kw: zoo.aoa_reader(30, preset="tiny", **kw),
                   _aoa, "pointer"),
}


def loss_for(kind):
    if kind == "seq":
        return MaskedSparseCrossentropy()
    if kind == "pointer":
        return MaskedSparseCrossentropy(pad_id=-1, from_logits=False)
    return keras.losses.SparseCategoricalCrossentropy()


def build(name, seed=0):
    """`(model compiled with Adam, x, y)` for the named case."""
    keras.utils.set_random_seed(seed)
    make, data, kind = CASES[name]
    model = make()
    model.compile(keras.optimizers.Adam(1e-3), loss_for(kind))
    x, y = data(np.random.default_rng(seed))
    return model, x, y


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)


def predict(model, x):
    return to_numpy(model.predict(x, batch_size=B, verbose=0))


def save_all(directory):
    """Each case trained one step, then `<name>.keras` and `<name>.npz`."""
    backend = keras.backend.backend()
    os.makedirs(directory, exist_ok=True)
    for name in CASES:
        model, x, y = build(name)
        # One step on TensorFlow costs more to trace than to run eagerly.
        # Set after `compile`, so the saved compile config is unchanged.
        model.run_eagerly = backend == "tensorflow"
        model.fit(x, y, batch_size=B, epochs=1, verbose=0)
        model.save(os.path.join(directory, f"{backend}-{name}.keras"))
        np.savez(os.path.join(directory, f"{backend}-{name}.npz"),
                 output=predict(model, x), y=y,
                 **{f"x_{k}": v for k, v in x.items()})


def ensure_saved(directory, backend):
    """`backend`'s files in `directory`, written once (a lock per backend).

    The process running `backend` writes them itself; any other writes them
    in a fresh interpreter of that backend. `tests/run_backends.py` shares
    one directory between its three processes, and each writes its own
    backend's files at the start of its run (tests/conftest.py), so the
    cost is the same in every run and split evenly; a process that needs
    another's files first waits for them (or writes them, when that backend
    is not in the run).
    """
    os.makedirs(directory, exist_ok=True)
    done = os.path.join(directory, f"{backend}.done")
    with open(os.path.join(directory, f"{backend}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.path.exists(done):
                return
            if backend == keras.backend.backend():
                save_all(directory)
            else:
                here = os.path.dirname(os.path.abspath(__file__))
                env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=(
                    os.path.dirname(here) + os.pathsep + os.environ.get("PYTHONPATH", "")))
                result = subprocess.run([sys.executable, os.path.abspath(__file__), directory],
                                        env=env, capture_output=True, text=True, timeout=900)
                assert result.returncode == 0, result.stderr[-3000:]
            open(done, "w").close()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def load_case(directory, backend, name):
    data = np.load(os.path.join(directory, f"{backend}-{name}.npz"))
    x = {k[2:]: data[k] for k in data.files if k.startswith("x_")}
    return os.path.join(directory, f"{backend}-{name}.keras"), x, data["y"], data["output"]


if __name__ == "__main__":
    save_all(sys.argv[1])
