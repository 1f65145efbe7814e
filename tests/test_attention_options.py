"""`attention_options` of the zoo's recurrent builders (`luong_nmt`,
`bahdanau_nmt`), through the shared table `kerattn.zoo.attentions`: each
option reaches the attention layer over the builder's sizes, survives a
`.keras` round trip, and a name the layer does not take is refused with the
names it does."""

import keras
import numpy as np
import pytest

from kerattn import zoo
from kerattn.layers import (DynamicConvolutionAttention, GMMAttention,
                            LocationSensitiveAttention)
from kerattn.zoo import attentions
from cases import to_numpy


def batch():
    """Two rows, the shorter first (source and target lengths)."""
    rng = np.random.default_rng(0)
    source = rng.integers(4, 20, (2, 6)).astype("int32")
    source[0, 3:] = 0
    target = rng.integers(4, 20, (2, 5)).astype("int32")
    target[0, 2:] = 0
    return {"source_ids": source, "target_in_ids": target}


@pytest.mark.parametrize("builder, attention, options, cls, expected", [
    (zoo.luong_nmt, "gmm", {"variant": "v1", "num_components": 3},
     GMMAttention, {"variant": "v1", "num_components": 3}),
    (zoo.luong_nmt, "location-sensitive",
     {"channels": ["previous", "cumulative"], "use_bias": False},
     LocationSensitiveAttention, {"channels": ("previous", "cumulative"),
                                  "use_bias": False}),
    # Over the builder's own size: the score's width.
    (zoo.bahdanau_nmt, "location-sensitive", {"units": 7},
     LocationSensitiveAttention, {"units": 7}),
    (zoo.bahdanau_nmt, "dca", {"static_filters": 3, "prior_length": 5},
     DynamicConvolutionAttention, {"static_filters": 3, "prior_length": 5}),
])
def test_options_reach_the_layer_and_round_trip(builder, attention, options, cls,
                                                expected, tmp_path):
    model = builder(20, 20, attention=attention, attention_options=options,
                    preset="tiny")
    layer = model.get_layer("decoder").attention
    assert type(layer) is cls and layer.name == "attention"
    config = layer.get_config()
    for key, value in expected.items():
        got = config[key]
        assert (tuple(got) if isinstance(value, tuple) else got) == value, key
    x = batch()
    logits = to_numpy(model(x))
    assert np.isfinite(logits).all()
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.get_layer("decoder").attention.get_config() == config
    np.testing.assert_allclose(to_numpy(loaded(x)), logits, atol=1e-5)


def test_bahdanau_nmt_starts_hard_monotonic_r_at_minus_one():
    """bahdanau_nmt's hard monotonic attention starts `r` at -1 (the layer's
    -4 never decides on translation: zoo/bahdanau_nmt/RESULTS.md), unless
    `attention_options` says otherwise; MoChA and luong_nmt keep the
    layer's -4."""
    def r(builder, attention, options=None):
        model = builder(20, 20, attention=attention, attention_options=options,
                        preset="tiny")
        return model.get_layer("decoder").attention.get_config()["score_bias_init"]

    assert r(zoo.bahdanau_nmt, "hard-monotonic") == -1.0
    assert r(zoo.bahdanau_nmt, "hard-monotonic", {"noise_std": 0.0}) == -1.0
    assert r(zoo.bahdanau_nmt, "hard-monotonic", {"score_bias_init": -4.0}) == -4.0
    assert r(zoo.bahdanau_nmt, "mocha") == -4.0
    assert r(zoo.luong_nmt, "hard-monotonic") == -4.0


def test_without_options_the_layer_is_the_table_default():
    plain = zoo.luong_nmt(20, 20, attention="gmm", preset="tiny")
    assert plain.get_layer("decoder").attention.get_config()["variant"] == "v2b"


def test_the_options_a_layer_takes_include_its_base_classes():
    # ForwardAttention passes its other arguments to the location-sensitive
    # layer it extends: they are options too.
    accepted = attentions.options_of("forward", "additive")
    assert {"transition_agent", "channels", "filters", "units"} <= set(accepted)
    assert "name" not in accepted
    # One class a score: Bahdanau's on the additive energy, Luong's on his.
    assert "max_length" in attentions.options_of("global", "luong")
    assert "max_length" not in attentions.options_of("global", "additive")


@pytest.mark.parametrize("builder, attention, options, match", [
    (zoo.luong_nmt, "gmm", {"chunk_size": 2}, "`attention_options`.*num_components"),
    (zoo.luong_nmt, "global", {"name": "x"}, "`attention_options`"),
    (zoo.bahdanau_nmt, "soft", {"noise_std": 0.0}, "`attention_options`"),
    (zoo.bahdanau_nmt, "mocha", ["score_bias_init"], "`attention_options`"),
    # The layer checks the values, naming its own argument.
    (zoo.luong_nmt, "gmm", {"variant": "v9"}, "`variant`"),
    (zoo.bahdanau_nmt, "hard-monotonic", {"noise_std": -1.0}, "`noise_std`"),
])
def test_bad_options_are_named(builder, attention, options, match):
    with pytest.raises(ValueError, match=match):
        builder(20, 20, attention=attention, attention_options=options,
                preset="tiny")
