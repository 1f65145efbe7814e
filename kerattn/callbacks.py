"""Training callbacks: a wall-clock budget, and a bit-exact resume.

`TimeBudget(seconds)` stops `fit` once the time is spent (the recipes'
`--minutes`), counting the steps it ran; with `eta=True` it prints as each
epoch starts how long the rest should take.

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
import json
import os
import shutil
import tempfile
import time

import keras
import numpy as np

from kerattn import checks, distribute, keras_fixes, saving

__all__ = ["BackupAndRestore", "SamplingSchedule", "TimeBudget"]


class TimeBudget(keras.callbacks.Callback):
    """Stop training once `seconds` of wall-clock time have passed.

    The check runs after each batch, so the last step finishes; `steps`
    counts the batches trained.

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
            elapsed = time.time() - self.start
            total = (self.params or {}).get("epochs", "?")
            print(f"epoch {epoch + 1}/{total} starts: {elapsed / 60:.1f} min "
                  f"so far, about {self.remaining(epoch, elapsed) / 60:.1f} min "
                  "left", flush=True)

    def on_train_begin(self, logs=None):
        self.start = time.time()

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        if self.seconds is not None and time.time() - self.start >= self.seconds:
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


class BackupAndRestore(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore`, with the RNG state backed up too,
    written atomically by the chief alone.

    Same arguments and behaviour as Keras' callback (see its docs), plus a
    `random_state.npz` beside the weights with every `SeedGenerator`'s
    state, restored on resume. Use `save_freq="epoch"` (the default) for a
    resume that ends on the same weights as an uninterrupted run: Keras
    resumes at the start of the saved epoch, so with `save_freq=N` batches
    the batches before the interruption are trained twice.

    Every file of the backup (`latest.weights.h5`, `training_metadata.json`,
    `random_state.npz`, and with `double_checkpoint` their `.bkp` copies)
    is written through `kerattn.atomic_path`: all three are written to
    temporary names first, then each is renamed onto its own (the metadata
    last). A kill while a backup is written leaves the previous one whole
    and loadable; only a kill within the three renames (microseconds) can
    leave files of two consecutive backups, each readable. A temporary file
    left by a kill is ignored, and removed by the next run's chief.

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
            `delete_checkpoint=False`).
        save_freq: `"epoch"`, or a number of batches.
        double_checkpoint: keep the previous backup too, as Keras does
            (restored when the latest weights do not read).
        delete_checkpoint: delete the backup once training completes.

    Example:

    >>> import numpy as np
    >>> model = kerattn.zoo.han_classifier(50, 3, embedding_dim=8, word_units=4,
    ...     sentence_units=4, attention_units=4, dropout=0.5)
    >>> model.compile("adam", "sparse_categorical_crossentropy")
    >>> x = {"document_ids": np.ones((4, 2, 5), "int32")}
    >>> y = np.array([0, 1, 2, 1])
    >>> callback = BackupAndRestore("backup")
    >>> history = model.fit(x, y, epochs=2, callbacks=[callback], verbose=0)
    >>> # interrupted? run the same fit again: it resumes, dropout's RNG too
    >>> len(history.history["loss"])
    2
    """

    # Keras' signature, written out so that it is this class' documented one
    # (the API pages read the defaults from here).
    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False,
                 delete_checkpoint=True):
        super().__init__(backup_dir, save_freq=save_freq,
                         double_checkpoint=double_checkpoint,
                         delete_checkpoint=delete_checkpoint)

    def _random_state_path(self):
        return os.path.join(self.backup_dir, "random_state.npz")

    def _files(self):
        """The backup's files, in `_write`'s order (the metadata first, so
        renamed last)."""
        return (self._training_metadata_path, self._weights_path,
                self._random_state_path())

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
        if self.double_checkpoint:   # all three copied before any is renamed
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

    def _write(self, metadata_file, weights_file, random_file):
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
        with open(metadata_file, "w") as f:
            json.dump({"epoch": self._current_epoch,
                       "batch": self._last_batch_seen}, f)

    def on_train_begin(self, logs=None):
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
        path = self._random_state_path() + (".bkp" if previous else "")
        if not os.path.exists(path):
            return
        saved = np.load(path)
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

    def on_train_end(self, logs=None):
        if distribute.is_chief():
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
