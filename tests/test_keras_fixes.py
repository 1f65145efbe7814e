"""kerattn.keras_fixes: every private Keras, JAX or TensorFlow name kerattn
uses, each checked to still exist (a test that names the fix to rewrite
when a release moves it) and, where cheap, against what it works around.

`bidirectional`: Keras' load-time object sharing keys objects by `id()`: a
`Bidirectional` made in a `build` during a load could get, as its forward
layer, an earlier `Bidirectional`'s backward layer whose wrapped layer had
the same `id()` (CI, torch, `load_model` of a HAN: "Forward layer and
backward layer should have different `go_backwards` value"). The collision
is made certain here by wrapping one layer object twice.
"""

import os


import keras
import numpy as np
import pytest

from kerattn.layers import HierarchicalAttention
from kerattn.layers import hierarchical_attention as han_module
from kerattn import keras_fixes
from kerattn.keras_fixes import bidirectional
from kerattn.zoo.model import ZooModel

# Keras' own scope of a save or a load (private; the bug lives there).
from keras.src.saving.serialization_lib import ObjectSharingScope


def _wrap_twice(wrap):
    gru = keras.layers.GRU(3, return_sequences=True)
    with ObjectSharingScope():
        return wrap(gru, name="first"), wrap(gru, name="second")


def test_keras_still_has_the_bug():
    try:
        _wrap_twice(keras.layers.Bidirectional)
    except ValueError as error:
        assert "go_backwards" in str(error)
    else:
        pytest.skip("this Keras wraps one layer twice in a load-time scope: "
                    "keras_fixes.bidirectional may go")


def test_bidirectional_wraps_one_layer_twice_in_a_load():
    first, second = _wrap_twice(bidirectional)
    for rnn in (first, second):
        assert not rnn.forward_layer.go_backwards
        assert rnn.backward_layer.go_backwards
    layers = {id(rnn.forward_layer) for rnn in (first, second)} | {
        id(rnn.backward_layer) for rnn in (first, second)}
    assert len(layers) == 4            # nothing is shared
    assert (first.name, second.name) == ("first", "second")


def test_a_han_whose_grus_share_an_id_loads(tmp_path, monkeypatch):
    """The CI failure, made certain: both encoders' GRUs are one object,
    as they are when the first is collected and its id() reused."""
    inputs = keras.Input((3, 5, 8))
    model = keras.Model(inputs, HierarchicalAttention(4, 4)(inputs))
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 8)).astype("float32")
    expected = keras.ops.convert_to_numpy(model(x))
    model.save(tmp_path / "han.keras")

    one_gru = keras.layers.GRU(4, return_sequences=True)

    class Layers:                        # keras.layers, one GRU for all
        GRU = staticmethod(lambda *args, **kwargs: one_gru)

        def __getattr__(self, name):
            return getattr(keras.layers, name)

    class Keras:                         # keras, with those layers
        layers = Layers()

        def __getattr__(self, name):
            return getattr(keras, name)

    monkeypatch.setattr(han_module, "keras", Keras())
    loaded = keras.saving.load_model(tmp_path / "han.keras")
    monkeypatch.undo()
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(x)),
                               expected, atol=1e-6)


# --- Each private name, still where its fix reads it ----------------------

def test_the_object_sharing_state_is_where_bidirectional_clears_it():
    assert keras_fixes._global_state is not None, (
        "keras.src.backend.common.global_state is gone: "
        "kerattn.keras_fixes.outside_object_sharing needs a new way")
    with ObjectSharingScope():
        for key in keras_fixes._SHARING_KEYS:
            assert keras_fixes._global_state.get_global_attribute(
                key) is not None, (
                f"Keras' load-time sharing scope no longer sets {key!r}: "
                "kerattn.keras_fixes.outside_object_sharing needs a new way")


def test_call_inputs_lists_every_call_of_a_shared_layer():
    assert hasattr(keras.layers.Layer(), "_inbound_nodes"), (
        "keras.Layer._inbound_nodes is gone: kerattn.keras_fixes.call_inputs "
        "needs a new way")
    a, b = keras.Input((3,), name="a"), keras.Input((3,), name="b")
    dense = keras.layers.Dense(2)
    dense(a), dense(b)
    assert [[id(t) for t in call] for call in keras_fixes.call_inputs(dense)
            ] == [[id(a)], [id(b)]]


def _zoo_model():
    ids = keras.Input((None,), dtype="int32", name="ids")
    model = ZooModel({"ids": ids},
                     keras.layers.Dense(2)(keras.layers.Embedding(5, 3)(ids)))
    model.compile(loss="mse")
    return model


def test_a_zoo_model_builds_on_one_replicas_batch_under_tf_distribute():
    """Keras' TensorFlow trainer builds on the replicas' mean of the first
    batch (float64 ids, fatal to the model's id check); a zoo model builds
    on the first replica's rows. The failure without the fix needs several
    replicas: tests/test_distributed.py shows it under the multi-worker
    engine, where the mean fails outright (#20585) and the zoo models
    train."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("_maybe_symbolic_build is Keras' TensorFlow trainer's")
    import tensorflow as tf

    assert hasattr(keras.Model, "_maybe_symbolic_build"), (
        "keras.Model._maybe_symbolic_build is gone: kerattn.keras_fixes."
        "BuildOnOneReplicasBatch needs a new hook")
    x = {"ids": np.array([[1, 2, 0], [3, 4, 4]], "int32")}
    y = np.zeros((2, 3, 2), "float32")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        model = _zoo_model()
    history = model.fit(x, y, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def _failing_batches(x, y, good=2):
    for _ in range(good):
        yield x, y
    raise RuntimeError("a bad batch")


def _dense_model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(loss="mse")
    return model


def test_a_failed_evaluate_leaves_the_weights_in_place():
    """On JAX the trainer empties the variables while it runs; a generator
    that raises on its third batch stops `evaluate` with them empty."""
    model = _dense_model()
    x, y = np.ones((2, 4), "float32"), np.zeros((2, 2), "float32")
    before = [keras.ops.convert_to_numpy(w) for w in model.weights]
    with pytest.raises(Exception, match="a bad batch"):  # TF wraps it
        with keras_fixes.jax_variables_kept(model):
            model.evaluate(_failing_batches(x, y), verbose=0)
    for want, got in zip(before, model.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(got), want)
    assert model.evaluate(x, y, verbose=0) >= 0     # still usable


def test_jax_still_empties_the_variables_of_a_failed_evaluate():
    if keras.backend.backend() != "jax":
        pytest.skip("JAX-only: only Keras' JAX trainer empties variables "
                    "(Variable._value, Model._jax_state) while it runs")
    assert hasattr(keras.Model, "jax_state_sync") and hasattr(
        keras.Model, "_purge_model_variables"), (
        "Keras' JAX trainer no longer has jax_state_sync/"
        "_purge_model_variables: kerattn.keras_fixes.jax_variables_kept "
        "needs a new way")
    model = _dense_model()
    assert hasattr(model.weights[0], "_value"), (
        "keras.Variable._value is gone: kerattn.keras_fixes."
        "jax_variables_kept needs a new way")
    x, y = np.ones((2, 4), "float32"), np.zeros((2, 2), "float32")
    with pytest.raises(RuntimeError):
        model.evaluate(_failing_batches(x, y), verbose=0)
    assert hasattr(model, "_jax_state"), (
        "keras.Model._jax_state is gone: kerattn.keras_fixes."
        "jax_variables_kept needs a new way")
    if all(w._value is not None for w in model.weights):
        pytest.skip("this Keras puts the variables back after a failed "
                    "evaluate: keras_fixes.jax_variables_kept may go")


def test_jax_serializes_for_the_target_stablehlo_version_inside():
    pytest.importorskip("jax", reason="jax is not installed")
    try:
        from jax._src.export import _export
    except ImportError:
        pytest.fail("jax._src.export._export is gone: kerattn.keras_fixes."
                    "jax_stablehlo_target_at_most needs a new way")
    assert hasattr(_export, "hlo") and hasattr(
        _export.hlo, "get_version_from_compatibility_requirement"), (
        "jax._src.export._export.hlo.get_version_from_compatibility_"
        "requirement is gone: kerattn.keras_fixes.jax_stablehlo_target_at_"
        "most needs a new way")
    hlo = _export.hlo
    week_4 = hlo.StablehloCompatibilityRequirement.WEEK_4
    own = hlo.get_version_from_compatibility_requirement(week_4)
    with keras_fixes.jax_stablehlo_target_at_most("1.0.0"):
        assert _export.hlo.get_version_from_compatibility_requirement(
            week_4) == "1.0.0"
    with keras_fixes.jax_stablehlo_target_at_most("999.0.0"):
        assert _export.hlo.get_version_from_compatibility_requirement(
            week_4) == own
    assert _export.hlo is hlo


def test_tensorflow_reports_its_stablehlo_version():
    pytest.importorskip("tensorflow", reason="tensorflow is not installed")
    version = keras_fixes.tensorflow_stablehlo_version()
    assert version is not None, (
        "tensorflow.compiler.mlir.stablehlo.stablehlo.get_current_version is "
        "gone: kerattn.keras_fixes.tensorflow_stablehlo_version needs a new "
        "way")
    assert all(part.isdigit() for part in str(version).split("."))


def test_the_fixes_name_the_versions_pyproject_says_are_tested():
    import tomllib

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(here, "pyproject.toml"), "rb") as f:
        tested = tomllib.load(f)["tool"]["kerattn"]["tested"]
    assert set(tested) == {"keras", "jax", "tensorflow", "torch"}
    for package, version in tested.items():
        assert f"{package} {version}" in " ".join(keras_fixes.__doc__.split())


def test_multi_worker_metrics_wraps_keras_reduce_and_leaves_other_strategies_alone():
    if keras.backend.backend() != "tensorflow":
        pytest.skip("reduce_per_replica is Keras' TensorFlow trainer's")
    import tensorflow as tf
    from keras.src.backend.tensorflow import trainer

    keras_fixes.multi_worker_metrics()
    keras_fixes.multi_worker_metrics()              # once only
    assert len(keras_fixes._MULTI_WORKER_REDUCE) == 1
    assert trainer.reduce_per_replica is not keras_fixes._MULTI_WORKER_REDUCE[0]
    value = tf.constant([1.0, 3.0])
    out = trainer.reduce_per_replica({"loss": value}, tf.distribute.get_strategy(),
                                     "auto")
    np.testing.assert_allclose(out["loss"], [1.0, 3.0])


def test_tensorflow_variables_here_takes_a_model_off_its_strategy():
    """The multi-worker case runs in tests/test_distributed.py; here the
    same private names on a one-device MirroredStrategy."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("tf.distribute strategies are TensorFlow's")
    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    x = {"ids": np.array([[1, 2, 0], [3, 4, 4]], "int32")}
    with strategy.scope():
        model = _zoo_model()
    model.fit(x, np.zeros((2, 3, 2), "float32"), verbose=0)
    before = model.predict(x, verbose=0)
    keras_fixes.tensorflow_variables_here(model)
    assert model._distribute_strategy is None
    assert not any(isinstance(v.value, tf.distribute.DistributedValues)
                   for v in [*model.variables, *model.optimizer.variables])
    np.testing.assert_allclose(model.predict(x, verbose=0), before, atol=1e-6)


def test_jax_variables_here_needs_a_variables_layout():
    """Gathering from other processes runs in tests/test_distributed.py;
    here the private name it clears, and that a variable already here is
    left as it is."""
    if keras.backend.backend() != "jax":
        pytest.skip("jax.Array values are JAX's")
    model = _zoo_model()
    variable = model.weights[0]
    assert hasattr(variable, "_layout"), (
        "keras.Variable._layout is gone: kerattn.keras_fixes."
        "jax_variables_here needs a new way")
    value = variable.value
    keras_fixes.jax_variables_here(model)
    assert variable.value is value


def test_jax_processes_reads_jax_distributed_state():
    """None in a process that never joined others (the two-process case
    runs in tests/test_distributed.py, where every process's index is
    checked against jax.process_index())."""
    if keras.backend.backend() != "jax":
        pytest.skip("jax.distributed is JAX's")
    from jax._src import distributed

    assert hasattr(distributed.global_state, "client") and hasattr(
        distributed.global_state, "process_id"), (
        "jax._src.distributed.global_state changed: kerattn.keras_fixes."
        "jax_processes needs a new way")
    assert keras_fixes.jax_processes() is None


def test_the_coordination_barriers_are_where_kerattn_calls_them():
    """`coordination_barrier`: JAX's distributed client and TensorFlow's
    eager context still offer `wait_at_barrier` (both run for real in
    tests/test_distributed.py's barrier case, on their engines)."""
    backend = keras.backend.backend()
    if backend == "torch":
        pytest.skip("torch's barrier is the public dist.monitored_barrier")
    if backend == "jax":
        from jax._src import distributed
        from jax._src.lib import _jax

        assert hasattr(distributed.global_state, "client")
        assert hasattr(_jax.DistributedRuntimeClient, "wait_at_barrier"), (
            "kerattn.keras_fixes.coordination_barrier needs a new way")
    else:
        from tensorflow.python.eager import context

        assert hasattr(context.context(), "wait_at_barrier"), (
            "kerattn.keras_fixes.coordination_barrier needs a new way")


def test_jax_initialize_timeouts_passes_them_and_puts_initialize_back():
    if keras.backend.backend() != "jax":
        pytest.skip("jax.distributed is JAX's")
    import jax

    original = jax.distributed.initialize
    with keras_fixes.jax_initialize_timeouts(7):
        partial = jax.distributed.initialize
        assert partial.keywords == {"heartbeat_timeout_seconds": 7,
                                    "shutdown_timeout_seconds": 7}
    assert jax.distributed.initialize is original
    with keras_fixes.jax_initialize_timeouts(None):
        assert jax.distributed.initialize is original


def test_jax_variables_gathered_leaves_local_variables_alone():
    """One process: nothing spans other hosts, nothing changes (the split
    case runs in tests/test_distributed.py's model-parallel backup)."""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
    before = [v.value for v in model.weights]
    with keras_fixes.jax_variables_gathered(model):
        inside = [v.value for v in model.weights]
    for a, b, c in zip(before, inside, [v.value for v in model.weights]):
        assert a is b and b is c


def test_autocast_scope_reads_variables_in_its_dtype():
    """`keras_fixes.autocast_scope` (the decoder's scope for an attention of
    another dtype policy) reads a float32 variable as the scope's dtype."""
    variable = keras.Variable(np.ones((2,), "float32"))
    with keras_fixes.autocast_scope("bfloat16"):
        read = variable + 0
    assert keras.backend.standardize_dtype(read.dtype) == "bfloat16", (
        "keras.src.backend.AutocastScope no longer autocasts: kerattn."
        "keras_fixes.autocast_scope needs a new way")
