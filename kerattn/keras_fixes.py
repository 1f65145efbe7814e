"""Every private Keras, JAX or TensorFlow name kerattn uses, in one place.

kerattn calls only public APIs elsewhere. What is here has no public
equivalent today: each is a small named function, context manager or mixin
that says what it does, why no public API does it, the release it was
written against and the upstream issue where there is one.
`tests/test_keras_fixes.py` holds one test per fix that fails, naming the
fix, on the day a release moves the private name it uses.

Written against keras 3.15.1, jax 0.10.2, tensorflow 2.21.0 and torch
2.13.0 (`[tool.kerattn] tested` in `pyproject.toml`).
"""

import contextlib

import keras

from keras import tree

try:  # Keras' own state of a save or a load.
    from keras.src.backend.common import global_state as _global_state
except ImportError:  # pragma: no cover - a Keras that moved it
    _global_state = None

_SHARING_KEYS = ("shared_objects/id_to_obj_map",
                 "shared_objects/id_to_config_map")


@contextlib.contextmanager
def outside_object_sharing():
    """Run the block with Keras' object-sharing scope of a load turned off.

    While `keras.saving.load_model` runs, Keras remembers every object it
    serializes by `id()`, and hands back an object it has already built
    when a config carries a known id. A layer that makes a `Bidirectional`
    in its `build` (as `HierarchicalAttention` does, during a load) makes
    Keras serialize the wrapped layer twice (forward, then backward), so
    that id is marked shared and the backward copy remembered under it.
    Once that wrapped layer is garbage-collected, the next layer created
    can get the same `id()`, and its "forward" copy is then the earlier
    backward layer: `ValueError: Forward layer and backward layer should
    have different go_backwards value`, on some loads and not others.
    Nothing built here is shared on purpose, so nothing is lost.

    Private: the scope lives in `keras.src.backend.common.global_state`
    (keys `shared_objects/*`); Keras has no public way to leave it.
    Written against keras 3.15.1; no upstream issue found.
    """
    if _global_state is None:
        yield
        return
    saved = [_global_state.get_global_attribute(k) for k in _SHARING_KEYS]
    for key in _SHARING_KEYS:
        _global_state.set_global_attribute(key, None)
    try:
        yield
    finally:
        for key, value in zip(_SHARING_KEYS, saved):
            _global_state.set_global_attribute(key, value)


def bidirectional(layer, **kwargs):
    """`keras.layers.Bidirectional(layer, **kwargs)`, safe to call from a
    `build` that runs while a model loads (see `outside_object_sharing`).

    Example:

    >>> rnn = bidirectional(keras.layers.GRU(3, return_sequences=True),
    ...                     name="encoder")
    >>> rnn.forward_layer.go_backwards, rnn.backward_layer.go_backwards
    (False, True)
    """
    with outside_object_sharing():
        return keras.layers.Bidirectional(layer, **kwargs)


def call_inputs(layer):
    """The input tensors of each call of `layer` in a functional graph, one
    flat list per call (a layer shared by two inputs has two).

    Private: Keras 3 records the calls in `Layer._inbound_nodes` (each node's
    `input_tensors`); its public `layer.input` gives the first call only.
    Written against keras 3.15.1. Upstream: keras-team/keras#21205 and
    #19278 (a maintainer: walking the graph relies on private details).
    """
    return [list(node.input_tensors)
            for node in getattr(layer, "_inbound_nodes", [])]


def autocast_scope(dtype):
    """A context manager in which layers' float variables are read as
    `dtype`: what a layer's `__call__` enters for a layer of its own dtype
    policy, for code that calls a sublayer's method directly (the recurrent
    decoder calls its attention's `step`, not its `__call__`, at every step).

    Private: `keras.src.backend.AutocastScope`; Keras exports no public way
    to enter a layer's dtype scope without calling it. Written against keras
    3.15.1.
    """
    from keras.src import backend as _backend

    return _backend.AutocastScope(dtype)


class BuildOnOneReplicasBatch:
    """A mixin for a `keras.Model` (before it in the bases): under a
    `tf.distribute` strategy, Keras' TensorFlow trainer builds the model's
    compiled loss and metrics on the first batch averaged over the replicas
    (`strategy.reduce("MEAN", ...)` in `_maybe_symbolic_build`). Only its
    shapes and dtypes are used, and the average costs three ways: it turns
    integer token ids into float64, it fails when the replicas' rows have
    different shapes, and under `MultiWorkerMirroredStrategy` it fails
    outright (`Attempt to convert a value (PerReplica...) to a Tensor`,
    keras-team/keras#20585). This builds on the first local replica's rows.

    Private: the hook is `Trainer._maybe_symbolic_build`; no public method
    sees the batch it builds on. Written against keras 3.15.1.
    """

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        strategy = getattr(self, "_distribute_strategy", None)
        if strategy is None or iterator is None:
            return super()._maybe_symbolic_build(iterator=iterator,
                                                 data_batch=data_batch)
        import tensorflow as tf

        for _, _, batches in iterator:
            data_batch = tree.map_structure(
                lambda v: strategy.experimental_local_results(v)[0]
                if isinstance(v, tf.distribute.DistributedValues) else v,
                next(batches))
            break
        return super()._maybe_symbolic_build(data_batch=data_batch)


_MULTI_WORKER_REDUCE = []


def flash_attention_flag():
    """`flash_attention=` for `keras.ops.dot_product_attention`: None (Keras
    decides) except inside `torch.compile`, where it is False.

    With None, Keras' torch backend asks torch whether flash attention
    applies (`torch.backends.cuda.can_use_flash_attention` on an
    `SDPAParams`, a pybind object Dynamo cannot trace), which breaks the
    compiled graph at every attention call (`transformer_nmt`: 37 breaks a
    training step, `benchmarks/torch_compile.py`). With False, Keras calls
    `torch.nn.functional.scaled_dot_product_attention` without restricting
    its kernels, and torch's dispatcher picks flash attention itself where
    it applies. Written against keras 3.15.1 and torch 2.13.
    """
    if keras.backend.backend() != "torch":
        return None
    import torch

    return False if torch.compiler.is_compiling() else None


def multi_worker_metrics():
    """Let Keras' TensorFlow trainer report metrics under
    `tf.distribute.MultiWorkerMirroredStrategy`. Idempotent.

    Keras' `reduce_per_replica` averages a step's metrics over the workers
    with `strategy.reduce("MEAN", value, axis=0)`, which fails on the
    scalar metrics every train step returns ("Invalid reduction dimension 0
    for input with 0 dimensions", keras-team/keras#20585). This wraps it so
    that a scalar is averaged over the replicas (`axis=None`); every other
    case is Keras' own.

    Private: `keras.src.backend.tensorflow.trainer.reduce_per_replica`, a
    module function the train step calls. Written against keras 3.15.1.
    """
    if _MULTI_WORKER_REDUCE:
        return
    import tensorflow as tf
    from keras.src.backend.tensorflow import trainer

    original = trainer.reduce_per_replica

    def reduce_per_replica(values, strategy, reduction):
        if reduction not in ("auto", "mean") or not isinstance(
                strategy, tf.distribute.MultiWorkerMirroredStrategy):
            return original(values, strategy, reduction)

        def mean(value):
            if not isinstance(value, tf.distribute.DistributedValues):
                return value
            if len(value.values[0].shape) == 0:
                return strategy.reduce("MEAN", value, axis=None)
            return original(value, strategy, reduction)

        return tree.map_structure(mean, values)

    trainer.reduce_per_replica = reduce_per_replica
    _MULTI_WORKER_REDUCE.append(original)


def _model_variables(model):
    """Every variable a trainer holds for `model`: its own, its metrics'
    and its optimizer's."""
    variables = [*model.trainable_variables, *model.non_trainable_variables,
                 *model.metrics_variables]
    if getattr(model, "optimizer", None) is not None:
        variables += list(model.optimizer.variables)
    return variables


@contextlib.contextmanager
def jax_variables_kept(model):
    """On the JAX backend, `model` keeps its variables when the block (a
    `fit`, `evaluate` or `predict`) raises. A no-op on other backends.

    Keras' JAX trainer empties every variable while it runs (the step is
    stateless; `_purge_model_variables` sets `Variable._value` to None) and
    puts the values back at the end, but not when the data raise halfway
    through `evaluate` or `predict`, nor at `fit`'s first step: the model
    would be left without weights. When the block raises, this syncs the
    trainer's last state where it kept one (public `jax_state_sync`),
    forgets that state (`Model._jax_state = None`, as Keras does after a
    call, so that a later call does not sync it again), and gives every
    variable still empty its value from before the block. Holding the
    arrays costs no copy.

    Private: `Variable._value` is the only way to tell an emptied variable
    (the public `value` then returns its initializer's values), and
    `_jax_state` has no public setter. Written against keras 3.15.1.
    Upstream: keras-team/keras#21019 restores the variables of an
    interrupted `fit` after its first step, not of `evaluate` or `predict`.
    """
    if keras.backend.backend() != "jax":
        yield
        return
    held = [(v, v.value) for v in _model_variables(model)]
    try:
        yield
    except BaseException:
        model.jax_state_sync()
        model._jax_state = None
        for variable, value in held:
            if variable._value is None:
                variable.assign(value)
        raise


def jax_variables_here(model):
    """Make each JAX variable of `model` (its own, its metrics' and its
    optimizer's) whose value spans several processes' devices a whole copy
    on this process's first device, with no layout.

    After `keras.distribution` training on several processes a variable's
    value is a global `jax.Array` (replicated, or split by a
    `ModelParallel` layout): this process cannot read it (`np.asarray`
    refuses arrays on other hosts' devices) nor compute with it alone. A
    replicated value has a whole copy here already; a split one is
    gathered from every process (`multihost_utils.process_allgather`, a
    collective: every process must call this). Variables already on this
    process's devices are left as they are.

    Private: `Variable.assign` puts a value back on the variable's layout
    (`_layout`, set when it was created under the distribution); Keras has
    no public way to take a variable off its distribution. Written against
    keras 3.15.1 and jax 0.10.2.
    """
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    device = jax.local_devices()[0]
    for variable in _model_variables(model):
        value = variable.value
        if getattr(value, "is_fully_addressable", True):
            continue
        if value.sharding.is_fully_replicated:
            whole = np.asarray(value.addressable_data(0))
        else:
            whole = np.asarray(multihost_utils.process_allgather(value,
                                                                 tiled=True))
        variable._layout = None
        variable.assign(jax.device_put(whole, device))


@contextlib.contextmanager
def jax_variables_gathered(model):
    """Inside the block, each JAX variable of `model` (its own, its
    metrics' and its optimizer's) that a `ModelParallel` layout splits
    across processes holds its whole value on this process's first device,
    so that `save_weights` can read it; the split value is put back after.
    A collective step: every process must enter the block, in the same
    order. Replicated and local variables are left as they are.

    Keras' `save_weights` reads each variable with `np.asarray`, which
    refuses an array with shards on other hosts' devices
    (`BackupAndRestore` under `ModelParallel` on several processes).

    Private: `Variable._value` (the public `assign` would put the value
    back on the variable's layout, split again). Written against keras
    3.15.1 and jax 0.10.2.
    """
    if keras.backend.backend() != "jax":
        yield
        return
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    device = jax.local_devices()[0]
    held = []
    for variable in _model_variables(model):
        value = variable._value
        if value is None or getattr(value, "is_fully_addressable", True) \
                or value.sharding.is_fully_replicated:
            continue
        whole = np.asarray(multihost_utils.process_allgather(value, tiled=True))
        held.append((variable, value))
        variable._value = jax.device_put(whole, device)
    try:
        yield
    finally:
        for variable, value in held:
            variable._value = value


def tensorflow_variables_here(model):
    """Take `model` (its variables, its optimizer's and its metrics') off
    TensorFlow's multi-worker engine: each becomes a plain `tf.Variable`
    on this worker, holding the trained value, and the model and its
    optimizer run under the default strategy again. A collective step:
    every worker must call it, in the same order.

    Under `MultiWorkerMirroredStrategy` reading some variables (the
    optimizer's iteration count and learning rate, which Keras aggregates
    "only first replica"; the metrics') is itself a collective op, and
    `evaluate` or `predict` run on every worker: after training, the chief
    alone could not save, evaluate or decode without the others waiting at
    the same point. Keras has no public way to move a model off a strategy.

    Private: `Variable._value` (the backing `tf.Variable`), the model's
    `_distribute_strategy` and the optimizer's `_distribution_strategy`.
    Written against keras 3.15.1 and tensorflow 2.21.0.
    """
    import tensorflow as tf

    variables = _model_variables(model)
    optimizer = getattr(model, "optimizer", None)
    values = [keras.ops.convert_to_numpy(v) for v in variables]   # collective
    for variable, value in zip(variables, values):
        variable._value = tf.Variable(value, dtype=variable.dtype,
                                      trainable=variable.trainable,
                                      name=variable.name)
    model._distribute_strategy = None
    if optimizer is not None:
        optimizer._distribution_strategy = tf.distribute.get_strategy()
    model.train_function = model.test_function = model.predict_function = None


def jax_processes():
    """`(process index, process count)` once `jax.distributed.initialize`
    has run in this process (however it was called), else None; without
    starting JAX's backend.

    Private: `jax._src.distributed.global_state`; the public
    `jax.process_index()` starts the backend, after which
    `jax.distributed.initialize` can no longer run. Written against jax
    0.10.2.
    """
    import sys

    if "jax" not in sys.modules:
        return None
    try:
        from jax._src import distributed
    except ImportError:  # pragma: no cover - JAX moved its internals
        return None
    state = distributed.global_state
    if getattr(state, "client", None) is None:
        return None
    return state.process_id, state.num_processes


@contextlib.contextmanager
def jax_initialize_timeouts(seconds):
    """`jax.distributed.initialize`, as `keras.distribution.initialize`
    calls it inside the block, with `heartbeat_timeout_seconds` and
    `shutdown_timeout_seconds` set to `seconds` (None: JAX's defaults,
    100 s and 300 s).

    JAX's coordination service declares a process lost when it misses
    heartbeats for the first, and makes the processes wait for each other
    at exit for up to the second. Keras' `initialize` takes neither.

    Private: none; the block replaces the public `jax.distributed.initialize`
    while Keras calls it (Keras reads it from the module at call time).
    Written against keras 3.15.1 and jax 0.10.2.
    """
    import functools

    import jax

    if seconds is None:
        yield
        return
    original = jax.distributed.initialize
    jax.distributed.initialize = functools.partial(
        original, heartbeat_timeout_seconds=int(seconds),
        shutdown_timeout_seconds=int(seconds))
    try:
        yield
    finally:
        jax.distributed.initialize = original


def coordination_barrier(backend, name, seconds):
    """Wait until every process reaches the barrier `name` (a new name each
    time), for at most `seconds`, through the engine's coordination
    service (a key-value store; no device computes): JAX's
    `DistributedRuntimeClient.wait_at_barrier`, TensorFlow's
    `context.wait_at_barrier` (the service `MultiWorkerMirroredStrategy`
    starts). Raises the engine's error when the time runs out.

    Private: `jax._src.distributed.global_state.client` and
    `tensorflow.python.eager.context`; neither engine exposes its barrier
    publicly (JAX's public `multihost_utils.sync_global_devices` is a
    collective computation, under the engine's timeouts, not this one's).
    Written against jax 0.10.2 and tensorflow 2.21.0.
    """
    milliseconds = int(seconds * 1000)
    if backend == "jax":
        from jax._src import distributed

        distributed.global_state.client.wait_at_barrier(name, milliseconds)
    else:
        from tensorflow.python.eager import context

        context.context().wait_at_barrier(name, milliseconds)


def tensorflow_stablehlo_version():
    """The StableHLO version the installed TensorFlow reads, or None.

    Private: TensorFlow exports it only as
    `tensorflow.compiler.mlir.stablehlo.stablehlo.get_current_version`,
    outside the `tf.*` API. Written against tensorflow 2.21.0; no upstream
    issue found.
    """
    try:
        from tensorflow.compiler.mlir.stablehlo import stablehlo
    except ImportError:  # pragma: no cover - older or newer TensorFlow
        return None
    return stablehlo.get_current_version()


def _version_tuple(text):
    return tuple(int(p) for p in str(text).split("."))


@contextlib.contextmanager
def jax_stablehlo_target_at_most(version):
    """Inside the block, JAX serializes StableHLO for at most `version`
    (a string such as "1.13.7"); `None` leaves JAX's own target.

    `jax.export` (hence jax2tf, hence Keras' `model.export` on JAX) writes
    StableHLO for a consumer at most four weeks older than JAX
    (`hlo.get_version_from_compatibility_requirement(WEEK_4)` in
    `_module_to_bytecode`). This swaps, in `jax._src.export._export` only,
    the `hlo` module for one whose answer is `min(JAX's, version)`.

    Private: jax 0.10.2 has no public option for the target version
    (`jax.export.export` takes none, and no `jax.config` flag sets it).
    Written against jax 0.10.2; no upstream issue found.
    """
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
            target = original(requirement)
            if version and _version_tuple(version) < _version_tuple(target):
                return version
            return target

    _export.hlo = _Shim()
    try:
        yield
    finally:
        _export.hlo = hlo
