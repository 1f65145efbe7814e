"""Training on several devices and hosts, on each backend's own engine.

kerattn has no distribution code of its own: this module picks the engine
that Keras supports on the current backend and wires a zoo model to it.

| backend    | one host                                | several hosts                    | model parallel |
|------------|-----------------------------------------|----------------------------------|----------------|
| JAX        | `keras.distribution.DataParallel`       | the same, after `keras.distribution.initialize` | `ModelParallel` + a `LayoutMap` (`kerattn.zoo.layout_map`) |
| TensorFlow | `tf.distribute.MirroredStrategy`        | `MultiWorkerMirroredStrategy` (TF_CONFIG) | not supported by Keras |
| torch      | `DistributedDataParallel` (torchrun)    | the same, `torchrun --nnodes N`  | not supported by Keras |

The three run the same program:

    strategy = kerattn.distribute.data_parallel()
    with strategy.scope():
        model = kerattn.zoo.bahdanau_nmt(8000, 8000)
        model.compile(optimizer="adam", loss=MaskedSparseCrossentropy())
        strategy.prepare(model)
        model.fit(strategy.shard(batches), epochs=10)
    if strategy.is_chief:
        model.save("model.keras")

- Every process reads the same global batches (seeded) and `shard` keeps
  its own rows of each: torch's rank, JAX's process (Keras' JAX trainer
  puts them together with `jax.make_array_from_process_local_data`),
  TensorFlow's worker (through the engine's
  `distribute_datasets_from_function`). On one host, JAX and TensorFlow
  split each batch over the devices themselves.
- `rank` is the process's index (`process_index`, read from each engine's
  own variables); rank 0, the chief, is the one that writes.
- Leaving `scope` gives every process the whole model, off the engine
  (JAX gathers the variables from the processes' devices; TensorFlow's
  multi-worker engine lets go of them), so that the chief alone can then
  evaluate, decode and save.

On every engine the loss of a step is the mean of the replicas' own
means, and the gradients are averaged over replicas (divided by their
number on TensorFlow, averaged by DDP, one global program on JAX): equal to
single-device training on the same global batch when each replica holds
as many real (non-PAD) target tokens; with uneven padding the replicas'
tokens are weighted a little differently.
"""

import atexit
import contextlib
import datetime
import os

import keras
import numpy as np

from kerattn import checks

__all__ = ["Strategy", "data_parallel", "model_parallel", "no_distribution",
           "process_index", "is_chief", "engine_timeout", "layout_map", "ProcessShard",
           "ArrayBatches", "virtual_devices", "add_arguments", "from_arguments"]



def _backend():
    return keras.backend.backend()


def virtual_devices(count):
    """Split this machine's CPU into `count` devices, to try distribution.

    Call it before Keras (JAX: before `jax` is imported) or TensorFlow has
    started. JAX reads `XLA_FLAGS=--xla_force_host_platform_device_count`;
    TensorFlow gets `count` logical CPU devices; torch needs none (one
    process per device, see `torchrun`). Returns the number of devices set.

    Args:
        count: a positive int.

    Example:

    >>> virtual_devices(0)
    Traceback (most recent call last):
    ...
    ValueError: `count` must be a positive integer; received 0.
    """
    checks.positive_int("count", count)
    backend = os.environ.get("KERAS_BACKEND")
    if backend is None:
        backend = _backend()
    if backend == "jax":
        flag = f"--xla_force_host_platform_device_count={count}"
        flags = [f for f in os.environ.get("XLA_FLAGS", "").split()
                 if not f.startswith("--xla_force_host_platform_device_count")]
        os.environ["XLA_FLAGS"] = " ".join(flags + [flag])
    elif backend == "tensorflow":
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * count)
    return count


def _tf_workers():
    """TF_CONFIG's `(task index among the training tasks, their count)`.

    The training tasks are "chief" (if any) then "worker", in that order,
    as `MultiWorkerMirroredStrategy` numbers them; None without TF_CONFIG
    or with a single task.
    """
    import json

    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster = config.get("cluster", {})
    tasks = [("chief", i) for i in range(len(cluster.get("chief", [])))] + \
        [("worker", i) for i in range(len(cluster.get("worker", [])))]
    if len(tasks) < 2:
        return None
    task = config.get("task", {})
    mine = (task.get("type"), int(task.get("index", 0)))
    checks.require(mine in tasks, "TF_CONFIG", "a task of type 'chief' or "
                   "'worker' among its cluster's", config.get("task"))
    return tasks.index(mine), len(tasks)


def process_index():
    """`(index, count)` of this process among the processes that train.

    Read without starting the engine: torch's process group, else
    `RANK`/`WORLD_SIZE` (torchrun); JAX's, once `jax.distributed` is
    initialized, else `KERAS_DISTRIBUTION_PROCESS_ID`/
    `KERAS_DISTRIBUTION_NUM_PROCESSES` (`keras.distribution.initialize`),
    TensorFlow's `TF_CONFIG` (the chief task, else worker 0, is index 0).
    `(0, 1)` when none is set.

    Example:

    >>> process_index()
    (0, 1)
    """
    backend = os.environ.get("KERAS_BACKEND") or _backend()
    if backend == "torch":
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return (int(os.environ.get("RANK", 0)),
                int(os.environ.get("WORLD_SIZE", 1)))
    if backend == "jax":
        from kerattn import keras_fixes

        joined = keras_fixes.jax_processes()   # initialize has run
        if joined is not None:
            return joined
        if "KERAS_DISTRIBUTION_NUM_PROCESSES" not in os.environ:
            return 0, 1
        return (int(os.environ.get("KERAS_DISTRIBUTION_PROCESS_ID", 0)),
                int(os.environ["KERAS_DISTRIBUTION_NUM_PROCESSES"]))
    return _tf_workers() or (0, 1)


def _jax_process():
    """JAX's own `(process_index, process_count)`, once it runs."""
    import jax

    return jax.process_index(), jax.process_count()


def is_chief():
    """Whether this process is the one that writes (index 0, see
    `process_index`): results, pictures, `.keras` files, backups.

    Example:

    >>> is_chief()
    True
    """
    return process_index()[0] == 0


_HOSTS_READY = []


# How long a process waits for the others in a collective step before its
# engine gives up, in seconds: torch's process-group timeout, JAX's
# heartbeat and exit timeouts, TensorFlow's collective timeout. Unset: each
# engine's default (gloo 30 min, NCCL 10 min; JAX 100 s / 300 s;
# TensorFlow none).
ENGINE_TIMEOUT = "KERATTN_ENGINE_TIMEOUT"
# `Strategy.barrier`'s default wait: longer than any evaluation.
BARRIER_TIMEOUT = 24 * 3600


def engine_timeout():
    """`KERATTN_ENGINE_TIMEOUT` in seconds, or None (the engines' defaults).

    How long a process waits for the others in a collective step before its
    engine raises: torch's process-group timeout
    (`init_process_group(timeout=)`), JAX's heartbeat and exit timeouts
    (`jax.distributed.initialize(heartbeat_timeout_seconds=,
    shutdown_timeout_seconds=)`), TensorFlow's collective timeout
    (`CommunicationOptions(timeout_seconds=)`). A short one bounds how long
    the healthy processes wait when one dies; the chief's evaluation then
    needs `Strategy.barrier`, whose wait is its own.

    Example:

    >>> engine_timeout() is None or engine_timeout() > 0
    True
    """
    value = os.environ.get(ENGINE_TIMEOUT)
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    checks.require(seconds > 0, ENGINE_TIMEOUT, "a positive number of seconds",
                   value)
    return seconds


def _initialize_hosts():
    """JAX on several hosts: join them, once, when Keras' variables say so.

    `keras.distribution.initialize` reads KERAS_DISTRIBUTION_JOB_ADDRESSES,
    KERAS_DISTRIBUTION_NUM_PROCESSES and KERAS_DISTRIBUTION_PROCESS_ID;
    `engine_timeout()` sets JAX's heartbeat and exit timeouts.
    """
    if _HOSTS_READY or "KERAS_DISTRIBUTION_NUM_PROCESSES" not in os.environ:
        return
    from kerattn import keras_fixes

    with keras_fixes.jax_initialize_timeouts(engine_timeout()):
        keras.distribution.initialize()
    _HOSTS_READY.append(True)


def _process_group():
    """(rank, world size) of torch.distributed, joining the group if needed."""
    import torch
    import torch.distributed as dist

    if not dist.is_available():
        raise RuntimeError("torch.distributed is not available in this build.")
    if not dist.is_initialized():
        if "RANK" not in os.environ:
            return 0, 1
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        timeout = engine_timeout()
        if timeout is None:
            dist.init_process_group(backend)
        else:
            dist.init_process_group(
                backend, timeout=datetime.timedelta(seconds=timeout))
        # Strategy.barrier's group, made now, while every process is here:
        # gloo (NCCL has no monitored barrier), with the barrier's own long
        # timeout (a gloo recv waits no longer than its group's timeout).
        _TORCH_BARRIER_GROUP[:] = [dist.new_group(
            backend="gloo", timeout=datetime.timedelta(seconds=BARRIER_TIMEOUT))]
        atexit.register(dist.destroy_process_group)
    return dist.get_rank(), dist.get_world_size()


_TORCH_BARRIER_GROUP = []


class _CallThrough:
    """The model, except that calling it goes through the DDP wrapper.

    `fit`'s train step is Keras' own (`type(model).train_step`) run on this
    stand-in: the forward pass is `ddp(x)` so DDP's reducer sees it and the
    backward pass all-reduces the gradients; every other attribute (loss,
    optimizer, metrics, weights) is the model's.
    """

    def __init__(self, model, ddp):
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_ddp", ddp)

    def __call__(self, *args, **kwargs):
        return self._ddp(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._model, name)

    def __setattr__(self, name, value):
        setattr(self._model, name, value)


class Strategy:
    """How a model trains on several devices; made by `data_parallel`,
    `model_parallel` or `no_distribution`.

    Args:
        kind: "data", "model" or "none".
        backend: the Keras backend it is for.
        engine: the backend's object (see below).
        num_replicas: see below.
        rank: this process's index.
        processes: how many processes train together.

    Attributes:
        kind: "data", "model" or "none".
        backend: the Keras backend it is for.
        num_replicas: model copies that each take a slice of the global
            batch (processes on torch, devices on JAX and TensorFlow,
            divided by the model axis under model parallelism).
        rank: this process's index among `processes` (see
            `process_index`); rank 0 is the chief, the one that writes.
        processes: how many processes train together (torchrun's
            processes, JAX's `keras.distribution.initialize` processes,
            TF_CONFIG's workers); 1 on one host with one process.
        engine: the backend object behind it (`keras.distribution`
            distribution, `tf.distribute.MirroredStrategy` or
            `MultiWorkerMirroredStrategy`, or None on torch, where the
            process group is the engine).

    Example:

    >>> strategy = no_distribution()
    >>> with strategy.scope():
    ...     model = kerattn.zoo.han_classifier(40, 3, embedding_dim=8, word_units=4,
    ...                                        sentence_units=4, attention_units=4)
    ...     model.compile("adam", "sparse_categorical_crossentropy")
    ...     model = strategy.prepare(model)
    ...     batches = strategy.shard(ArrayBatches(
    ...         {"document_ids": np.ones((8, 2, 3), "int32")}, np.zeros(8, "int32"), 4))
    ...     history = model.fit(batches, epochs=1, verbose=0)
    """

    def __init__(self, kind, backend, engine, num_replicas, rank=0,
                 processes=1):
        self.kind, self.backend, self.engine = kind, backend, engine
        self.num_replicas, self.rank = num_replicas, rank
        self.processes = processes
        self._models = []
        self._barriers = 0

    @property
    def is_chief(self):
        """Whether this process writes results (rank 0)."""
        return self.rank == 0

    def barrier(self, name="barrier", timeout=BARRIER_TIMEOUT):
        """Wait here until every process has come here, for at most
        `timeout` seconds; nothing on one process.

        After training the chief evaluates, decodes and saves alone while
        the others go on: to the end of the program (where JAX's processes
        wait for each other for `engine_timeout()`, 300 s by default) or
        into the next run's first collective step (torch's process-group
        timeout, 30 min for gloo). An evaluation longer than that would
        strand them. The barrier waits through each engine's coordination
        channel with its own timeout, longer than any evaluation: JAX's and
        TensorFlow's coordination service, torch's gloo `monitored_barrier`.
        Every process must call it, in the same order.

        Args:
            name: a label for the engine's logs.
            timeout: seconds to wait (default 24 hours).

        Example:

        >>> no_distribution().barrier("after evaluation")
        """
        checks.number("timeout", timeout, 0, allow_none=False)
        if self.processes == 1:
            return
        self._barriers += 1
        label = f"kerattn-{name}-{self._barriers}"
        if self.backend == "torch":
            import torch.distributed as dist

            # The group made by `_process_group`; the default group (gloo,
            # or an error naming it) when the caller made the process group.
            group = _TORCH_BARRIER_GROUP[0] if _TORCH_BARRIER_GROUP else None
            dist.monitored_barrier(group=group,
                                   timeout=datetime.timedelta(seconds=timeout),
                                   wait_all_ranks=True)
            return
        from kerattn import keras_fixes

        keras_fixes.coordination_barrier(self.backend, label, timeout)

    @contextlib.contextmanager
    def scope(self):
        """Build, compile and fit the model inside this context.

        On leaving it, every process holds the whole of each model passed
        to `prepare`, on its own device, off the engine: with JAX on several
        processes each variable is gathered from the processes' devices,
        and TensorFlow's multi-worker engine lets go of the model (both
        collective steps: every process leaves the scope). The chief alone
        can then evaluate, decode and save.
        """
        if self.backend == "torch" or self.engine is None:
            yield self
            return
        with self.engine.scope():
            yield self
        if self.processes == 1:
            return
        from kerattn import keras_fixes

        for model in self._models:
            if self.backend == "jax":
                keras_fixes.jax_variables_here(model)
            else:
                keras_fixes.tensorflow_variables_here(model)
        self._models.clear()

    def prepare(self, model):
        """Make `model.fit` train it distributed; returns `model`.

        On torch, DDP wraps the built model: parameters are broadcast from
        rank 0, gradients all-reduced in `fit`. With JAX or TensorFlow on
        several processes the model comes off the engine when the scope
        ends (see `scope`).
        Otherwise it returns the model unchanged. Call it after `compile`,
        and again after changing which weights are trainable (DDP
        all-reduces the gradients of the weights trainable when it wraps).

        Args:
            model: a built Keras model, compiled.
        """
        if self.processes > 1 and self.backend != "torch":
            self._models.append(model)
        if self.backend != "torch" or self.num_replicas == 1:
            return model
        import torch

        checks.require(model.built, "model", "built before `prepare`", model,
                       note="A zoo model is built when it is made.")
        device_ids = ([torch.cuda.current_device()]
                      if torch.cuda.is_available() else None)
        ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
        stand_in = _CallThrough(model, ddp)
        train_step = type(model).train_step
        # Held only by this closure: as an attribute of the model, the DDP
        # module would become its submodule (and `model.train()` recurse).
        model.train_step = lambda data: train_step(stand_in, data)
        model.train_function = None     # fit makes it again, from train_step
        return model

    def shard(self, data):
        """The part of `data` this process trains on.

        Every process reads the same global batches (seed their shuffling)
        and keeps its own rows of each, as its engine expects:

        - torch: a `ProcessShard`, this rank's block of rows of every batch.
        - JAX: this process's block (`jax.make_array_from_process_local_data`
          then splits it over the process's devices), cut to a multiple of
          the device count, which Keras' data sharding needs.
        - TensorFlow, one worker: the batch cut to a multiple of the
          replicas (Keras' trainer averages the first batch of every `fit`,
          `evaluate` and `predict` over the replicas, which fails when they
          hold different numbers of rows); `MirroredStrategy` splits it.
        - TensorFlow, several workers (`MultiWorkerMirroredStrategy`): a
          distributed dataset made by the engine
          (`distribute_datasets_from_function`), each worker's pipeline
          giving each of its replicas its own block of every batch.

        At most `num_replicas - 1` rows of a batch are left out. A
        `tf.data.Dataset` of batches is cut the same way, in the graph.

        Args:
            data: a `keras.utils.PyDataset` (or a list of `(x, y)` batches),
                or a batched `tf.data.Dataset`.
        """
        if self.num_replicas == 1:
            return data
        if self.backend == "tensorflow" and self.processes > 1:
            return _multi_worker_dataset(self.engine, data)
        if self.backend == "torch":
            rank, shards, multiple = self.rank, self.num_replicas, 1
        elif self.backend == "jax" and self.processes > 1:
            rank, shards, multiple = _jax_block(self.engine)   # its block
        else:   # one process: the whole batch, split by the engine
            rank, shards, multiple = 0, 1, self.num_replicas
        if type(data).__module__.startswith("tensorflow"):
            return _shard_dataset(data, rank, shards, multiple)
        return ProcessShard(data, rank, shards, multiple=multiple)


def _jax_block(distribution):
    """`(rank, shards, multiple)`: this process's rows of a global batch
    under a `keras.distribution` distribution, as `ProcessShard` takes them.

    The batch is split in equal blocks over the mesh's batch axis; this
    process feeds the blocks of its own devices' positions on that axis
    (every process feeds the whole batch when the batch axis lies within
    one process, e.g. a model axis across the processes).
    """
    import jax

    mesh = distribution.device_mesh
    axis = mesh.axis_names.index(getattr(distribution, "batch_dim_name",
                                         mesh.axis_names[0]))
    positions = np.moveaxis(np.asarray(mesh.devices, dtype=object), axis, 0)
    local = {f"{d.platform}:{d.id}" for d in jax.local_devices()}
    mine = [i for i, block in enumerate(positions)
            if any(str(d).lower() in local for d in np.ravel(block))]
    checks.require(bool(mine), "devices", "a mesh with some of this "
                   "process's devices", sorted(local))
    checks.require(mine == list(range(mine[0], mine[0] + len(mine))),
                   "devices", "each process's devices at consecutive "
                   "positions of the mesh's batch axis", mine)
    count = len(positions)
    return mine[0] // len(mine), count // len(mine), len(mine)


def _multi_worker_dataset(engine, data):
    """`data`'s batches as `MultiWorkerMirroredStrategy` takes them: each
    worker's pipeline yields, for every global batch, one block of rows for
    each of its replicas in turn."""
    import tensorflow as tf

    def per_worker(context):
        local = context.num_replicas_in_sync // context.num_input_pipelines
        first = context.input_pipeline_id * local
        if type(data).__module__.startswith("tensorflow"):
            parts = [_shard_dataset(data, first + j,
                                    context.num_replicas_in_sync, 1)
                     for j in range(local)]
            if local == 1:
                return parts[0]
            return tf.data.Dataset.zip(tuple(parts)).flat_map(
                lambda *blocks: _concatenated(
                    [tf.data.Dataset.from_tensors(b) for b in blocks]))
        shards = [ProcessShard(data, first + j, context.num_replicas_in_sync)
                  for j in range(local)]

        def batches():
            for index in range(len(data)):
                for shard in shards:
                    yield keras.tree.lists_to_tuples(shard[index])
            shards[0].on_epoch_end()

        signature = keras.tree.map_structure(
            lambda a: tf.TensorSpec([None] * np.ndim(a), np.asarray(a).dtype),
            keras.tree.lists_to_tuples(shards[0][0]))
        return tf.data.Dataset.from_generator(batches,
                                              output_signature=signature)

    return engine.distribute_datasets_from_function(per_worker)


def _concatenated(datasets):
    out = datasets[0]
    for more in datasets[1:]:
        out = out.concatenate(more)
    return out


def _shard_dataset(data, rank, num_shards, multiple):
    """`ProcessShard` for a batched `tf.data.Dataset`."""
    import tensorflow as tf

    step = multiple * num_shards

    def rows(*batch):
        return tf.shape(tf.nest.flatten(batch)[0])[0]

    def cut(*batch):
        block = rows(*batch) // step * multiple
        start = rank * block
        out = tf.nest.map_structure(lambda a: a[start:start + block], batch)
        return out if len(out) > 1 else out[0]

    return data.filter(lambda *b: rows(*b) >= step).map(cut)


def no_distribution():
    """One device, as without this module: `scope`, `prepare` and `shard`
    change nothing. Lets a script take the same path either way.

    Example:

    >>> strategy = no_distribution()
    >>> strategy.num_replicas, strategy.is_chief
    (1, True)
    """
    return Strategy("none", _backend(), None, 1)


def _devices(devices, found):
    """`devices` (None, a count or names) as a list of the `found` names."""
    if devices is None:
        return list(found)
    checks.require(not isinstance(devices, bool)
                   and isinstance(devices, (int, list, tuple)), "devices",
                   "None, a device count or a list of device names", devices)
    if isinstance(devices, int):
        checks.require(1 <= devices <= len(found), "devices",
                       f"between 1 and the {len(found)} devices there are",
                       devices)
        return list(found[:devices])
    return list(devices)


def data_parallel(devices=None):
    """Data-parallel training on the current backend's engine.

    Args:
        devices: None (every device: JAX's and TensorFlow's GPUs, or the
            CPU devices when there is none; under torch, the `torchrun`
            processes), a number of them, or a list of device names
            (`"gpu:0"`, `"/gpu:1"`).

    Returns:
        A `Strategy`.

    Example:

    >>> strategy = data_parallel()
    >>> with strategy.scope():
    ...     model = kerattn.zoo.bahdanau_nmt(50, 50, embedding_dim=8, units=8,
    ...                                      alignment_units=8, maxout_units=8)
    >>> model = strategy.prepare(model)
    >>> strategy.num_replicas >= 1
    True
    """
    backend = _backend()
    if backend == "jax":
        _initialize_hosts()
        index, processes = _jax_process()
        devices = _devices(devices, keras.distribution.list_devices())
        engine = keras.distribution.DataParallel(devices=devices)
        if processes > 1:   # `shard` gives each process its own rows
            engine.auto_shard_dataset = False
        return Strategy("data", backend, engine, len(devices), index, processes)
    workers = _tf_workers() if backend == "tensorflow" else None
    if workers:   # (index, count) of TF_CONFIG's several workers
        return _multi_worker(devices, *workers)
    if backend == "tensorflow":
        import tensorflow as tf

        logical = tf.config.list_logical_devices("GPU") or \
            tf.config.list_logical_devices("CPU")
        devices = _devices(devices, [d.name for d in logical])
        engine = tf.distribute.MirroredStrategy(devices)
        return Strategy("data", backend, engine, engine.num_replicas_in_sync)
    checks.require(devices is None, "devices", "None under torch", devices,
                   note="DDP runs one process per device; start them with "
                        "torchrun --nproc_per_node.")
    rank, world = _process_group()
    return Strategy("data", backend, None, world, rank, world)


def _multi_worker(devices, index, processes):
    """`MultiWorkerMirroredStrategy` over TF_CONFIG's workers."""
    import tensorflow as tf

    from kerattn import keras_fixes

    checks.require(devices is None, "devices", "None when TF_CONFIG names "
                   "several workers", devices,
                   note="Each worker trains on all of its own devices.")
    timeout = engine_timeout()
    options = None if timeout is None else \
        tf.distribute.experimental.CommunicationOptions(timeout_seconds=timeout)
    engine = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    keras_fixes.multi_worker_metrics()
    return Strategy("data", "tensorflow", engine, engine.num_replicas_in_sync,
                    index, processes)


# The zoo models with a layout, by builder name (the deprecated string forms
# of `layout_map` and `model_parallel`): read from Keras' registry of
# serializable classes, so that distribution imports no model.
_LAYOUT_CLASSES = {"transformer_nmt": "kerattn>TransformerNMT",
                   "seq2seq": "kerattn>Seq2Seq"}


def _zoo_layout(name):
    """Zoo model `name`'s `get_layout_map` (a function of the mesh)."""
    checks.one_of("name", name, sorted(_LAYOUT_CLASSES))
    cls = keras.saving.get_registered_object(_LAYOUT_CLASSES[name])
    checks.require(cls is not None, "name", "a zoo model imported with "
                   "kerattn", name)
    return cls.get_layout_map


def _zoo_layouts(name, warned):
    """The deprecated string forms."""
    import warnings

    warnings.warn(f"{warned} is deprecated: pass "
                  "`functools.partial(kerattn.zoo.layout_map, NAME)` (or a "
                  "`keras.distribution.LayoutMap`) to "
                  "`kerattn.distribute.model_parallel`, and call "
                  "`kerattn.zoo.layout_map` for the map itself.",
                  DeprecationWarning, stacklevel=3)
    return _zoo_layout(name)


def layout_map(name, device_mesh):
    """Deprecated: `kerattn.zoo.layout_map(name, device_mesh)`.

    Args:
        name: "transformer_nmt" or "seq2seq".
        device_mesh: a `keras.distribution.DeviceMesh` with a "model" axis.

    Example:

    >>> import keras, warnings
    >>> mesh = keras.distribution.DeviceMesh((2, 2), ["batch", "model"],
    ...                                      [f"gpu:{i}" for i in range(4)])
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     layouts = layout_map("transformer_nmt", mesh)
    >>> layouts["decoder_1/ffn_inner/kernel"].axes
    (None, 'model')
    """
    checks.require("model" in getattr(device_mesh, "axis_names", ()),
                   "device_mesh", "a keras.distribution.DeviceMesh with a "
                   "'model' axis", device_mesh)
    return _zoo_layouts(name, "kerattn.distribute.layout_map")(device_mesh)


def model_parallel(layouts, model_axis_size=2, devices=None):
    """Data and model parallelism (JAX only): `keras.distribution.ModelParallel`.

    The devices form a `(batch, model)` mesh of shape
    `(devices // model_axis_size, model_axis_size)`; `layouts` splits
    variables over its "model" axis, and each batch is split over its
    "batch" axis. The zoo's models with a layout give one:
    `functools.partial(kerattn.zoo.layout_map, "transformer_nmt")`.

    Args:
        layouts: a function `device_mesh -> keras.distribution.LayoutMap`
            (given the mesh made here), or a `LayoutMap` whose mesh has a
            "batch" and a "model" axis (then `model_axis_size` and
            `devices` are read from it). A zoo builder's name
            ("transformer_nmt", "seq2seq") is deprecated.
        model_axis_size: devices that share one copy of the model; must
            divide the device count (and, for the transformer, the number
            of heads, the model width and the feed-forward width).
        devices: None (all), a count or a list of JAX devices.

    Returns:
        A `Strategy`.

    Example:

    >>> import functools
    >>> try:
    ...     strategy = model_parallel(functools.partial(
    ...         kerattn.zoo.layout_map, "transformer_nmt"), model_axis_size=1)
    ... except ValueError:       # TensorFlow and torch: JAX only
    ...     strategy = None
    >>> strategy is None or strategy.kind == "model"
    True
    """
    backend = _backend()
    checks.require(backend == "jax", "KERAS_BACKEND", "'jax' for model "
                   "parallelism (keras.distribution.ModelParallel)", backend,
                   note="Model parallelism runs on the JAX backend only.")
    if isinstance(layouts, str):
        layouts = _zoo_layouts(layouts, "model_parallel(name)")
    _initialize_hosts()
    if isinstance(layouts, keras.distribution.LayoutMap):
        mesh = layouts.device_mesh
        checks.require(tuple(mesh.axis_names) == ("batch", "model"), "layouts",
                       "a LayoutMap on a mesh of axes ('batch', 'model')",
                       tuple(mesh.axis_names))
        layout, batches = layouts, int(mesh.shape[0])
    else:
        checks.require(callable(layouts), "layouts", "a function of the device "
                       "mesh giving a keras.distribution.LayoutMap, or a "
                       "LayoutMap", type(layouts).__name__)
        devices = _devices(devices, keras.distribution.list_devices())
        checks.positive_int("model_axis_size", model_axis_size)
        checks.require(len(devices) % model_axis_size == 0, "model_axis_size",
                       f"a divisor of the {len(devices)} devices", model_axis_size)
        mesh = keras.distribution.DeviceMesh(
            (len(devices) // model_axis_size, model_axis_size), ["batch", "model"],
            devices)
        layout, batches = layouts(mesh), len(devices) // model_axis_size
    engine = keras.distribution.ModelParallel(layout_map=layout,
                                              batch_dim_name="batch")
    index, processes = _jax_process()
    if processes > 1:   # `shard` gives each process its own rows
        engine.auto_shard_dataset = False
    return Strategy("model", backend, engine, batches, index, processes)


class ProcessShard(keras.utils.PyDataset):
    """Rows `rank` of `num_shards` equal blocks of every batch of `data`.

    Wraps a `keras.utils.PyDataset` (or any sequence of `(x, y)` batches);
    is one, with the same number of batches, so every torch process takes
    the same number of steps (DDP needs that). Each batch's first
    `multiple * num_shards * (n // (multiple * num_shards))` rows are kept
    and split in equal blocks.

    Args:
        data: the global batches.
        rank: which block (0-based).
        num_shards: how many blocks.
        multiple: the kept rows of a block are a multiple of this.

    Example:

    >>> import numpy as np
    >>> batches = [({"x": np.arange(10)[:, None]}, np.arange(10))]
    >>> shard = ProcessShard(batches, rank=1, num_shards=2)
    >>> shard[0][1].tolist()
    [5, 6, 7, 8, 9]
    """

    def __init__(self, data, rank, num_shards, multiple=1):
        super().__init__()
        checks.positive_int("num_shards", num_shards)
        checks.positive_int("multiple", multiple)
        checks.int_in_range("rank", rank, 0, num_shards)
        checks.require(hasattr(data, "__getitem__") and hasattr(data, "__len__"),
                       "data", "a PyDataset or a list of batches",
                       type(data).__name__)
        self.data, self.rank, self.num_shards = data, rank, num_shards
        self.multiple = multiple

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        batch = self.data[index]
        rows = len(keras.tree.flatten(batch)[0])
        step = self.multiple * self.num_shards
        kept = rows // step * step
        checks.require(kept > 0, "data", f"batches of at least {step} rows "
                       "(the shards need them)",
                       note=f"Batch {index} has {rows} rows.")
        block = kept // self.num_shards
        start = self.rank * block
        return keras.tree.map_structure(
            lambda a: np.asarray(a)[start:start + block], batch)

    def on_epoch_end(self):
        if hasattr(self.data, "on_epoch_end"):
            self.data.on_epoch_end()


class ArrayBatches(keras.utils.PyDataset):
    """Arrays as shuffled batches, for `Strategy.shard`.

    Args:
        x: an array or a dict of arrays (the model's inputs).
        y: the targets (or None).
        batch_size: rows per batch (the global batch).
        shuffle: reshuffle the rows every epoch.
        seed: the shuffling seed.
        repeats: each row comes `repeats` times in a row in its batch
            (`batch_size * repeats` rows a batch): several samples of one
            example side by side, e.g. the N location samples per caption
            of hard attention's estimator (Xu et al., 2015, eq. 11).

    Example:

    >>> import numpy as np
    >>> batches = ArrayBatches({"x": np.arange(10)}, np.arange(10), 4,
    ...                        shuffle=False)
    >>> len(batches), batches[2][1].tolist()
    (3, [8, 9])
    >>> ArrayBatches(np.arange(10), None, 4, shuffle=False, repeats=2)[2].tolist()
    [8, 8, 9, 9]
    """

    def __init__(self, x, y=None, batch_size=32, shuffle=True, seed=0,
                 repeats=1):
        super().__init__()
        checks.positive_int("batch_size", batch_size)
        checks.positive_int("repeats", repeats)
        self.repeats = repeats
        self.x, self.y = x, y
        self.rows = len(keras.tree.flatten(x)[0])
        checks.require(y is None or len(y) == self.rows, "y",
                       f"one row per example ({self.rows})",
                       note=f"It has {None if y is None else len(y)} rows.")
        self.batch_size, self.shuffle = batch_size, shuffle
        self.rng = np.random.default_rng(seed)
        self.order = self.rng.permutation(self.rows) if shuffle else np.arange(self.rows)

    def __len__(self):
        return -(-self.rows // self.batch_size)

    def __getitem__(self, index):
        rows = self.order[index * self.batch_size:(index + 1) * self.batch_size]
        rows = np.repeat(rows, self.repeats)
        x = keras.tree.map_structure(lambda a: np.asarray(a)[rows], self.x)
        return x if self.y is None else (x, np.asarray(self.y)[rows])

    def on_epoch_end(self):
        if self.shuffle:
            self.order = self.rng.permutation(self.rows)


def add_arguments(parser):
    """Add `--distribute`, `--virtual-devices` and `--model-axis` to a parser.

    Args:
        parser: an `argparse.ArgumentParser`.

    Example:

    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> parser.parse_args(["--distribute", "data"]).distribute
    'data'
    """
    parser.add_argument(
        "--distribute", choices=("none", "data", "model"), default="none",
        help="train on several devices with the backend's engine: data "
             "parallel (JAX DataParallel, TF MirroredStrategy, torch DDP under "
             "torchrun) or data + model parallel (JAX; transformer_nmt, seq2seq)")
    parser.add_argument(
        "--virtual-devices", type=int, default=None, metavar="N",
        help="split the CPU into N devices (JAX, TensorFlow) to try "
             "--distribute without accelerators")
    parser.add_argument(
        "--model-axis", type=int, default=2, metavar="N",
        help="--distribute model: devices that share one copy of the model")


def from_arguments(args, name=None):
    """The `Strategy` that `add_arguments`' flags ask for.

    Args:
        args: the parsed arguments.
        name: the zoo builder's name (for `--distribute model`).

    Example:

    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_arguments(parser)
    >>> from_arguments(parser.parse_args([])).kind
    'none'
    """
    if args.virtual_devices is not None:
        virtual_devices(args.virtual_devices)
    if args.distribute == "data":
        return data_parallel()
    if args.distribute == "model":
        return model_parallel(_zoo_layout(name), model_axis_size=args.model_axis)
    return no_distribution()
