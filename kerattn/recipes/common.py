"""What every recipe shares: one compile-and-fit, the split of a user's file.

`compile_and_fit` is the one training path of the recipes and of
`examples/fit.py` (a command line over the recipes): Adam with gradient
clipping (optionally a linear warm-up then cosine decay), the loss and
metrics of the task, `kerattn.distribute`'s `prepare` and `shard`, a
`TimeBudget`, optionally a `BackupAndRestore` that keeps the training's
state, and `model.fit`. It returns Keras' `History` and a summary (epochs,
steps, minutes, final losses, parameters) that zoo/runner.py records in
`results.json`.
"""

import collections
import hashlib
import json
import re
import warnings

import keras
import numpy as np

from kerattn import checks, distribute
from kerattn.callbacks import BackupAndRestore, TimeBudget, has_state


def compile_and_fit(model, train, validation=None, *, loss, learning_rate,
                    epochs, clipnorm=1.0, metrics=None, warmup_steps=0,
                    minutes=None, callbacks=(), strategy=None, verbose=2,
                    eta=None, ema_momentum=None, backup=None, pause_after=None):
    """Compile `model` with Adam and fit it; returns `(history, summary)`.

    Args:
        model: the Keras model (built inside `strategy.scope()` when
            distributed).
        train: a `keras.utils.PyDataset` (or `tf.data.Dataset`) of batches,
            or `(x, y, batch_size)` arrays (batched by
            `kerattn.distribute.ArrayBatches`).
        validation: the same forms, or None.
        loss: the Keras loss.
        learning_rate: Adam's peak rate.
        epochs: the number of epochs.
        clipnorm: gradient clipping by norm.
        metrics: Keras metrics.
        warmup_steps: a linear warm-up from 0 over these steps, then a
            cosine decay to a tenth of `learning_rate` at the last step.
        minutes: an optional wall-clock cap (`TimeBudget`).
        callbacks: more Keras callbacks (early stopping, ...).
        strategy: a `kerattn.distribute` strategy; None trains on one device.
        verbose: `fit`'s verbosity.
        eta: print the time spent and left as each epoch after the first
            starts (`TimeBudget`); None prints it when `verbose` does.
        ema_momentum: None, or Polyak averaging: Adam keeps an exponential
            moving average of the weights with this momentum (Keras'
            `use_ema`), validation sees the averaged weights, and so do
            `callbacks` at each epoch's end (early stopping keeps the best
            average); training ends on the average.
        backup: None, or a folder where each epoch ends in a backup
            (`kerattn.callbacks.BackupAndRestore`): the same call resumes
            there, in another process or session, with the training's
            state: the budget's time and steps, and that of the
            `callbacks` that have one (`has_state`: early stopping, the
            plateau's decay), which the backup calls.
        pause_after: with `backup`, stop at the end of the epoch after
            which another would end past these minutes of this call's
            training, keeping the backup (`summary["paused"]`); the same
            call goes on.

    Returns:
        `(history, summary)`: Keras' `History` (this call's epochs) and a
        dict with `epochs`, `steps`, `train_minutes`, `final_loss`,
        `final_val_loss` and `val_losses` (with validation: the last
        epoch's, and each epoch's, the learning curve; with `backup`, the
        whole training's, earlier calls' included; `val_wers` likewise
        where a callback writes `val_wer` into the logs), `parameters`, and
        with `backup`, `paused` and `calls` (what each call trained and where:
        `BackupAndRestore.calls`).
    """
    checks.positive_number("learning_rate", learning_rate)
    checks.nonnegative_int("epochs", epochs)
    checks.nonnegative_int("warmup_steps", warmup_steps)
    checks.number("ema_momentum", ema_momentum, 0.0, 1.0, low_open=True,
                  high_open=True, allow_none=True)
    checks.require(backup is None or ema_momentum is None, "backup",
                   "None with ema_momentum", backup,
                   note="The backup would hold the average as the model's "
                        "weights (swapped in at each epoch's end) and resume "
                        "from it.")
    checks.require(pause_after is None or backup is not None, "pause_after",
                   "None without a backup (a pause keeps the backup to go on "
                   "from)", pause_after)
    checks.positive_number("pause_after", pause_after, allow_none=True)
    strategy = strategy or distribute.no_distribution()
    checks.require(minutes is None or strategy.processes == 1, "minutes",
                   "None when training on several processes", minutes,
                   note="Each process would stop on its own clock, at a "
                        "different step, and the others would wait for it "
                        "forever; set the epochs instead.")
    checks.require(pause_after is None or strategy.processes == 1,
                   "pause_after", "None when training on several processes",
                   pause_after, note="Each process would pause on its own "
                   "clock; stop them all and resume instead.")
    train, validation = _batches(train), _batches(validation, shuffle=False)
    schedule = learning_rate
    if warmup_steps:
        total = epochs * len(train)
        schedule = keras.optimizers.schedules.CosineDecay(
            0.0, max(total - warmup_steps, 1), alpha=0.1,
            warmup_target=learning_rate, warmup_steps=warmup_steps)
    ema = {} if ema_momentum is None else {"use_ema": True,
                                           "ema_momentum": ema_momentum}
    model.compile(optimizer=keras.optimizers.Adam(schedule, clipnorm=clipnorm,
                                                  **ema),
                  loss=loss, metrics=metrics)
    strategy.prepare(model)
    if strategy.kind != "none":
        train = strategy.shard(train)
        # torch: each process evaluates every validation row, so that
        # early stopping sees the same figures on every process (Keras'
        # torch trainer does not all-reduce metrics).
        if validation is not None and strategy.backend != "torch":
            validation = strategy.shard(validation)
    eta = bool(verbose) if eta is None else eta
    budget = TimeBudget(None if minutes is None else 60 * minutes, eta=eta)
    callbacks = [budget, *callbacks]
    if backup is not None:   # it calls the callbacks whose state it keeps
        kept = [c for c in callbacks if has_state(c)]
        backup = BackupAndRestore(
            backup, callbacks=kept,
            pause_after=None if pause_after is None else 60 * pause_after)
        # Last: its save sees a stop that any of the others decides.
        callbacks = [*(c for c in callbacks if not has_state(c)), backup]
    if ema:
        swap = keras.callbacks.SwapEMAWeights(swap_on_epoch=True)
        callbacks = [swap, *callbacks, _KeepAverage(swap)]
    history = model.fit(train, validation_data=validation, epochs=epochs,
                        callbacks=callbacks, verbose=verbose)
    logs = history.history if backup is None else backup.history
    summary = {"epochs": len(logs.get("loss", [])),
               "steps": budget.steps,
               "train_minutes": round(budget.elapsed() / 60, 2),
               "parameters": int(model.count_params())}
    if backup is not None:
        summary["paused"] = backup.paused
        summary["calls"] = backup.calls
    for key in ("loss", "val_loss"):
        if logs.get(key):
            summary[f"final_{key}"] = round(float(logs[key][-1]), 4)
    if logs.get("val_loss"):
        summary["val_losses"] = [round(float(v), 4) for v in logs["val_loss"]]
    if logs.get("val_wer"):   # a decoding callback's (g2p.ValidationErrorRates)
        summary["val_wers"] = [round(float(v), 2) for v in logs["val_wer"]]
    return history, summary


# -----------------------------------------------------------------------------
# A phase: an option switched on for the last steps of training


def carry_weights(source, target, moved=None):
    """Copy every weight of `source` into `target`: the start of a phase.

    A phase trains a converged model a few more steps with an option
    switched on (See et al.'s coverage and its loss for their final 3,000
    iterations): `target` is the same builder's model with the option on,
    and holds every weight of `source` at the same place: the same layer
    of the model (by name) and the same path inside it, with Keras'
    numbering of unnamed inner layers left out (a second model's
    `encoder/forward_lstm_2` is the first's `encoder/forward_lstm_1`), so
    `source` may be a model loaded from a file (`kerattn.load_run`); weights
    that this leaves at one place (a stack's `lstm` and `lstm_2` cells) are
    matched in the order their layer holds them. The weights
    only `target` has (coverage's `w_c`) keep their initial values, as in
    the paper's phase. The optimizer starts afresh: a control phase
    without the option (`target` built with the same options as `source`)
    starts the same way. `moved` maps a place of `source` to the place it
    has in `target` where an option moves it (a soft attention's
    `decoder/attention/W_a` is a monotonic one's
    `decoder/attention/energy/W_a`).

    Returns:
        The paths of `target`'s weights that `source` did not fill.

    Raises:
        ValueError: a weight of `source` has no place in `target`, or a
            place of another shape.
    """
    def by_place(model, name):
        weights, held, count = {}, set(), collections.Counter()
        for layer in model.layers:
            for variable in layer.weights:
                place = _place(layer.name, variable.path)
                if weights.get(place) is variable:   # held twice by a layer
                    continue
                # Keras' numbering left out, the weights of a stack's
                # layers share a place (`decoder/lstm/kernel`,
                # `decoder/lstm_2/kernel`): each after the first is told
                # by its rank among them, the order its layer holds them.
                rank, count[place] = count[place], count[place] + 1
                weights[place + (f"#{rank}" if rank else "")] = variable
                held.add(id(variable))
        checks.require(len(held) == len(model.weights), name, "a model whose "
                       "weights each belong to one of its layers")
        return weights

    sources, targets = by_place(source, "source"), by_place(target, "target")
    checks.require(moved is None or (isinstance(moved, dict)
                                     and set(moved) <= set(sources)),
                   "moved", "a dict from places of `source`'s weights to "
                   "places in `target`", sorted(moved) if isinstance(moved, dict)
                   else moved, note=f"`source`'s places: {sorted(sources)[:4]} ...")
    renamed = {(moved or {}).get(place, place): v for place, v in sources.items()}
    checks.require(len(renamed) == len(sources) and all(
        isinstance(place, str) for place in renamed), "moved",
        "places (strings) that no other weight of `source` takes",
        moved)
    sources = renamed
    missing = sorted(set(sources) - set(targets))
    checks.require(not missing, "target", "a model holding every weight of "
                   "`source` (the same builder and sizes, an option switched "
                   "on)", note=f"No place for {', '.join(missing[:3])}"
                   + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
                   + ".")
    for place, variable in sources.items():
        checks.same("source", tuple(variable.shape), "target",
                    tuple(targets[place].shape), f"shape of {place}")
        # A copy: under JAX an assigned array is shared, and training the
        # target (which donates its buffers) would delete the source's.
        targets[place].assign(np.array(keras.ops.convert_to_numpy(variable)))
    return [v.path for place, v in targets.items() if place not in sources]


def phase_rows(count, steps, batch_size, seed=0):
    """The training rows of a phase of `steps` batches: a random part of
    `count` rows, each once (all of them, shuffled, when they are fewer)."""
    checks.positive_int("steps", steps)
    return np.random.default_rng(seed).permutation(count)[:steps * batch_size]


def _place(layer, path):
    """A weight's place: its model's layer `layer` and its path inside it,
    less Keras' numbering of unnamed inner layers. A model loaded from a
    file names an inner layer's weights without the outer layer's name
    (`attention/W_a` for a built model's `decoder/attention/W_a`)."""
    inner = path[len(layer) + 1:] if path.startswith(layer + "/") else path
    return layer + "/" + re.sub(r"_\d+(?=/|$)", "", inner)


class _KeepAverage(keras.callbacks.Callback):
    """The averaged weights survive a stop before the last epoch.

    `SwapEMAWeights(swap_on_epoch=True)` puts the average into the model at
    each epoch's end (so that early stopping records it) and the model's
    own weights into the average's slots. At the end of `fit` Keras writes
    the slots into the model; the swap copies the average back into them
    only after the last of `epochs`. This callback, after every other,
    does the same when a callback (early stopping, the time budget) has
    stopped training sooner.
    """

    def __init__(self, swap):
        super().__init__()
        self.swap = swap

    def on_epoch_end(self, epoch, logs=None):
        # The swap's own epoch-start swap puts the model's weights back and
        # the average into its slots, which Keras then writes into the model.
        if self.model.stop_training and epoch != self.params["epochs"] - 1:
            self.swap.on_epoch_begin(epoch + 1)


def _batches(data, shuffle=True):
    if isinstance(data, tuple):
        x, y, batch_size = data
        return distribute.ArrayBatches(x, y, batch_size, shuffle=shuffle)
    return data


def _bucket(key):
    """An example's place in [0, 1], from the MD5 of its key (the rule of
    `kerattn.datasets.cmudict_g2p`'s split by word)."""
    return int(hashlib.md5(key.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF


def _key(example):
    """`split`'s default key: a pair's first item (its source text), an
    example's canonical JSON otherwise."""
    if isinstance(example, (tuple, list)) and example:
        example = example[0]
    return example if isinstance(example, str) else json.dumps(
        example, sort_keys=True, ensure_ascii=False)


def _groups(examples, key):
    """`{key: its examples}`, in the order of their first example; each
    key's examples in file order."""
    groups = {}
    for example in examples:
        groups.setdefault(key(example), []).append(example)
    return groups


def split(examples, key=None, valid_share=0.1, test_share=0.1,
          held_out=("valid", "test"), test=None):
    """A user's file of examples -> train / valid / test, by a hash of each
    example, so that the file's order cannot decide the test set.

    The rule of the built-in loaders (`kerattn.datasets.cmudict_g2p`): an
    example whose key hashes (MD5) below `test_share` is a test example,
    below `test_share + valid_share` a validation one, else a training one;
    examples with the same key (a source text given twice) fall together.
    Each split is in the order of those hashes, so `max_train` / `max_test`
    (the first examples of a split) are drawn by the hash too. A small file
    that leaves a split empty gives it a key from the split with the most
    keys (to a held-out split the smallest hash, to training the largest).

    Args:
        examples: a list of examples, of at least 3 distinct keys (2
            when the test split is not held out).
        key: the string an example is split by: a function of the example;
            None takes the example's canonical JSON (its first item for a
            pair: the source text).
        valid_share, test_share: the shares of the held-out splits.
        held_out: the held-out splits that must not be empty (a small
            file gives them a key each).
        test: the user's own test examples (their test file), or None:
            then `split_with_test(examples, test, key, valid_share)`.

    Returns:
        `{"train", "valid", "test"}`: lists of examples.

    Example:

    >>> pairs = [(f"source {i}", f"target {i}") for i in range(50)]
    >>> a, b = split(pairs), split(pairs[::-1])
    >>> a["test"] == b["test"] and len(a["test"]) >= 1
    True
    """
    if test is not None:
        return split_with_test(examples, test, key, valid_share)
    key = key or _key
    groups = _groups(examples, key)
    needed = 1 + len(held_out)
    checks.require(len(groups) >= needed, "data", f"a file of at least "
                   f"{needed} distinct examples (" + (
                       "train, validation and test" if needed == 3 else
                       "train and validation") + " take one each at least)",
                   note=f"It holds {len(groups)}.")
    keys = {"train": [], "valid": [], "test": []}   # (bucket, key), sorted
    for bucket, k in sorted((_bucket(k), k) for k in groups):
        keys["test" if bucket < test_share else "valid" if bucket < (
            test_share + valid_share) else "train"].append((bucket, k))
    for name in [n for n in ("test", "valid") if n in held_out] + ["train"]:
        if not keys[name]:
            donor = max(keys, key=lambda other: len(keys[other]))
            taken = keys[donor].pop(0 if name != "train" else -1)
            keys[name] = sorted(keys[name] + [taken])
    return {name: [e for _, k in keys[name] for e in groups[k]]
            for name in ("train", "valid", "test")}


def split_with_test(examples, test, key=None, valid_share=0.1):
    """A user's training file and their own test file -> train / valid /
    test: the test split is `test`, whole; `examples` give the training and
    validation splits by `split`'s hash rule (`valid_share` of their keys
    validation).

    A test example must not be trained on: an example of `examples` whose
    key (`split`'s: the source text, the word) is also a test key is left
    out of training and validation, with a warning that counts them and
    names the first. Each split is in the order of the keys' hashes, so
    `max_train` / `max_test` draw by the hash, as `split`'s.

    Args:
        examples: the training file's examples (at least 2 distinct keys
            not in `test`: training and validation take one each).
        test: the test file's examples (at least 1).
        key, valid_share: as `split`.

    Returns:
        `{"train", "valid", "test"}`: lists of examples.

    Example:

    >>> train = [(f"source {i}", f"target {i}") for i in range(50)]
    >>> test = [("source 3", "target 3"), ("new", "nouveau")]
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     splits = split_with_test(train, test)
    >>> sorted(splits["test"]) == sorted(test)
    True
    >>> len(splits["train"]) + len(splits["valid"]), str(caught[0].message)[:22]
    (49, '1 example of the train')
    """
    key = key or _key
    tested, given = _groups(test, key), _groups(examples, key)
    checks.require(len(tested) >= 1, "test_data", "a file of at least 1 "
                   "example (the test split)", note="It holds none.")
    shared = [k for k in given if k in tested]
    left_out = sum(len(given[k]) for k in shared)
    if left_out:
        first = shared[0]
        warnings.warn(
            f"{left_out} example{'s' if left_out > 1 else ''} of the training "
            f"data {'are' if left_out > 1 else 'is'} also in the test data "
            f"(the first: {first[:60]!r}); left out of training and "
            "validation, so the test split is never trained on.",
            stacklevel=2)
    kept = [e for k, group in given.items() if k not in tested for e in group]
    splits = split(kept, key=key, valid_share=valid_share, test_share=0.0,
                   held_out=("valid",))
    splits["test"] = [e for _, k in sorted((_bucket(k), k) for k in tested)
                      for e in tested[k]]
    return splits


def require_training_file(data, test_data):
    """A recipe's `fit` takes a user's test file beside their training
    file only: with `data` None it trains and tests on this machine's data
    and would not read `test_data`."""
    checks.require(bool(data) or not test_data, "test_data", "a test file "
                   "beside `data`, the training file (data=None trains and "
                   "tests on this machine's data)", test_data)


def split_in_order(examples, test=None):
    """A file whose neighbouring examples overlap -> train / valid / test by
    position: the last 10% the test split, the 10% before it the validation
    one (at least one each). For CBT questions (`read_cbt`), whose
    consecutive passages share sentences: a split by hash would put
    overlapping passages on both sides.

    `test`: the user's own test examples (a file of their own, whole); the
    last 10% of `examples` is then the validation split (at least one) and
    the rest training."""
    n = len(examples)
    if test is not None:
        checks.require(len(test) >= 1, "test_data", "a file of at least 1 "
                       "example (the test split)", note="It holds none.")
        checks.require(n >= 2, "data", "a file of at least 2 examples (train "
                       "and validation take one each at least)",
                       note=f"It holds {n}.")
        a = n - max(n // 10, 1)
        return {"train": examples[:a], "valid": examples[a:], "test": list(test)}
    checks.require(n >= 3, "data", "a file of at least 3 examples (train, "
                   "validation and test take one each at least)",
                   note=f"It holds {n}.")
    a, b = n - 2 * max(n // 10, 1), n - max(n // 10, 1)
    return {"train": examples[:a], "valid": examples[a:b], "test": examples[b:]}


class FitResult(tuple):
    """What each recipe's `fit` returns: `(model, summary, results, draw)`,
    as `model, summary, results, draw = recipe.fit(...)` unpacks it, and
    `run`, the model with its vocabularies (`kerattn.runs.Run`: `run.save
    (folder)` writes what `kerattn.load_run` loads back ready to use)."""

    def __new__(cls, model, summary, results, draw, run):
        self = super().__new__(cls, (model, summary, results, draw))
        self.run = run
        return self


def fitted(model, summary, results, draw, task, vocabularies, labels=None,
           search=None):
    """A `FitResult` whose run holds `vocabularies` (and `labels`, and the
    `search` its results were decoded with)."""
    from kerattn.runs import Run

    return FitResult(model, summary, results, draw,
                     Run(model, task, vocabularies, labels, search))


def interval95(accuracy, count):
    """Half the width of the 95% interval (normal approximation) of an
    `accuracy` measured on `count` test examples."""
    return 1.96 * (accuracy * (1 - accuracy) / count) ** 0.5
