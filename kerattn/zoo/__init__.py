"""Complete functional models built from kerattn.layers (the model zoo)."""

from kerattn.layers import TransformerDecoderBlock

from kerattn.zoo.aoa_reader import aoa_attention, aoa_reader
from kerattn.zoo.bahdanau_nmt import BahdanauIncremental, bahdanau_nmt
from kerattn.zoo.convs2s_nmt import ConvS2SIncremental, convs2s_nmt
from kerattn.zoo.cho_encoder_decoder import ChoIncremental, cho_encoder_decoder
from kerattn.zoo.han_classifier import han_attention, han_classifier
from kerattn.zoo.model import ZooModel
from kerattn.zoo.luong_nmt import LuongIncremental, luong_nmt
from kerattn.zoo.seq2seq import Seq2SeqIncremental, seq2seq
from kerattn.zoo.show_attend_tell import ShowAttendTellIncremental, show_attend_tell
from kerattn.zoo.transformer_nmt import TransformerIncremental, transformer_nmt


def incremental(model, pad_id=0):
    """The encode / step functions of a zoo translation model.

    The returned object has `encode(source_ids) -> state` and
    `step(tokens, state, index) -> (logits, state, attention)`, built from
    the model's own named layers (shared weights), so they also work on a
    model loaded from a `.keras` file.

    Args:
        model: a zoo translation model (`bahdanau_nmt`, `luong_nmt`,
            `transformer_nmt`, `convs2s_nmt`, `cho_encoder_decoder`,
            `seq2seq`) or `show_attend_tell`.
        pad_id: the source padding id (source positions to mask).

    Returns:
        The adapter: `encode`, `step`, and `beam_invariant` (the state
        entries beam search never reorders), for `kerattn.decoding`.

    Raises:
        ValueError: when `model` is not a zoo translation model.

    Example:

    >>> import numpy as np
    >>> model = bahdanau_nmt(20, 30, embedding_dim=8, units=8,
    ...                      alignment_units=8, maxout_units=4)
    >>> adapter = incremental(model)
    >>> state = adapter.encode(np.array([[5, 6, 7, 0]], "int32"))
    >>> logits, state, attention = adapter.step(np.array([2], "int32"), state, 0)
    >>> tuple(logits.shape), tuple(attention.shape)
    ((1, 30), (1, 4))
    """
    from kerattn.zoo.checks import check_model

    check_model(model, "a kerattn.zoo translation model")
    if isinstance(pad_id, bool) or not isinstance(pad_id, int) or pad_id < 0:
        raise ValueError(f"`pad_id` must be a non-negative int; received {pad_id!r}.")
    names = {layer.name for layer in model.layers}
    if {"summary", "decoder", "deep_output", "maxout"} <= names:
        return ChoIncremental(model, pad_id=pad_id)
    if {"encoder", "decoder", "deep_output", "maxout"} <= names:
        return BahdanauIncremental(model, pad_id=pad_id)
    if {"encoder_1", "decoder", "output_projection"} <= names:
        return LuongIncremental(model, pad_id=pad_id)
    if {"encoder_projection", "decoder_projection", "attention_1"} <= names:
        return ConvS2SIncremental(model, pad_id=pad_id)
    if {"source_embedding", "encoder_1", "decoder_1"} <= names and isinstance(
            model.get_layer("decoder_1"), TransformerDecoderBlock):
        return TransformerIncremental(model, pad_id=pad_id)
    if {"encoder_1", "decoder_1", "output_projection"} <= names:
        return Seq2SeqIncremental(model, pad_id=pad_id)
    raise ValueError(
        "`model` must be a kerattn.zoo translation model (e.g. "
        f"kerattn.zoo.bahdanau_nmt()); got a model named {model.name!r} with "
        f"layers {sorted(names)}."
    )


__all__ = ["ZooModel", "cho_encoder_decoder", "seq2seq", "bahdanau_nmt", "luong_nmt",
           "transformer_nmt", "convs2s_nmt", "incremental", "show_attend_tell",
           "han_classifier", "han_attention", "aoa_reader", "aoa_attention"]
