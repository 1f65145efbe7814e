"""Complete models built from kerattn.layers (the model zoo).

Each builder (`bahdanau_nmt`, ...) returns its model's own class; the
generative ones (`GenerativeModel`: translation and captioning) have
`encode` / `step` for `kerattn.decoding`, and named sizes (`PRESETS` in
each model's file, `preset=` of each builder).
"""

import warnings

from kerattn import checks
from kerattn.zoo.aoa_reader import aoa_attention, aoa_reader
from kerattn.zoo.bahdanau_nmt import BahdanauNMT, bahdanau_nmt
from kerattn.zoo.cho_encoder_decoder import ChoEncoderDecoder, cho_encoder_decoder
from kerattn.zoo.convs2s_nmt import ConvS2SNMT, convs2s_nmt
from kerattn.zoo.han_classifier import han_attention, han_classifier
from kerattn.zoo.luong_nmt import LuongNMT, luong_nmt
from kerattn.zoo.model import GenerativeModel, ZooModel
from kerattn.zoo.pointer_generator import PointerGeneratorNetwork, pointer_generator
from kerattn.zoo.self_attentive_classifier import (self_attentive_attention,
                                                   self_attentive_classifier)
from kerattn.zoo.seq2seq import Seq2Seq, seq2seq
from kerattn.zoo.show_attend_tell import ShowAttendTell, show_attend_tell
from kerattn.zoo.transformer_nmt import TransformerNMT, transformer_nmt

# builder name -> the class it returns, for every generative model.
GENERATIVE = {
    "seq2seq": Seq2Seq,
    "cho_encoder_decoder": ChoEncoderDecoder,
    "bahdanau_nmt": BahdanauNMT,
    "luong_nmt": LuongNMT,
    "transformer_nmt": TransformerNMT,
    "convs2s_nmt": ConvS2SNMT,
    "show_attend_tell": ShowAttendTell,
    "pointer_generator": PointerGeneratorNetwork,
}


def layout_map(name, device_mesh):
    """A `keras.distribution.LayoutMap` that splits zoo model `name`.

    The model's class owns its layout (`get_layout_map`, as KerasHub's
    backbones do); this asks it. Give it to
    `kerattn.distribute.model_parallel` as
    `functools.partial(layout_map, name)`.

    Args:
        name: a zoo builder whose model has a layout: "transformer_nmt"
            (attention by heads, feed-forward by inner width, embeddings
            and output projection by model width) or "seq2seq" (its
            embeddings and softmax).
        device_mesh: a `keras.distribution.DeviceMesh` with a "model" axis.

    Returns:
        A `LayoutMap`; variables it does not name are replicated.

    Example:

    >>> import keras
    >>> mesh = keras.distribution.DeviceMesh((2, 2), ["batch", "model"],
    ...                                      [f"gpu:{i}" for i in range(4)])
    >>> layouts = layout_map("transformer_nmt", mesh)
    >>> layouts["decoder_1/ffn_inner/kernel"].axes
    (None, 'model')
    """
    sharded = sorted(k for k, cls in GENERATIVE.items()
                     if hasattr(cls, "get_layout_map"))
    checks.one_of("name", name, sharded)
    checks.require("model" in getattr(device_mesh, "axis_names", ()),
                   "device_mesh", "a keras.distribution.DeviceMesh with a "
                   "'model' axis", device_mesh)
    return GENERATIVE[name].get_layout_map(device_mesh)


def presets(name):
    """The named sizes of zoo builder `name`: `{preset: {size: value}}`.

    Args:
        name: a zoo builder's name, e.g. "bahdanau_nmt".

    Returns:
        The builder's `PRESETS` ("paper" holds every size keyword).

    Example:

    >>> sorted(presets("bahdanau_nmt"))
    ['base', 'paper', 'small', 'tiny']
    """
    import importlib

    checks.one_of("name", name, tuple(GENERATIVE) + (
        "han_classifier", "self_attentive_classifier", "aoa_reader"))
    return importlib.import_module(f"kerattn.zoo.{name}").PRESETS


def incremental(model, pad_id=0):
    """Deprecated: returns `model`, which has `encode` and `step` itself.

    Args:
        model: a generative zoo model (a `GenerativeModel`).
        pad_id: the source padding id; zoo models mask id 0, so it must be 0.

    Returns:
        `model`.

    Raises:
        ValueError: when `model` is not a generative zoo model.

    Example:

    >>> model = bahdanau_nmt(20, 30, preset="tiny")
    >>> incremental(model) is model   # warns: use `model` itself
    True
    """
    warnings.warn("kerattn.zoo.incremental(model) is deprecated: use the "
                  "model itself (its `encode` and `step`).", DeprecationWarning,
                  stacklevel=2)
    checks.instance(
        "model", model, GenerativeModel,
        "a generative kerattn.zoo model (a kerattn.zoo.GenerativeModel, e.g. "
        "kerattn.zoo.bahdanau_nmt(), or a .keras file loaded with "
        "kerattn.load_model)")
    checks.require(not isinstance(pad_id, bool) and pad_id == 0, "pad_id",
                   "0 (zoo models mask id 0)", pad_id)
    return model


__all__ = ["ZooModel", "GenerativeModel", "GENERATIVE", "presets", "layout_map",
           "cho_encoder_decoder", "ChoEncoderDecoder", "seq2seq", "Seq2Seq",
           "bahdanau_nmt", "BahdanauNMT", "luong_nmt", "LuongNMT",
           "transformer_nmt", "TransformerNMT", "convs2s_nmt", "ConvS2SNMT",
           "show_attend_tell", "ShowAttendTell", "incremental",
           "han_classifier", "han_attention", "self_attentive_classifier",
           "self_attentive_attention", "aoa_reader", "aoa_attention",
           "pointer_generator", "PointerGeneratorNetwork"]
