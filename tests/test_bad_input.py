"""Bad input gets a ValueError that names the argument and what was expected."""

import numpy as np
import pytest

from cases import ALL_CASES
from kerattn import layers

CASES = sorted(ALL_CASES)


def _x(*shape):
    return np.zeros(shape, "float32")


@pytest.mark.parametrize("name", CASES)
def test_wrong_query_rank(name):
    _, dq, dv = ALL_CASES[name]
    with pytest.raises(ValueError, match="`query` must have rank 2 or 3"):
        ALL_CASES[name][0]()(_x(2, 3, 4, dq), _x(2, 5, dv))
    with pytest.raises(ValueError, match="`query` must have rank 2 or 3"):
        ALL_CASES[name][0]()(_x(dq), _x(2, 5, dv))


@pytest.mark.parametrize("name", CASES)
def test_wrong_value_rank(name):
    _, dq, dv = ALL_CASES[name]
    with pytest.raises(ValueError, match=r"`value` must have rank 3, shaped \(batch, Tv"):
        ALL_CASES[name][0]()(_x(2, 3, dq), _x(2, dv))


@pytest.mark.parametrize("name", CASES)
def test_batch_mismatch(name):
    _, dq, dv = ALL_CASES[name]
    with pytest.raises(ValueError, match="`query` and `value` must have the same batch"):
        ALL_CASES[name][0]()(_x(2, 3, dq), _x(3, 5, dv))


@pytest.mark.parametrize("name", CASES)
def test_key_value_length_mismatch(name):
    _, dq, dv = ALL_CASES[name]
    with pytest.raises(ValueError, match="`key` and `value` must have the same length Tv"):
        ALL_CASES[name][0]()(_x(2, 3, dq), _x(2, 5, dv), key=_x(2, 4, dv))


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize(
    "mask_arg, shape",
    [("value_mask", (2, 6)), ("value_mask", (2,)), ("query_mask", (2, 4)),
     ("attention_mask", (2, 3, 4))],
)
def test_mask_of_wrong_shape(name, mask_arg, shape):
    _, dq, dv = ALL_CASES[name]
    layer = ALL_CASES[name][0]()
    with pytest.raises(ValueError, match=rf"`{mask_arg}` must have shape"):
        layer(_x(2, 3, dq), _x(2, 5, dv), **{mask_arg: np.ones(shape, bool)})


@pytest.mark.parametrize("name", CASES)
def test_feature_size_differs_from_build(name):
    _, dq, dv = ALL_CASES[name]
    layer = ALL_CASES[name][0]()
    layer(_x(2, 3, dq), _x(2, 5, dv))
    with pytest.raises(ValueError, match="`query`.*last dimension"):
        layer(_x(2, 3, dq + 1), _x(2, 5, dv))


@pytest.mark.parametrize(
    "factory, dq, dk",
    [(lambda: layers.LuongAttention("dot"), 4, 5),
     (lambda: layers.ScaledDotProductAttention(), 8, 6)],
    ids=["luong_dot", "scaled_dot_product"],
)
def test_dot_scores_need_equal_query_and_key_sizes(factory, dq, dk):
    with pytest.raises(ValueError, match="same last dimension"):
        factory()(_x(2, 3, dq), _x(2, 5, dk))


def test_location_source_longer_than_max_length():
    layer = layers.LuongAttention("location", max_length=4)
    with pytest.raises(ValueError, match=r"max_length=4.*Tv <= 4"):
        layer(_x(2, 3, 6), _x(2, 5, 6))


@pytest.mark.parametrize(
    "make, arg",
    [
        (lambda: layers.LuongAttention(score="bilinear"), "score"),
        (lambda: layers.LuongAttention(score="location"), "max_length"),
        (lambda: layers.LuongAttention(score="dot", max_length=5), "max_length"),
        (lambda: layers.LuongAttention(score="general", units=4), "units"),
        (lambda: layers.LuongAttention(score="concat", units=0), "units"),
        (lambda: layers.LuongAttention(scale="yes"), "scale"),
        (lambda: layers.BahdanauAttention(units=0), "units"),
        (lambda: layers.BahdanauAttention(units=-3), "units"),
        (lambda: layers.BahdanauAttention(units=2.5), "units"),
        (lambda: layers.BahdanauAttention(units=4, dropout=1.5), "dropout"),
        (lambda: layers.BahdanauAttention(units=4, normalize="no"), "normalize"),
        (lambda: layers.ScaledDotProductAttention(causal="yes"), "causal"),
        (lambda: layers.ScaledDotProductAttention(scale=-1.0), "scale"),
        (lambda: layers.MultiHeadAttention(num_heads=0, key_dim=4), "num_heads"),
        (lambda: layers.MultiHeadAttention(num_heads=2, key_dim=0), "key_dim"),
        (lambda: layers.MultiHeadAttention(2, 4, value_dim=-1), "value_dim"),
        (lambda: layers.MultiHeadAttention(2, 4, dropout=-0.1), "dropout"),
        (lambda: layers.SinusoidalPositionEncoding(max_wavelength=0), "max_wavelength"),
        (lambda: layers.PositionEmbedding(sequence_length=0), "sequence_length"),
    ],
)
def test_bad_constructor_arguments(make, arg):
    with pytest.raises(ValueError, match=f"`{arg}`"):
        make()


def test_position_layers_wrong_rank():
    with pytest.raises(ValueError, match="`inputs` must have rank 2 or 3"):
        layers.SinusoidalPositionEncoding()(_x(2, 3, 4, 5))
    with pytest.raises(ValueError, match="`inputs` must have rank 2 or 3"):
        layers.PositionEmbedding(sequence_length=8)(_x(4))


REFUSE_CAUSAL = {
    "LocationSensitiveAttention": lambda **kw: layers.LocationSensitiveAttention(4, **kw),
    "LocalAttention": lambda **kw: layers.LocalAttention("monotonic", **kw),
    "SoftVisualAttention": lambda **kw: layers.SoftVisualAttention(4, **kw),
    "HardVisualAttention": lambda **kw: layers.HardVisualAttention(4, **kw),
    "HardMonotonicAttention": lambda **kw: layers.HardMonotonicAttention(4, **kw),
    "MonotonicChunkwiseAttention": lambda **kw: layers.MonotonicChunkwiseAttention(4, **kw),
}


@pytest.mark.parametrize("name", sorted(REFUSE_CAUSAL))
def test_causal_is_refused_where_it_cannot_be_honoured(name):
    """`causal=True` is a ValueError naming it, never dropped; `causal=False`
    (what saved configs may hold) is accepted and the config round-trips."""
    make = REFUSE_CAUSAL[name]
    with pytest.raises(ValueError, match=f"`causal` must be False for {name}"):
        make(causal=True)
    layer = make(causal=False)
    assert layer.causal is False
    assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()
