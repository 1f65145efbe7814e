"""Distributed training on virtual devices, against one device.

Each backend's own engine (kerattn.distribute): JAX's
`keras.distribution.DataParallel` over 4 virtual CPU devices (and
`ModelParallel` over a (batch 2, model 2) mesh for the transformer),
TensorFlow's `MirroredStrategy` over 4 logical CPU devices, torch DDP over
a 2-process gloo group. tests/distributed_worker.py trains every zoo model
3 SGD steps on one global batch, distributed and on one device, in a fresh
process (devices are fixed before a backend starts); this test checks its
report.

Each backend's engine trains the models whose case tests/placement.py puts
in that backend's process (every model once per CI run, on the engine
where it costs least: most on torch's DDP), plus hard attention on every
engine; the worker's fixed costs (a fresh process, the engine's start) are
paid once per backend.

Tolerance: weights within 1e-5 and losses within 1e-5 (relative) of
single-device training; measured differences are about 1e-7 (float32
sums in another order). The check can fail: training on the first
replica's rows alone lands about 0.1 away.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from placement import placement

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "distributed_worker.py")
MODELS = ["bahdanau_nmt", "luong_nmt", "seq2seq", "cho_encoder_decoder",
          "transformer_nmt", "convs2s_nmt", "show_attend_tell", "han_classifier",
          "aoa_reader"]
WEIGHTS_ATOL = 1e-5

LOSS_RTOL = 1e-5


def models_here():
    """The models whose distributed case is placed on this backend."""
    backend = keras.backend.backend()
    return [m for m in MODELS if placement(
        f"test_distributed.py::test_data_parallel_matches_one_device[{m}]")
        in (None, backend)]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    backend = keras.backend.backend()
    out = str(tmp_path_factory.mktemp("distributed") / "report.json")
    env = dict(os.environ, KERAS_BACKEND=backend)
    env["PYTHONPATH"] = os.path.dirname(HERE) + os.pathsep + env.get("PYTHONPATH", "")
    if backend == "torch":
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node=2", WORKER, out, "2", *models_here()]
    else:
        cmd = [sys.executable, WORKER, out, "4", *models_here()]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(out) as f:
        return json.load(f)


def test_replicas(report):
    assert report["backend"] == keras.backend.backend()
    assert report["replicas"] == (2 if report["backend"] == "torch" else 4)


@pytest.mark.parametrize("name", MODELS)
def test_data_parallel_matches_one_device(report, name):
    result = report["models"][name]
    assert result["weight_diff"] <= WEIGHTS_ATOL, result
    np.testing.assert_allclose(result["losses"], result["reference_losses"],
                               rtol=LOSS_RTOL)


def test_hard_attention_trains_distributed(report):
    result = report["hard_attention"]
    assert result["finite"], result
    # torch: DDP keeps every process on the same weights.
    assert result["rank_spread"] <= 1e-4, result
    if report["backend"] == "jax":
        # One program over the sharded batch: the same samples as one device.
        assert result["weight_diff"] <= WEIGHTS_ATOL, result


def test_check_has_power(report):
    """Training on one replica's rows only is far from the global batch."""
    if report["backend"] != "jax":
        pytest.skip("measured once, on JAX (the all-reduce is each engine's; "
                    "the comparison is the same on every backend)")
    result = report["one_replica_only"]
    assert result["distributed_diff"] <= WEIGHTS_ATOL
    assert result["diff_to_global"] > 100 * WEIGHTS_ATOL, result


def test_model_parallel_transformer(report):
    """JAX only: Keras' ModelParallel is JAX's (the skip says why)."""
    if report["backend"] != "jax":
        pytest.skip("keras.distribution.ModelParallel runs on JAX only")
    result = report["model_parallel"]
    assert result["ffn_inner_spec"] == [None, "model"]
    assert result["ffn_inner_shard_shape"] == [16, 16]   # (16, 32) over 2
    assert result["weight_diff"] <= WEIGHTS_ATOL, result
    np.testing.assert_allclose(result["losses"], result["reference_losses"],
                               rtol=LOSS_RTOL)
