"""Train zoo models a few steps on one device and distributed; compare.

Run by tests/test_distributed.py on two processes standing in for two hosts
(tests/hosts.py starts them as docs/distribution.md says), each in a fresh
interpreter because the devices are fixed before the backend starts:

    python tests/distributed_worker.py OUT.json DEVICES [MODEL...]
    python tests/distributed_worker.py OUT.json DEVICES --lost-worker STAGE BACKUP
    python tests/distributed_worker.py OUT.json DEVICES --barrier on|off[,on|off] SECONDS
    python tests/distributed_worker.py OUT.json DEVICES --one-host MODEL...

DEVICES is the virtual CPU devices of each JAX process (XLA_FLAGS); a
TensorFlow worker and a torch process have one. Each model (tiny,
dropout 0) trains STEPS steps on one global batch of 2 rows per replica
through `kerattn.distribute.data_parallel`, and on the chief also on one
device, with plain SGD (a weight difference is then a gradient difference
times the rate; Adam would turn float noise in a near-zero gradient into a
full step of the learning rate, whichever its sign). Every process writes
OUT-RANK.json: the chief's has, per model, the largest weight difference
and both runs' losses; every one has the rows it fed its replicas. Every
replica's rows have as many real target tokens as every other's, so the
mean of the replicas' losses is the global batch's loss (see
kerattn/distribute.py). One reference trains on the first replica's rows
alone: a distributed run that skipped the gradient all-reduce would match
that one instead. On JAX the transformer also trains model-parallel over
a (2, 2) mesh whose model axis spans the two processes.

The lost-worker scenario (`lost_worker`): HAN trains LOST_EPOCHS epochs of
3 global batches, backed up each epoch into BACKUP (one folder every
process reads). The main run trains it uninterrupted (the reference,
`lost-reference.npz`); `--lost-worker killed` stops process 1 at the
second batch of epoch LOST_STALL_EPOCH (it writes `stalled` beside OUT and
waits there for the test's SIGKILL); `--lost-worker resumed` is the job
started again, from another seed: only a restore gives the reference's
weights. `--barrier on|off[,on|off] SECONDS`: one run of one step for each
value, after each of which the chief "evaluates" (sleeps) SECONDS, then
calls `Strategy.barrier` where the value is "on".
"""

import functools
import json
import os
import sys
import time

import numpy as np

from kerattn import distribute, zoo
from kerattn.callbacks import BackupAndRestore

DEVICES = int(sys.argv[2]) if len(sys.argv) > 2 else 4
if os.environ.get("KERAS_BACKEND") != "torch":
    distribute.virtual_devices(DEVICES)

import keras  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_cases  # noqa: E402

STEPS = 3


def _without_dropout(case):
    make, data, kind = zoo_cases.CASES[case]
    return (lambda: make(dropout=0.0)), data, kind


# name -> (build, data, loss kind): zoo_cases' models with dropout 0.
CASES = {name: _without_dropout(name) for name in (
    "bahdanau_nmt", "luong_nmt", "seq2seq", "cho_encoder_decoder",
    "transformer_nmt", "convs2s_nmt", "han_classifier", "aoa_reader")}
CASES["show_attend_tell"] = _without_dropout("show_attend_tell_soft")
# Hard attention samples its locations: one global program on JAX (the
# same samples as one device), per replica on TensorFlow and torch.
HARD = _without_dropout("show_attend_tell_hard")


def global_batch(data, replicas):
    """2 rows per replica; rows 0-1 of zoo_cases' data, fresh ids each time.

    Rows 0 and 1 have full targets, so every replica holds as many real
    target tokens (row 1's source is padded: masks are exercised).
    """
    parts = [data(np.random.default_rng(k)) for k in range(replicas)]
    return keras.tree.map_structure(
        lambda *a: np.concatenate([x[:2] for x in a]), *parts)


class OneBatch(keras.utils.PyDataset):
    def __init__(self, batch):
        super().__init__()
        self.batch = batch

    def __len__(self):
        return 1

    def __getitem__(self, index):
        return self.batch


def train(name, batch, strategy=None, seed=0, shapes=None, callbacks=(),
          epochs=STEPS):
    make, _, kind = HARD if name == "show_attend_tell_hard" else CASES[name]
    keras.utils.set_random_seed(seed)
    if strategy is None:
        model = make()
        model.compile(keras.optimizers.SGD(0.3), zoo_cases.loss_for(kind))
        history = model.fit(OneBatch(batch), epochs=epochs, verbose=0, shuffle=False)
    else:
        with strategy.scope():
            model = make()
            model.compile(keras.optimizers.SGD(0.3), zoo_cases.loss_for(kind))
            strategy.prepare(model)
            history = model.fit(strategy.shard(OneBatch(batch)), epochs=epochs,
                                verbose=0, shuffle=False,
                                callbacks=list(callbacks))
            if shapes is not None:   # how ModelParallel stored ffn_inner
                kernel = next(v for v in model.weights
                              if v.path.endswith("ffn_inner/kernel"))
                shapes["ffn_inner_spec"] = list(kernel.value.sharding.spec)
                shapes["ffn_inner_shard_shape"] = list(
                    kernel.value.addressable_shards[0].data.shape)
    weights = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    return model, np.asarray(history.history["loss"], "float64"), weights


def max_diff(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b, strict=True))


def replica_mean(losses, strategy):
    """torch: each process reports its own rows' loss; average them."""
    if strategy.backend != "torch" or strategy.num_replicas == 1:
        return losses
    import torch
    import torch.distributed as dist

    total = torch.tensor(losses)
    dist.all_reduce(total)
    return (total / strategy.num_replicas).numpy()


def rows_fed(strategy, data):
    """Fingerprints of the rows this process feeds its replicas (the bytes
    of each row of every input and target), read from `strategy.shard`."""
    shard = strategy.shard(data)
    if strategy.backend == "tensorflow" and strategy.processes > 1:
        local = strategy.engine.experimental_local_results
        batches = [part for batch in shard for part in zip(*[
            local(leaf) for leaf in keras.tree.flatten(batch)])]
    else:
        batches = [keras.tree.flatten(shard[i]) for i in range(len(shard))]
    rows = []
    for leaves in batches:
        leaves = [keras.ops.convert_to_numpy(a) for a in leaves]
        rows += [b"".join(a[i].tobytes() for a in leaves)
                 for i in range(len(leaves[0]))]
    return sorted(r.hex() for r in rows)


def all_rows(batch):
    leaves = keras.tree.flatten(batch)
    return sorted(b"".join(np.asarray(a)[i].tobytes() for a in leaves).hex()
                  for i in range(len(leaves[0])))


def engine_chief(strategy):
    """Whether the engine itself names this process the chief."""
    if strategy.backend == "jax":
        import jax

        return jax.process_index() == 0
    if strategy.backend == "tensorflow":
        return bool(strategy.engine.extended.should_checkpoint)
    import torch.distributed as dist

    return dist.get_rank() == 0


def weight_spread(strategy, weights):
    """The largest difference of a weight's sum between processes (torch:
    DDP keeps them equal)."""
    if strategy.backend != "torch" or strategy.processes == 1:
        return 0.0
    import torch
    import torch.distributed as dist

    sums = torch.tensor([float(np.sum(w)) for w in weights])
    low, high = sums.clone(), sums.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    return float((high - low).abs().max())


def keras_20585(strategy):
    """What keras-team/keras#20585 still breaks under the multi-worker
    engine, without kerattn's two fixes (kerattn/keras_fixes.py): the
    error each fit raises, or None once Keras trains there on its own."""
    from keras.src.backend.tensorflow import trainer

    from kerattn import keras_fixes

    batch = global_batch(CASES["han_classifier"][1], strategy.num_replicas)
    found = {}

    def attempt(key, make):
        with strategy.scope():
            model = make()
            model.compile(keras.optimizers.SGD(0.3), "sparse_categorical_crossentropy")
        try:
            model.fit(strategy.shard(OneBatch(batch)), epochs=1, verbose=0)
            found[key] = None
        except ValueError as error:
            found[key] = str(error).splitlines()[0][:200]

    def plain():   # a keras.Model, without BuildOnOneReplicasBatch
        model = CASES["han_classifier"][0]()
        return keras.Model(model.inputs, model.outputs)

    attempt("symbolic_build", plain)
    fixed = trainer.reduce_per_replica
    trainer.reduce_per_replica = keras_fixes._MULTI_WORKER_REDUCE[0]
    try:
        attempt("metrics", CASES["han_classifier"][0])
    finally:
        trainer.reduce_per_replica = fixed
    return found


LOST_EPOCHS, LOST_BATCHES, LOST_ROWS_PER_REPLICA = 3, 3, 2
LOST_STALL_EPOCH = 2


def lost_worker_data(replicas):
    """LOST_BATCHES global batches of HAN documents, as one array each."""
    parts = [CASES["han_classifier"][1](np.random.default_rng(100 + k))
             for k in range(LOST_BATCHES * replicas)]
    return keras.tree.map_structure(
        lambda *a: np.concatenate([x[:LOST_ROWS_PER_REPLICA] for x in a]), *parts)


class StallAt(keras.callbacks.Callback):
    """Test hook: as batch 1 of epoch `epoch` begins, write `marker` and
    wait (for the test's SIGKILL: a lost host, mid-epoch)."""

    def __init__(self, epoch, marker):
        super().__init__()
        self.stall_epoch, self.marker, self.epoch = epoch, marker, None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if (self.epoch, batch) == (self.stall_epoch, 1):
            with open(self.marker + ".tmp", "w") as f:
                f.write(str(self.epoch))
            os.replace(self.marker + ".tmp", self.marker)
            time.sleep(600)


def lost_worker(strategy, backup, seed, stall=None):
    """HAN, LOST_EPOCHS epochs with `BackupAndRestore(backup)` (kept at the
    end); returns `(weights, epochs this run trained)`."""
    from kerattn.distribute import ArrayBatches

    make, _, kind = CASES["han_classifier"]
    x, y = lost_worker_data(strategy.num_replicas)
    batches = ArrayBatches(x, y, LOST_ROWS_PER_REPLICA * strategy.num_replicas,
                           shuffle=False)
    callbacks = [BackupAndRestore(backup, double_checkpoint=True,
                                  delete_checkpoint=False)]
    callbacks += [stall] if stall is not None else []
    keras.utils.set_random_seed(seed)
    with strategy.scope():
        model = make()
        model.compile(keras.optimizers.SGD(0.3), zoo_cases.loss_for(kind))
        strategy.prepare(model)
        history = model.fit(strategy.shard(batches), epochs=LOST_EPOCHS,
                            verbose=0, shuffle=False, callbacks=callbacks)
    weights = [keras.ops.convert_to_numpy(w) for w in model.trainable_weights]
    return weights, len(history.history["loss"])


def save_weights(path, weights, **extra):
    np.savez(path, *weights, **extra)


def lost_worker_stage(out_path, stage, backup):
    """`--lost-worker killed|resumed BACKUP`: see the module docstring."""
    strategy = distribute.data_parallel()
    folder = os.path.dirname(out_path)
    # The killed run starts as the reference did; the restarted one from
    # another seed, so that only a restore lands on the reference's weights.
    seed = (0 if stage == "killed" else 1000) + (
        0 if strategy.backend == "jax" else strategy.rank)
    stall = (StallAt(LOST_STALL_EPOCH, os.path.join(folder, "stalled"))
             if stage == "killed" and strategy.rank == 1 else None)
    weights, epochs = lost_worker(strategy, backup, seed, stall)
    if strategy.is_chief:
        save_weights(os.path.join(folder, f"lost-{stage}.npz"), weights,
                     epochs=epochs)
    strategy.barrier("lost worker")


def barrier_stage(out_path, uses, seconds):
    """`--barrier on|off[,on|off] SECONDS`: a run for each of `uses`, the
    chief's evaluation after each, then the barrier where it is "on"."""
    strategy = distribute.data_parallel()
    batch = global_batch(CASES["han_classifier"][1], strategy.num_replicas)
    seed = 0 if strategy.backend == "jax" else strategy.rank
    for use in uses.split(","):
        train("han_classifier", batch, strategy, seed=seed)
        if strategy.is_chief:
            # The chief evaluates, decodes, saves: the other goes on into the
            # next run's first collective step (torch's timeout; TensorFlow
            # waits there), after the last run to the exit (JAX's timeout).
            time.sleep(seconds)
        if use == "on":
            strategy.barrier("evaluation")
    root, ext = os.path.splitext(out_path)
    with open(f"{root}-{strategy.rank}{ext}", "w") as f:
        json.dump({"rank": strategy.rank, "done": True}, f)


def one_host_stage(out_path, names):
    """`--one-host MODEL...`: one process, its devices (TensorFlow's
    `MirroredStrategy`, JAX's `DataParallel`) against one device."""
    strategy = distribute.data_parallel()
    results = {"replicas": strategy.num_replicas,
               "engine": type(strategy.engine).__name__, "models": {}}
    for name in names:
        batch = global_batch(CASES[name][1], strategy.num_replicas)
        _, losses, weights = train(name, batch, strategy)
        _, ref_losses, ref_weights = train(name, batch)
        first = keras.tree.map_structure(lambda a: a[:2], batch)
        results["models"][name] = {
            "weight_diff": max_diff(weights, ref_weights),
            "losses": losses.tolist(), "reference_losses": ref_losses.tolist(),
            "one_replica_only_diff": max_diff(train(name, first)[2], ref_weights)}
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)


def main(out_path, names):
    """Every process runs all of it (the engines' steps are collective);
    each writes its own report, `out_path` with its index before `.json`."""
    strategy = distribute.data_parallel()
    replicas = strategy.num_replicas
    # torch DDP and TF's multi-worker engine broadcast the first worker's
    # weights: the others start from other ones. JAX's processes must
    # start alike (one global program).
    seed = 0 if strategy.backend == "jax" else strategy.rank
    results = {"backend": keras.backend.backend(), "replicas": replicas,
               "processes": strategy.processes, "rank": strategy.rank,
               "chief": distribute.is_chief(),
               "engine_chief": engine_chief(strategy), "models": {}}
    for name in names:
        batch = global_batch(CASES[name][1], replicas)
        _, losses, weights = train(name, batch, strategy, seed=seed)
        losses = replica_mean(losses, strategy)
        if strategy.is_chief:
            _, ref_losses, ref_weights = train(name, batch)
            results["models"][name] = {
                "weight_diff": max_diff(weights, ref_weights),
                "losses": losses.tolist(), "reference_losses": ref_losses.tolist()}
            if "one_replica_only" not in results:
                # What a run that skipped the all-reduce would match: the
                # first replica's rows alone.
                first = keras.tree.map_structure(lambda a: a[:2], batch)
                results["one_replica_only"] = {
                    "diff_to_global": max_diff(train(name, first)[2],
                                               ref_weights),
                    "distributed_diff": max_diff(weights, ref_weights)}
    batch = global_batch(CASES["bahdanau_nmt"][1], replicas)
    results["rows"] = {"mine": rows_fed(strategy, OneBatch(batch)),
                       "all": all_rows(batch)}
    name = "show_attend_tell_hard"
    batch = global_batch(HARD[1], replicas)
    # Backed up in "backup" under each host's own directory: only the
    # chief's must exist.
    backup = BackupAndRestore("backup", delete_checkpoint=False)
    _, losses, weights = train(name, batch, strategy, seed=seed,
                               callbacks=[backup])
    spread = weight_spread(strategy, weights)
    # Compared with one device on JAX only (elsewhere the samples differ).
    diff = (max_diff(weights, train(name, batch)[2])
            if strategy.backend == "jax" and strategy.is_chief else None)
    results["hard_attention"] = {
        "finite": bool(np.all(np.isfinite(losses))),
        "weight_diff": diff, "rank_spread": spread}
    if keras.backend.backend() == "jax":
        # The model axis across the processes: each of a process's devices
        # pairs with one of the other's, and holds half of every split kernel.
        import jax

        by_process = [[d for d in jax.devices() if d.process_index == p]
                      for p in range(jax.process_count())]
        devices = [f"{d.platform}:{d.id}" for pair in zip(*by_process)
                   for d in pair]
        batch = global_batch(CASES["transformer_nmt"][1], replicas)
        mp = distribute.model_parallel(
            functools.partial(zoo.layout_map, "transformer_nmt"),
            model_axis_size=2, devices=devices)
        results["model_parallel_rows"] = len(rows_fed(mp, OneBatch(batch)))
        shapes = {}
        _, losses, weights = train("transformer_nmt", batch, mp, shapes=shapes)
        _, ref_losses, ref_weights = train("transformer_nmt", batch)
        results["model_parallel"] = {
            "weight_diff": max_diff(weights, ref_weights),
            "losses": losses.tolist(), "reference_losses": ref_losses.tolist(),
            **shapes}
        # BackupAndRestore under ModelParallel: 2 epochs backed up (the split
        # kernels gathered to be written), then the job again from another
        # seed restores them into the split layout and trains the third.
        backup = os.path.join(os.path.dirname(out_path), "model-parallel-backup")
        train("transformer_nmt", batch, mp, epochs=STEPS - 1, callbacks=[
            BackupAndRestore(backup, delete_checkpoint=False)])
        shapes = {}
        _, losses, resumed = train("transformer_nmt", batch, mp, seed=7,
                                   shapes=shapes, callbacks=[BackupAndRestore(
                                       backup, delete_checkpoint=False)])
        results["model_parallel_backup"] = {
            "weight_diff": max_diff(resumed, weights),
            "epochs_after_restore": len(losses), **shapes}
    if strategy.backend == "tensorflow":
        results["keras_20585"] = keras_20585(strategy)
    # The lost-worker test's reference: uninterrupted, from seed 0.
    folder = os.path.dirname(out_path)
    weights, epochs = lost_worker(strategy, os.path.join(folder, "lost-reference"),
                                  seed)
    if strategy.is_chief:
        save_weights(os.path.join(folder, "lost-reference.npz"), weights,
                     epochs=epochs)
    root, ext = os.path.splitext(out_path)
    with open(f"{root}-{strategy.rank}{ext}", "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    if sys.argv[3:4] == ["--lost-worker"]:
        lost_worker_stage(sys.argv[1], sys.argv[4], sys.argv[5])
    elif sys.argv[3:4] == ["--one-host"]:
        one_host_stage(sys.argv[1], sys.argv[4:])
    elif sys.argv[3:4] == ["--barrier"]:
        barrier_stage(sys.argv[1], sys.argv[4], float(sys.argv[5]))
    else:
        main(sys.argv[1], sys.argv[3:])
