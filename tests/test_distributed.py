"""Distributed training on two processes standing in for two hosts,
against one device.

Each backend's own engine (kerattn.distribute), started as
docs/distribution.md says hosts start it (tests/hosts.py): JAX's
`keras.distribution.initialize` over 2 processes of 2 virtual CPU devices
each (`DataParallel` over the 4; `ModelParallel` for the transformer on a
(batch 2, model 2) mesh whose model axis pairs a device of each process),
TensorFlow's `MultiWorkerMirroredStrategy` over a 2-worker TF_CONFIG,
torch DDP under two `torchrun --nnodes 2` launchers. Network traffic stays
on 127.0.0.1. tests/distributed_worker.py trains zoo models 3 SGD steps on
one global batch, distributed and (on the chief) on one device; every
process writes a report, which these tests check.

One class per engine (`TestJaxEngine`, `TestTensorflowEngine`,
`TestTorchEngine`) starts that backend's hosts whatever the backend of the
pytest process it runs in; tests/placement.py places each class in one
process. An engine trains the models its class lists (every model once per
CI run, on the engine where it costs least: most on torch's DDP), plus hard
attention on every engine; the worker's fixed costs (fresh processes, the
engine's start) are paid once per engine.

Tolerance: weights within 1e-5 and losses within 1e-5 (relative) of
single-device training; measured differences are about 1e-7 (float32
sums in another order). The check can fail: training on the first
replica's rows alone lands about 0.1 away (checked on the engines that
compare soft-attention models: TensorFlow's and torch's).
"""

import json
import os
import shutil
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

import hosts
from kerattn import distribute

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "distributed_worker.py")
WEIGHTS_ATOL = 1e-5

LOSS_RTOL = 1e-5

# The engines' timeout in the lost-worker and barrier runs (kerattn.distribute
# .engine_timeout): how long a healthy process waits for a lost one.
ENGINE_TIMEOUT = 8


def _env(backend, **extra):
    """The hosts' environment: this process' (XLA's flags of the run, which
    keep compiles short, included; the worker adds JAX's device count,
    `distribute.virtual_devices`) with `backend`."""
    env = dict(os.environ, KERAS_BACKEND=backend, **extra)
    env["PYTHONPATH"] = os.path.dirname(HERE) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _worker(backend, out, *argv):
    """The worker's command: OUT, each process's devices (2 virtual ones
    on JAX, 1 elsewhere), then the rest."""
    return [WORKER, str(out), "2" if backend == "jax" else "1", *argv]


def _weights(path):
    saved = np.load(path)
    return [saved[f"arr_{i}"] for i in range(len(saved.files) - 1)], int(saved["epochs"])


def pytest_generate_tests(metafunc):
    """An engine's soft-attention models, one case each; its barrier cases."""
    if "model" in metafunc.fixturenames:
        metafunc.parametrize("model", metafunc.cls.MODELS)
    if "barrier" in metafunc.fixturenames:
        metafunc.parametrize("barrier", list(metafunc.cls.BARRIER_RUNS))


class _Engine:
    """The runs of one backend's engine on two stand-in hosts.

    `ENGINE` names the backend the hosts run (whatever the backend of the
    pytest process that starts them: `tests/placement.py` places each
    engine's class in one process); `MODELS` are the zoo models it
    trains against one device (every model on one engine, where it costs
    least: a model costs about 25 CPU-s on the two-process JAX and
    TensorFlow engines, a few on torch's DDP). Hard attention, the lost
    worker and the barrier run on every engine.
    """

    ENGINE = None
    MODELS = ()

    @pytest.fixture(scope="class")
    def hosts_root(self, tmp_path_factory):
        return tmp_path_factory.mktemp(f"distributed-{self.ENGINE}")

    @pytest.fixture(scope="class")
    def reports(self, hosts_root):
        """The two processes' reports, the chief's first."""
        root = hosts_root
        hosts.run(self.ENGINE, _worker(self.ENGINE, root / "report.json", *self.MODELS),
                  str(root), env=_env(self.ENGINE), timeout=300)
        found = []
        for rank in range(hosts.HOSTS):
            with open(str(root / f"report-{rank}.json")) as f:
                found.append(json.load(f))
        return found

    @pytest.fixture(scope="class")
    def report(self, reports):
        return reports[0]

    def _stage(self, root, *argv, timeout=240, **env):
        return hosts.run(self.ENGINE, _worker(self.ENGINE, root / "stage.json", *argv),
                         str(root), env=_env(self.ENGINE, **env), timeout=timeout)

    def test_two_processes_one_chief(self, reports):
        assert [r["backend"] for r in reports] == [self.ENGINE] * 2
        assert [r["processes"] for r in reports] == [2, 2]
        assert [r["rank"] for r in reports] == [0, 1]
        assert [r["chief"] for r in reports] == [True, False]
        assert [r["engine_chief"] for r in reports] == [True, False]
        # JAX: 2 devices a process; TensorFlow and torch: 1.
        assert {r["replicas"] for r in reports} == {4 if self.ENGINE == "jax" else 2}

    def test_only_the_chief_writes(self, reports, hosts_root):
        """BackupAndRestore backed up hard attention's training under each
        host's own directory: the chief's has the backup, the other nothing."""
        chief, other = (hosts_root / f"host{i}" for i in range(2))
        assert sorted(p.name for p in (chief / "backup").iterdir()) == [
            "latest.weights.h5", "random_state.npz", "training_metadata.json"]
        assert not (other / "backup").exists()
        assert sorted(p.name for p in other.iterdir()) == []

    def test_each_process_feeds_its_own_rows(self, reports):
        """The processes' rows of a global batch: disjoint, as many each, all
        of them together."""
        mine = [r["rows"]["mine"] for r in reports]
        every = reports[0]["rows"]["all"]
        assert len(every) == 2 * reports[0]["replicas"]
        assert [len(m) for m in mine] == [len(every) // 2] * 2
        assert not set(mine[0]) & set(mine[1])
        assert sorted(mine[0] + mine[1]) == every

    def test_hard_attention_trains_distributed(self, reports):
        report = reports[0]
        result = report["hard_attention"]
        assert all(r["hard_attention"]["finite"] for r in reports), reports
        # torch: DDP keeps every process on the same weights.
        assert result["rank_spread"] <= 1e-4, result
        if self.ENGINE == "jax":
            # One program over the sharded batch: the same samples as one device.
            assert result["weight_diff"] <= WEIGHTS_ATOL, result

    def test_a_lost_worker_resumes_from_the_chiefs_backup(self, reports, hosts_root):
        """Host 1 is SIGKILLed halfway through epoch 3 of 3 (a lost machine);
        host 0, in a collective step with it, exits by itself within the
        engine's timeout; the whole job started again (both hosts, the same
        command, as docs/distribution.md says) resumes from the chief's last
        backup (end of epoch 2) and trains one epoch, ending on the weights of
        the uninterrupted run (the reports' `lost-reference.npz`) bit for bit.
        The restarted job starts from another seed, so only a restore lands
        there. On torch, a torn latest backup resumes from the one before."""
        backend = self.ENGINE
        reference, total = _weights(hosts_root / "lost-reference.npz")
        assert total == 3
        root = hosts_root / "lost"
        root.mkdir()
        backup = str(root / "backup")
        started = hosts.start(backend, _worker(backend, root / "stage.json",
                                               "--lost-worker", "killed", backup),
                              str(root),
                              env=_env(backend, KERATTN_ENGINE_TIMEOUT=str(ENGINE_TIMEOUT)))
        try:
            deadline = time.monotonic() + 240
            while not (root / "stalled").exists():
                assert all(p.poll() is None for p in started.procs), started.stop()
                assert time.monotonic() < deadline, started.stop()
                time.sleep(0.2)
            stalled = int((root / "stalled").read_text())   # the epoch, from 0
            with open(os.path.join(backup, "training_metadata.json")) as f:
                assert json.load(f)["epoch"] == stalled == 2
            started.kill(1)
            lost = time.monotonic()
            code = started.wait(0, timeout=ENGINE_TIMEOUT + 60)
            waited = time.monotonic() - lost
        finally:
            results = started.stop()
        assert code not in (None, 0), (waited, results[0][2][-3000:])
        if backend == "torch":
            torn = root / "torn"
            shutil.copytree(backup, torn)

        self._stage(root, "--lost-worker", "resumed", backup)
        weights, epochs = _weights(root / "lost-resumed.npz")
        assert epochs == total - stalled
        for a, b in zip(reference, weights, strict=True):
            np.testing.assert_array_equal(a, b)

        if backend == "torch":
            with open(torn / "latest.weights.h5", "r+b") as f:
                f.truncate(os.path.getsize(torn / "latest.weights.h5") // 2)
            os.remove(root / "lost-resumed.npz")
            self._stage(root, "--lost-worker", "resumed", str(torn))
            weights, epochs = _weights(root / "lost-resumed.npz")
            assert epochs == total - stalled + 1
            for a, b in zip(reference, weights, strict=True):
                np.testing.assert_array_equal(a, b)

    # The barrier cases: case -> (its runs, each "on" or "off": the barrier
    # after the chief's evaluation or not; whether both processes end well).
    # Without the barrier the other process waits for the chief in the next
    # run's first collective step (torch's engine, two runs) or at exit
    # (JAX's, after one run), and its engine gives up. With it, two calls in
    # one job: each engine's barrier takes a new name a call
    # (`Strategy.barrier`; zoo/runner.py calls it after every seed).
    BARRIER_RUNS = {"on": ("on,on", True), "off": ("off,off", False)}

    def test_the_chiefs_evaluation_strands_no_process(self, tmp_path, barrier):
        """Runs of one step; after each the chief evaluates alone for longer
        than the engine's timeout (a sleep). With `Strategy.barrier` after
        the evaluation both processes end well; without it the other process
        is stranded (`BARRIER_RUNS`)."""
        runs, ends_well = self.BARRIER_RUNS[barrier]
        seconds = str(ENGINE_TIMEOUT + 6)

        def stage():
            self._stage(tmp_path, "--barrier", runs, seconds, timeout=240,
                        KERATTN_ENGINE_TIMEOUT=str(ENGINE_TIMEOUT))

        if not ends_well:
            with pytest.raises(AssertionError, match="exited"):
                stage()
            return
        stage()
        for rank in range(hosts.HOSTS):
            with open(tmp_path / f"stage-{rank}.json") as f:
                assert json.load(f) == {"rank": rank, "done": True}


class _ComparesModels:
    """The engine's soft-attention models against one device."""

    def test_data_parallel_matches_one_device(self, report, model):
        result = report["models"][model]
        assert result["weight_diff"] <= WEIGHTS_ATOL, result
        np.testing.assert_allclose(result["losses"], result["reference_losses"],
                                   rtol=LOSS_RTOL)

    def test_check_has_power(self, report):
        """Training on one replica's rows only is far from the global batch."""
        result = report["one_replica_only"]
        assert result["distributed_diff"] <= WEIGHTS_ATOL
        assert result["diff_to_global"] > 100 * WEIGHTS_ATOL, result


class TestJaxEngine(_Engine):
    """`keras.distribution.initialize` over 2 processes of 2 virtual CPU
    devices each. Its soft-attention models are compared on the other
    engines, where they cost less; hard attention is compared with one
    device here (one program samples for the whole batch)."""

    ENGINE = "jax"
    # JAX strands the other process at exit: one run shows it; the job with
    # the barrier calls it twice (each call a new name for JAX's service).
    BARRIER_RUNS = {"on": ("on,on", True), "off": ("off", False)}

    def test_model_parallel_transformer(self, reports):
        """Keras' ModelParallel is JAX's. The model axis spans the
        processes, so both feed every row of the batch and each holds half
        of every split kernel; the weights are gathered whole on each
        process when the scope ends."""
        report = reports[0]
        assert [r["model_parallel_rows"] for r in reports] == [
            len(report["rows"]["all"])] * 2
        assert reports[1]["model_parallel"] == report["model_parallel"]
        result = report["model_parallel"]
        assert result["ffn_inner_spec"] == [None, "model"]
        assert result["ffn_inner_shard_shape"] == [16, 16]   # (16, 32) over 2
        assert result["weight_diff"] <= WEIGHTS_ATOL, result
        np.testing.assert_allclose(result["losses"], result["reference_losses"],
                                   rtol=LOSS_RTOL)

    def test_model_parallel_backup_restores_into_the_split_layout(self, reports,
                                                                  hosts_root):
        """`BackupAndRestore` under `ModelParallel` across the processes.
        Two epochs are backed up, the split kernels gathered whole to be
        written by the chief; the job started again from another seed
        restores them into the split layout (the kernel is still stored
        half per device) and trains the third epoch, ending on the
        uninterrupted model-parallel run's weights bit for bit."""
        result = reports[0]["model_parallel_backup"]
        assert result["epochs_after_restore"] == 1, result
        assert result["ffn_inner_spec"] == [None, "model"]
        assert result["ffn_inner_shard_shape"] == [16, 16]
        assert result["weight_diff"] == 0.0, result    # bit for bit
        assert sorted(p.name for p in (hosts_root / "model-parallel-backup").iterdir()) == [
            "latest.weights.h5", "random_state.npz", "training_metadata.json"]


class TestTensorflowEngine(_ComparesModels, _Engine):
    """`MultiWorkerMirroredStrategy` over a 2-worker TF_CONFIG, and the
    one-host `MirroredStrategy`."""

    ENGINE = "tensorflow"
    MODELS = ("han_classifier",)
    # TensorFlow's collectives wait for a live peer however long it takes
    # (CommunicationOptions' timeout did not end this wait): no process is
    # stranded without the barrier. One job shows both: its first run
    # without the barrier (the other process waits in the second run's
    # first step), the second and third with it (each call a new name).
    BARRIER_RUNS = {"off-then-on": ("off,on,on", True)}

    def test_keras_20585_is_still_open_and_worked_around(self, reports):
        """TensorFlow's multi-worker engine: Keras 3 alone fails to fit
        (keras-team/keras#20585, open); the models above trained through
        kerattn.keras_fixes' two fixes. When a Keras release fixes it, this
        fails, and the fixes can go."""
        for report in reports:
            found = report["keras_20585"]
            assert "PerReplica" in (found["symbolic_build"] or ""), found
            assert "Invalid reduction dimension" in (found["metrics"] or ""), found

    def test_one_host_mirrored_strategy_matches_one_device(self, tmp_path):
        """`MirroredStrategy` over 2 CPU devices of one process (what
        `--distribute data` gives on one host): weights and losses after 3
        SGD steps equal one device's; training on the first replica's rows
        alone lands far away. One model: an encoder-decoder (HAN is
        compared under the multi-worker engine above)."""
        out = tmp_path / "one_host.json"
        child = subprocess.run([sys.executable, WORKER, str(out), "2", "--one-host",
                                "cho_encoder_decoder"],
                               env=_env("tensorflow"), cwd=str(tmp_path),
                               capture_output=True, text=True, timeout=300)
        assert child.returncode == 0, child.stderr[-4000:]
        report = json.loads(out.read_text())
        assert report["engine"] == "MirroredStrategy" and report["replicas"] == 2
        for name, result in report["models"].items():
            assert result["weight_diff"] <= WEIGHTS_ATOL, (name, result)
            np.testing.assert_allclose(result["losses"], result["reference_losses"],
                                       rtol=LOSS_RTOL)
            assert result["one_replica_only_diff"] > 100 * WEIGHTS_ATOL, (name, result)


class TestTorchEngine(_ComparesModels, _Engine):
    """torch DDP under two `torchrun --nnodes 2` launchers (gloo)."""

    ENGINE = "torch"
    MODELS = ("bahdanau_nmt", "luong_nmt", "seq2seq", "cho_encoder_decoder",
              "transformer_nmt", "convs2s_nmt", "show_attend_tell", "aoa_reader")


ENGINE_VARIABLES = {
    "jax": {"KERAS_DISTRIBUTION_PROCESS_ID": "1",
            "KERAS_DISTRIBUTION_NUM_PROCESSES": "2"},
    "tensorflow": {"TF_CONFIG": json.dumps({
        "cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"]},
        "task": {"type": "worker", "index": 0}})},
    "torch": {"RANK": "1", "WORLD_SIZE": "2"},
}


def test_process_index_reads_this_engines_variables(monkeypatch):
    """Without starting the engine: torchrun's, keras.distribution's or
    TF_CONFIG's (where the chief task comes before the workers)."""
    backend = keras.backend.backend()
    assert distribute.process_index() == (0, 1) and distribute.is_chief()
    for name, value in ENGINE_VARIABLES[backend].items():
        monkeypatch.setenv(name, value)
    expected = (1, 3) if backend == "tensorflow" else (1, 2)
    assert distribute.process_index() == expected
    assert not distribute.is_chief()


def test_a_tf_config_task_outside_its_cluster_is_refused(monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "ps", "index": 0}}))
    with pytest.raises(ValueError, match="`TF_CONFIG` must be a task of type"):
        distribute.process_index()


def test_minutes_are_refused_on_several_processes():
    """Each process would stop on its own clock, at a different step."""
    from kerattn.recipes.common import compile_and_fit

    strategy = distribute.Strategy("data", keras.backend.backend(), None, 2,
                                   rank=0, processes=2)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    with pytest.raises(ValueError, match="`minutes` must be None when "
                                         "training on several processes"):
        compile_and_fit(model, [(np.zeros((2, 2)), np.zeros((2, 1)))],
                        loss="mse", learning_rate=0.1, epochs=1, minutes=1,
                        strategy=strategy)


def test_a_host_that_fails_ends_the_other(tmp_path):
    """tests/hosts.py: host 1 exits with an error while host 0 would wait
    (as in a collective): host 0 is killed, not waited for."""
    code = ("import os, sys, time\n"
            "if os.environ['KERAS_DISTRIBUTION_PROCESS_ID'] == '1': sys.exit(3)\n"
            "time.sleep(120)")
    with pytest.raises(AssertionError, match="host 1 exited 3") as failure:
        hosts.run("jax", ["-c", code], str(tmp_path), timeout=100)
    assert "host 0 exited -9" in str(failure.value)


def test_the_hosts_keep_the_runs_compile_flags(monkeypatch):
    """The stand-in hosts inherit XLA's flags of the run (tests/README.md,
    "What keeps it there"): replaced by JAX's device count alone, the JAX
    engine's hosts compiled with every LLVM optimisation (its two-process
    run: 195 CPU-s against 75)."""
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
    for backend in ("jax", "tensorflow", "torch"):
        env = _env(backend, KERATTN_ENGINE_TIMEOUT="8")
        assert env["XLA_FLAGS"] == "--xla_backend_optimization_level=0"
        assert env["KERAS_BACKEND"] == backend and env["KERATTN_ENGINE_TIMEOUT"] == "8"
