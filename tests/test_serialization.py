"""Config round trips, .keras files, and .keras files across backends."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from cases import ALL_CASES, lengths_mask, to_numpy
from kerattn import layers

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKENDS = ("tensorflow", "jax", "torch")


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_config_round_trip(name):
    layer = ALL_CASES[name][0]()
    config = layer.get_config()
    clone = layer.__class__.from_config(config)
    assert clone.get_config() == config
    # Through Keras' registry, by registered name.
    revived = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(layer)
    )
    assert type(revived) is type(layer)
    assert keras.saving.get_registered_name(type(layer)).startswith("kerattn>")


@pytest.mark.parametrize(
    "layer",
    [layers.SinusoidalPositionEncoding(max_wavelength=500.0),
     layers.PositionEmbedding(sequence_length=12)],
    ids=["sinusoidal", "learned"],
)
def test_position_config_round_trip(layer):
    config = layer.get_config()
    assert layer.__class__.from_config(config).get_config() == config


def _attention_model(name):
    _, dq, dv = ALL_CASES[name]
    q_in = keras.Input((None, dq), name="query")
    v_in = keras.Input((None, dv), name="value")
    m_in = keras.Input((None,), dtype="bool", name="value_mask")
    out, w = ALL_CASES[name][0]()(
        q_in, v_in, value_mask=m_in, return_attention_scores=True
    )
    return keras.Model([q_in, v_in, m_in], [out, w])


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_keras_file_round_trip(name, tmp_path):
    rng = np.random.default_rng(0)
    _, dq, dv = ALL_CASES[name]
    model = _attention_model(name)
    x = [
        rng.standard_normal((2, 3, dq)).astype("float32"),
        rng.standard_normal((2, 6, dv)).astype("float32"),
        lengths_mask([6, 2], 6),
    ]
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)  # safe_mode=True, the default
    for a, b in zip(model.predict(x, verbose=0), loaded.predict(x, verbose=0),
                    strict=True):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def _everything_model():
    """One functional model holding every public layer."""
    q_in = keras.Input((None, 4), name="query")
    v_in = keras.Input((None, 4), name="value")
    m_in = keras.Input((None,), dtype="bool", name="value_mask")
    outputs = []
    q = q_in + layers.SinusoidalPositionEncoding()(q_in)
    v = v_in + layers.PositionEmbedding(sequence_length=16)(v_in)
    for name in sorted(ALL_CASES):
        factory, dq, dv = ALL_CASES[name]
        query = q if dq == 4 else keras.layers.Dense(dq)(q)
        outputs.append(factory()(query, v, value_mask=m_in))
    return keras.Model([q_in, v_in, m_in], outputs)


def _families_model():
    """One functional model with the second wave of layers."""
    q = keras.Input((None, 4), name="query")
    v = keras.Input((None, 4), name="value")
    m = keras.Input((None,), dtype="bool", name="value_mask")
    outs = [
        layers.LocalAttention("predictive", 2)(q, v, value_mask=m),
        layers.RestrictedSelfAttention(1, num_heads=2)(v),
        layers.SoftVisualAttention(3)(q, v, value_mask=m),
        layers.AttentionOverAttention()(v, q, document_mask=m),
        layers.MultiStepAttention()(layers.GLUConvBlock(4, 3, causal=True)(q),
                                    q, v, v, source_mask=m),
        layers.AttentionRNN(5, layers.BahdanauAttention(3))(q, v, memory_mask=m),
        layers.AttentionPooling(3)(v, mask=m),
    ]
    return keras.Model([q, v, m], outs)


# Each file with the inputs and outputs saved beside it (an .npz): the
# largest difference of its outputs, per file.
LOAD_SCRIPT = """
import json, sys
import numpy as np
import keras
import kerattn  # registers the layers
result = {"backend": keras.backend.backend(), "max_diff": {}}
for path, saved in json.loads(sys.argv[1]):
    data = np.load(saved)
    x = [data["query"], data["value"], data["value_mask"]]
    model = keras.saving.load_model(path)
    outs = model.predict(x, verbose=0)
    result["max_diff"][path] = max(
        float(np.abs(keras.ops.convert_to_numpy(o) - data[f"out{i}"]).max())
        for i, o in enumerate(outs))
print(json.dumps(result))
"""


def test_keras_file_loads_under_every_other_backend(tmp_path):
    """Two files, one with every layer and one with the second wave of
    layers (tests/test_serialization_families.py), saved here and loaded
    together in one fresh process per other backend."""
    rng = np.random.default_rng(1)
    x = {
        "query": rng.standard_normal((2, 5, 4)).astype("float32"),
        "value": rng.standard_normal((2, 7, 4)).astype("float32"),
        "value_mask": lengths_mask([7, 3], 7),
    }
    files = []
    for name, build in (("everything", _everything_model), ("families", _families_model)):
        model = build()
        outs = model.predict([x["query"], x["value"], x["value_mask"]], verbose=0)
        path = str(tmp_path / f"{name}.keras")
        model.save(path)
        data = str(tmp_path / f"{name}.npz")
        np.savez(data, **x, **{f"out{i}": to_numpy(o) for i, o in enumerate(outs)})
        files.append((path, data))

    here = keras.backend.backend()
    for backend in BACKENDS:
        if backend == here:
            continue
        env = dict(os.environ, KERAS_BACKEND=backend)
        env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
        env["KERAS_HOME"] = str(tmp_path / f"keras_home_{backend}")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        proc = subprocess.run(
            [sys.executable, "-c", LOAD_SCRIPT, json.dumps(files)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        assert result["backend"] == backend
        assert sorted(result["max_diff"]) == sorted(p for p, _ in files)
        for path, diff in result["max_diff"].items():
            assert diff <= 1e-5, (here, backend, path, diff)
