"""Serialization of the second wave of layers: config, .keras, other backends."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from cases import lengths_mask, to_numpy
from kerattn import layers
from test_serialization import BACKENDS, LOAD_SCRIPT, REPO


def _seq_models():
    """name -> (model builder, inputs builder) for every second-wave layer."""

    def local(mode):
        def build():
            q = keras.Input((None, 6), name="query")
            v = keras.Input((None, 6), name="value")
            m = keras.Input((None,), dtype="bool", name="value_mask")
            out, w = layers.LocalAttention(mode=mode, window=2)(
                q, v, value_mask=m, return_attention_scores=True)
            return keras.Model([q, v, m], [out, w])

        def data(rng):
            return [rng.standard_normal((2, 3, 6)).astype("float32"),
                    rng.standard_normal((2, 9, 6)).astype("float32"),
                    lengths_mask([9, 4], 9)]
        return build, data

    def restricted():
        x = keras.Input((None, 8))
        return keras.Model(x, layers.RestrictedSelfAttention(2, num_heads=2,
                                                             causal=True)(x))

    def visual(cls):
        def build():
            h = keras.Input((6,))
            a = keras.Input((10, 5))
            out, w = cls(units=4)(h, a, return_attention_scores=True)
            return keras.Model([h, a], [out, w])
        return build

    def han():
        ids = keras.Input((None, None), dtype="int32")
        x = keras.layers.Embedding(30, 6, mask_zero=True)(ids)
        v, w = layers.HierarchicalAttention(4, 3)(x, return_attention_scores=True)
        return keras.Model(ids, [v, w["word"], w["sentence"]])

    def aoa():
        d = keras.Input((None, 6))
        q = keras.Input((None, 6))
        return keras.Model([d, q], layers.AttentionOverAttention()(d, q))

    def convs2s():
        g = keras.Input((None, 4))
        z = keras.Input((None, 4))
        h = layers.GLUConvBlock(4, 3, causal=True)(g)
        return keras.Model([g, z], layers.MultiStepAttention()(h, g, z, z))

    def rnn(order, attention, **kw):
        def build():
            y = keras.Input((None, 4))
            h = keras.Input((None, 6))
            out, al = layers.AttentionRNN(8, attention(), order=order, **kw)(
                y, h, return_attention_scores=True)
            return keras.Model([y, h], [out, al])
        return build

    def transformer():
        src = keras.Input((None,), dtype="int32")
        tgt = keras.Input((None,), dtype="int32")
        x = layers.TransformerEncoderBlock(2, 16)(layers.TransformerEmbedding(
            20, 8)(src))
        y = layers.TransformerDecoderBlock(2, 16)(layers.TransformerEmbedding(
            20, 8)(tgt), x)
        return keras.Model([src, tgt], y)

    def ids(rng):
        return [rng.integers(0, 20, (2, 6)).astype("int32"),
                rng.integers(1, 20, (2, 4)).astype("int32")]

    rng_f = lambda shape: (lambda rng: rng.standard_normal(shape).astype("float32"))

    def two(a, b):
        return lambda rng: [rng_f(a)(rng), rng_f(b)(rng)]

    return {
        "local_m": local("monotonic"),
        "local_p": local("predictive"),
        "restricted": (restricted, rng_f((2, 11, 8))),
        "soft_visual": (visual(layers.SoftVisualAttention), two((2, 6), (2, 10, 5))),
        "hard_visual": (visual(layers.HardVisualAttention), two((2, 6), (2, 10, 5))),
        "han": (han, lambda rng: rng.integers(0, 30, (2, 3, 5)).astype("int32")),
        "aoa": (aoa, two((2, 9, 6), (2, 4, 6))),
        "convs2s": (convs2s, two((2, 7, 4), (2, 5, 4))),
        "transformer_blocks": (transformer, ids),
        "rnn_bahdanau": (rnn("bahdanau", lambda: layers.BahdanauAttention(5)),
                         two((2, 4, 4), (2, 6, 6))),
        "rnn_luong_local": (
            rnn("luong", lambda: layers.LocalAttention("predictive", 2)),
            two((2, 4, 4), (2, 6, 6))),
        "rnn_luong_parallel": (
            rnn("luong", lambda: layers.LuongAttention("general"),
                cell="lstm", input_feeding=False),
            two((2, 4, 4), (2, 6, 6))),
        "rnn_luong_state_and_context": (
            rnn("luong", lambda: layers.BahdanauAttention(5, coverage=True),
                cell="lstm", input_feeding=False, attentional_layer=False),
            two((2, 4, 4), (2, 6, 6))),
    }


MODELS = _seq_models()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_keras_file_round_trip(name, tmp_path):
    build, data = MODELS[name]
    model = build()
    x = data(np.random.default_rng(0))
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    a, b = model.predict(x, verbose=0), loaded.predict(x, verbose=0)
    for u, v in zip(keras.tree.flatten(a), keras.tree.flatten(b), strict=True):
        np.testing.assert_allclose(to_numpy(u), to_numpy(v), atol=1e-6)
    for layer in model.layers:
        config = layer.get_config()
        assert type(layer).from_config(config).get_config() == config


def test_keras_file_loads_under_every_other_backend(tmp_path):
    """One file with the second wave of layers, loaded on the other backends."""
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
    model = keras.Model([q, v, m], outs)
    rng = np.random.default_rng(1)
    x = {"query": rng.standard_normal((2, 5, 4)).astype("float32"),
         "value": rng.standard_normal((2, 7, 4)).astype("float32"),
         "value_mask": lengths_mask([7, 3], 7)}
    preds = model.predict([x["query"], x["value"], x["value_mask"]], verbose=0)
    path = str(tmp_path / "families.keras")
    model.save(path)
    data = str(tmp_path / "data.npz")
    np.savez(data, **x, **{f"out{i}": to_numpy(o) for i, o in enumerate(preds)})
    here = keras.backend.backend()
    for backend in BACKENDS:
        if backend == here:
            continue
        env = dict(os.environ, KERAS_BACKEND=backend,
                   KERAS_HOME=str(tmp_path / f"home_{backend}"))
        env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        proc = subprocess.run([sys.executable, "-c", LOAD_SCRIPT, path, data],
                              env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        assert result["backend"] == backend
        assert result["max_diff"] <= 1e-5, (here, backend, result)
