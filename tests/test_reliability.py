"""Reliability: mixed precision, resume, determinism and long inputs.

- every zoo model trains 2 steps under `mixed_float16` on every backend,
  and under `mixed_bfloat16` on one backend in turn, with a finite loss and
  finite, changed weights;
- `model.fit` interrupted mid-epoch and resumed with Keras'
  `BackupAndRestore` ends on the weights of an uninterrupted seeded run;
  a process SIGKILLed while writing a backup leaves the previous one
  loadable; a process other than the chief restores and writes nothing;
  the resume keeps early stopping's, the learning-rate decay's and the
  time budget's state, and a paused training goes on to the same weights;
- the same seed gives the same weights after a few steps (dropout and hard
  attention sampling included);
- translation decoding of 500-token sources, and HAN on documents of 200
  sentences x 100 words.
"""

import json
import os
import pickle
import random
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest

import zoo_cases
from kerattn import callbacks, decoding, distribute, environment, zoo
from kerattn.datasets import WordVocabulary

HERE = os.path.dirname(os.path.abspath(__file__))


def _weights(model):
    return [keras.ops.convert_to_numpy(v).astype("float64") for v in model.weights]


def _finite(values):
    return all(np.all(np.isfinite(v)) for v in values)


@pytest.fixture
def policy():
    """Set a global dtype policy for the test, restore float32 after."""
    def set_policy(name):
        keras.config.set_dtype_policy(name)

    yield set_policy
    keras.config.set_dtype_policy("float32")


# === Mixed precision ===

# mixed_float16 (loss scaling, the float16 range) for every model on every
# backend; mixed_bfloat16 for every model too, each on one backend in turn
# (model i on backend i mod 3), to keep CI within its time.
_BACKEND_INDEX = ("tensorflow", "jax", "torch").index(keras.backend.backend())
MIXED_CASES = [(name, "mixed_float16") for name in sorted(zoo_cases.CASES)] + [
    (name, "mixed_bfloat16") for i, name in enumerate(sorted(zoo_cases.CASES))
    if i % 3 == _BACKEND_INDEX]


@pytest.mark.parametrize("name,policy_name", MIXED_CASES)
def test_mixed_precision_trains(name, policy_name, policy):
    policy(policy_name)
    model, x, y = zoo_cases.build(name)
    compute = keras.backend.standardize_dtype(
        model.layers[-1].dtype_policy.compute_dtype)
    assert policy_name.endswith(compute) or compute == "float32"
    before = _weights(model)
    history = model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)), losses
    after = _weights(model)
    assert _finite(after)
    changed = any(not np.array_equal(a, b) for a, b in zip(before, after, strict=True))
    optimizer = model.optimizer
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        # mixed_float16: Keras scales the loss (from 2^15) and skips a step
        # whose scaled gradients overflow, halving the scale. A tiny model's
        # first steps can all be skipped: that is the scaling working.
        scale = float(keras.ops.convert_to_numpy(optimizer.dynamic_scale))
        assert changed or scale < optimizer.initial_scale
    else:
        assert changed
    # Variables stay float32 under a mixed policy (the point of "mixed").
    assert all(keras.backend.standardize_dtype(v.dtype) in ("float32", "int64", "int32",
                                                            "uint32")
               for v in model.weights)


# === Resume ===

class _Interrupt(keras.callbacks.Callback):
    """Raise once training reaches `(epoch, batch)`: a preempted job."""

    def __init__(self, epoch, batch):
        super().__init__()
        self.at, self.epoch = (epoch, batch), 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if (self.epoch, batch) == self.at:
            raise RuntimeError("interrupted")


RESUME = "bahdanau_nmt"


def _resume_model():
    """The tiny RNNsearch with dropout, so the RNG state matters too."""
    keras.utils.set_random_seed(7)
    model = zoo.bahdanau_nmt(30, 30, embedding_dim=8, units=12, alignment_units=8,
                             maxout_units=6, dropout=0.2)
    model.compile(keras.optimizers.Adam(1e-2), zoo_cases.loss_for("seq"))
    x, y = zoo_cases._translation(np.random.default_rng(0))
    x = {k: np.concatenate([v] * 2) for k, v in x.items()}  # 8 rows, 4 batches
    y = np.concatenate([y] * 2)
    model(x)  # BackupAndRestore needs a built model
    return model, x, y


def test_backup_and_restore_resumes_to_the_same_weights(tmp_path):
    """Interrupted at epoch 2, batch 2 of 4, then resumed in a new model.

    `kerattn.callbacks.BackupAndRestore` is Keras' callback plus the state
    of the random seed generators (Keras' own leaves dropout's RNG state
    out of its backup; without dropout it alone is exact too).
    `save_freq="epoch"`: Keras restores the epoch it saved, not the batch
    (`fit` has no initial step), so the resumed run redoes the interrupted
    epoch from its first batch on the weights, optimizer state and RNG
    state saved at the end of the previous epoch. That is exactly what the
    uninterrupted run did: the weights agree bit for bit. (With
    `save_freq=N` batches, the batches before the interruption would be
    trained twice.)
    """
    fit = dict(batch_size=2, epochs=3, shuffle=False, verbose=0)
    reference, x, y = _resume_model()
    reference.fit(x, y, **fit)

    backup = str(tmp_path / "backup")
    model, x, y = _resume_model()
    with pytest.raises(RuntimeError, match="interrupted"):
        model.fit(x, y, callbacks=[callbacks.BackupAndRestore(backup),
                                   _Interrupt(epoch=2, batch=2)], **fit)
    assert os.path.exists(os.path.join(backup, "training_metadata.json"))

    resumed, x, y = _resume_model()  # a fresh process would rebuild it so
    history = resumed.fit(x, y, callbacks=[callbacks.BackupAndRestore(backup)],
                          **fit)
    assert len(history.history["loss"]) == 1  # only the interrupted epoch ran
    for a, b in zip(_weights(reference), _weights(resumed), strict=True):
        np.testing.assert_array_equal(a, b)


# The child of the kill test: 3 epochs of a tiny model with seeded dropout,
# backed up each epoch; the second backup is killed (SIGKILL) halfway
# through writing its last file, random_state.npz. It records the state the
# first backup holds (weights, optimizer, seed state) in record.pkl.
_KILLED_CHILD = r"""
import os, pickle, signal, sys
import keras, numpy as np
sys.path.insert(0, sys.argv[3])
import test_reliability as t
from kerattn import callbacks

backup, record = sys.argv[1], sys.argv[2]
savez, calls = np.savez, []

def savez_then_die(file, *args, **kwargs):
    calls.append(file)
    savez(file, *args, **kwargs)
    if len(calls) == 2:
        with open(file, "r+b") as f:
            f.truncate(os.path.getsize(file) // 2)
        os.kill(os.getpid(), signal.SIGKILL)

np.savez = savez_then_die

class Record(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0:
            with open(record, "wb") as f:
                pickle.dump(t._full_state(self.model), f)

model, x, y = t._dropout_model()
model.fit(x, y, callbacks=[callbacks.BackupAndRestore(backup), Record()],
          **t._KILLED_FIT)
"""
_KILLED_FIT = dict(batch_size=4, epochs=3, shuffle=False, verbose=0)


def _dropout_model():
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4),
                              keras.layers.Dropout(0.5, seed=1), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(1e-2), "mse")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(8, 4)), rng.normal(size=(8, 1))
    model(x[:1])
    model.optimizer.build(model.trainable_variables)
    return model, x, y


def _full_state(model):
    return ([keras.ops.convert_to_numpy(v) for v in model.weights + model.optimizer.variables],
            [keras.ops.convert_to_numpy(v) for v in callbacks._seed_states(model)])


def test_a_kill_during_a_backup_leaves_the_previous_one_loadable(tmp_path):
    """SIGKILLed halfway through writing the second backup's last file.

    The backup directory still holds the first backup, whole: its weights
    and optimizer state, seed state and epoch are those at the end of epoch
    1 (from which a resume is exact: the test above); the temporary files
    the kill left (one truncated) do not stop the resume, which trains the
    2 epochs left and removes them.
    """
    backup, record = str(tmp_path / "backup"), str(tmp_path / "record.pkl")
    env = dict(os.environ, KERAS_BACKEND=keras.backend.backend(),
               PYTHONPATH=os.path.dirname(HERE) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    child = subprocess.run([sys.executable, "-c", _KILLED_CHILD, backup, record, HERE],
                           env=env, capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
    with open(record, "rb") as f:
        weights, seeds = pickle.load(f)

    saved = np.load(os.path.join(backup, "random_state.npz"))
    np.testing.assert_array_equal(saved["arr_0"], seeds[0])
    with open(os.path.join(backup, "training_metadata.json")) as f:
        assert json.load(f)["epoch"] == 1
    model, x, y = _dropout_model()
    model.load_weights(os.path.join(backup, "latest.weights.h5"))
    for a, b in zip(weights, _full_state(model)[0], strict=True):
        np.testing.assert_array_equal(a, b)
    left = [n for n in os.listdir(backup) if n.startswith(".tmp-")]
    assert any(n.endswith("random_state.npz") for n in left), left   # the truncated one

    model, x, y = _dropout_model()
    history = model.fit(x, y, callbacks=[callbacks.BackupAndRestore(
        backup, delete_checkpoint=False)], **_KILLED_FIT)
    assert len(history.history["loss"]) == 2
    assert not [n for n in os.listdir(backup) if n.startswith(".tmp-")]


def test_only_the_chief_writes_the_backup_and_every_process_restores(tmp_path, monkeypatch):
    """Process 1 of 2 (each engine's variables say so) reads the chief's
    backup, the latest or, when its weights do not read, the previous
    (`double_checkpoint`), and writes, copies or deletes nothing."""
    backup = str(tmp_path / "backup")
    chief, x, y = _dropout_model()
    chief.fit(x, y, callbacks=[callbacks.BackupAndRestore(
        backup, double_checkpoint=True, delete_checkpoint=False)],
        **dict(_KILLED_FIT, epochs=2))

    def files():
        return {n: open(os.path.join(backup, n), "rb").read() for n in os.listdir(backup)}

    before = files()
    assert "random_state.npz.bkp" in before
    monkeypatch.setenv("RANK", "1")                            # torchrun
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "1")   # keras.distribution
    monkeypatch.setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "2")
    monkeypatch.setenv("TF_CONFIG", json.dumps({               # TensorFlow
        "cluster": {"worker": ["localhost:1", "localhost:2"]},
        "task": {"type": "worker", "index": 1}}))
    assert not distribute.is_chief()

    model, x, y = _dropout_model()
    history = model.fit(x, y, callbacks=[callbacks.BackupAndRestore(backup)], **_KILLED_FIT)
    assert len(history.history["loss"]) == 1     # resumed after epoch 2
    assert files() == before                     # not deleted at the end either

    with open(os.path.join(backup, "latest.weights.h5"), "r+b") as f:
        f.truncate(100)
    before = files()
    model, x, y = _dropout_model()
    history = model.fit(x, y, callbacks=[callbacks.BackupAndRestore(backup)], **_KILLED_FIT)
    assert len(history.history["loss"]) == 2     # resumed after epoch 1, from .bkp
    assert files() == before

    model, x, y = _dropout_model()
    model.fit(x, y, callbacks=[callbacks.BackupAndRestore(str(tmp_path / "new"))],
              **_KILLED_FIT)
    assert not os.path.exists(tmp_path / "new")


# The training's state: early stopping and the plateau's decay count epochs
# without improvement; with a `min_delta` no change of this model's loss
# reaches, every epoch after the first is one (epoch 0 sets the best value).
# Uninterrupted: the plateau (patience 2) halves the rate at the end of
# epoch 2; early stopping (patience 3) stops after epoch 3 and puts epoch
# 0's weights back. A resume that forgot their counts would train all 6
# epochs (and halve the rate at other epochs).
def _stateful_callbacks():
    return [callbacks.TimeBudget(),
            keras.callbacks.ReduceLROnPlateau("loss", factor=0.5, patience=2,
                                              min_delta=1e3),
            keras.callbacks.EarlyStopping("loss", patience=3, min_delta=1e3,
                                          restore_best_weights=True)]


_STATE_FIT = dict(_KILLED_FIT, epochs=6)


def _states(kept):
    budget, plateau, stop = kept
    return {"steps": budget.steps, "plateau": (plateau.wait, plateau.best),
            "stop": (stop.wait, stop.best, stop.best_epoch, stop.stopped_epoch)}


def test_a_resume_keeps_early_stopping_the_decay_and_the_budget(tmp_path):
    """Interrupted in epoch 3 (after epoch 2's backup) and resumed with
    new callbacks in a new model, the training ends where the uninterrupted
    one does: stopped after epoch 3 (not 6), on epoch 0's weights (early
    stopping's best, not the backup's), with the rate halved at epoch 2
    (the optimizer's, from the backup), the same counts, steps and
    learning curve."""
    reference, x, y = _dropout_model()
    kept = _stateful_callbacks()
    whole = callbacks.BackupAndRestore(str(tmp_path / "whole"), callbacks=kept)
    history = reference.fit(x, y, callbacks=[whole], **_STATE_FIT)
    assert len(history.history["loss"]) == 4 and kept[2].stopped_epoch == 3
    expected, rate = _states(kept), float(reference.optimizer.learning_rate)
    assert rate == pytest.approx(5e-3) and expected["steps"] == 8

    backup = str(tmp_path / "backup")
    model, x, y = _dropout_model()
    with pytest.raises(RuntimeError, match="interrupted"):
        model.fit(x, y, callbacks=[callbacks.BackupAndRestore(
            backup, callbacks=_stateful_callbacks()), _Interrupt(epoch=3, batch=1)],
            **_STATE_FIT)
    resumed, x, y = _dropout_model()
    kept = _stateful_callbacks()
    again = callbacks.BackupAndRestore(backup, callbacks=kept)
    history = resumed.fit(x, y, callbacks=[again], **_STATE_FIT)
    assert len(history.history["loss"]) == 1        # epoch 3
    assert _states(kept) == expected
    assert float(resumed.optimizer.learning_rate) == rate
    assert again.history == whole.history and len(again.history["loss"]) == 4
    for a, b in zip(_weights(reference), _weights(resumed), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not os.path.exists(backup)


def test_a_backup_of_a_stopped_training_trains_no_further(tmp_path):
    """Killed after early stopping's last backup, before training ended:
    the resume trains no epoch and ends on the best epoch's weights."""
    backup = str(tmp_path / "backup")
    reference, x, y = _dropout_model()
    reference.fit(x, y, callbacks=[callbacks.BackupAndRestore(
        backup, callbacks=_stateful_callbacks(), delete_checkpoint=False)],
        **_STATE_FIT)
    with open(os.path.join(backup, "training_metadata.json")) as f:
        saved = json.load(f)
    assert saved["stopped"] and saved["epoch"] == 4 and len(saved["logs"]) == 4
    resumed, x, y = _dropout_model()    # loads epoch 3's weights, not the best
    history = resumed.fit(x, y, callbacks=[callbacks.BackupAndRestore(
        backup, callbacks=_stateful_callbacks())], **_STATE_FIT)
    assert history.history == {}
    for a, b in zip(_weights(reference), _weights(resumed), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_paused_training_goes_on_to_the_same_weights(tmp_path):
    """`pause_after=0`: each call trains one epoch and keeps the backup;
    three calls end on the uninterrupted run's weights. The last epoch
    ends the training (no pause), and the backup is deleted. `calls` says
    what each call trained, and where; a backup written without that
    record (an older kerattn's) reads as one call of its epochs, machine
    unknown."""
    fit = dict(_KILLED_FIT, epochs=3)
    reference, x, y = _dropout_model()
    reference.fit(x, y, **fit)
    backup = str(tmp_path / "backup")
    for call in range(3):
        model, x, y = _dropout_model()
        budget = callbacks.TimeBudget()
        pausing = callbacks.BackupAndRestore(backup, callbacks=[budget],
                                             pause_after=0)
        history = model.fit(x, y, callbacks=[pausing], **fit)
        assert len(history.history["loss"]) == 1
        assert budget.steps == 2 * (call + 1)
        assert pausing.paused == (call < 2) and os.path.exists(backup) == (call < 2)
        assert [c["epochs"] for c in pausing.calls] == [1] * (call + 1)
        assert pausing.calls[-1]["machine"] == environment.machine()
        assert pausing.calls[-1]["seconds"] >= 0
        if call == 0:   # as an older kerattn wrote it
            path = os.path.join(backup, "training_metadata.json")
            with open(path) as f:
                saved = json.load(f)
            assert saved["calls"] == pausing.calls
            del saved["calls"]
            with open(path, "w") as f:
                json.dump(saved, f)
    assert pausing.calls[0] == {"epochs": 1, "seconds": None, "machine": None}
    for a, b in zip(_weights(reference), _weights(model), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_backup_whose_calls_are_not_records_is_refused(tmp_path):
    backup = str(tmp_path / "backup")
    model, x, y = _dropout_model()
    model.fit(x, y, callbacks=[callbacks.BackupAndRestore(backup, pause_after=0)],
              **dict(_KILLED_FIT, epochs=2))
    path = os.path.join(backup, "training_metadata.json")
    with open(path) as f:
        saved = json.load(f)
    with open(path, "w") as f:
        json.dump(dict(saved, calls=[1]), f)
    with pytest.raises(ValueError, match="training_metadata.json.*calls"):
        model.fit(x, y, callbacks=[callbacks.BackupAndRestore(backup)],
                  **dict(_KILLED_FIT, epochs=2))


def test_a_pause_under_a_batch_frequency_keeps_the_whole_epoch(tmp_path):
    """`save_freq=3` batches, 2 an epoch: no save falls at epoch 0's end,
    so the pause saves there itself; the backup holds epoch 0 whole."""
    backup = str(tmp_path / "backup")
    model, x, y = _dropout_model()
    pausing = callbacks.BackupAndRestore(backup, save_freq=3, pause_after=0)
    model.fit(x, y, callbacks=[pausing], **dict(_KILLED_FIT, epochs=3))
    with open(os.path.join(backup, "training_metadata.json")) as f:
        saved = json.load(f)
    assert pausing.paused and (saved["epoch"], saved["batch"]) == (1, 0)
    assert len(saved["logs"]) == 1


def test_callback_states_round_trip_through_the_backup_file(tmp_path):
    """What `callbacks.npz` holds comes back as it was: numbers (inf and
    numpy scalars too), None, strings, an array, and a list of arrays in
    float32, int and bfloat16 (which numpy alone would save as raw bytes)."""
    import ml_dtypes

    weights = [np.arange(6, dtype="float32").reshape(2, 3), np.array(7, "int64"),
               np.array([1.5, -2.25], dtype=ml_dtypes.bfloat16)]
    states = [{"wait": 2, "best": np.float32(0.25), "worst": float("inf"),
               "none": None, "mode": "min", "best_weights": weights},
              {"table": np.ones((2, 2), "float64"), "count": np.int64(3)}]
    text, arrays = callbacks._pack(states)
    np.savez(tmp_path / "s.npz", **arrays)
    with np.load(tmp_path / "s.npz") as saved:
        back = callbacks._unpack(json.loads(json.dumps(text)), saved)
    assert {k: v for k, v in back[0].items() if k != "best_weights"} == {
        "wait": 2, "best": 0.25, "worst": float("inf"), "none": None, "mode": "min"}
    for a, b in zip(weights, back[0]["best_weights"], strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.astype("float64"), b.astype("float64"))
    np.testing.assert_array_equal(back[1]["table"], np.ones((2, 2)))
    assert back[1]["count"] == 3


def test_the_training_state_refuses_what_it_cannot_keep(tmp_path):
    """A callback with no state to back up, a negative pause, and a resume
    with other callbacks than were backed up: ValueErrors that name them."""
    with pytest.raises(ValueError, match=r"callbacks\[1\].*History"):
        callbacks.BackupAndRestore("b", callbacks=[callbacks.TimeBudget(),
                                                   keras.callbacks.History()])
    with pytest.raises(ValueError, match="pause_after"):
        callbacks.BackupAndRestore("b", pause_after=-1)
    backup = str(tmp_path / "backup")
    model, x, y = _dropout_model()
    model.fit(x, y, callbacks=[callbacks.BackupAndRestore(
        backup, callbacks=_stateful_callbacks(), pause_after=0)], **_STATE_FIT)
    model, x, y = _dropout_model()
    with pytest.raises(ValueError, match=r"callbacks\.npz.*EarlyStopping"):
        model.fit(x, y, callbacks=[callbacks.BackupAndRestore(
            backup, callbacks=[callbacks.TimeBudget()])], **_STATE_FIT)


# === Determinism ===

def _seed_globals(seed):
    """The global generators a training step may draw from, seeded as
    `keras.utils.set_random_seed` seeds them, less TensorFlow's (after
    `tf.random.set_seed` every tf.function traces again; Keras draws
    nothing from it): Python's, NumPy's, and torch's (Keras' unseeded
    dropout on torch)."""
    random.seed(seed)
    np.random.seed(seed)
    if keras.backend.backend() == "torch":
        import torch

        torch.manual_seed(seed)


@pytest.mark.parametrize("name", ["transformer_nmt", "bahdanau_nmt",
                                  "show_attend_tell_hard", "han_classifier"])
def test_same_seed_same_weights(name):
    """The same seed, the same weights bit for bit after 4 steps (2 epochs
    of 2 batches; dropout, hard-attention sampling), on every backend on
    CPU. Two builds from the seed give the same state (weights and seed
    generator states); one model then trains twice from that state, the
    global generators seeded each time. One model, so that its training
    step is traced once (tracing twice would be most of the time on
    TensorFlow); after a first `fit`, as building it for training draws
    from torch's global generator (Keras' unseeded dropout)."""
    keras.backend.clear_session()
    other, _, _ = zoo_cases.build(name, seed=3)
    other_state = [keras.ops.convert_to_numpy(v) for v in other.variables]
    keras.backend.clear_session()
    model, x, y = zoo_cases.build(name, seed=3)
    for a, b in zip(other_state, model.variables, strict=True):
        np.testing.assert_array_equal(a, keras.ops.convert_to_numpy(b))
    model.optimizer.build(model.trainable_variables)
    variables = list(model.variables) + list(model.optimizer.variables)
    start = [keras.ops.convert_to_numpy(v) for v in variables]
    initial = _weights(model)
    model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
    runs = []
    for _ in range(2):
        for variable, value in zip(variables, start, strict=True):
            variable.assign(value)
        _seed_globals(3)
        model.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
        runs.append(_weights(model))
    assert any(not np.array_equal(a, b)
               for a, b in zip(runs[0], initial, strict=True))
    for a, b in zip(*runs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_different_seeds_differ():
    """The determinism test can fail: another seed gives other weights."""
    weights = []
    for seed in (3, 4):
        model, x, y = zoo_cases.build("bahdanau_nmt", seed=seed)
        weights.append(_weights(model))
    assert any(not np.array_equal(a, b) for a, b in zip(*weights, strict=True))


# === Long inputs ===

def test_decoding_500_token_sources():
    """Greedy and beam search over 500-token sources, through Translator."""
    words = [f"w{i}" for i in range(40)]
    vocab = WordVocabulary(words)
    model = zoo.bahdanau_nmt(len(vocab), len(vocab), embedding_dim=8, units=12,
                             alignment_units=8, maxout_units=6)
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, 500)) for _ in range(2)]
    assert all(len(vocab.encode(t)) == 500 for t in texts)
    translator = decoding.Translator(model, vocab, vocab, max_length=12)
    for beam_width in (1, 3):
        out, alignments = translator(texts, beam_width=beam_width,
                                     return_alignments=True)
        assert len(out) == 2 and all(isinstance(t, str) for t in out)
        for alignment in alignments:
            a = np.asarray(alignment["weights"])
            assert len(alignment["source_tokens"]) == 500
            assert a.shape[1] == 500 and np.all(np.isfinite(a))
            np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-4)


def test_han_on_200_sentences_of_100_words():
    model = zoo.han_classifier(100, 3, embedding_dim=8, word_units=6,
                               sentence_units=6, attention_units=8)
    model.compile("adam", "sparse_categorical_crossentropy")
    docs = np.random.default_rng(0).integers(1, 100, (2, 200, 100)).astype("int32")
    docs[1, 150:] = 0  # a shorter document
    loss = model.train_on_batch({"document_ids": docs}, np.array([0, 2]))
    assert np.isfinite(loss)
    probabilities = keras.ops.convert_to_numpy(model({"document_ids": docs}))
    assert np.all(np.isfinite(probabilities))
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
