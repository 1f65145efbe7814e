"""Attention layers of the classic papers, for Keras 3 on every backend."""

from kerattn.layers.bahdanau_attention import BahdanauAttention
from kerattn.layers.base_attention import BaseAttention
from kerattn.layers.luong_attention import LuongAttention
from kerattn.layers.multi_head_attention import MultiHeadAttention
from kerattn.layers.position_embedding import PositionEmbedding
from kerattn.layers.scaled_dot_product_attention import (
    ScaledDotProductAttention,
)
from kerattn.layers.sinusoidal_position_encoding import (
    SinusoidalPositionEncoding,
)

__all__ = [
    "BaseAttention",
    "BahdanauAttention",
    "LuongAttention",
    "ScaledDotProductAttention",
    "MultiHeadAttention",
    "SinusoidalPositionEncoding",
    "PositionEmbedding",
]
