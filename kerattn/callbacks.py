"""Training callbacks: a wall-clock budget, and a bit-exact resume.

`TimeBudget(seconds)` stops `fit` once the time is spent (the recipes'
`--minutes`), counting the steps it ran; with `eta=True` it prints as each
epoch starts how long the rest should take.

A resume continues the training, not only the model: `BackupAndRestore`
also keeps the state of the callbacks it is given (early stopping's count,
best value and best weights, the plateau's count, the budget's time and
steps), every epoch's logs and what each call trained on which machine,
and can pause at an epoch's end when the
next would not fit in this call's time, for the next call to go on.

`keras.callbacks.BackupAndRestore` saves the weights and the optimizer, but
not the state of the random seed generators (dropout, hard attention's
sampling): a `.weights.h5` file holds each layer's own variables, and a
`SeedGenerator`'s state is not one of them. A run with dropout that is
interrupted and resumed then draws other dropout masks than the
uninterrupted run, and ends on other weights (0.03 apart after one epoch of
the tiny RNNsearch in `tests/test_reliability.py`). This subclass also
saves and restores those states, so the resume is exact. On PyTorch, Keras'
`Dropout` without a seed draws from torch's global generator instead, so
its state is saved too (the one backend-specific line here). Every backup
file is written atomically (a kill leaves the previous backup loadable),
and by the chief process alone.
"""

import contextlib
import functools
import json
import os
import shutil
import tempfile
import time
import warnings

import keras
import numpy as np

from kerattn import checks, distribute, environment, keras_fixes, saving

__all__ = ["BackupAndRestore", "SamplingSchedule", "TimeBudget", "has_state"]


class TimeBudget(keras.callbacks.Callback):
    """Stop training once `seconds` of wall-clock time have passed.

    The check runs after each batch, so the last step finishes; `steps`
    counts the batches this `fit` trained. Given to `BackupAndRestore(callbacks=...)`,
    the budget is the whole training's: a resume counts the time and the
    steps before it (`get_state` / `set_state`).

    Args:
        seconds: the budget; None never stops (and still counts steps).
        eta: print, as each epoch after the first starts, the minutes
            spent and an estimate of those left (the mean epoch so far times
            the epochs left, or the budget's rest if that is sooner).

    Example:

    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> budget = TimeBudget(seconds=0)     # spent after the first batch
    >>> history = model.fit(np.zeros((8, 2)), np.zeros((8, 1)), batch_size=2,
    ...                     epochs=5, callbacks=[budget], verbose=0)
    >>> budget.steps, len(history.history["loss"])
    (1, 1)
    """

    def __init__(self, seconds=None, eta=False):
        super().__init__()
        checks.number("seconds", seconds, 0, allow_none=True)
        checks.boolean("eta", eta)
        self.seconds = seconds
        self.eta = eta
        self.steps = 0
        self.start = None
        self.before = 0.0   # seconds spent in earlier calls (a resume)

    def elapsed(self):
        """Seconds of training so far, earlier calls' included."""
        return self.before + (time.time() - self.start if self.start else 0.0)

    def get_state(self):
        """The time spent and steps trained, for `BackupAndRestore`."""
        return {"seconds": self.elapsed(), "steps": self.steps}

    def set_state(self, state):
        """Go on from `get_state()`'s: the time spent counts against the
        budget, the steps are added to."""
        self.before, self.steps = float(state["seconds"]), int(state["steps"])
        self.start = time.time()

    def remaining(self, epochs_done, elapsed):
        """Seconds left after `epochs_done` epochs in `elapsed` seconds."""
        total = (self.params or {}).get("epochs") or epochs_done
        left = elapsed / max(epochs_done, 1) * (total - epochs_done)
        if self.seconds is not None:
            left = min(left, max(self.seconds - elapsed, 0.0))
        return left

    def on_epoch_begin(self, epoch, logs=None):
        # At the start of an epoch, not the end: the progress bar's line of
        # the last epoch is complete by then.
        if self.eta and epoch > 0:
            elapsed = self.elapsed()
            total = (self.params or {}).get("epochs", "?")
            print(f"epoch {epoch + 1}/{total} starts: {elapsed / 60:.1f} min "
                  f"so far, about {self.remaining(epoch, elapsed) / 60:.1f} min "
                  "left", flush=True)

    def on_train_begin(self, logs=None):
        self.start, self.before, self.steps = time.time(), 0.0, 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        if self.seconds is not None and self.elapsed() >= self.seconds:
            self.model.stop_training = True


def _collective_save(model):
    """Whether saving `model` takes every process: under TensorFlow's
    multi-worker engine, or JAX on several processes, reading the
    distributed variables is a collective step."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.process_count() > 1
    if backend != "tensorflow":
        return False
    import tensorflow as tf

    return isinstance(getattr(model, "distribute_strategy", None),
                      tf.distribute.MultiWorkerMirroredStrategy)


def _seed_states(model):
    """The model's SeedGenerator state variables, in a stable order."""
    return [v for v in model.non_trainable_variables
            if v.path.endswith("seed_generator_state")]


# The attributes that are a Keras callback's state between epochs (Keras
# 3.15's: each resets them in `on_train_begin`). Best weights are a list of
# arrays; the rest are numbers or None.
_KERAS_STATE = (
    (keras.callbacks.EarlyStopping,
     ("wait", "stopped_epoch", "best", "best_epoch", "best_weights")),
    (keras.callbacks.ReduceLROnPlateau, ("wait", "cooldown_counter", "best")),
)


def _state_names(callback):
    """`()` for a callback with `get_state` / `set_state` (its own say
    first), else the names of its state attributes, or None for a callback
    whose state is unknown."""
    if callable(getattr(callback, "get_state", None)) and \
            callable(getattr(callback, "set_state", None)):
        return ()
    for kind, names in _KERAS_STATE:
        if isinstance(callback, kind):
            return names
    return None


def has_state(callback):
    """Whether `BackupAndRestore(callbacks=...)` can back `callback`'s state
    up.

    Keras' `EarlyStopping` and `ReduceLROnPlateau` can (their attributes
    are read and set), and so can any callback with `get_state()`, a dict
    of numbers, strings, None, arrays and lists of arrays, and
    `set_state(state)`, such as `TimeBudget`.

    Args:
        callback: a Keras callback.

    Returns:
        True or False.

    Example:

    >>> has_state(TimeBudget()), has_state(keras.callbacks.History())
    (True, False)
    """
    return _state_names(callback) is not None


def _get_state(callback):
    names = _state_names(callback)
    if not names:
        return dict(callback.get_state())
    return {name: getattr(callback, name, None) for name in names}


def _set_state(callback, state):
    if not _state_names(callback):
        callback.set_state(state)
    else:
        for name, value in state.items():
            setattr(callback, name, value)


def _is_array(value):
    return isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) > 0


def _stored(array):
    """`(array numpy can save, dtype name)`: a dtype of ml_dtypes (bfloat16,
    which `np.savez` would write as raw void) as unsigned ints of its
    width, its name kept to view them back."""
    array = np.asarray(array, order="C")   # 0-d stays 0-d
    checks.require(not array.dtype.hasobject, "callbacks",
                   "callbacks whose state holds no Python objects (numbers, "
                   "strings, None, arrays of numbers or text)", array.dtype.name)
    if array.dtype.isbuiltin != 2:   # 2: a type a library registered
        return array, None
    return array.view(f"u{array.dtype.itemsize}"), array.dtype.name


def _pack(states):
    """Callback states -> `(json_text, arrays)`: an array, or each of a list
    of arrays, is stored as an array named `<callback>.<name>.<k>`; the
    rest (numbers, strings, None) as JSON."""
    scalars, arrays = [], {}
    for i, state in enumerate(states):
        plain = {}
        for name, value in state.items():
            single = _is_array(value)
            if single or (isinstance(value, (list, tuple)) and value
                          and all(isinstance(v, (np.ndarray, np.generic))
                                  for v in value)):
                stored = [_stored(v) for v in ([value] if single else value)]
                plain[name] = {"arrays": len(stored), "single": single,
                               "dtypes": [dtype for _, dtype in stored]}
                for k, (array, _) in enumerate(stored):
                    arrays[f"{i}.{name}.{k}"] = array
            elif isinstance(value, (np.generic, np.ndarray)):
                plain[name] = value.item()
            else:
                plain[name] = value
        scalars.append(plain)
    return json.dumps(scalars), arrays


def _unpack(text, arrays):
    """`_pack`'s inverse; `arrays` maps the names to arrays."""
    import ml_dtypes   # Keras' own dependency: bfloat16 & co.

    states = []
    for i, plain in enumerate(json.loads(text)):
        state = {}
        for name, value in plain.items():
            if isinstance(value, dict) and "arrays" in value:
                stored = [arrays[f"{i}.{name}.{k}"] for k in range(value["arrays"])]
                value = [a if dtype is None else a.view(getattr(ml_dtypes, dtype))
                         for a, dtype in zip(stored, value["dtypes"])]
                value = value[0] if plain[name]["single"] else value
            state[name] = value
        states.append(state)
    return states


# Hook -> the names that override it (Keras' train batch hooks call their
# older names by default).
_OTHER_HOOKS = {
    "on_train_batch_begin": ("on_train_batch_begin", "on_batch_begin"),
    **{name: (name,) for name in (
        "on_test_begin", "on_test_end", "on_test_batch_begin",
        "on_test_batch_end", "on_predict_begin", "on_predict_end",
        "on_predict_batch_begin", "on_predict_batch_end")}}


@functools.lru_cache(maxsize=None)
def _machine_text():
    return json.dumps(environment.machine())


def _probed_machine():
    """`kerattn.environment.machine()`, probed once a process (a copy)."""
    return json.loads(_machine_text())


def _overrides(callback, name):
    return getattr(type(callback), name) is not getattr(keras.callbacks.Callback, name)


class BackupAndRestore(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore`, with the RNG state and the
    training's other state backed up too, written atomically by the chief
    alone, and able to pause.

    Same arguments and behaviour as Keras' callback (see its docs), plus a
    `random_state.npz` beside the weights with every `SeedGenerator`'s
    state, restored on resume. Use `save_freq="epoch"` (the default) for a
    resume that ends on the same weights as an uninterrupted run: Keras
    resumes at the start of the saved epoch, so with `save_freq=N` batches
    the batches before the interruption are trained twice.

    **The training's state.** Keras' callbacks keep their own counters and
    reset them as training begins, so a resumed `fit` would forget that the
    validation loss had not improved for two epochs, the best epoch's
    weights, or the time already spent. Callbacks given as `callbacks` are
    called by this one (in their order, before it acts: give them here,
    not to `fit`), and their state is backed up with the model in
    `callbacks.npz` and restored after their own `on_train_begin`: Keras'
    `EarlyStopping` (count, best value, best epoch and weights) and
    `ReduceLROnPlateau` (count, cooldown, best value; the rate itself is
    the optimizer's), `TimeBudget` (time and steps), or any callback with
    `get_state` / `set_state` (`has_state`). The backup names them, and
    what each watches where not Keras' default `val_loss` (`monitor`): a
    backup resumes only under the same callbacks watching the same (the
    best value of another quantity would compare wrongly; a file from
    before names none and reads as `val_loss`). The metadata keeps every
    epoch's logs, so `history` is the whole training's, what each call
    trained and where (`calls`), and whether a callback had stopped
    training: a backup of a training that had stopped
    (killed before it ended) trains no further epoch when resumed. `fit`
    calls its callbacks in their order: give this one after any other that
    can stop training (or give that one here), so that its save sees the
    stop.

    **Pausing.** With `pause_after` seconds, the training stops at the end
    of an epoch when another epoch (this call's mean) would end after that
    time, and keeps the backup: `paused` is then True, and the same `fit`
    with the same callbacks goes on. A session-long run can so be split
    into calls that each end on a whole epoch. A pause is not an end:
    callbacks' `on_train_end` runs (early stopping then puts its best
    weights in the model), but the backup holds the last epoch's. On
    several processes each would pause on its own clock, at different
    epochs: pause there by stopping them all and resuming instead.

    Every file of the backup (`latest.weights.h5`, `training_metadata.json`,
    `random_state.npz`, `callbacks.npz` when there are callbacks, and with
    `double_checkpoint` their `.bkp` copies) is written through
    `kerattn.atomic_path`: all are written to temporary names first, then
    each is renamed onto its own (the metadata last). A kill while a backup
    is written leaves the previous one whole and loadable; only a kill
    within the renames (microseconds) can leave files of two consecutive
    backups, each readable. A temporary file left by a kill is ignored, and
    removed by the next run's chief.

    Only the chief (`kerattn.distribute.is_chief()`: process 0 under
    torchrun, `keras.distribution.initialize` or `TF_CONFIG`) writes or
    deletes backup files; where a save is itself a collective step
    (TensorFlow's multi-worker engine, JAX on several processes) the
    others save too, into a scratch folder that is removed. Every process
    restores from `backup_dir`, reading only: the latest backup, or the
    `.bkp` one when the latest weights do not load. On several hosts,
    `backup_dir` is storage every host reads (a shared file system), or
    each host's copy of the chief's backup.

    Args:
        backup_dir: a local or mounted folder, where the backup is kept
            between runs (deleted when training ends, unless
            `delete_checkpoint=False` or it paused).
        save_freq: `"epoch"`, or a number of batches.
        double_checkpoint: keep the previous backup too, as Keras does
            (restored when the latest weights do not read).
        delete_checkpoint: delete the backup once training completes.
        callbacks: callbacks whose state is the training's (see above),
            called by this one.
        pause_after: None, or seconds of this call after which training
            pauses at an epoch's end (see above).

    Example:

    >>> import numpy as np
    >>> model = kerattn.zoo.han_classifier(50, 3, embedding_dim=8, word_units=4,
    ...     sentence_units=4, attention_units=4, dropout=0.5)
    >>> model.compile("adam", "sparse_categorical_crossentropy")
    >>> x = {"document_ids": np.ones((4, 2, 5), "int32")}
    >>> y = np.array([0, 1, 2, 1])
    >>> stop = keras.callbacks.EarlyStopping("loss", patience=2)
    >>> callback = BackupAndRestore("backup", callbacks=[stop])
    >>> history = model.fit(x, y, epochs=2, callbacks=[callback], verbose=0)
    >>> # interrupted? run the same fit again: it resumes, dropout's RNG
    >>> # and early stopping's count too
    >>> len(history.history["loss"]), len(callback.history["loss"])
    (2, 2)
    """

    # Keras' signature, written out so that it is this class' documented one
    # (the API pages read the defaults from here).
    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False,
                 delete_checkpoint=True, callbacks=(), pause_after=None):
        super().__init__(backup_dir, save_freq=save_freq,
                         double_checkpoint=double_checkpoint,
                         delete_checkpoint=delete_checkpoint)
        self.callbacks = list(callbacks)
        for i, callback in enumerate(self.callbacks):
            checks.require(has_state(callback), f"callbacks[{i}]",
                           "a callback whose state can be backed up "
                           "(EarlyStopping, ReduceLROnPlateau, or one with "
                           "get_state and set_state); give any other to fit",
                           type(callback).__name__)
        checks.number("pause_after", pause_after, 0, allow_none=True)
        self.pause_after = pause_after
        self.paused = False
        self.epoch_logs = []      # every epoch's logs, earlier calls' too
        self._earlier_calls = []  # the backed-up calls' records
        self._epochs_run, self._seconds, self._machine = 0, 0.0, None
        self._stopped = False     # a backup of a training that had stopped

        # The hooks this class does not act on itself are its callbacks'
        # alone, forwarded only where one of them has its own: Keras
        # dispatches the batch hooks of test and predict asynchronously
        # while no callback overrides them.
        for hook in _OTHER_HOOKS:
            if any(_overrides(c, name) for c in self.callbacks
                   for name in _OTHER_HOOKS[hook]):
                setattr(self, hook, functools.partial(self._call, hook))

    def _call(self, hook, *args, **kwargs):
        """Call `hook` of each of `callbacks`, in order (synchronously:
        the save that follows reads what they set)."""
        for callback in self.callbacks:
            getattr(callback, hook)(*args, **kwargs)

    @property
    def history(self):
        """The logs of every epoch trained, earlier calls' included, as
        `History.history` holds them (metric name -> list)."""
        joined = {}
        for logs in self.epoch_logs:
            for name, value in logs.items():
                joined.setdefault(name, []).append(value)
        return joined

    @property
    def calls(self):
        """What each call of `fit` on this backup trained, and where: a list,
        earlier calls' first, of `{"epochs": n, "seconds": s, "machine":
        m}`: the epochs it ended, the seconds from its start (the restore
        included) to its last epoch's end, and the chief's
        `kerattn.environment.machine()`. A call that ended no epoch is not
        listed; the epochs of a backup written without this record (Keras'
        own, or an older kerattn's) read as one call with `seconds` and
        `machine` None. A training resumed on another machine so says
        which part ran where."""
        this = ([{"epochs": self._epochs_run,
                  "seconds": round(self._seconds, 1),
                  "machine": self._machine}] if self._epochs_run else [])
        return [dict(c) for c in self._earlier_calls] + this

    def set_model(self, model):
        super().set_model(model)
        self._call("set_model", model)

    def set_params(self, params):
        super().set_params(params)
        self._call("set_params", params)

    def _random_state_path(self):
        return os.path.join(self.backup_dir, "random_state.npz")

    def _callbacks_path(self):
        return os.path.join(self.backup_dir, "callbacks.npz")

    def _files(self):
        """The backup's files, in `_write`'s order (the metadata first, so
        renamed last)."""
        files = (self._training_metadata_path, self._weights_path,
                 self._random_state_path())
        return files + ((self._callbacks_path(),) if self.callbacks else ())

    def _save_model(self):
        # Keras' own writes these files in place, one after the other.
        if not distribute.is_chief():
            if _collective_save(self.model):
                # A save takes part in collective steps (TensorFlow's
                # multi-worker engine, JAX on several processes): every
                # process saves, the others into a scratch folder that is
                # then removed (as TensorFlow's guide says of `model.save`).
                with tempfile.TemporaryDirectory() as scratch:
                    self._write(*(os.path.join(scratch, os.path.basename(p))
                                  for p in self._files()))
            return
        os.makedirs(self.backup_dir, exist_ok=True)
        if self.double_checkpoint:   # all copied before any is renamed
            with contextlib.ExitStack() as stack:
                for path in self._files():
                    if os.path.exists(path):
                        shutil.copyfile(path, stack.enter_context(
                            saving.atomic_path(path + ".bkp")))
        with contextlib.ExitStack() as stack:
            # Entered metadata first, so renamed last: every file is written
            # before any is renamed.
            self._write(*[stack.enter_context(saving.atomic_path(p))
                          for p in self._files()])

    def _write(self, metadata_file, weights_file, random_file,
               callbacks_file=None):
        states = [keras.ops.convert_to_numpy(v) for v in _seed_states(self.model)]
        extra = {}
        if keras.backend.backend() == "torch":
            import torch

            extra["torch_rng"] = torch.get_rng_state().numpy()
        # JAX, ModelParallel on several processes: the split variables are
        # gathered whole on every process while they are written; a restore
        # puts them back on their layout (Variable.assign).
        with keras_fixes.jax_variables_gathered(self.model):
            self.model.save_weights(weights_file, overwrite=True)
        np.savez(random_file, *states, **extra)
        if callbacks_file is not None:
            text, arrays = _pack([_get_state(c) for c in self.callbacks])
            np.savez(callbacks_file, state=np.array(text),
                     names=np.array(json.dumps(self._names())), **arrays)
        with open(metadata_file, "w") as f:
            json.dump({"epoch": self._current_epoch,
                       "batch": self._last_batch_seen,
                       "stopped": bool(self.model.stop_training),
                       "logs": self.epoch_logs, "calls": self.calls}, f)

    def on_train_begin(self, logs=None):
        # Probed before any clock starts (the first probe reads packages).
        self._machine = _probed_machine()
        # The callbacks reset their state first; the restore then sets it.
        self._call("on_train_begin", logs)
        self.paused, self.epoch_logs, self._stopped = False, [], False
        self._earlier_calls = []
        self._began = time.time()
        self._epochs_run, self._seconds = 0, 0.0
        # Keras' own copies the `.bkp` files over unreadable weights on
        # every process. Here no process changes the backup as training
        # starts (the others may be reading it): each loads the latest, or
        # the `.bkp` files when the latest do not load, and the next save
        # writes both anew. The chief removes a kill's temporary files.
        if distribute.is_chief() and os.path.isdir(self.backup_dir):
            for name in os.listdir(self.backup_dir):
                if name.startswith(saving.TEMPORARY_PREFIX):
                    os.remove(os.path.join(self.backup_dir, name))
        try:
            self._load_model()
        except OSError:
            if not os.path.exists(self._prev_weights_path):
                raise
            self._load_model(previous=True)
        if self._stopped:   # the training had ended: no epoch to run
            self.model._initial_epoch = self.params.get("epochs", 0)

    def _load_model(self, previous=False):
        if not previous:
            super()._load_model()
        else:
            # The `.bkp` files. Keras loads weights only from a name ending
            # in `.weights.h5`: a copy outside the backup, with that name.
            latest = self._weights_path, self._training_metadata_path
            with tempfile.TemporaryDirectory(prefix="kerattn_backup_") as folder:
                self._weights_path = os.path.join(folder, "previous.weights.h5")
                shutil.copyfile(self._prev_weights_path, self._weights_path)
                self._training_metadata_path = self._prev_training_metadata_path
                try:
                    super()._load_model()
                finally:
                    self._weights_path, self._training_metadata_path = latest
        suffix = ".bkp" if previous else ""
        metadata = self._training_metadata_path + suffix
        if os.path.exists(metadata):
            with open(metadata) as f:
                saved = json.load(f)
            self.epoch_logs = list(saved.get("logs", []))
            unrecorded = [{"epochs": saved["epoch"], "seconds": None,
                           "machine": None}] if saved["epoch"] else []
            calls = saved.get("calls", unrecorded)
            if not (isinstance(calls, list) and all(
                    isinstance(c, dict) and isinstance(c.get("epochs"), int)
                    and {"seconds", "machine"} <= set(c) for c in calls)):
                checks.bad_file(metadata, "its `calls` is not a list of "
                                "{epochs, seconds, machine} records: not a "
                                "kerattn backup's metadata.")
            self._earlier_calls = calls
            self._stopped = bool(saved.get("stopped", False))
            self._current_epoch = saved["epoch"]
            self._restore_callbacks(self._callbacks_path() + suffix)
        path = self._random_state_path() + suffix
        if not os.path.exists(path):
            return
        with np.load(path) as saved:
            self._restore_random_state(path, saved)

    def _restore_random_state(self, path, saved):
        variables = _seed_states(self.model)
        if "torch_rng" in saved.files and keras.backend.backend() == "torch":
            import torch

            torch.set_rng_state(torch.from_numpy(saved["torch_rng"]))
        count = len([f for f in saved.files if f.startswith("arr_")])
        if count != len(variables):
            checks.bad_file(path, f"it holds {count} random seed states, but "
                            f"the model has {len(variables)}: not the model "
                            "that was backed up.")
        for i, variable in enumerate(variables):
            variable.assign(saved[f"arr_{i}"])

    def _names(self):
        """Each callback's class, with what it watches where not Keras'
        default (`EarlyStopping(val_wer)`): names written before the
        monitor was named read as watching the default."""
        return [type(c).__name__ + ("" if getattr(c, "monitor", "val_loss") == "val_loss"
                                    else f"({c.monitor})") for c in self.callbacks]

    def _restore_callbacks(self, path):
        names = self._names()
        if not os.path.exists(path):
            if names:
                warnings.warn(f"{path}: no such file (a backup written "
                              "without callbacks, or by an older kerattn): "
                              f"{', '.join(names)} start afresh.", stacklevel=2)
            return
        # No pickles (np.load's default): a hostile file runs nothing.
        with np.load(path) as saved:
            try:
                held = json.loads(str(saved["names"]))
                states = _unpack(str(saved["state"]), saved)
            except (KeyError, ValueError, TypeError):
                checks.bad_file(path, "not a callbacks backup of kerattn's "
                                "BackupAndRestore.")
        if held != names:
            checks.bad_file(path, f"it holds the state of {held or 'no callbacks'}"
                            f", but this training's are {names or 'none'}: "
                            "resume with the callbacks that were backed up.")
        for callback, state in zip(self.callbacks, states):
            _set_state(callback, state)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs)
        super().on_epoch_begin(epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, logs)   # they decide; then the save
        self.epoch_logs.append({k: float(v) for k, v in (logs or {}).items()
                                if np.ndim(v) == 0})
        self._epochs_run += 1
        self._seconds = time.time() - self._began
        super().on_epoch_end(epoch, logs)
        if self.pause_after is None or self.model.stop_training:
            return
        if epoch + 1 >= self.params.get("epochs", epoch + 1):
            return   # the last epoch: training ends, it does not pause
        spent = time.time() - self._began
        if spent + spent / self._epochs_run > self.pause_after:
            if self.save_freq != "epoch":   # the pause keeps the whole epoch
                self._save_model()
            self.paused = self.model.stop_training = True

    def on_train_batch_end(self, batch, logs=None):
        self._call("on_train_batch_end", batch, logs)
        super().on_train_batch_end(batch, logs)

    def on_train_end(self, logs=None):
        self._call("on_train_end", logs)
        self.model._initial_epoch = None   # a later fit starts from epoch 0
        if distribute.is_chief() and not self.paused:
            super().on_train_end(logs)


class SamplingSchedule(keras.callbacks.Callback):
    """Sets a scheduled sampler's probability at the start of each epoch, and
    has the training function traced again with it.

    Bengio et al. (2015, "Scheduled Sampling for Sequence Prediction with
    Recurrent Neural Networks", section 2.4) start from teacher forcing and
    let the probability of the model's own input grow as training goes;
    their decays of the probability `eps_i` of the true input, for step
    (here epoch) `i`, are linear, exponential and the inverse sigmoid
    `eps_i = k / (k + exp(i / k))`: the schedule returns `1 - eps_i`. The
    probability is a constant of the traced training step (no variable to
    save with the model), so a change costs one new trace: once an epoch.

    Args:
        sampler: the decoder's sampler (`AttentionRNN.sampler`).
        schedule: a function of the epoch (from 0) to the probability of
            the model's own input, a float in [0, 1].

    Example:

    >>> import math
    >>> from kerattn.layers import ScheduledOutputSampler
    >>> sampler = ScheduledOutputSampler()
    >>> k = 2.0   # the inverse sigmoid decay of Bengio et al., section 2.4
    >>> schedule = SamplingSchedule(sampler, lambda i: 1 - k / (k + math.exp(i / k)))
    >>> round(schedule.schedule(0), 3), round(schedule.schedule(6), 3)
    (0.333, 0.909)
    """

    def __init__(self, sampler, schedule):
        super().__init__()
        from kerattn.layers.scheduled_sampling import ScheduledSampler

        checks.instance("sampler", sampler, ScheduledSampler,
                        "a kerattn.layers.ScheduledEmbeddingSampler or "
                        "ScheduledOutputSampler")
        checks.function("schedule", schedule, "a function of the epoch")
        self.sampler, self.schedule = sampler, schedule

    def on_epoch_begin(self, epoch, logs=None):
        probability = self.schedule(epoch)
        checks.number("schedule", probability, low=0.0, high=1.0)
        if float(probability) != self.sampler.probability:
            self.sampler.probability = probability
            self.model.make_train_function(force=True)
