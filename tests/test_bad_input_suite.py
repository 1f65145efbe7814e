"""The bad-input suite: every public layer, zoo builder, decoder and loader.

Each target gets at least five mistakes a user makes (wrong rank, float or
out-of-vocabulary token ids, a batch mismatch, a mask of the wrong shape,
zero-length sequences, sizes that don't divide, unknown option strings, a
missing or corrupt data file). Each must raise a ValueError whose message
names the argument (the `match` pattern), or the documented error
(FileNotFoundError for a missing file), never a backend stack trace and
never silently wrong output. `test_every_target_has_five_cases` keeps the
table complete as the library grows; the count goes in tests/README.md.
"""

import collections
import os

import keras
import numpy as np
import pytest

from kerattn import callbacks, datasets, decoding, layers, zoo
from kerattn.datasets import WordVocabulary

CASES = collections.defaultdict(list)  # target -> [(case, fn, error, match)]


def case(target, name, fn, match, error=ValueError):
    CASES[target].append((name, fn, error, match))


def x(*shape, dtype="float32"):
    return np.zeros(shape, dtype)


def ids(*shape, high=9):
    return np.random.default_rng(0).integers(1, high, shape).astype("int32")


# === Single-head and multi-head attention: (query, value) layers ===

ATTENTION = {
    "BahdanauAttention": (lambda: layers.BahdanauAttention(units=5), 6, 4),
    "LuongAttention": (lambda: layers.LuongAttention("general"), 6, 4),
    "ScaledDotProductAttention": (lambda: layers.ScaledDotProductAttention(), 4, 4),
    "MultiHeadAttention": (lambda: layers.MultiHeadAttention(2, 3), 6, 4),
    "LocalAttention": (lambda: layers.LocalAttention("predictive", 2), 4, 4),
    "SoftVisualAttention": (lambda: layers.SoftVisualAttention(3), 6, 4),
    "HardVisualAttention": (lambda: layers.HardVisualAttention(3, seed=0), 6, 4),
    "LocationSensitiveAttention": (
        lambda: layers.LocationSensitiveAttention(3, filters=2, kernel_size=3), 6, 4),
    "HardMonotonicAttention": (lambda: layers.HardMonotonicAttention(3), 6, 4),
    "MonotonicChunkwiseAttention": (
        lambda: layers.MonotonicChunkwiseAttention(3, chunk_size=2), 6, 4),
    "GMMAttention": (lambda: layers.GMMAttention(2, units=3), 6, 4),
    "RecurrentLocationAttention": (
        lambda: layers.RecurrentLocationAttention(3, filters=2, kernel_size=3), 6, 4),
    "StepwiseMonotonicAttention": (lambda: layers.StepwiseMonotonicAttention(3), 6, 4),
    "MultiHeadLocationAttention": (
        lambda: layers.MultiHeadLocationAttention(2, 3, location=True, filters=2,
                                                  kernel_size=3), 6, 4),
    "ForwardAttention": (
        lambda: layers.ForwardAttention(3, filters=2, kernel_size=3), 6, 4),
    "DynamicConvolutionAttention": (
        lambda: layers.DynamicConvolutionAttention(3, static_width=3,
                                                   dynamic_width=3), 6, 4),
    "MultipleAttention": (
        lambda: layers.MultipleAttention([layers.BahdanauAttention(5),
                                          layers.LuongAttention("general")]), 6, 4),
}
for _name, (_make, _dq, _dv) in ATTENTION.items():
    case(_name, "query of rank 4",
         lambda m=_make, q=_dq, v=_dv: m()(x(2, 3, 1, q), x(2, 5, v)),
         "`query` must have rank 2 or 3")
    case(_name, "value of rank 2",
         lambda m=_make, q=_dq, v=_dv: m()(x(2, 3, q), x(2, v)),
         "`value` must have rank 3")
    case(_name, "batch of query and value differ",
         lambda m=_make, q=_dq, v=_dv: m()(x(2, 3, q), x(3, 5, v)),
         "`query` and `value` must have the same batch")
    case(_name, "value_mask of the wrong shape",
         lambda m=_make, q=_dq, v=_dv: m()(x(2, 3, q), x(2, 5, v),
                                           value_mask=np.ones((2, 6), bool)),
         "`value_mask` must have shape")
    case(_name, "zero-length value",
         lambda m=_make, q=_dq, v=_dv: m()(x(2, 3, q), x(2, 0, v)),
         "`value` must have at least one")
    case(_name, "query feature size differs from the build",
         lambda m=_make, q=_dq, v=_dv: (lambda l: (l(x(2, 3, q), x(2, 5, v)),
                                                   l(x(2, 3, q + 1), x(2, 5, v))))(m()),
         "`query`.*last dimension")

case("BahdanauAttention", "units 0", lambda: layers.BahdanauAttention(0), "`units`")
case("LuongAttention", "unknown score", lambda: layers.LuongAttention("bilinear"), "`score`")
case("LuongAttention", "location without max_length",
     lambda: layers.LuongAttention("location"), "`max_length`")
case("ScaledDotProductAttention", "negative scale",
     lambda: layers.ScaledDotProductAttention(scale=-1.0), "`scale`")
case("MultiHeadAttention", "num_heads 0", lambda: layers.MultiHeadAttention(0, 4),
     "`num_heads`")
case("LocalAttention", "unknown mode", lambda: layers.LocalAttention("sideways", 2),
     "`mode`")
case("LocalAttention", "negative window", lambda: layers.LocalAttention("monotonic", -1),
     "`window`")
# Attentions that score with their past alignments (coverage, location).
case("BahdanauAttention", "alignment_history of the wrong length",
     lambda: layers.BahdanauAttention(3, coverage=True)(
         x(2, 6), x(2, 5, 4), alignment_history=x(2, 4)),
     "`alignment_history` and `value` must have the same length Tv")
case("LuongAttention", "coverage with a score other than concat",
     lambda: layers.LuongAttention("general", coverage=True), "`coverage`")
case("LocalAttention", "coverage", lambda: layers.LocalAttention("monotonic", 2, coverage=True),
     "`coverage`")
_LSA = layers.LocationSensitiveAttention
case("LocationSensitiveAttention", "even kernel_size", lambda: _LSA(3, kernel_size=4),
     "`kernel_size`")
case("LocationSensitiveAttention", "sharpening 0", lambda: _LSA(3, sharpening=0.0),
     "`sharpening`")
case("LocationSensitiveAttention", "alignment_history of the wrong length",
     lambda: _LSA(3, filters=2, kernel_size=3)(x(2, 6), x(2, 5, 4),
                                               alignment_history=x(2, 6)),
     "`alignment_history` and `value` must have the same length Tv")
case("LocationSensitiveAttention", "a channel twice",
     lambda: _LSA(3, channels=("previous", "previous")), "`channels`")
case("LocationSensitiveAttention", "an unknown channel",
     lambda: _LSA(3, channels=("next",)), "`channels`")
case("LocationSensitiveAttention", "channels a string",
     lambda: _LSA(3, channels="previous"), "`channels`")
case("LocationSensitiveAttention", "cumulative beside channels",
     lambda: _LSA(3, channels=("previous",), cumulative=True), "`cumulative`")
case("LocationSensitiveAttention", "use_bias not a bool",
     lambda: _LSA(3, use_bias="no"), "`use_bias`")
case("LocationSensitiveAttention", "one history for two channels",
     lambda: _LSA(3, filters=2, kernel_size=3, channels=("previous", "cumulative"))(
         x(2, 6), x(2, 5, 4), alignment_history=x(2, 5)),
     "`alignment_history` must be a tuple of 2 histories")
case("LocationSensitiveAttention", "a window of no steps",
     lambda: _LSA(3, previous_steps=0), "`previous_steps`")
case("LocationSensitiveAttention", "a window without the previous channel",
     lambda: _LSA(3, previous_steps=2, channels=("cumulative",)), "`previous_steps`")
case("LocationSensitiveAttention", "one history for a window of three",
     lambda: _LSA(3, filters=2, kernel_size=3, previous_steps=3)(
         x(2, 6), x(2, 5, 4), alignment_history=x(2, 5)),
     "`alignment_history` must be a tuple of 3 histories")
_GMM = layers.GMMAttention
case("GMMAttention", "no components", lambda: _GMM(0), "`num_components`")
case("GMMAttention", "units 0", lambda: _GMM(2, units=0), "`units`")
case("GMMAttention", "unknown variant", lambda: _GMM(2, variant="v3"), "`variant`")
case("GMMAttention", "initial_scale 0", lambda: _GMM(2, initial_scale=0.0),
     "`initial_scale`")
case("GMMAttention", "causal", lambda: _GMM(2, causal=True), "`causal`")
case("GMMAttention", "initial_mean of other components",
     lambda: _GMM(2, units=3)(x(2, 4), x(2, 5, 3), initial_mean=x(2, 3)),
     "`initial_mean` and `num_components`")
_SMA = layers.StepwiseMonotonicAttention
case("StepwiseMonotonicAttention", "unknown energy", lambda: _SMA(3, energy="dot"),
     "`energy`")
case("StepwiseMonotonicAttention", "units with the Luong energy",
     lambda: _SMA(3, energy="luong"), "`units`")
case("StepwiseMonotonicAttention", "negative noise", lambda: _SMA(3, noise_std=-1.0),
     "`noise_std`")
case("StepwiseMonotonicAttention", "unknown mode",
     lambda: _SMA(3)(x(2, 6), x(2, 5, 4), mode="soft"), "`mode`")
case("StepwiseMonotonicAttention", "dropout", lambda: _SMA(3, dropout=0.1), "`dropout`")
_MHL = layers.MultiHeadLocationAttention
case("MultiHeadLocationAttention", "no heads", lambda: _MHL(0, 3), "`num_heads`")
case("MultiHeadLocationAttention", "even kernel_size",
     lambda: _MHL(2, 3, location=True, kernel_size=4), "`kernel_size`")
case("MultiHeadLocationAttention", "multi_resolution without location",
     lambda: _MHL(2, 3, multi_resolution=True), "`multi_resolution`")
case("MultiHeadLocationAttention", "scaling 0", lambda: _MHL(2, 3, scaling=0.0),
     "`scaling`")
case("MultiHeadLocationAttention", "a history of other heads",
     lambda: _MHL(2, 3, location=True, filters=2, kernel_size=3)(
         x(2, 6), x(2, 5, 4), alignment_history=x(2, 3, 5)),
     "`alignment_history` and `num_heads`")
case("MultiHeadLocationAttention", "a history without its heads axis",
     lambda: _MHL(2, 3, location=True, filters=2, kernel_size=3)(
         x(2, 6), x(2, 5, 4), alignment_history=x(2, 5)),
     r"`alignment_history` must have rank 3 or 4, shaped \(batch, heads, Tv\) or "
     r"\(batch, Tq, heads, Tv\)")
_FWD = layers.ForwardAttention
case("ForwardAttention", "unknown agent", lambda: _FWD(3, transition_agent="jump"),
     "`transition_agent`")
case("ForwardAttention", "a cumulative channel",
     lambda: _FWD(3, channels=("cumulative",)), "`channels`")
case("ForwardAttention", "cumulative", lambda: _FWD(3, cumulative=True), "`cumulative`")
case("ForwardAttention", "agent without an agent",
     lambda: _FWD(3, filters=2, kernel_size=3)(x(2, 6), x(2, 5, 4), agent=x(2)),
     "`agent`")
case("ForwardAttention", "even kernel_size", lambda: _FWD(3, kernel_size=4),
     "`kernel_size`")
_DCA = layers.DynamicConvolutionAttention
case("DynamicConvolutionAttention", "even static_width",
     lambda: _DCA(3, static_width=4), "`static_width`")
case("DynamicConvolutionAttention", "no dynamic filters",
     lambda: _DCA(3, dynamic_filters=0), "`dynamic_filters`")
case("DynamicConvolutionAttention", "prior_alpha 0",
     lambda: _DCA(3, prior_alpha=0.0), "`prior_alpha`")
case("DynamicConvolutionAttention", "causal", lambda: _DCA(3, causal=True), "`causal`")
case("DynamicConvolutionAttention", "alignment_history of the wrong length",
     lambda: _DCA(3, static_width=3, dynamic_width=3)(
         x(2, 6), x(2, 5, 4), alignment_history=x(2, 6)),
     "`alignment_history` and `value` must have the same length Tv")
_HMA, _MOCHA = layers.HardMonotonicAttention, layers.MonotonicChunkwiseAttention
case("HardMonotonicAttention", "unknown energy", lambda: _HMA(3, energy="dot"),
     "`energy`")
case("HardMonotonicAttention", "units with the Luong energy",
     lambda: _HMA(3, energy="luong"), "`units`")
case("HardMonotonicAttention", "negative noise_std", lambda: _HMA(3, noise_std=-1.0),
     "`noise_std`")
case("HardMonotonicAttention", "unknown mode",
     lambda: _HMA(3)(x(2, 6), x(2, 5, 4), mode="soft"), "`mode`")
case("HardMonotonicAttention", "alignment_history of the wrong length",
     lambda: _HMA(3)(x(2, 6), x(2, 5, 4), alignment_history=x(2, 4)),
     "`alignment_history` and `value` must have the same length Tv")
case("MonotonicChunkwiseAttention", "chunk_size 0", lambda: _MOCHA(3, chunk_size=0),
     "`chunk_size`")
case("MonotonicChunkwiseAttention", "dropout", lambda: _MOCHA(3, dropout=0.1),
     "`dropout`")
case("luong_nmt", "a score with attention='mocha'",
     lambda: zoo.luong_nmt(9, 9, preset="tiny", attention="mocha", score="dot"),
     "`score`")
case("bahdanau_nmt", "unknown attention",
     lambda: zoo.bahdanau_nmt(9, 9, preset="tiny", attention="local"), "`attention`")
case("bahdanau_nmt", "coverage with hard monotonic attention",
     lambda: zoo.bahdanau_nmt(9, 9, preset="tiny", attention="hard-monotonic",
                              coverage=True), "`coverage`")
case("bahdanau_nmt", "attention_options with the soft attention",
     lambda: zoo.bahdanau_nmt(9, 9, preset="tiny",
                              attention_options={"noise_std": 0.0}),
     "`attention_options`")
case("bahdanau_nmt", "an attention option the layers do not take",
     lambda: zoo.bahdanau_nmt(9, 9, preset="tiny", attention="mocha",
                              attention_options={"name": "x"}),
     "`attention_options`")
case("bahdanau_nmt", "a negative noise in attention_options",
     lambda: zoo.bahdanau_nmt(9, 9, preset="tiny", attention="hard-monotonic",
                              attention_options={"noise_std": -1.0}),
     "`noise_std`")
case("SoftVisualAttention", "gating not a bool",
     lambda: layers.SoftVisualAttention(3, gating="yes"), "`gating`")
case("HardVisualAttention", "unknown inference",
     lambda: layers.HardVisualAttention(3, inference="mode"), "`inference`")
case("HardVisualAttention", "expectation_rate above 1",
     lambda: layers.HardVisualAttention(3, expectation_rate=1.5), "`expectation_rate`")
case("HardVisualAttention", "expectation_rate a string",
     lambda: layers.HardVisualAttention(3, expectation_rate="half"), "`expectation_rate`")
case("HardVisualAttention", "expectation_rate a bool",
     lambda: layers.HardVisualAttention(3, expectation_rate=True), "`expectation_rate`")


# === Self-attention, pooling and hierarchical layers ===

case("RestrictedSelfAttention", "inputs of rank 2",
     lambda: layers.RestrictedSelfAttention(2)(x(2, 8)), "`inputs` must have rank 3")
case("RestrictedSelfAttention", "mask of the wrong shape",
     lambda: layers.RestrictedSelfAttention(2)(x(2, 5, 4), mask=np.ones((2, 6), bool)),
     "`mask` must have shape")
case("RestrictedSelfAttention", "negative window",
     lambda: layers.RestrictedSelfAttention(-2), "`window`")
case("RestrictedSelfAttention", "num_heads not dividing the model dim",
     lambda: layers.RestrictedSelfAttention(2, num_heads=3)(x(2, 5, 8)), "`num_heads`")
case("RestrictedSelfAttention", "zero-length inputs",
     lambda: layers.RestrictedSelfAttention(2)(x(2, 0, 4)), "`inputs` must have at least one")
case("RestrictedSelfAttention", "causal not a bool",
     lambda: layers.RestrictedSelfAttention(2, causal=1), "`causal`")

case("AttentionPooling", "units 0", lambda: layers.AttentionPooling(0), "`units`")
case("AttentionPooling", "inputs of rank 2",
     lambda: layers.AttentionPooling(3)(x(2, 4)), "`inputs` must have rank 3")
case("AttentionPooling", "inputs of rank 4",
     lambda: layers.AttentionPooling(3)(x(2, 4, 5, 6)), "`inputs` must have rank 3")
case("AttentionPooling", "mask of the wrong shape",
     lambda: layers.AttentionPooling(3)(x(2, 4, 5), mask=np.ones((2, 5), bool)),
     "`mask` must have shape")
case("AttentionPooling", "zero-length inputs",
     lambda: layers.AttentionPooling(3)(x(2, 0, 5)), "`inputs` must have at least one")

case("HierarchicalAttention", "word_units 0",
     lambda: layers.HierarchicalAttention(0, 2), "`word_units`")
case("HierarchicalAttention", "sentence_units -1",
     lambda: layers.HierarchicalAttention(2, -1), "`sentence_units`")
case("HierarchicalAttention", "inputs of rank 3",
     lambda: layers.HierarchicalAttention(2, 2)(x(2, 3, 4)), "`inputs` must have rank 4")
case("HierarchicalAttention", "mask of the wrong shape",
     lambda: layers.HierarchicalAttention(2, 2)(x(2, 3, 4, 5), mask=np.ones((2, 3), bool)),
     "`mask` must have shape")
case("HierarchicalAttention", "zero words per sentence",
     lambda: layers.HierarchicalAttention(2, 2)(x(2, 3, 0, 5)),
     "`inputs` must have at least one")

case("AttentionOverAttention", "document of rank 2",
     lambda: layers.AttentionOverAttention()(x(2, 4), x(2, 3, 4)), "`document` must have rank 3")
case("AttentionOverAttention", "query of rank 4",
     lambda: layers.AttentionOverAttention()(x(2, 5, 4), x(2, 3, 4, 1)), "`query` must have rank 3")
case("AttentionOverAttention", "batch mismatch",
     lambda: layers.AttentionOverAttention()(x(2, 5, 4), x(3, 3, 4)), "same batch size")
case("AttentionOverAttention", "document_mask of the wrong shape",
     lambda: layers.AttentionOverAttention()(x(2, 5, 4), x(2, 3, 4),
                                             document_mask=np.ones((2, 4), bool)),
     "`document_mask` must have shape")
case("AttentionOverAttention", "zero-length query",
     lambda: layers.AttentionOverAttention()(x(2, 5, 4), x(2, 0, 4)),
     "`query` must have at least one")

case("PointerSum", "s of rank 3",
     lambda: layers.PointerSum()(x(2, 5, 1), ids(2, 5), ids(2, 3)), "`s` must have rank 2")
case("PointerSum", "float document ids",
     lambda: layers.PointerSum()(x(2, 5), x(2, 5), ids(2, 3)), "`document_ids` must hold integer")
case("PointerSum", "float candidate ids",
     lambda: layers.PointerSum()(x(2, 5), ids(2, 5), x(2, 3)), "`candidate_ids` must hold integer")
case("PointerSum", "s and document_ids of different lengths",
     lambda: layers.PointerSum()(x(2, 5), ids(2, 6), ids(2, 3)), "`s` and `document_ids`")
case("PointerSum", "batch mismatch",
     lambda: layers.PointerSum()(x(2, 5), ids(2, 5), ids(3, 3)), "same batch size")


# === Convolutional (ConvS2S) layers ===

case("GLUConvBlock", "filters 0", lambda: layers.GLUConvBlock(0, 3), "`filters`")
case("GLUConvBlock", "even kernel, not causal",
     lambda: layers.GLUConvBlock(4, 2), "`kernel_size`")
case("GLUConvBlock", "dropout 1", lambda: layers.GLUConvBlock(4, 3, dropout=1.0), "`dropout`")
case("GLUConvBlock", "inputs of rank 2",
     lambda: layers.GLUConvBlock(4, 3)(x(2, 4)), "`inputs` must have rank 3")
case("GLUConvBlock", "zero-length inputs",
     lambda: layers.GLUConvBlock(4, 3)(x(2, 0, 4)), "`inputs` must have at least one")

_MSA = layers.MultiStepAttention
case("MultiStepAttention", "scale not a bool", lambda: _MSA(scale="yes"), "`scale`")
case("MultiStepAttention", "encoder_outputs of rank 2",
     lambda: _MSA()(x(2, 3, 4), x(2, 3, 4), x(2, 4), x(2, 5, 4)),
     "`encoder_outputs` must have rank 3")
case("MultiStepAttention", "embedding sizes differ",
     lambda: _MSA()(x(2, 3, 4), x(2, 3, 4), x(2, 5, 6), x(2, 5, 6)),
     "`encoder_outputs` and `target_embeddings`")
case("MultiStepAttention", "source lengths differ",
     lambda: _MSA()(x(2, 3, 4), x(2, 3, 4), x(2, 5, 4), x(2, 6, 4)), "length S")
case("MultiStepAttention", "source_mask of the wrong shape",
     lambda: _MSA()(x(2, 3, 4), x(2, 3, 4), x(2, 5, 4), x(2, 5, 4),
                    source_mask=np.ones((2, 4), bool)), "`source_mask` must have shape")


# === The recurrent attention decoder ===

def _rnn(**kw):
    return layers.AttentionRNN(4, layers.BahdanauAttention(3), **kw)


case("BahdanauAttention", "an unknown probability_fn",
     lambda: layers.BahdanauAttention(3, probability_fn="argmax"), "`probability_fn`")
case("LuongAttention", "probability_fn None",
     lambda: layers.LuongAttention("dot", probability_fn=None), "`probability_fn`")
case("MultipleAttention", "one layer, not a list",
     lambda: layers.MultipleAttention(layers.LuongAttention()), "`attentions`")
case("MultipleAttention", "a list of one",
     lambda: layers.MultipleAttention([layers.LuongAttention()]), "`attentions`")
case("MultipleAttention", "a Dense layer in the list",
     lambda: layers.MultipleAttention([layers.LuongAttention(), keras.layers.Dense(3)]),
     "`attentions`")
case("MultiHeadAttention", "max_relative_position 0",
     lambda: layers.MultiHeadAttention(2, 4, max_relative_position=0), "`max_relative_position`")
case("MultiHeadAttention", "query_positions of rank 3",
     lambda: (lambda l: (l(x(2, 3, 8), x(2, 3, 8)),
                         l.attend(x(2, 3, 8), *l.project_key_value(x(2, 3, 8), x(2, 3, 8)),
                                  query_positions=np.zeros((2, 3, 1), "int32"))))(
         layers.MultiHeadAttention(2, 4, max_relative_position=2)),
     "`query_positions`")
case("transformer_nmt", "no positions at all",
     lambda: zoo.transformer_nmt(20, 20, preset="tiny", absolute_positions=False),
     "`absolute_positions`")
case("transformer_nmt", "max_relative_position negative",
     lambda: zoo.transformer_nmt(20, 20, preset="tiny", max_relative_position=-2),
     "`max_relative_position`")
case("TransformerEmbedding", "positions not a bool",
     lambda: layers.TransformerEmbedding(10, 4, positions="yes"), "`positions`")
case("TransformerEncoderBlock", "max_relative_position 0",
     lambda: layers.TransformerEncoderBlock(2, 8, max_relative_position=0),
     "`max_relative_position`")
_SOS, _SES = layers.ScheduledOutputSampler, layers.ScheduledEmbeddingSampler
case("ScheduledOutputSampler", "probability above 1", lambda: _SOS(1.5), "`probability`")
case("ScheduledOutputSampler", "a negative probability", lambda: _SOS(-0.1), "`probability`")
case("ScheduledOutputSampler", "probability a string", lambda: _SOS("half"), "`probability`")
case("ScheduledOutputSampler", "transform not callable", lambda: _SOS(transform=3), "`transform`")
case("ScheduledOutputSampler", "a negative seed", lambda: _SOS(seed=-1), "`seed`")
case("ScheduledEmbeddingSampler", "embedding not callable",
     lambda: _SES(3, keras.layers.Dense(2)), "`embedding`")
case("ScheduledEmbeddingSampler", "readout not a layer",
     lambda: _SES(keras.layers.Embedding(4, 2), len), "`readout`")
case("ScheduledEmbeddingSampler", "greedy not a bool",
     lambda: _SES(keras.layers.Embedding(4, 2), keras.layers.Dense(4), greedy="yes"), "`greedy`")
case("ScheduledEmbeddingSampler", "probability 2",
     lambda: _SES(keras.layers.Embedding(4, 2), keras.layers.Dense(4), probability=2), "`probability`")
case("ScheduledEmbeddingSampler", "a float seed",
     lambda: _SES(keras.layers.Embedding(4, 2), keras.layers.Dense(4), seed=1.5), "`seed`")
case("AttentionRNN", "a sampler that is not one",
     lambda: setattr(_rnn(), "sampler", "embedding"), "`sampler`")
_sched = callbacks.SamplingSchedule
case("SamplingSchedule", "sampler not a sampler", lambda: _sched(object(), lambda i: 0.1),
     "`sampler`")
case("SamplingSchedule", "sampler None", lambda: _sched(None, lambda i: 0.1), "`sampler`")
case("SamplingSchedule", "schedule not callable", lambda: _sched(_SOS(), 0.5), "`schedule`")
case("SamplingSchedule", "a schedule that gives 2",
     lambda: _sched(_SOS(), lambda i: 2.0).on_epoch_begin(0), "`schedule`")
case("SamplingSchedule", "a schedule that gives a string",
     lambda: _sched(_SOS(), lambda i: "more").on_epoch_begin(0), "`schedule`")
_SAE = layers.SelfAttentiveEmbedding
case("SelfAttentiveEmbedding", "units 0", lambda: _SAE(0), "`units`")
case("SelfAttentiveEmbedding", "hops 0", lambda: _SAE(4, hops=0), "`hops`")
case("SelfAttentiveEmbedding", "a negative penalty", lambda: _SAE(4, penalty=-1.0), "`penalty`")
case("SelfAttentiveEmbedding", "inputs of rank 2", lambda: _SAE(4)(x(2, 5)),
     "`inputs` must have rank 3")
case("SelfAttentiveEmbedding", "a mask of the wrong length",
     lambda: _SAE(4)(x(2, 5, 3), mask=np.ones((2, 4), bool)), "`mask` must have shape")
# A family that computes its weights its own way takes "softmax" only.
case("LocalAttention", "probability_fn hardmax (its window's softmax)",
     lambda: layers.LocalAttention("monotonic", 2, probability_fn="hardmax"),
     "`probability_fn`")
case("GMMAttention", "probability_fn sparsemax (a mixture, not a score)",
     lambda: layers.GMMAttention(2, probability_fn="sparsemax"), "`probability_fn`")
case("RecurrentLocationAttention", "coverage (it reads the previous weights)",
     lambda: layers.RecurrentLocationAttention(3, coverage=True), "`coverage`")
case("AttentionRNN", "an attentional activation other than tanh or None",
     lambda: layers.AttentionRNN(4, layers.LuongAttention("dot"), order="luong",
                                 attentional_activation="relu"),
     "`attentional_activation`")
case("AttentionRNN", "attention_window of one side",
     lambda: layers.AttentionRNN(4, layers.BahdanauAttention(3), attention_window=(1,)),
     "`attention_window`")
case("AttentionRNN", "attention_window forward 0",
     lambda: layers.AttentionRNN(4, layers.BahdanauAttention(3), attention_window=(1, 0)),
     "`attention_window`")
case("AttentionRNN", "units 0", lambda: layers.AttentionRNN(0, layers.BahdanauAttention(3)),
     "`units`")
case("AttentionRNN", "attention not a kerattn layer",
     lambda: layers.AttentionRNN(4, keras.layers.Dense(3)), "`attention`")
case("AttentionRNN", "unknown cell", lambda: _rnn(cell="rnn"), "`cell`")
case("AttentionRNN", "memory of rank 2",
     lambda: _rnn()(x(2, 3, 5), x(2, 4)), "`memory` must have rank 3")
case("AttentionRNN", "batch mismatch",
     lambda: _rnn()(x(2, 3, 5), x(3, 4, 6)), "same batch size")
case("AttentionRNN", "memory_mask of the wrong shape",
     lambda: _rnn()(x(2, 3, 5), x(2, 4, 6), memory_mask=np.ones((2, 3), bool)),
     "`memory_mask` must have shape")
case("AttentionRNN", "zero-length memory",
     lambda: _rnn()(x(2, 3, 5), x(2, 0, 6)), "`memory` must have at least one")

case("AttentionRNN", "get_initial_state without the cache of a stateful attention",
     lambda: layers.AttentionRNN(4, layers.BahdanauAttention(3, coverage=True))
     .get_initial_state(2), "`cache`")
case("AttentionRNN", "a Dense layer as the cell",
     lambda: _rnn(order="luong", cell=keras.layers.Dense(4)), "`cell`")
case("AttentionRNN", "a Keras cell with Bahdanau's order",
     lambda: _rnn(cell=keras.layers.GRUCell(4)), "`order`")
case("AttentionRNN", "an unknown step_output",
     lambda: _rnn(order="luong", step_output="context"), "`step_output`")
case("AttentionRNN", "step_output with order bahdanau",
     lambda: _rnn(step_output="cell"), "`step_output`")
case("AttentionRNN", "attentional_units without the attentional layer",
     lambda: _rnn(order="luong", input_feeding=False, attentional_units=3,
                  attentional_layer=False), "`attentional_units`")
case("AttentionRNN", "attentional_layer not a bool",
     lambda: _rnn(attentional_layer="no"), "`attentional_layer`")
case("AttentionRNN", "wait_k 0 (step 0 would read nothing)",
     lambda: _rnn(wait_k=0), "`wait_k`")
case("AttentionRNN", "wait_k a float", lambda: _rnn(wait_k=2.5), "`wait_k`")
case("AttentionRNN", "wait_rate 0", lambda: _rnn(wait_k=2, wait_rate=0), "`wait_rate`")
case("AttentionRNN", "wait_rate without wait_k", lambda: _rnn(wait_rate=1.2), "`wait_rate`")

def _cell(cell="gru", units=4, attention=None, order="bahdanau"):
    return layers.AttentionRNNCell(cell, units, attention or layers.BahdanauAttention(3),
                                   order, False, None)


case("AttentionRNNCell", "called without memory",
     lambda: _cell()(x(2, 5), [x(2, 4), np.zeros((2,), "int32")]), "`memory`")
case("AttentionRNNCell", "units 0", lambda: _cell(units=0), "`units`")
case("AttentionRNNCell", "attention not a kerattn layer",
     lambda: _cell(attention=keras.layers.Dense(3)), "`attention`")
case("AttentionRNNCell", "unknown cell", lambda: _cell(cell="rnn"), "`cell`")
case("AttentionRNNCell", "unknown order", lambda: _cell(order="sideways"), "`order`")
case("AttentionRNNCell", "step_output not a string",
     lambda: layers.AttentionRNNCell("gru", 4, layers.BahdanauAttention(3), "luong",
                                     True, 4, step_output=True),
     "`step_output`")


# === Small building blocks ===

for _name, _cls in (("GRU", layers.GRU), ("LSTM", layers.LSTM)):
    case(_name, "units 0", lambda c=_cls: c(0), "`units`")
    case(_name, "dropout 1.5", lambda c=_cls: c(4, dropout=1.5), "`dropout`")
    case(_name, "sequences of rank 2", lambda c=_cls: c(4)(x(2, 3)), "expected ndim=3")
    case(_name, "zero time steps", lambda c=_cls: c(4)(x(2, 0, 3)), "`sequences`")
    case(_name, "mask of another length", lambda c=_cls: c(4)(
        x(2, 5, 3), mask=np.ones((2, 4), bool)), "`mask`")
    case(_name, "initial state of another size", lambda c=_cls: c(4)(
        x(2, 5, 3), initial_state=[x(2, 3)] * (2 if c is layers.LSTM else 1)),
        "`initial_state`")
    case(_name, "one state for an LSTM, two for a GRU", lambda c=_cls: c(4)(
        x(2, 5, 3), initial_state=[x(2, 4)] * (1 if c is layers.LSTM else 2)),
        "`initial_state`")
    case(_name, "features unlike the built layer's", lambda c=_cls: (
        lambda layer: (layer(x(2, 5, 3)), layer(x(2, 5, 4))))(c(4)), "`sequences`")
case("Maxout", "pool_size 0", lambda: layers.Maxout(0), "`pool_size`")
case("Maxout", "pool_size a float", lambda: layers.Maxout(2.0), "`pool_size`")
case("Maxout", "last dim not divisible", lambda: layers.Maxout(2)(x(2, 5)), "divisible by pool_size")
case("Maxout", "scalar inputs", lambda: layers.Maxout(2)(x(2)), "`inputs` must have rank")
case("Maxout", "zero-size last dim", lambda: layers.Maxout(2)(x(2, 0)),
     "`inputs` must have a last dimension")

case("ReverseSequence", "pad_id a string", lambda: layers.ReverseSequence(pad_id="0"), "`pad_id`")
case("ReverseSequence", "inputs of rank 1", lambda: layers.ReverseSequence()(ids(4)),
     "`inputs` must have rank 2 or 3")
case("ReverseSequence", "inputs of rank 4", lambda: layers.ReverseSequence()(x(2, 3, 4, 5)),
     "`inputs` must have rank 2 or 3")
case("ReverseSequence", "mask of the wrong shape",
     lambda: layers.ReverseSequence()(x(2, 3, 4), mask=np.ones((2, 4), bool)),
     "`mask` must have shape")
case("ReverseSequence", "float ids without a mask",
     lambda: layers.ReverseSequence()(x(2, 3)), "`inputs` of rank 2 must hold integer")

case("LookaheadConvolution", "lookahead negative",
     lambda: layers.LookaheadConvolution(-1), "`lookahead`")
case("LookaheadConvolution", "lookahead a float",
     lambda: layers.LookaheadConvolution(1.5), "`lookahead`")
case("LookaheadConvolution", "lookahead a bool",
     lambda: layers.LookaheadConvolution(True), "`lookahead`")
case("LookaheadConvolution", "inputs of rank 2",
     lambda: layers.LookaheadConvolution(2)(x(2, 3)), "`inputs` must have rank 3")
case("LookaheadConvolution", "mask of the wrong shape",
     lambda: layers.LookaheadConvolution(2)(x(2, 3, 4), mask=np.ones((2, 4), bool)),
     "`mask` must have shape")
case("LearnedInitialState", "units 0", lambda: layers.LearnedInitialState(0), "`units`")
case("LearnedInitialState", "units negative", lambda: layers.LearnedInitialState(-2),
     "`units`")
case("LearnedInitialState", "units a float", lambda: layers.LearnedInitialState(2.5),
     "`units`")
case("LearnedInitialState", "units a bool", lambda: layers.LearnedInitialState(True),
     "`units`")
case("LearnedInitialState", "inputs of rank 0",
     lambda: layers.LearnedInitialState(3)(keras.ops.ones(())), "`inputs`")
case("RepeatOverTime", "vector of rank 3",
     lambda: layers.RepeatOverTime()(x(2, 3, 4), x(2, 5, 4)), "`vector` must have rank 2")
case("RepeatOverTime", "sequence of rank 1",
     lambda: layers.RepeatOverTime()(x(2, 4), x(2)), "`sequence` must have rank 2 or 3")
case("RepeatOverTime", "batch mismatch",
     lambda: layers.RepeatOverTime()(x(2, 4), x(3, 5, 4)), "same batch size")
case("RepeatOverTime", "vector of rank 1",
     lambda: layers.RepeatOverTime()(x(4), x(2, 5, 4)), "`vector` must have rank 2")
case("RepeatOverTime", "sequence of rank 4",
     lambda: layers.RepeatOverTime()(x(2, 4), x(2, 5, 4, 1)), "`sequence` must have rank 2 or 3")

_PG_ARGS = (x(2, 3, 6), x(2, 3, 4), ids(2, 4, high=6), [x(2, 3, 5)])
case("PointerGenerator", "logits of rank 1",
     lambda: layers.PointerGenerator()(x(6), x(2, 4), ids(2, 4), [x(2, 5)]),
     "`logits` must have rank 2 or 3")
case("PointerGenerator", "attention of another rank than logits",
     lambda: layers.PointerGenerator()(x(2, 3, 6), x(2, 4), ids(2, 4), [x(2, 3, 5)]),
     "`attention` must have rank 3")
case("PointerGenerator", "float source ids",
     lambda: layers.PointerGenerator()(*_PG_ARGS[:2], x(2, 4), _PG_ARGS[3]),
     "`source_ids` must hold integer token ids")
case("PointerGenerator", "source length differs from the attention's",
     lambda: layers.PointerGenerator()(*_PG_ARGS[:2], ids(2, 5), _PG_ARGS[3]),
     "`attention` and `source_ids` must have the same source length")
case("PointerGenerator", "batch of attention and source ids differ",
     lambda: layers.PointerGenerator()(*_PG_ARGS[:2], ids(3, 4), _PG_ARGS[3]),
     "`attention` and `source_ids` must have the same batch size")
case("PointerGenerator", "no switch inputs",
     lambda: layers.PointerGenerator()(*_PG_ARGS[:3], []), "`switch_inputs`")
case("PointerGenerator", "switch inputs of rank 2 with logits of rank 3",
     lambda: layers.PointerGenerator()(*_PG_ARGS[:3], [x(2, 5)]), "`switch_inputs`")
case("PointerGenerator", "source mask of the wrong shape",
     lambda: layers.PointerGenerator()(*_PG_ARGS, source_mask=np.ones((2, 5), bool)),
     "`source_mask` must have shape")

case("ExtendedEmbedding", "unk_id negative",
     lambda: layers.ExtendedEmbedding(10, 4, unk_id=-1), "`unk_id` must be an int in")
case("ExtendedEmbedding", "unk_id past the vocabulary",
     lambda: layers.ExtendedEmbedding(10, 4, unk_id=10), r"`unk_id` must be an int in \[0, 10\)")
case("ExtendedEmbedding", "unk_id a float",
     lambda: layers.ExtendedEmbedding(10, 4, unk_id=1.0), "`unk_id`")
case("ExtendedEmbedding", "input_dim 0", lambda: layers.ExtendedEmbedding(0, 4), "`input_dim`")
case("ExtendedEmbedding", "float ids",
     lambda: layers.ExtendedEmbedding(10, 4)(x(2, 3)), "`inputs` must hold integer token ids")

case("SinusoidalPositionEncoding", "max_wavelength 0",
     lambda: layers.SinusoidalPositionEncoding(max_wavelength=0), "`max_wavelength`")
case("SinusoidalPositionEncoding", "inputs of rank 4",
     lambda: layers.SinusoidalPositionEncoding()(x(2, 3, 4, 5)), "`inputs` must have rank 2 or 3")
case("SinusoidalPositionEncoding", "inputs of rank 1",
     lambda: layers.SinusoidalPositionEncoding()(x(4)), "`inputs` must have rank 2 or 3")
case("SinusoidalPositionEncoding", "max_wavelength negative",
     lambda: layers.SinusoidalPositionEncoding(max_wavelength=-5.0), "`max_wavelength`")
case("SinusoidalPositionEncoding", "negative start_index",
     lambda: layers.SinusoidalPositionEncoding()(x(2, 3, 4), start_index=-1), "`start_index`")

case("PositionEmbedding", "sequence_length 0",
     lambda: layers.PositionEmbedding(0), "`sequence_length`")
case("PositionEmbedding", "inputs of rank 1",
     lambda: layers.PositionEmbedding(8)(x(4)), "`inputs` must have rank 2 or 3")
case("PositionEmbedding", "longer than sequence_length",
     lambda: layers.PositionEmbedding(4)(x(2, 6, 3)), "positions from start_index")
case("PositionEmbedding", "start_index past the end",
     lambda: layers.PositionEmbedding(4)(x(2, 2, 3), start_index=3), "positions from start_index")
case("PositionEmbedding", "sequence_length a float",
     lambda: layers.PositionEmbedding(4.0), "`sequence_length`")

case("TransformerEmbedding", "vocab_size 0",
     lambda: layers.TransformerEmbedding(0, 8), "`vocab_size`")
case("TransformerEmbedding", "d_model -1",
     lambda: layers.TransformerEmbedding(10, -1), "`d_model`")
case("TransformerEmbedding", "float token ids",
     lambda: layers.TransformerEmbedding(10, 8)(x(2, 3)), "`inputs` must hold integer")
case("TransformerEmbedding", "ids of rank 3",
     lambda: layers.TransformerEmbedding(10, 8)(ids(2, 3, 1)), "`inputs` must have rank 2")
case("TransformerEmbedding", "vocab_size a float",
     lambda: layers.TransformerEmbedding(10.0, 8), "`vocab_size`")

case("TransformerEncoderBlock", "num_heads not dividing d_model",
     lambda: layers.TransformerEncoderBlock(3, 16)(x(2, 4, 8)), "`num_heads`")
case("TransformerEncoderBlock", "ff_dim 0",
     lambda: layers.TransformerEncoderBlock(2, 0), "`ff_dim`")
case("TransformerEncoderBlock", "dropout 1",
     lambda: layers.TransformerEncoderBlock(2, 8, dropout=1.0), "`dropout`")
case("TransformerEncoderBlock", "inputs of rank 2",
     lambda: layers.TransformerEncoderBlock(2, 8)(x(2, 8)), "`inputs` must have rank 3")
case("TransformerEncoderBlock", "mask of the wrong shape",
     lambda: layers.TransformerEncoderBlock(2, 8)(x(2, 4, 8), mask=np.ones((2, 5), bool)),
     "`query_mask` must have shape")

case("TransformerDecoderBlock", "num_heads not dividing d_model",
     lambda: layers.TransformerDecoderBlock(3, 16)(x(2, 4, 8), x(2, 5, 8)), "`num_heads`")
case("TransformerDecoderBlock", "memory of rank 2",
     lambda: layers.TransformerDecoderBlock(2, 8)(x(2, 4, 8), x(2, 8)), "`memory` must have rank 3")
case("TransformerDecoderBlock", "batch of inputs and memory differ",
     lambda: layers.TransformerDecoderBlock(2, 8)(x(2, 4, 8), x(3, 5, 8)), "same batch")
case("TransformerDecoderBlock", "memory_mask of the wrong shape",
     lambda: layers.TransformerDecoderBlock(2, 8)(x(2, 4, 8), x(2, 5, 8),
                                                  memory_mask=np.ones((2, 4), bool)),
     "`value_mask` must have shape")
case("TransformerDecoderBlock", "ff_dim -1",
     lambda: layers.TransformerDecoderBlock(2, -1), "`ff_dim`")


# === Training helpers of Show, Attend and Tell ===

case("MovingAverageBaseline", "decay 1", lambda: layers.MovingAverageBaseline(1.0), "`decay`")
case("MovingAverageBaseline", "decay negative", lambda: layers.MovingAverageBaseline(-0.1),
     "`decay`")
case("MovingAverageBaseline", "decay a string", lambda: layers.MovingAverageBaseline("0.9"),
     "`decay`")
case("MovingAverageBaseline", "rewards of rank 2",
     lambda: layers.MovingAverageBaseline()(x(2, 3)), "`rewards` must have rank 1")
case("MovingAverageBaseline", "empty rewards",
     lambda: layers.MovingAverageBaseline()(x(0)), "`rewards` must have at least one")

case("DoublyStochasticRegularization", "negative lam",
     lambda: layers.DoublyStochasticRegularization(-1.0), "`lam`")
case("DoublyStochasticRegularization", "lam a string",
     lambda: layers.DoublyStochasticRegularization("1"), "`lam`")
case("DoublyStochasticRegularization", "alphas of rank 2",
     lambda: layers.DoublyStochasticRegularization()(x(2, 3)), "`alphas` must have rank 3")
case("DoublyStochasticRegularization", "step_mask of the wrong shape",
     lambda: layers.DoublyStochasticRegularization()(x(2, 3, 4), step_mask=np.ones((2, 4), bool)),
     "`step_mask` must have shape")
case("DoublyStochasticRegularization", "alphas of rank 4",
     lambda: layers.DoublyStochasticRegularization()(x(2, 3, 4, 1)), "`alphas` must have rank 3")

case("CoverageRegularization", "negative weight",
     lambda: layers.CoverageRegularization(-1.0), "`weight`")
case("CoverageRegularization", "weight a string",
     lambda: layers.CoverageRegularization("1"), "`weight`")
case("CoverageRegularization", "alphas of rank 2",
     lambda: layers.CoverageRegularization()(x(2, 3)), "`alphas` must have rank 3")
case("CoverageRegularization", "step_mask of the wrong shape",
     lambda: layers.CoverageRegularization()(x(2, 3, 4), step_mask=np.ones((2, 4), bool)),
     "`step_mask` must have shape")
case("CoverageRegularization", "location_mask of the wrong shape",
     lambda: layers.CoverageRegularization()(x(2, 3, 4), location_mask=np.ones((2, 3), bool)),
     "`location_mask` must have shape")

case("LatencyRegularization", "negative weight",
     lambda: layers.LatencyRegularization(-0.1), "`weight`")
case("LatencyRegularization", "weight a string",
     lambda: layers.LatencyRegularization("1"), "`weight`")
case("LatencyRegularization", "alphas of rank 2",
     lambda: layers.LatencyRegularization()(x(2, 3)), "`alphas` must have rank 3")
case("LatencyRegularization", "step_mask of the wrong shape",
     lambda: layers.LatencyRegularization()(x(2, 3, 4), step_mask=np.ones((2, 4), bool)),
     "`step_mask` must have shape")
case("LatencyRegularization", "location_mask of the wrong shape",
     lambda: layers.LatencyRegularization()(x(2, 3, 4), location_mask=np.ones((2, 3), bool)),
     "`location_mask` must have shape")

_HAR = layers.HardAttentionReinforce
case("HardAttentionReinforce", "negative lambda_r", lambda: _HAR(lambda_r=-1.0), "`lambda_r`")
case("HardAttentionReinforce", "logits of rank 2",
     lambda: _HAR()(x(2, 7), ids(2, 3), x(2, 3, 4), x(2, 3, 4)), "`logits` must have rank 3")
case("HardAttentionReinforce", "float targets",
     lambda: _HAR()(x(2, 3, 7), x(2, 3), x(2, 3, 4), x(2, 3, 4)), "`targets` must hold integer")
case("HardAttentionReinforce", "alphas and samples differ",
     lambda: _HAR()(x(2, 3, 7), ids(2, 3), x(2, 3, 4), x(2, 3, 5)), "`alphas` and `samples`")
case("HardAttentionReinforce", "targets and logits of different lengths",
     lambda: _HAR()(x(2, 3, 7), ids(2, 4), x(2, 3, 4), x(2, 3, 4)), "`targets` and `logits`")


# === Zoo builders: arguments, then the data a user feeds ===

_BUILT = {}


def _once(key, make):
    """`make()` built once and shared by the cases that feed it bad data.

    Each such case raises before the model runs, so none changes it; builder
    arguments (`make(**kw)`) still build a model per case.
    """
    def build(**kw):
        if kw:
            return make(**kw)
        if key not in _BUILT:
            _BUILT[key] = make()
        return _BUILT[key]
    return build


TRANSLATION = {
    "bahdanau_nmt": lambda **kw: zoo.bahdanau_nmt(
        20, 20, embedding_dim=4, units=6, alignment_units=4, maxout_units=3, **kw),
    "luong_nmt": lambda **kw: zoo.luong_nmt(20, 20, units=6, embedding_dim=4,
                                            num_layers=1, **kw),
    "seq2seq": lambda **kw: zoo.seq2seq(20, 20, num_layers=1, units=6, embedding_dim=4, **kw),
    "cho_encoder_decoder": lambda **kw: zoo.cho_encoder_decoder(
        20, 20, embedding_dim=4, units=6, maxout_units=3, **kw),
    "transformer_nmt": lambda **kw: zoo.transformer_nmt(
        20, 20, num_layers=1, d_model=8, num_heads=2, ff_dim=8, **kw),
    "convs2s_nmt": lambda **kw: zoo.convs2s_nmt(
        20, 20, embedding_dim=4, hidden_dim=8, encoder_layers=1, decoder_layers=1,
        kernel_size=3, **kw),
}
TRANSLATION = {name: _once(name, make) for name, make in TRANSLATION.items()}
_SRC, _TGT = ids(2, 5, high=20), ids(2, 4, high=20)
for _name, _make in TRANSLATION.items():
    case(_name, "dropout 1", lambda m=_make: m(dropout=1.0), "`dropout`")
    case(_name, "float token ids",
         lambda m=_make: m()({"source_ids": _SRC.astype("float32"), "target_in_ids": _TGT}),
         "`source_ids` must hold integer token ids")
    case(_name, "negative token ids",
         lambda m=_make: m()({"source_ids": -_SRC, "target_in_ids": _TGT}),
         r"`source_ids` must be token ids in \[0, 20\)")
    case(_name, "token ids >= vocabulary size",
         lambda m=_make: m().predict({"source_ids": _SRC, "target_in_ids": _TGT + 20},
                                     verbose=0),
         r"`target_in_ids` must be token ids in \[0, 20\)")
    case(_name, "source of rank 3",
         lambda m=_make: m()({"source_ids": _SRC[..., None], "target_in_ids": _TGT}),
         "`source_ids` must have rank 2")
    case(_name, "batch of source and target differ",
         lambda m=_make: m()({"source_ids": _SRC[:1], "target_in_ids": _TGT}),
         "same batch size")
    case(_name, "zero-length source",
         lambda m=_make: m()({"source_ids": _SRC[:, :0], "target_in_ids": _TGT}),
         "`source_ids` must have at least one")

case("bahdanau_nmt", "units 0", lambda: zoo.bahdanau_nmt(20, 20, units=0), "`units`")
case("bahdanau_nmt", "unknown preset", lambda: zoo.bahdanau_nmt(20, 20, preset="huge"), "`preset`")
case("luong_nmt", "unknown attention",
     lambda: zoo.luong_nmt(20, 20, attention="nearby"), "`attention`")
case("luong_nmt", "unknown decoder_init",
     lambda: zoo.luong_nmt(20, 20, decoder_init="mean"), "`decoder_init`")
case("luong_nmt", "unknown score", lambda: zoo.luong_nmt(20, 20, score="bilinear"), "`score`")
case("luong_nmt", "lookahead negative",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", lookahead=-2), "`lookahead`")
case("luong_nmt", "wait_k with a hard monotonic attention",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", attention="mocha", wait_k=2),
     "`wait_k`")
case("luong_nmt", "latency_loss_weight negative",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", attention="hard-monotonic",
                           latency_loss_weight=-0.1), "`latency_loss_weight`")
case("luong_nmt", "latency_loss_weight with a soft attention",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", latency_loss_weight=0.1),
     "`latency_loss_weight`")
case("luong_nmt", "coverage_loss_weight negative",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", attention="coverage",
                           coverage_loss_weight=-1.0), "`coverage_loss_weight`")
case("luong_nmt", "coverage_loss_weight without coverage",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", coverage_loss_weight=1.0),
     "`coverage_loss_weight`")
case("luong_nmt", "wait_k negative",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", wait_k=-1), "`wait_k`")
case("luong_nmt", "wait_rate a string",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", wait_k=2, wait_rate="fast"),
     "`wait_rate`")
case("seq2seq", "num_layers 0", lambda: zoo.seq2seq(20, 20, num_layers=0), "`num_layers`")
case("cho_encoder_decoder", "source vocabulary 0",
     lambda: zoo.cho_encoder_decoder(0, 20), "`source_vocab_size`")
case("transformer_nmt", "num_heads not dividing d_model",
     lambda: zoo.transformer_nmt(20, 20, d_model=10, num_heads=4), "`num_heads`")
case("convs2s_nmt", "even kernel", lambda: zoo.convs2s_nmt(20, 20, kernel_size=4),
     "`kernel_size`")
# The papers' options (tests/test_paper_options.py checks what they do).
case("bahdanau_nmt", "reset_after not a bool",
     lambda: zoo.bahdanau_nmt(20, 20, preset="tiny", reset_after="no"), "`reset_after`")
case("cho_encoder_decoder", "reset_after not a bool",
     lambda: zoo.cho_encoder_decoder(20, 20, preset="tiny", reset_after=1),
     "`reset_after`")
case("transformer_nmt", "tie 'all' with two vocabulary sizes",
     lambda: zoo.transformer_nmt(20, 30, preset="tiny", tie_embeddings="all"),
     "`tie_embeddings`")
case("luong_nmt", "initializer_range 0",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", initializer_range=0.0),
     "`initializer_range`")
case("luong_nmt", "layer_dropout not a bool",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", layer_dropout="yes"),
     "`layer_dropout`")
case("luong_nmt", "bidirectional_encoder not a bool",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", bidirectional_encoder=1),
     "`bidirectional_encoder`")
case("luong_nmt", "odd units with a bidirectional encoder",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", units=15, bidirectional_encoder=True),
     "`units`")
case("luong_nmt", "coverage with the general score",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", attention="coverage", score="general"),
     "`score` must be 'concat'")
case("luong_nmt", "location-sensitive attention with a score",
     lambda: zoo.luong_nmt(20, 20, preset="tiny", attention="location-sensitive",
                           score="dot"), "`score` must be None")
case("bahdanau_nmt", "coverage_loss_weight negative",
     lambda: zoo.bahdanau_nmt(20, 20, preset="tiny", coverage=True,
                              coverage_loss_weight=-1), "`coverage_loss_weight`")

_PG_MODEL = _once("pointer_generator", lambda: zoo.pointer_generator(20, preset="tiny"))
case("pointer_generator", "vocab_size 0", lambda: zoo.pointer_generator(0, preset="tiny"),
     "`vocab_size`")
case("pointer_generator", "unk_id past the vocabulary",
     lambda: zoo.pointer_generator(20, preset="tiny", unk_id=20), "`unk_id`")
case("pointer_generator", "copy not a bool",
     lambda: zoo.pointer_generator(20, preset="tiny", copy="yes"), "`copy`")
case("pointer_generator", "coverage_loss_weight negative",
     lambda: zoo.pointer_generator(20, preset="tiny", coverage=True, coverage_loss_weight=-1),
     "`coverage_loss_weight`")
case("pointer_generator", "unknown preset",
     lambda: zoo.pointer_generator(20, preset="huge"), "`preset`")
case("pointer_generator", "source id past V + S",
     lambda: _PG_MODEL()({"source_ids": np.array([[5, 24, 0, 0]], "int32"),
                          "target_in_ids": np.array([[2, 5]], "int32")}),
     r"`source_ids` must be token ids in \[0, 20 \+ 4\)")
case("pointer_generator", "target id past V + S",
     lambda: _PG_MODEL().predict({"source_ids": np.array([[5, 20, 0]], "int32"),
                                  "target_in_ids": np.array([[2, 23]], "int32")}, verbose=0),
     r"`target_in_ids` must be token ids in \[0, 20 \+ 3\)")
case("pointer_generator", "float token ids",
     lambda: _PG_MODEL()({"source_ids": x(1, 3), "target_in_ids": ids(1, 2)}),
     "`source_ids` must hold integer token ids")

_SAT = dict(image_shape=(8, 20, 1), encoder_filters=(4,), encoder_pool_sizes=((2, 2),),
            embedding_dim=4, units=6, attention_units=4)
_IMAGES = np.zeros((2, 8, 20, 1), "float32")
_SAT_MODEL = _once("show_attend_tell", lambda: zoo.show_attend_tell(12, **_SAT))
case("show_attend_tell", "unknown attention",
     lambda: zoo.show_attend_tell(12, attention="glance", **_SAT), "`attention`")
case("show_attend_tell", "vocab_size 0", lambda: zoo.show_attend_tell(0, **_SAT), "`vocab_size`")
case("show_attend_tell", "unknown initial_state",
     lambda: zoo.show_attend_tell(20, initial_state="image", **_SAT), "`initial_state`")
case("show_attend_tell", "expectation_rate negative",
     lambda: zoo.show_attend_tell(20, attention="hard", expectation_rate=-0.5, **_SAT),
     "`expectation_rate`")
case("show_attend_tell", "float caption ids",
     lambda: _SAT_MODEL()(
         {"images": _IMAGES, "caption_in_ids": x(2, 3)}), "`caption_in_ids` must hold integer")
case("show_attend_tell", "caption ids >= vocabulary",
     lambda: _SAT_MODEL()(
         {"images": _IMAGES, "caption_in_ids": ids(2, 3) + 12}),
     r"`caption_in_ids` must be token ids in \[0, 12\)")
case("show_attend_tell", "images of the wrong size",
     lambda: _SAT_MODEL()(
         {"images": np.zeros((2, 8, 21, 1), "float32"), "caption_in_ids": ids(2, 3)}),
     "images.*expected shape")
case("show_attend_tell", "batch mismatch",
     lambda: _SAT_MODEL()(
         {"images": _IMAGES, "caption_in_ids": ids(3, 3)}), "same batch size")

_HAN = dict(embedding_dim=4, word_units=3, sentence_units=3, attention_units=4)
_HAN_MODEL = _once("han_classifier", lambda: zoo.han_classifier(30, 3, **_HAN))
_AOA_MODEL = _once("aoa_reader", lambda: zoo.aoa_reader(30, embedding_dim=4, units=3))
case("han_classifier", "num_classes 1", lambda: zoo.han_classifier(30, 1, **_HAN),
     "`num_classes`")
case("han_classifier", "float word ids",
     lambda: _HAN_MODEL()({"document_ids": x(2, 3, 4)}),
     "`document_ids` must hold integer")
case("han_classifier", "ids >= vocabulary",
     lambda: _HAN_MODEL()({"document_ids": ids(2, 3, 4) + 30}),
     r"`document_ids` must be token ids in \[0, 30\)")
case("han_classifier", "documents of rank 2",
     lambda: _HAN_MODEL()({"document_ids": ids(2, 4)}),
     "`document_ids` must have rank 3")
case("han_classifier", "zero sentences",
     lambda: _HAN_MODEL()({"document_ids": ids(2, 0, 4)}),
     "`document_ids` must have at least one")
case("han_attention", "not a HAN model",
     lambda: zoo.han_attention(_AOA_MODEL()), "`model`")
case("han_attention", "a Keras model",
     lambda: zoo.han_attention(keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])),
     "`model`")
case("han_attention", "not a model", lambda: zoo.han_attention("han.keras"), "`model`")
case("han_attention", "float ids into the attention model",
     lambda: zoo.han_attention(_HAN_MODEL())({"document_ids": x(2, 3, 4)}),
     "`document_ids` must hold integer")
case("han_attention", "ids >= vocabulary into the attention model",
     lambda: zoo.han_attention(_HAN_MODEL())(
         {"document_ids": ids(2, 3, 4) + 30}), r"must be token ids in \[0, 30\)")

_SAC_MODEL = _once("self_attentive_classifier",
                   lambda: zoo.self_attentive_classifier(30, 3, preset="tiny"))
case("self_attentive_classifier", "num_classes 1",
     lambda: zoo.self_attentive_classifier(30, 1, preset="tiny"), "`num_classes`")
case("self_attentive_classifier", "hops 0",
     lambda: zoo.self_attentive_classifier(30, 3, preset="tiny", hops=0), "`hops`")
case("self_attentive_classifier", "a negative penalty",
     lambda: zoo.self_attentive_classifier(30, 3, preset="tiny", penalty=-0.5),
     "`penalty`")
case("self_attentive_classifier", "float word ids",
     lambda: _SAC_MODEL()({"token_ids": x(2, 5)}), "`token_ids` must hold integer")
case("self_attentive_classifier", "ids >= vocabulary",
     lambda: _SAC_MODEL()({"token_ids": ids(2, 5) + 30}),
     r"`token_ids` must be token ids in \[0, 30\)")
case("self_attentive_classifier", "documents of rank 3",
     lambda: _SAC_MODEL()({"token_ids": ids(2, 3, 4)}), "`token_ids` must have rank 2")
case("self_attentive_attention", "a HAN model",
     lambda: zoo.self_attentive_attention(_HAN_MODEL()), "`model`")
case("self_attentive_attention", "a Keras model",
     lambda: zoo.self_attentive_attention(
         keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])), "`model`")
case("self_attentive_attention", "not a model",
     lambda: zoo.self_attentive_attention("model.keras"), "`model`")
case("self_attentive_attention", "float ids into the attention model",
     lambda: zoo.self_attentive_attention(_SAC_MODEL())({"token_ids": x(2, 5)}),
     "`token_ids` must hold integer")
case("self_attentive_attention", "ids >= vocabulary into the attention model",
     lambda: zoo.self_attentive_attention(_SAC_MODEL())({"token_ids": ids(2, 5) + 30}),
     r"must be token ids in \[0, 30\)")

_AOA = {"document_ids": ids(2, 6, high=30), "query_ids": ids(2, 3, high=30),
        "candidate_ids": ids(2, 2, high=30)}
case("aoa_reader", "units 0", lambda: zoo.aoa_reader(30, units=0), "`units`")
case("aoa_reader", "float query ids",
     lambda: _AOA_MODEL()(
         dict(_AOA, query_ids=x(2, 3))), "`query_ids` must hold integer")
case("aoa_reader", "candidate ids >= vocabulary",
     lambda: _AOA_MODEL()(
         dict(_AOA, candidate_ids=_AOA["candidate_ids"] + 30)),
     r"`candidate_ids` must be token ids in \[0, 30\)")
case("aoa_reader", "zero-length query",
     lambda: _AOA_MODEL()(
         dict(_AOA, query_ids=ids(2, 0))), "`query_ids` must have at least one")
case("aoa_reader", "batch mismatch",
     lambda: _AOA_MODEL()(
         dict(_AOA, query_ids=ids(3, 3))), "same batch size")
case("aoa_attention", "not an AoA model",
     lambda: zoo.aoa_attention(_HAN_MODEL()), "`model`")
case("aoa_attention", "not a model", lambda: zoo.aoa_attention(None), "`model`")
case("aoa_attention", "a Keras model",
     lambda: zoo.aoa_attention(keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])),
     "`model`")
case("aoa_attention", "negative ids into the attention model",
     lambda: zoo.aoa_attention(_AOA_MODEL())(
         dict(_AOA, document_ids=-_AOA["document_ids"])), r"must be token ids in \[0, 30\)")
case("aoa_attention", "rank-3 documents into the attention model",
     lambda: zoo.aoa_attention(_AOA_MODEL())(
         dict(_AOA, document_ids=_AOA["document_ids"][..., None])), "`document_ids` must have rank 2")

case("incremental", "not a translation model",
     lambda: zoo.incremental(_HAN_MODEL()), "`model`")
case("incremental", "not a model", lambda: zoo.incremental("model.keras"), "`model`")
case("incremental", "a Keras Sequential",
     lambda: zoo.incremental(keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])),
     "`model`")
case("incremental", "pad_id negative",
     lambda: zoo.incremental(TRANSLATION["seq2seq"](), pad_id=-1), "`pad_id`")
case("incremental", "pad_id a string",
     lambda: zoo.incremental(TRANSLATION["seq2seq"](), pad_id="0"), "`pad_id`")

case("ZooModel", "float ids", lambda: TRANSLATION["seq2seq"]().fit(
    {"source_ids": _SRC.astype("float32"), "target_in_ids": _TGT}, _TGT, verbose=0),
    "`source_ids` must hold integer")
case("ZooModel", "ids >= vocabulary in evaluate", lambda: TRANSLATION["seq2seq"]().evaluate(
    {"source_ids": _SRC + 20, "target_in_ids": _TGT}, _TGT, verbose=0),
    r"`source_ids` must be token ids in \[0, 20\)")
case("ZooModel", "negative ids in train_on_batch",
     lambda: (lambda m: (m.compile("adam", "sparse_categorical_crossentropy"),
                         m.train_on_batch({"source_ids": -_SRC, "target_in_ids": _TGT},
                                          _TGT)))(TRANSLATION["seq2seq"]()),
     r"`source_ids` must be token ids in \[0, 20\)")
case("ZooModel", "batch mismatch in predict_on_batch",
     lambda: TRANSLATION["seq2seq"]().predict_on_batch(
         {"source_ids": _SRC, "target_in_ids": ids(3, 4)}), "same batch size")
case("ZooModel", "bool ids",
     lambda: TRANSLATION["seq2seq"]()({"source_ids": _SRC > 3, "target_in_ids": _TGT}),
     "`source_ids` must hold integer")


# === Decoders ===

def _step(tokens, state, index):
    # Logits for the rows of the state: batch_size must agree with it.
    return keras.ops.ones((state.shape[0], 6)), state


_STATE = np.zeros((2, 1), "float32")
_SEARCH = {
    "greedy_search": lambda **kw: decoding.greedy_search(
        **{"step_fn": _step, "state": _STATE, "batch_size": 2, "bos_id": 2, "eos_id": 3, **kw}),
    "beam_search": lambda **kw: decoding.beam_search(
        **{"step_fn": _step, "state": _STATE, "batch_size": 2, "bos_id": 2, "eos_id": 3, **kw}),
    "sample": lambda **kw: decoding.sample(
        **{"step_fn": _step, "state": _STATE, "batch_size": 2, "bos_id": 2, "eos_id": 3,
           "seed": 0, **kw}),
}
for _name, _run in _SEARCH.items():
    case(_name, "bos_id negative", lambda r=_run: r(bos_id=-1), "`bos_id`")
    case(_name, "eos_id a float", lambda r=_run: r(eos_id=3.0), "`eos_id`")
    case(_name, "max_length 0", lambda r=_run: r(max_length=0), "`max_length`")
    case(_name, "min_length > max_length", lambda r=_run: r(max_length=3, min_length=4),
         "`min_length`")
    case(_name, "batch_size 0", lambda r=_run: r(batch_size=0), "`batch_size`")
    case(_name, "step_fn not callable", lambda r=_run: r(step_fn="model"), "`step_fn`")
    case(_name, "logits of the wrong batch",
         lambda r=_run: r(batch_size=3), "`step_fn`.*logits")
case("beam_search", "beam_width 0", lambda: _SEARCH["beam_search"](beam_width=0),
     "`beam_width`")
case("beam_search", "num_return > beam_width",
     lambda: _SEARCH["beam_search"](beam_width=2, num_return=3), "`num_return`")
case("beam_search", "length_penalty a string other than 'average'",
     lambda: _SEARCH["beam_search"](length_penalty="mean"), "`length_penalty`")
case("sample", "temperature 0", lambda: _SEARCH["sample"](temperature=0.0), "`temperature`")
case("sample", "top_p 1.5", lambda: _SEARCH["sample"](top_p=1.5), "`top_p`")

_VOCAB = WordVocabulary.build(["a b c d e f g h i j k l m n o p"], 20)


_STREAM_VOCAB = datasets.SymbolVocabulary(list("abcdefghijklmnop"), separator="")
_STREAM = _once("streaming", lambda: zoo.luong_nmt(
    20, 20, units=6, embedding_dim=4, preset="tiny", attention="hard-monotonic",
    decoder_init="zeros"))


def _streaming(**kw):
    return decoding.StreamingDecoder(_STREAM(), _STREAM_VOCAB, _STREAM_VOCAB, **kw)


def _finished():
    decoder = _streaming(max_length=2)
    decoder.feed("ab")
    decoder.finish()
    return decoder


case("StreamingDecoder", "a soft attention", lambda: decoding.StreamingDecoder(
    TRANSLATION["luong_nmt"](), _STREAM_VOCAB, _STREAM_VOCAB), "`model`")
case("StreamingDecoder", "a bidirectional encoder", lambda: decoding.StreamingDecoder(
    zoo.luong_nmt(20, 20, units=6, embedding_dim=4, preset="tiny", attention="mocha",
                  bidirectional_encoder=True, decoder_init="zeros"),
    _STREAM_VOCAB, _STREAM_VOCAB), "`model`.*both ways")
case("StreamingDecoder", "a wait-k decoder over a reversed source",
     lambda: decoding.StreamingDecoder(
         zoo.luong_nmt(20, 20, units=6, embedding_dim=4, preset="tiny",
                       attention="global", wait_k=2, reverse_source=True,
                       decoder_init="zeros"),
         _STREAM_VOCAB, _STREAM_VOCAB), "`model`.*reversed")
case("StreamingDecoder", "source_vocab not a vocabulary", lambda: decoding.StreamingDecoder(
    _STREAM(), {"a": 4}, _STREAM_VOCAB), "`source_vocab`")
case("StreamingDecoder", "max_length 0", lambda: _streaming(max_length=0), "`max_length`")
case("StreamingDecoder", "feed a list", lambda: _streaming().feed(["a"]), "`text`")
case("StreamingDecoder", "finish before any input", lambda: _streaming().finish(), "`feed`")
case("StreamingDecoder", "feed after finish", lambda: _finished().feed("c"), "`text`")
case("StreamingDecoder", "a letter it does not know",
     lambda: _streaming().feed("aZ"), r"`text` must be symbols of the source.*Unknown: \['Z'\]")


def _translator(**kw):
    return decoding.Translator(TRANSLATION["seq2seq"](), _VOCAB, _VOCAB, **kw)


case("Translator", "not a translation model",
     lambda: decoding.Translator(_HAN_MODEL(), _VOCAB, _VOCAB), "`model`")
case("Translator", "source_vocab not a vocabulary",
     lambda: decoding.Translator(TRANSLATION["seq2seq"](), {"a": 1}, _VOCAB), "`source_vocab`")
case("Translator", "vocabulary larger than the model",
     lambda: decoding.Translator(TRANSLATION["seq2seq"](),
                                 WordVocabulary.build([" ".join("w%d" % i for i in range(40))], 60),
                                 _VOCAB), "`source_vocab` must be at most as large as the model's")
case("Translator", "texts a single string", lambda: _translator()("a b c"), "`texts`")
case("Translator", "texts not strings", lambda: _translator()([1, 2]), "`texts`")
case("Translator", "beam_width 0", lambda: _translator()(["a b"], beam_width=0), "`beam_width`")
case("Translator", "max_length 0", lambda: _translator(max_length=0), "`max_length`")
case("Translator", "a copying model with two vocabularies",
     lambda: decoding.Translator(_PG_MODEL(), _VOCAB, WordVocabulary(["x", "▁y"])),
     "`target_vocab` must be the source vocabulary for a model that copies")
case("Translator", "a search option it does not know",
     lambda: _translator(search={"beam": 4}), "`search` must be a dict of search options")
case("Translator", "a search value that is not plain",
     lambda: _translator(search={"beam_width": [4]}), r"`search\['beam_width'\]`")
case("Translator", "a length_penalty word it does not know",
     lambda: _translator(search={"length_penalty": "mean"}),
     r"`search\['length_penalty'\]` must be a number >= 0 or 'average'")
case("Translator", "export of a copying model",
     lambda tmp: decoding.Translator(_PG_MODEL(), _VOCAB, _VOCAB).export(tmp + "/saved"),
     "`model` must be a model that writes no extended ids")

_CAP_VOCAB = WordVocabulary(["0", "1", "2", "3", "4", "5", "6", "7"])
case("Captioner", "not a captioning model",
     lambda: decoding.Captioner(TRANSLATION["seq2seq"](), _CAP_VOCAB), "`model`")
case("Captioner", "vocab not a vocabulary",
     lambda: decoding.Captioner(_SAT_MODEL(), ["0", "1"]), "`vocab`")
case("Captioner", "images of the wrong rank",
     lambda: decoding.Captioner(_SAT_MODEL(), _CAP_VOCAB)(np.zeros((2, 8, 20), "float32")),
     "`images` must have")
case("Captioner", "images of the wrong size",
     lambda: decoding.Captioner(_SAT_MODEL(), _CAP_VOCAB)(np.zeros((2, 8, 21, 1), "float32")),
     "`images` must have")
case("Captioner", "beam_width 0",
     lambda: decoding.Captioner(_SAT_MODEL(), _CAP_VOCAB)(_IMAGES, beam_width=0), "`beam_width`")
case("Captioner", "max_length 0",
     lambda: decoding.Captioner(_SAT_MODEL(), _CAP_VOCAB, max_length=0), "`max_length`")

_S2S = lambda: TRANSLATION["seq2seq"]()  # noqa: E731
case("generate", "not a generative model",
     lambda: decoding.generate(_HAN_MODEL(), _SRC), "`model`")
case("generate", "unknown strategy",
     lambda: decoding.generate(_S2S(), _SRC, strategy="topk"), "`strategy`")
case("generate", "max_length 0",
     lambda: decoding.generate(_S2S(), _SRC, max_length=0), "`max_length`")
case("generate", "num_return 0",
     lambda: decoding.generate(_S2S(), _SRC, strategy="beam", num_return=0),
     "`num_return`")
case("generate", "float source ids",
     lambda: decoding.generate(_S2S(), _SRC.astype("float32")),
     "`inputs` must hold integer")
case("generate", "source of rank 1",
     lambda: decoding.generate(_S2S(), _SRC[0]), "`inputs` must have rank")
case("generate", "beam_width 0",
     lambda: decoding.generate(_S2S(), _SRC, strategy="beam", beam_width=0),
     "`beam_width`")
case("generate", "a beam option with greedy search",
     lambda: decoding.generate(_S2S(), _SRC, beam_width=3),
     "`beam_width` must be an option of strategy='greedy'")
case("generate", "an unknown option",
     lambda: decoding.generate(_S2S(), _SRC, strategy="sample", beam=3),
     "`beam` must be an option of strategy='sample'")

case("decode_function", "not a generative model",
     lambda: decoding.decode_function(_HAN_MODEL(), _VOCAB, 5), "`model`")
case("decode_function", "max_length 0",
     lambda: decoding.decode_function(_S2S(), _VOCAB, 0), "`max_length`")
case("decode_function", "beam_width 0",
     lambda: decoding.decode_function(_S2S(), _VOCAB, 5, beam_width=0), "`beam_width`")
case("decode_function", "beam_width with sampling",
     lambda: decoding.decode_function(_S2S(), _VOCAB, 5, beam_width=3, strategy="sample"),
     "`beam_width` must be 1 with strategy='sample'")
case("decode_function", "unknown strategy, at trace time",
     lambda: decoding.decode_function(_S2S(), _VOCAB, 5, strategy="nucleus")(_SRC),
     "`strategy`")

case("Generator", "not a model", lambda: decoding.Generator("model.keras"), "`model`")
case("Generator", "a Keras Sequential",
     lambda: decoding.Generator(keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])),
     "`model`")
case("Generator", "jit_compile not a bool",
     lambda: decoding.Generator(_S2S(), jit_compile="yes"), "`jit_compile`")
case("Generator", "unknown strategy",
     lambda: decoding.Generator(_S2S())([[4, 5]], strategy="nucleus"), "`strategy`")
case("Generator", "temperature 0",
     lambda: decoding.Generator(_S2S())([[4, 5]], strategy="sample", temperature=0),
     "`temperature`")
case("Generator", "max_batch not a power of two",
     lambda: decoding.Generator(_S2S(), max_batch=100), "`max_batch` must be a power of two")
case("Generator", "max_batch 0", lambda: decoding.Generator(_S2S(), max_batch=0),
     "`max_batch`")
case("Generator", "max_source_length below 8",
     lambda: decoding.Generator(_S2S(), max_source_length=4), "`max_source_length`")
case("Generator", "max_compiled 0", lambda: decoding.Generator(_S2S(), max_compiled=0),
     "`max_compiled`")

case("presets", "unknown model", lambda: zoo.presets("gpt2"), "`name`")
case("presets", "a class name", lambda: zoo.presets("BahdanauNMT"), "`name`")
case("presets", "None", lambda: zoo.presets(None), "`name`")
case("presets", "empty", lambda: zoo.presets(""), "`name`")
case("presets", "a module path", lambda: zoo.presets("kerattn.zoo.model"), "`name`")

_MESH = lambda axes=("batch", "model"): keras.distribution.DeviceMesh(  # noqa: E731
    (2, 2), list(axes), [f"cpu:{i}" for i in range(4)])
case("layout_map", "unknown model", lambda: zoo.layout_map("gpt2", _MESH()), "`name`")
case("layout_map", "a model without a layout",
     lambda: zoo.layout_map("bahdanau_nmt", _MESH()), "`name`")
case("layout_map", "None", lambda: zoo.layout_map(None, _MESH()), "`name`")
case("layout_map", "a mesh without a model axis",
     lambda: zoo.layout_map("transformer_nmt", _MESH(("batch", "data"))),
     "`device_mesh`")
case("layout_map", "not a mesh", lambda: zoo.layout_map("transformer_nmt", (2, 2)),
     "`device_mesh`")

case("compile_decoder", "fn not callable", lambda: decoding.compile_decoder(3, []), "`fn`")
case("compile_decoder", "variables not a list",
     lambda: decoding.compile_decoder(lambda t: t, 3), "`variables`")
case("compile_decoder", "variables not Keras variables",
     lambda: decoding.compile_decoder(lambda t: t, [np.zeros(3)]), "`variables`")
case("compile_decoder", "jit_compile a string",
     lambda: decoding.compile_decoder(lambda t: t, [], jit_compile="yes"), "`jit_compile`")
case("compile_decoder", "fn a model's config",
     lambda: decoding.compile_decoder({"name": "model"}, []), "`fn`")

case("gnmt_length_penalty", "negative alpha",
     lambda: decoding.gnmt_length_penalty(np.ones(2), -1.0), "`alpha`")
case("gnmt_length_penalty", "alpha a string",
     lambda: decoding.gnmt_length_penalty(np.ones(2), "0.6"), "`alpha`")
case("gnmt_length_penalty", "alpha None",
     lambda: decoding.gnmt_length_penalty(np.ones(2), None), "`alpha`")
case("gnmt_length_penalty", "negative lengths",
     lambda: decoding.gnmt_length_penalty(np.array([-6.0]), 0.6), "`lengths`")
case("gnmt_length_penalty", "lengths a string",
     lambda: decoding.gnmt_length_penalty("3", 0.6), "`lengths`")
case("gnmt_coverage_penalty", "negative beta",
     lambda: decoding.gnmt_coverage_penalty(np.ones((2, 3)), -0.2), "`beta`")
case("gnmt_coverage_penalty", "beta a string",
     lambda: decoding.gnmt_coverage_penalty(np.ones((2, 3)), "0.2"), "`beta`")
case("gnmt_coverage_penalty", "beta None",
     lambda: decoding.gnmt_coverage_penalty(np.ones((2, 3)), None), "`beta`")
case("gnmt_coverage_penalty", "mask of the wrong shape",
     lambda: decoding.gnmt_coverage_penalty(np.ones((2, 3)), 0.2, mask=np.ones((2, 4), bool)),
     "`mask` must have shape")
case("gnmt_coverage_penalty", "coverage a string",
     lambda: decoding.gnmt_coverage_penalty("0.5", 0.2), "`coverage`")


_STEPS = np.zeros((2, 3, 2), "int32")
case("gather_tree", "step ids of rank 2",
     lambda: decoding.gather_tree(_STEPS[0], _STEPS[0]), "`step_ids`")
case("gather_tree", "parents of another shape",
     lambda: decoding.gather_tree(_STEPS, _STEPS[:, :2]), "`step_parents`")
case("gather_tree", "float ids",
     lambda: decoding.gather_tree(_STEPS.astype("float32"), _STEPS), "`step_ids`")
case("gather_tree", "float parents",
     lambda: decoding.gather_tree(_STEPS, _STEPS.astype("float32")), "`step_parents`")
case("gather_tree", "a parent past the beam",
     lambda: decoding.gather_tree(_STEPS, _STEPS + 2), "`step_parents`")

# === Dataset loaders ===

def _file(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def _bytes(tmp, name, data):
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


case("gettext_pairs", "unknown language", lambda tmp: datasets.gettext_pairs("xx-nope"), "`lang`")
case("gettext_pairs", "missing locale directory",
     lambda tmp: datasets.gettext_pairs("fr", locale_dir=os.path.join(tmp, "none")),
     "`locale_dir`")
case("gettext_pairs", "valid_fraction 1",
     lambda tmp: datasets.gettext_pairs("fr", valid_fraction=1.0), "`valid_fraction`")
case("gettext_pairs", "fractions sum past 1",
     lambda tmp: datasets.gettext_pairs("fr", valid_fraction=0.6, test_fraction=0.6),
     r"`valid_fraction \+ test_fraction`")
case("gettext_pairs", "max_words 0", lambda tmp: datasets.gettext_pairs("fr", max_words=0),
     "`max_words`")
case("gettext_pairs", "a corrupt .mo file",
     lambda tmp: (os.makedirs(os.path.join(tmp, "fr", "LC_MESSAGES")),
                  _file(os.path.join(tmp, "fr", "LC_MESSAGES"), "x.mo", "not a catalog"),
                  datasets.gettext_pairs("fr", locale_dir=tmp)), "x.mo.*`locale_dir`")

case("tsv_pairs", "missing file", lambda tmp: datasets.tsv_pairs(os.path.join(tmp, "no.tsv")),
     "`path`")
case("tsv_pairs", "a line with one column",
     lambda tmp: datasets.tsv_pairs(_file(tmp, "a.tsv", "hello\tbonjour\nbroken\n")), "a.tsv:2")
case("tsv_pairs", "negative column",
     lambda tmp: datasets.tsv_pairs(_file(tmp, "a.tsv", "a\tb\n"), source_column=-1),
     "`source_column`")
case("tsv_pairs", "max_words 0",
     lambda tmp: datasets.tsv_pairs(_file(tmp, "a.tsv", "a\tb\n"), max_words=0), "`max_words`")
case("tsv_pairs", "a byte that does not decode, on its line",
     lambda tmp: datasets.tsv_pairs(_bytes(tmp, "a.tsv", b"a\tb\ncaf\xe9\tc\n")),
     r"a\.tsv:2: not UTF-8 text: byte 0xe9 at column 4")
case("tsv_pairs", "a binary file",
     lambda tmp: datasets.tsv_pairs(_file(tmp, "b.tsv", "") and _bin(tmp, "b.tsv")), "b.tsv")


def _bin(tmp, name):
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(bytes(range(256)) * 4)
    return path


case("read_jsonl", "missing file", lambda tmp: datasets.read_jsonl(os.path.join(tmp, "no.jsonl")),
     "`path`")
case("read_jsonl", "a byte that does not decode",
     lambda tmp: datasets.read_jsonl(_bytes(tmp, "a.jsonl", b'{"text": "a", "label": 1}\n'
                                            b'{"text": "caf\xe9", "label": 1}\n')),
     r"a\.jsonl:2: not UTF-8 text")
case("read_jsonl", "a text that is not a string",
     lambda tmp: datasets.read_jsonl(_file(tmp, "a.jsonl", '{"text": 3, "label": 1}\n')),
     r"a\.jsonl:1: 'text' must be a string")
case("read_jsonl", "a corrupt line",
     lambda tmp: datasets.read_jsonl(_file(tmp, "a.jsonl", '{"text": "a", "label": 1}\n{oops\n')),
     "a.jsonl:2")
case("read_jsonl", "a missing key",
     lambda tmp: datasets.read_jsonl(_file(tmp, "a.jsonl", '{"body": "a", "label": 1}\n')),
     "`text_key`")
case("read_jsonl", "a line that is not an object",
     lambda tmp: datasets.read_jsonl(_file(tmp, "a.jsonl", '[1, 2]\n')), "a.jsonl:1")
case("read_jsonl", "an empty file",
     lambda tmp: datasets.read_jsonl(_file(tmp, "a.jsonl", "")), "a.jsonl.*no example")

case("read_cbt", "missing file", lambda tmp: datasets.read_cbt(os.path.join(tmp, "no.txt")),
     "`path`")
case("read_cbt", "a byte that does not decode",
     lambda tmp: datasets.read_cbt(_bytes(tmp, "a.txt", b"1 caf\xe9 .\n")),
     r"a\.txt:1: not UTF-8 text")
case("read_cbt", "a line without its number",
     lambda tmp: datasets.read_cbt(_file(tmp, "a.txt", "hello world\n")), "a.txt:1")
case("read_cbt", "a question line without candidates",
     lambda tmp: datasets.read_cbt(_file(tmp, "a.txt", "".join(
         f"{i} w{i} .\n" for i in range(1, 21)) + "21 XXXXX is\tw1\n")), "a.txt:21")
case("read_cbt", "an answer not among the candidates",
     lambda tmp: datasets.read_cbt(_file(tmp, "a.txt", "".join(
         f"{i} w{i} .\n" for i in range(1, 21)) + "21 XXXXX is\tzz\t\tw1|w2\n")), "a.txt:21")
case("read_cbt", "an empty file",
     lambda tmp: datasets.read_cbt(_file(tmp, "a.txt", "")), "a.txt.*no question")

case("debian_topical10", "missing lists directory",
     lambda tmp: datasets.debian_topical10(os.path.join(tmp, "none")), "`lists_dir`",
     error=FileNotFoundError)
case("debian_topical10", "an empty lists directory",
     lambda tmp: datasets.debian_topical10(tmp), "`lists_dir`", error=FileNotFoundError)
case("debian_topical10", "sections not strings",
     lambda tmp: datasets.debian_topical10(sections=(1, 2)), "`sections`")
case("debian_topical10", "sections a string",
     lambda tmp: datasets.debian_topical10(sections="python"), "`sections`")
case("debian_topical10", "one section only",
     lambda tmp: datasets.debian_topical10(sections=("python",)), "`sections`")
case("debian_descriptions", "missing lists directory",
     lambda tmp: datasets.debian_descriptions(os.path.join(tmp, "none")), "`lists_dir`",
     error=FileNotFoundError)
case("debian_descriptions", "an empty lists directory",
     lambda tmp: datasets.debian_descriptions(tmp), "`lists_dir`", error=FileNotFoundError)
case("debian_descriptions", "a Packages file without its translations",
     lambda tmp: datasets.debian_descriptions(os.path.dirname(_bin(tmp, "x_Packages"))),
     "`lists_dir`", error=FileNotFoundError)
case("debian_descriptions", "lists_dir a number",
     lambda tmp: datasets.debian_descriptions(3), "`lists_dir`")
case("debian_descriptions", "lists_dir a file",
     lambda tmp: datasets.debian_descriptions(_file(tmp, "f", "x")), "`lists_dir`",
     error=FileNotFoundError)

case("debian_summaries", "missing lists directory",
     lambda tmp: datasets.debian_summaries(os.path.join(tmp, "none")), "`lists_dir`",
     error=FileNotFoundError)
case("debian_summaries", "an empty lists directory",
     lambda tmp: datasets.debian_summaries(tmp), "`lists_dir`", error=FileNotFoundError)
case("debian_summaries", "min_words 0",
     lambda tmp: datasets.debian_summaries(tmp, min_words=0), "`min_words`")
case("debian_summaries", "max_words a float",
     lambda tmp: datasets.debian_summaries(tmp, max_words=2.5), "`max_words`")
case("debian_summaries", "threshold above 1",
     lambda tmp: datasets.debian_summaries(tmp, threshold=1.5), "`threshold`")
case("near_duplicates", "texts a string",
     lambda: datasets.near_duplicates("one text"), "`texts`")
case("near_duplicates", "a text not a string",
     lambda: datasets.near_duplicates(["a text", 3]), "`texts`")
case("near_duplicates", "threshold 0",
     lambda: datasets.near_duplicates(["a", "b"], threshold=0), "`threshold`")
case("near_duplicates", "n 0", lambda: datasets.near_duplicates(["a", "b"], n=0), "`n`")
case("near_duplicates", "bands negative",
     lambda: datasets.near_duplicates(["a", "b"], bands=-1), "`bands`")
case("near_duplicates", "rows a float",
     lambda: datasets.near_duplicates(["a", "b"], rows=1.5), "`rows`")

case("kjv_cloze", "missing root", lambda tmp: datasets.kjv_cloze(os.path.join(tmp, "none")),
     "`root`", error=FileNotFoundError)
case("kjv_cloze", "context_size 0", lambda tmp: datasets.kjv_cloze(tmp, context_size=0),
     "`context_size`")
case("kjv_cloze", "num_candidates 1", lambda tmp: datasets.kjv_cloze(tmp, num_candidates=1),
     "`num_candidates`")
case("kjv_cloze", "an empty root", lambda tmp: datasets.kjv_cloze(tmp), "`root`",
     error=FileNotFoundError)
case("kjv_cloze", "missing wordnet directory",
     lambda tmp: datasets.kjv_cloze(tmp, wordnet_dir=os.path.join(tmp, "none")),
     "`wordnet_dir`", error=FileNotFoundError)

case("digit_strips", "train_count 0", lambda tmp: datasets.digit_strips(train_count=0),
     "`train_count`")
case("digit_strips", "min_digits > max_digits",
     lambda tmp: datasets.digit_strips(10, 10, min_digits=5, max_digits=3), "`min_digits`")
case("digit_strips", "max_digits 0", lambda tmp: datasets.digit_strips(10, 10, max_digits=0),
     "`max_digits`")
case("digit_strips", "test_count a float", lambda tmp: datasets.digit_strips(10, 2.5),
     "`test_count`")
case("digit_strips", "negative train_count", lambda tmp: datasets.digit_strips(-5, 10),
     "`train_count`")

_PAIRS = [("a b", "c d"), ("e", "f g h")]
case("translation_arrays", "no pairs",
     lambda tmp: datasets.translation_arrays([], _VOCAB, _VOCAB), "`pairs`")
case("translation_arrays", "pairs not pairs",
     lambda tmp: datasets.translation_arrays(["a b"], _VOCAB, _VOCAB), "`pairs`")
case("translation_arrays", "max_tokens 0",
     lambda tmp: datasets.translation_arrays(_PAIRS, _VOCAB, _VOCAB, max_tokens=0), "`max_tokens`")
case("translation_arrays", "source_vocab not a vocabulary",
     lambda tmp: datasets.translation_arrays(_PAIRS, {"a": 1}, _VOCAB), "`source_vocab`")
case("translation_arrays", "every pair too long",
     lambda tmp: datasets.translation_arrays(_PAIRS, _VOCAB, _VOCAB, max_tokens=1), "`pairs`")

_XB = {"source_ids": ids(6, 4), "target_in_ids": ids(6, 3)}
case("LengthBucketedBatches", "batch_size 0",
     lambda tmp: datasets.LengthBucketedBatches(_XB, ids(6, 3), batch_size=0), "`batch_size`")
case("LengthBucketedBatches", "labels of another length",
     lambda tmp: datasets.LengthBucketedBatches(_XB, ids(5, 3)), "`labels`")
case("LengthBucketedBatches", "inputs of different lengths",
     lambda tmp: datasets.LengthBucketedBatches(dict(_XB, source_ids=ids(5, 4)), ids(6, 3)),
     "`inputs`")
case("LengthBucketedBatches", "bucket_width 0",
     lambda tmp: datasets.LengthBucketedBatches(_XB, ids(6, 3), bucket_width=0), "`bucket_width`")
case("LengthBucketedBatches", "target_bucket_width 0",
     lambda tmp: datasets.LengthBucketedBatches(_XB, ids(6, 3), target_bucket_width=0),
     "`target_bucket_width`")
case("LengthBucketedBatches", "inputs not a dict",
     lambda tmp: datasets.LengthBucketedBatches(ids(6, 4), ids(6, 3)), "`inputs`")

case("WordVocabulary", "duplicate tokens", lambda tmp: WordVocabulary(["a", "a"]), "`tokens`")
case("WordVocabulary", "tokens a string", lambda tmp: WordVocabulary("abc"), "`tokens`")
case("WordVocabulary", "an empty token", lambda tmp: WordVocabulary(["a", ""]), "`tokens`")
case("WordVocabulary", "build with max_size 3",
     lambda tmp: WordVocabulary.build(["a b"], 3), "`max_size`")
case("WordVocabulary", "tokens not strings",
     lambda tmp: WordVocabulary([1, 2]), "`tokens`")
case("WordVocabulary", "build with min_count 0",
     lambda tmp: WordVocabulary.build(["a b"], 10, min_count=0), "`min_count`")

case("SymbolVocabulary", "separator a dash",
     lambda tmp: datasets.SymbolVocabulary(["a"], separator="-"), "`separator`")
case("SymbolVocabulary", "a two-letter token with separator ''",
     lambda tmp: datasets.SymbolVocabulary(["a", "bc"], separator=""), "`tokens`")
case("SymbolVocabulary", "a token with a space",
     lambda tmp: datasets.SymbolVocabulary(["A B"]), "`tokens`")
case("SymbolVocabulary", "duplicate tokens",
     lambda tmp: datasets.SymbolVocabulary(["AH", "AH"]), "`tokens`")
case("SymbolVocabulary", "build from one string",
     lambda tmp: datasets.SymbolVocabulary.build("read", separator=""), "`texts`")
case("SymbolVocabulary", "build with max_size 2",
     lambda tmp: datasets.SymbolVocabulary.build(["R IY D"], 2), "`max_size`")
case("SymbolVocabulary", "end_marker a string",
     lambda tmp: datasets.SymbolVocabulary(["a"], separator="", end_marker="yes"),
     "`end_marker`")

case("read_cmudict", "missing file",
     lambda tmp: datasets.read_cmudict(os.path.join(tmp, "none.dict")), "`path`")
case("read_cmudict", "a directory", lambda tmp: datasets.read_cmudict(tmp), "`path`")
case("read_cmudict", "a word without phonemes",
     lambda tmp: datasets.read_cmudict(_file(tmp, "a.dict", "read R IY D\nlive\n")),
     r"a\.dict:2: ")
case("read_cmudict", "stress not a bool",
     lambda tmp: datasets.read_cmudict(_file(tmp, "a.dict", "a AH0\n"), stress="yes"),
     "`stress`")
case("read_cmudict", "not UTF-8",
     lambda tmp: datasets.read_cmudict(_bytes(tmp, "a.dict", b"caf\xe9 K AE F\n")),
     r"a\.dict:1: not UTF-8 text")

case("cmudict_g2p", "missing path",
     lambda tmp: datasets.cmudict_g2p(path=os.path.join(tmp, "none.dict")), "`path`")
case("cmudict_g2p", "valid_share above 1",
     lambda tmp: datasets.cmudict_g2p(valid_share=1.5), "`valid_share`")
case("cmudict_g2p", "test_share negative",
     lambda tmp: datasets.cmudict_g2p(test_share=-0.1), "`test_share`")
case("cmudict_g2p", "shares leaving nothing to train on",
     lambda tmp: datasets.cmudict_g2p(valid_share=0.5, test_share=0.5), "`valid_share`")
case("cmudict_g2p", "stress a string",
     lambda tmp: datasets.cmudict_g2p(stress="no", path=_file(tmp, "a.dict", "a AH0\n")),
     "`stress`")


case("WordPieceVocabulary", "vocabulary without specials",
     lambda tmp: datasets.WordPieceVocabulary(["a", "b"]), "`vocabulary`")
case("WordPieceVocabulary", "vocabulary a string",
     lambda tmp: datasets.WordPieceVocabulary("abc"), "`vocabulary`")
case("WordPieceVocabulary", "train with vocabulary_size 2",
     lambda tmp: datasets.WordPieceVocabulary.build(["a b"], 2), "`vocabulary_size`")
case("WordPieceVocabulary", "train on no text",
     lambda tmp: datasets.WordPieceVocabulary.build([""], 50), "`texts`")
case("WordPieceVocabulary", "train on a single string",
     lambda tmp: datasets.WordPieceVocabulary.build("a b c", 50), "`texts`")

case("encode_documents", "max_sentences 0",
     lambda tmp: datasets.encode_documents([[["a"]]], _VOCAB, 0, 3), "`max_sentences`")
case("encode_documents", "max_words a float",
     lambda tmp: datasets.encode_documents([[["a"]]], _VOCAB, 2, 2.5), "`max_words`")
case("encode_documents", "documents not tokenised",
     lambda tmp: datasets.encode_documents(["a b. c"], _VOCAB, 2, 3), "`documents`")
case("encode_documents", "vocab not a vocabulary",
     lambda tmp: datasets.encode_documents([[["a"]]], {"a": 1}, 2, 3), "`vocab`")
case("encode_documents", "documents a string",
     lambda tmp: datasets.encode_documents("a b", _VOCAB, 2, 3), "`documents`")

_Q = {"context": ["a b c"], "query": "XXXXX b", "candidates": ["a", "c"], "answer": "a"}
case("encode_cloze", "no questions", lambda tmp: datasets.encode_cloze([], _VOCAB), "`questions`")
case("encode_cloze", "answer not a candidate",
     lambda tmp: datasets.encode_cloze([dict(_Q, answer="z")], _VOCAB), "`questions`.*answer")
case("encode_cloze", "a question missing its query",
     lambda tmp: datasets.encode_cloze([{k: v for k, v in _Q.items() if k != "query"}], _VOCAB),
     "`questions`.*query")
case("encode_cloze", "max_document 0",
     lambda tmp: datasets.encode_cloze([_Q], _VOCAB, max_document=0), "`max_document`")
case("encode_cloze", "vocab not a vocabulary",
     lambda tmp: datasets.encode_cloze([_Q], {"a": 1}), "`vocab`")

_COPY_VOCAB = WordVocabulary(["a", "▁b"])
case("extend_source", "a text, not tokens",
     lambda tmp: datasets.extend_source(_COPY_VOCAB, "a b"), "`tokens`")
case("extend_source", "vocab_size below the vocabulary",
     lambda tmp: datasets.extend_source(_COPY_VOCAB, ["a"], vocab_size=3), "`vocab_size`")
case("extend_source", "not a word vocabulary",
     lambda tmp: datasets.extend_source({"a": 4}, ["a"]), "`vocab`")
case("extend_target", "oovs a string",
     lambda tmp: datasets.extend_target(_COPY_VOCAB, ["a"], "Zorg"), "`oovs`")
case("extend_target", "token ids, not tokens",
     lambda tmp: datasets.extend_target(_COPY_VOCAB, [4, 5], []), "`tokens`")
case("decode_extended", "oovs not strings",
     lambda tmp: datasets.decode_extended(_COPY_VOCAB, [4], [7]), "`oovs`")
case("copy_arrays", "pairs a string",
     lambda tmp: datasets.copy_arrays("a b", _COPY_VOCAB), "`pairs`")
case("copy_arrays", "no pair within max_tokens",
     lambda tmp: datasets.copy_arrays([("a b a", "a")], _COPY_VOCAB, max_tokens=2), "`pairs`")
case("copy_arrays", "copy not a bool",
     lambda tmp: datasets.copy_arrays([("a", "a")], _COPY_VOCAB, copy=1), "`copy`")
case("extend_source", "an empty token",
     lambda tmp: datasets.extend_source(_COPY_VOCAB, ["a", ""]), "`tokens`")
case("extend_source", "tokens None",
     lambda tmp: datasets.extend_source(_COPY_VOCAB, None), "`tokens`")
case("extend_target", "not a word vocabulary",
     lambda tmp: datasets.extend_target({"a": 4}, ["a"], []), "`vocab`")
case("extend_target", "vocab_size a float",
     lambda tmp: datasets.extend_target(_COPY_VOCAB, ["a"], [], vocab_size=9.5), "`vocab_size`")
case("extend_target", "a text, not tokens",
     lambda tmp: datasets.extend_target(_COPY_VOCAB, "a b", []), "`tokens`")
case("decode_extended", "not a word vocabulary",
     lambda tmp: datasets.decode_extended(["a"], [4], []), "`vocab`")
case("decode_extended", "vocab_size below the vocabulary",
     lambda tmp: datasets.decode_extended(_COPY_VOCAB, [4], [], vocab_size=2), "`vocab_size`")
case("decode_extended", "oovs a string",
     lambda tmp: datasets.decode_extended(_COPY_VOCAB, [4], "Zorg"), "`oovs`")
case("decode_extended", "ids not ints",
     lambda tmp: datasets.decode_extended(_COPY_VOCAB, ["a", "b"], []), "`ids`")
case("copy_arrays", "not a word vocabulary",
     lambda tmp: datasets.copy_arrays([("a", "a")], {"a": 4}), "`vocab`")
case("copy_arrays", "max_tokens 0",
     lambda tmp: datasets.copy_arrays([("a", "a")], _COPY_VOCAB, max_tokens=0), "`max_tokens`")


_PHRASES = os.path.join(os.path.dirname(__file__), "data", "cmudict_sample.dict")


def _phrases(splits=None, **kwargs):
    from kerattn.recipes import g2p_phrases

    return g2p_phrases.prepare(splits or datasets.cmudict_g2p(path=_PHRASES), **kwargs)


case("g2p_phrases.prepare", "no training phrases",
     lambda: _phrases(train_phrases=0), "`train_phrases`")
case("g2p_phrases.prepare", "a negative test count",
     lambda: _phrases(test_phrases=-1), "`test_phrases`")
case("g2p_phrases.prepare", "no test lengths",
     lambda: _phrases(test_lengths=()), "`test_lengths`")
case("g2p_phrases.prepare", "a phrase of no words",
     lambda: _phrases(train_lengths=(1, 0)), "`train_lengths`")
case("g2p_phrases.prepare", "no test word of one pronunciation",
     lambda: _phrases({"train": [("ab", ("A B",))], "valid": [],
                       "test": [("cd", ("K D", "S D"))]}), "`splits\\['test'\\]`")


# === The tests ===

PARAMS = [pytest.param(fn, error, match, id=f"{target}-{name}")
          for target, rows in sorted(CASES.items()) for name, fn, error, match in rows]


@pytest.mark.parametrize("fn, error, match", PARAMS)
def test_bad_input(fn, error, match, tmp_path):
    takes_tmp = fn.__code__.co_varnames[:fn.__code__.co_argcount] == ("tmp",)
    with pytest.raises(error, match=match):
        fn(str(tmp_path)) if takes_tmp else fn()


def _public_targets():
    targets = set()
    for name in layers.__all__:
        obj = getattr(layers, name)
        if isinstance(obj, type) and issubclass(obj, keras.layers.Layer) and (
                name != "BaseAttention"):
            targets.add(name)
    # The zoo's builders and functions; its model classes are built by the
    # builders (their constructor is Keras' functional one).
    targets.update(n for n in zoo.__all__
                   if callable(getattr(zoo, n)) and not isinstance(getattr(zoo, n), type))
    targets.update(decoding.__all__)
    loaders = {"gettext_pairs", "tsv_pairs", "read_jsonl", "read_cbt", "debian_topical10",
               "debian_descriptions", "debian_summaries", "near_duplicates", "kjv_cloze",
               "digit_strips", "translation_arrays",
               "LengthBucketedBatches", "WordVocabulary", "WordPieceVocabulary",
               "encode_documents", "encode_cloze", "cmudict_g2p", "read_cmudict",
               "SymbolVocabulary"}
    assert loaders <= set(datasets.__all__)
    return targets | loaders


def test_every_target_has_five_cases():
    missing = {t: len(CASES.get(t, ())) for t in _public_targets() if len(CASES.get(t, ())) < 5}
    assert not missing, f"targets with fewer than 5 bad-input cases: {missing}"


def test_count_matches_readme():
    readme = open(os.path.join(os.path.dirname(__file__), "README.md"),
                  encoding="utf-8").read()
    total = sum(map(len, CASES.values()))
    assert f"{total} bad-input cases over {len(CASES)} public targets" in readme, (
        f"update tests/README.md: {total} cases, {len(CASES)} targets")
