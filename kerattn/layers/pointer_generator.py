"""Copying from the source: the pointer-generator (See et al., 2017).

`PointerGenerator` mixes the decoder's vocabulary distribution with its
attention over the source, onto an extended vocabulary where each source
word outside the vocabulary has an id of its own; `ExtendedEmbedding`
embeds such ids (they are not in the vocabulary) as UNK.
"""

import keras
from keras import ops

from kerattn import checks

# "Impossible" in float32 log-probabilities: finite, so that NEG - NEG and
# exp(NEG - top) are never NaN.
NEG = -1e9
# The smallest copy mass taken a log of (float32's smallest normal is 1e-38).
_TINY = 1e-30


def copy_mass(attention, source_ids, width, source_mask=None):
    """`sum_{i: w_i = w} a_i` for every id `w < width`: the attention
    scattered onto the vocabulary by the source ids (a segment sum over
    `(row, id)`, so its cost is that of the attention, not `S x width`).

    Args:
        attention: `(batch, S)` or `(batch, T, S)` weights `a_i`.
        source_ids: int `(batch, S)`, the source's (extended) ids `w_i`.
        width: the size of the (extended) vocabulary.
        source_mask: optional boolean `(batch, S)`; False positions (and
            ids outside `[0, width)`) give no mass.

    Returns:
        float32 `(batch, width)` or `(batch, T, width)`.
    """
    attention = ops.cast(attention, "float32")
    source_ids = ops.cast(source_ids, "int32")
    keep = ops.logical_and(ops.greater_equal(source_ids, 0),
                           ops.less(source_ids, width))
    if source_mask is not None:
        keep = ops.logical_and(keep, ops.cast(source_mask, "bool"))
    source_ids = ops.where(keep, source_ids, 0)
    shape = ops.shape(attention)
    if len(attention.shape) == 3:   # the same ids at every target step
        keep = ops.expand_dims(keep, 1)
        source_ids = ops.broadcast_to(ops.expand_dims(source_ids, 1), shape)
    attention = ops.where(keep, attention, 0.0)
    length = shape[-1]
    rows = shape[0] if len(shape) == 2 else shape[0] * shape[1]
    # Row r's id w is segment r * width + w.
    row_of = ops.repeat(ops.arange(rows, dtype="int32"), length)
    segments = row_of * width + ops.reshape(source_ids, (-1,))
    mass = ops.segment_sum(ops.reshape(attention, (-1,)), segments,
                           num_segments=rows * width)
    return ops.reshape(mass, tuple(shape[:-1]) + (width,))


@keras.saving.register_keras_serializable(package="kerattn")
class PointerGenerator(keras.layers.Layer):
    """The pointer-generator's final distribution (See, Liu and Manning, 2017).

    "Get To The Point: Summarization with Pointer-Generator Networks",
    eq. 8-9. At decoder step `t`, with the context vector `h*_t`, the
    decoder state `s_t` and the decoder input `x_t`,

        p_gen = sigmoid(w_h^T h*_t + w_s^T s_t + w_x^T x_t + b_ptr)     (8)
        P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{i: w_i = w} a_i^t    (9)

    over the **extended vocabulary**: the `V` words of the vocabulary,
    then one id per source position (`V + k` for the `k`-th distinct source
    word outside the vocabulary, in order of first appearance; see
    `kerattn.datasets.extend_source`), so a word the vocabulary lacks can be
    copied. The switch `p_gen` is one `Dense(1, sigmoid)` over the
    concatenation `[h*_t; s_t; x_t]`, which is the paper's sum of three dot
    products and a bias.

    The output is `log P(w)`, float32 under any dtype policy, computed as
    the log of the mixture,

        log P(w) = logsumexp(log p_gen + log_softmax(logits)_w,
                             log(1 - p_gen) + log copy(w)),

    with `log p_gen = log_sigmoid(z)`, `log(1 - p_gen) = log_sigmoid(-z)`,
    and `log copy(w)` a large negative number (not -inf) where no source
    position carries `w`: no NaN or -inf where a probability is 0, with
    `p_gen` at 0 or 1, or for a row whose source is all padding. Padded
    source positions (id 0, or `source_mask` False) give no copy mass. The
    extended axis has `V + S` entries (`S` the source length, the most
    source words a row can lack): a static size, so decoding compiles;
    ids past a row's own out-of-vocabulary words have probability 0.

    Args:
        switch_initializer: initializer of the switch's `w` (`[w_h; w_s;
            w_x]`); its bias `b_ptr` starts at 0.
        **kwargs: base layer keyword arguments.

    Call arguments:
        logits: `(batch, V)` or `(batch, T, V)`, the vocabulary logits
            (`P_vocab = softmax(logits)`).
        attention: `(batch, S)` or `(batch, T, S)`, the attention `a^t`.
        source_ids: int `(batch, S)`, the source's extended ids (0 is PAD).
        switch_inputs: a tensor or a list of tensors, each `(batch, d)` or
            `(batch, T, d)`, whose concatenation the switch reads
            (`[h*_t, s_t, x_t]`).
        source_mask: optional boolean `(batch, S)` (True = a real token);
            `source_ids != 0` when None.
        return_p_gen: bool; if True also return `p_gen`, `(batch,)` or
            `(batch, T)`.

    Returns:
        float32 log-probabilities `(batch, V + S)` or `(batch, T, V + S)`
        (and `p_gen`).

    Example:

    >>> import numpy as np
    >>> layer = PointerGenerator()
    >>> logits = np.zeros((1, 6), "float32")                # V = 6
    >>> attention = np.array([[0.5, 0.25, 0.25]], "float32")
    >>> source_ids = np.array([[4, 6, 4]], "int32")          # 6 = V + 0: an OOV
    >>> state = np.ones((1, 3), "float32")
    >>> log_p = layer(logits, attention, source_ids, [state])
    >>> tuple(log_p.shape)                                   # V + S
    (1, 9)
    >>> p = np.exp(keras.ops.convert_to_numpy(log_p))
    >>> round(float(p.sum()), 4), bool(p[0, 6] > 0), float(p[0, 7])
    (1.0, True, 0.0)
    """

    def __init__(self, switch_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.switch_initializer = keras.initializers.get(switch_initializer)
        self.switch = keras.layers.Dense(
            1, kernel_initializer=self.switch_initializer,
            dtype=self.dtype_policy, name="switch")
        self.supports_masking = True   # the logits' mask (padded target steps)

    @staticmethod
    def _features_dim(switch_inputs_shape):
        shapes = (switch_inputs_shape if isinstance(switch_inputs_shape, list)
                  else [switch_inputs_shape])
        dims = [s[-1] for s in shapes]
        return None if None in dims else int(sum(dims))

    def build(self, logits_shape, attention_shape=None, source_ids_shape=None,
              switch_inputs_shape=None, source_mask_shape=None):
        if switch_inputs_shape is not None:
            dim = self._features_dim(switch_inputs_shape)
            if dim and not self.switch.built:
                self.switch.build((None, dim))
        self.built = True

    def _check(self, logits, attention, source_ids, switch_inputs, source_mask):
        checks.rank("logits", logits.shape, (2, 3), "(batch, V) or (batch, T, V)")
        checks.rank("attention", attention.shape, (len(logits.shape),),
                    "(batch, S) with logits (batch, V), (batch, T, S) with "
                    "logits (batch, T, V)")
        checks.rank("source_ids", source_ids.shape, (2,), "(batch, S)")
        checks.integer_ids("source_ids", source_ids)
        checks.nonempty("logits", logits, axes=(len(logits.shape) - 1,),
                        what="vocabulary entry")
        checks.same("logits", logits.shape[0], "attention", attention.shape[0],
                    "batch size")
        checks.same("attention", attention.shape[0], "source_ids",
                    source_ids.shape[0], "batch size")
        checks.same("attention", attention.shape[-1], "source_ids",
                    source_ids.shape[1], "source length (last axis)")
        if len(logits.shape) == 3:
            checks.same("logits", logits.shape[1], "attention", attention.shape[1],
                        "number of steps (axis 1)")
        checks.require(
            switch_inputs is not None and not (
                isinstance(switch_inputs, (list, tuple)) and not switch_inputs),
            "switch_inputs", "a tensor or a list of tensors (the context, the "
            "decoder state and its input) that the switch p_gen reads",
            switch_inputs)
        for x in (switch_inputs if isinstance(switch_inputs, (list, tuple))
                  else [switch_inputs]):
            checks.require(
                hasattr(x, "shape") and len(x.shape) == len(logits.shape),
                "switch_inputs", f"tensors of rank {len(logits.shape)}, as "
                f"logits (batch, {'T, ' if len(logits.shape) == 3 else ''}d)",
                tuple(getattr(x, "shape", ())) or type(x).__name__)
        checks.mask("source_mask", source_mask, tuple(source_ids.shape))

    def call(self, logits, attention, source_ids, switch_inputs,
             source_mask=None, return_p_gen=False):
        self._check(logits, attention, source_ids, switch_inputs, source_mask)
        features = (ops.concatenate(list(switch_inputs), axis=-1)
                    if isinstance(switch_inputs, (list, tuple))
                    else switch_inputs)
        if not self.switch.built:   # eager first call with NumPy inputs
            self.switch.build((None, int(features.shape[-1])))
        z = ops.cast(self.switch(features), "float32")[..., 0]  # p_gen's logit
        log_p_gen = ops.maximum(ops.log_sigmoid(z), NEG)
        log_p_copy = ops.maximum(ops.log_sigmoid(-z), NEG)
        vocab = int(logits.shape[-1])
        width = vocab + ops.shape(source_ids)[1]
        if source_mask is None:
            source_mask = ops.not_equal(source_ids, 0)
        mass = copy_mass(attention, source_ids, width, source_mask)
        log_copy = ops.where(mass > 0, ops.log(ops.maximum(mass, _TINY)), NEG)
        log_vocab = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
        generated = ops.concatenate(
            [ops.expand_dims(log_p_gen, -1) + log_vocab,
             ops.zeros_like(mass[..., vocab:]) + NEG], axis=-1)
        copied = ops.expand_dims(log_p_copy, -1) + log_copy
        top = ops.maximum(generated, copied)
        log_p = top + ops.log(ops.exp(generated - top) + ops.exp(copied - top))
        if return_p_gen:
            return log_p, ops.sigmoid(z)
        return log_p

    def compute_output_spec(self, logits, attention, source_ids, switch_inputs,
                            source_mask=None, return_p_gen=False):
        self._check(logits, attention, source_ids, switch_inputs, source_mask)
        vocab, length = logits.shape[-1], source_ids.shape[1]
        width = None if vocab is None or length is None else vocab + length
        out = keras.KerasTensor(tuple(logits.shape[:-1]) + (width,), "float32")
        if return_p_gen:
            return out, keras.KerasTensor(tuple(logits.shape[:-1]), "float32")
        return out

    def get_config(self):
        config = super().get_config()
        config["switch_initializer"] = keras.initializers.serialize(
            self.switch_initializer)
        return config


@keras.saving.register_keras_serializable(package="kerattn")
class ExtendedEmbedding(keras.layers.Embedding):
    """An `Embedding` of extended ids: an id `>= input_dim` is embedded as UNK.

    A copying model (`PointerGenerator`, See et al., 2017) reads and writes
    ids of an extended vocabulary: `V + k` for the `k`-th source word
    outside its `V` words. Those words have no embedding: "out-of-vocabulary
    ids are mapped to UNK" wherever a word is embedded (the source, and the
    decoder's previous token, which may be a copied word). Everything else
    is Keras' `Embedding` (`mask_zero`, initialisers, saving).

    Args:
        input_dim: the vocabulary size `V`.
        output_dim: the embedding size.
        unk_id: the vocabulary's UNK id (`WordVocabulary.unk_id`), in
            `[0, input_dim)`.
        **kwargs: `keras.layers.Embedding` keyword arguments.

    Call arguments:
        inputs: int ids of any shape, in `[0, input_dim + S)`.

    Returns:
        `inputs.shape + (output_dim,)`.

    Example:

    >>> import numpy as np
    >>> layer = ExtendedEmbedding(10, 4, unk_id=1)
    >>> out = keras.ops.convert_to_numpy(layer(np.array([[5, 1, 12]])))
    >>> bool((out[0, 2] == out[0, 1]).all())        # id 12 >= 10 reads UNK
    True
    """

    def __init__(self, input_dim, output_dim, unk_id=1, **kwargs):
        checks.positive_int("input_dim", input_dim)
        checks.int_in_range("unk_id", unk_id, 0, input_dim)
        super().__init__(input_dim, output_dim, **kwargs)
        self.unk_id = unk_id

    def call(self, inputs):
        checks.integer_ids("inputs", inputs)
        inputs = ops.convert_to_tensor(inputs)
        ids = ops.where(ops.greater_equal(inputs, self.input_dim),
                        ops.cast(self.unk_id, inputs.dtype), inputs)
        return super().call(ids)

    def get_config(self):
        config = super().get_config()
        config["unk_id"] = self.unk_id
        return config
