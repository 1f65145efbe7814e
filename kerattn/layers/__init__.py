"""Attention layers of the classic papers, for Keras 3 on every backend."""

from kerattn.layers.attention_over_attention import (
    AttentionOverAttention,
    PointerSum,
)
from kerattn.layers.attention_rnn import AttentionRNN, AttentionRNNCell
from kerattn.layers.bahdanau_attention import BahdanauAttention
from kerattn.layers.base_attention import BaseAttention
from kerattn.layers.coverage_regularization import CoverageRegularization
from kerattn.layers.dynamic_convolution_attention import (
    DynamicConvolutionAttention,
)
from kerattn.layers.forward_attention import ForwardAttention
from kerattn.layers.gmm_attention import GMMAttention
from kerattn.layers.hierarchical_attention import (
    AttentionPooling,
    HierarchicalAttention,
)
from kerattn.layers.latency_regularization import LatencyRegularization
from kerattn.layers.local_attention import LocalAttention
from kerattn.layers.lookahead_convolution import LookaheadConvolution
from kerattn.layers.learned_state import LearnedInitialState
from kerattn.layers.location_sensitive_attention import (
    LocationSensitiveAttention,
)
from kerattn.layers.luong_attention import LuongAttention
from kerattn.layers.recurrent_location_attention import RecurrentLocationAttention
from kerattn.layers.maxout import Maxout
from kerattn.layers.monotonic_attention import (
    HardMonotonicAttention,
    MonotonicChunkwiseAttention,
    StepwiseMonotonicAttention,
    chunkwise_weights,
    monotonic_alignment,
    stepwise_alignment,
)
from kerattn.layers.multi_head_attention import MultiHeadAttention
from kerattn.layers.multi_head_location_attention import (
    MultiHeadLocationAttention,
)
from kerattn.layers.multi_step_attention import GLUConvBlock, MultiStepAttention
from kerattn.layers.multiple_attention import MultipleAttention
from kerattn.layers.pointer_generator import ExtendedEmbedding, PointerGenerator
from kerattn.layers.recurrent import GRU, LSTM
from kerattn.layers.position_embedding import PositionEmbedding
from kerattn.layers.repeat_over_time import RepeatOverTime
from kerattn.layers.restricted_self_attention import RestrictedSelfAttention
from kerattn.layers.reverse_sequence import ReverseSequence
from kerattn.layers.scheduled_sampling import (
    ScheduledEmbeddingSampler,
    ScheduledOutputSampler,
)
from kerattn.layers.self_attentive_embedding import SelfAttentiveEmbedding
from kerattn.layers.scaled_dot_product_attention import (
    ScaledDotProductAttention,
)
from kerattn.layers.sinusoidal_position_encoding import (
    SinusoidalPositionEncoding,
)
from kerattn.layers.transformer import (
    TransformerDecoderBlock,
    TransformerEmbedding,
    TransformerEncoderBlock,
)
from kerattn.layers.visual_attention import (
    DoublyStochasticRegularization,
    HardAttentionReinforce,
    HardVisualAttention,
    MovingAverageBaseline,
    SoftVisualAttention,
    doubly_stochastic_penalty,
    hard_attention_surrogate_loss,
)

__all__ = [
    "GRU",
    "LSTM",
    "PointerSum",
    "PointerGenerator",
    "ExtendedEmbedding",
    "HardAttentionReinforce",
    "BaseAttention",
    "BahdanauAttention",
    "LuongAttention",
    "LocalAttention",
    "MultipleAttention",
    "SelfAttentiveEmbedding",
    "ScheduledEmbeddingSampler",
    "ScheduledOutputSampler",
    "LocationSensitiveAttention",
    "RecurrentLocationAttention",
    "GMMAttention",
    "ForwardAttention",
    "DynamicConvolutionAttention",
    "HardMonotonicAttention",
    "MonotonicChunkwiseAttention",
    "StepwiseMonotonicAttention",
    "monotonic_alignment",
    "stepwise_alignment",
    "chunkwise_weights",
    "CoverageRegularization",
    "LatencyRegularization",
    "RestrictedSelfAttention",
    "ScaledDotProductAttention",
    "MultiHeadAttention",
    "MultiHeadLocationAttention",
    "SinusoidalPositionEncoding",
    "PositionEmbedding",
    "SoftVisualAttention",
    "HardVisualAttention",
    "MovingAverageBaseline",
    "DoublyStochasticRegularization",
    "doubly_stochastic_penalty",
    "hard_attention_surrogate_loss",
    "AttentionPooling",
    "HierarchicalAttention",
    "AttentionOverAttention",
    "MultiStepAttention",
    "GLUConvBlock",
    "AttentionRNN",
    "AttentionRNNCell",
    "Maxout",
    "ReverseSequence",
    "LookaheadConvolution",
    "RepeatOverTime",
    "LearnedInitialState",
    "TransformerEmbedding",
    "TransformerEncoderBlock",
    "TransformerDecoderBlock",
]
