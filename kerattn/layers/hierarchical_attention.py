"""Hierarchical attention: attention pooling and the HAN block (Yang et al., 2016)."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.recurrent import GRU
from kerattn.keras_fixes import bidirectional


@keras.saving.register_keras_serializable(package="kerattn")
class AttentionPooling(keras.layers.Layer):
    """Attention pooling with a learned context vector (Yang et al., 2016).

    "Hierarchical Attention Networks for Document Classification", eq. 5-7
    (word attention) and 8-10 (sentence attention):

        u_i = tanh(W h_i + b)
        alpha_i = exp(u_i^T u_w) / sum_j exp(u_j^T u_w)
        s = sum_i alpha_i h_i

    Args:
        units: int, the size of `u_i` and of the context vector `u_w`.
        kernel_initializer: initializer of `W` and `u_w`.
        kernel_regularizer: optional regularizer of `W`.
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: `(batch, T, dim)` annotations `h_i`.
        mask: optional boolean `(batch, T)`; the implicit Keras mask when
            None. A fully masked row pools to zeros.
        return_attention_scores: bool, also return `alpha` `(batch, T)`.

    Returns:
        `s` of shape `(batch, dim)` (and `alpha`).

    Example:

    >>> import numpy as np
    >>> h = np.random.rand(2, 7, 10).astype("float32")
    >>> s, alpha = AttentionPooling(units=5)(h, return_attention_scores=True)
    >>> tuple(s.shape), tuple(alpha.shape)
    ((2, 10), (2, 7))
    """

    def __init__(self, units, kernel_initializer="glorot_uniform",
                 kernel_regularizer=None, **kwargs):
        super().__init__(**kwargs)
        checks.positive_int("units", units)
        self.units = units
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.supports_masking = True

    def build(self, inputs_shape):
        checks.rank("inputs", inputs_shape, (3,), "(batch, T, dim)")
        self.W = self.add_weight(
            name="W", shape=(inputs_shape[-1], self.units),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer, dtype=self.variable_dtype,
        )
        self.b = self.add_weight(name="b", shape=(self.units,),
                                 initializer="zeros", dtype=self.variable_dtype)
        self.u_w = self.add_weight(
            name="u_w", shape=(self.units,), initializer=self.kernel_initializer,
            dtype=self.variable_dtype,
        )
        self.built = True

    def call(self, inputs, mask=None, return_attention_scores=False):
        checks.rank("inputs", inputs.shape, (3,), "(batch, T, dim)")
        checks.nonempty("inputs", inputs)
        checks.mask("mask", mask, tuple(inputs.shape[:2]))
        u = ops.tanh(utils.project(inputs, self.W) + self.b)  # (batch, T, units)
        scores = ops.sum(u * self.u_w, axis=-1)  # (batch, T)
        alpha = utils.masked_softmax(scores, mask)
        pooled = ops.sum(ops.expand_dims(alpha, -1) * inputs, axis=1)
        if return_attention_scores:
            return pooled, alpha
        return pooled

    def compute_mask(self, inputs, previous_mask):
        return None  # the time axis is pooled away

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False):
        checks.rank("inputs", inputs.shape, (3,), "(batch, T, dim)")
        pooled = keras.KerasTensor((inputs.shape[0], inputs.shape[-1]),
                                   dtype=self.compute_dtype)
        if not return_attention_scores:
            return pooled
        return pooled, keras.KerasTensor(inputs.shape[:2], dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units,
            "kernel_initializer": keras.initializers.serialize(
                self.kernel_initializer),
            "kernel_regularizer": keras.regularizers.serialize(
                self.kernel_regularizer),
        })
        return config


@keras.saving.register_keras_serializable(package="kerattn")
class HierarchicalAttention(keras.layers.Layer):
    """The HAN document encoder of Yang et al. (2016), section 2.

    Word encoder (a bidirectional GRU over each sentence), word attention
    (`AttentionPooling`) giving one vector per sentence, sentence encoder
    (a bidirectional GRU over the sentences) and sentence attention giving
    one vector per document:

        h_it = BiGRU(x_it),  s_i = sum_t alpha_it h_it   (eq. 2-7)
        h_i = BiGRU(s_i),    v = sum_i alpha_i h_i       (eq. 8-10)

    Padding at both levels: a sentence whose words are all padding is a
    padded sentence, and a document of padded sentences gives `v = 0` with
    all-zero weights.

    Args:
        word_units: int, GRU units per direction of the word encoder (50
            in the paper).
        sentence_units: int, GRU units per direction of the sentence
            encoder (50 in the paper).
        attention_units: int, the size of both context vectors (100 in the
            paper); `2 * word_units` when None.
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: `(batch, sentences, words, dim)` word embeddings.
        mask: optional boolean `(batch, sentences, words)`, True = a real
            word; the implicit Keras mask (`Embedding(mask_zero=True)` on
            the word ids) when None.
        return_attention_scores: bool, also return the weights.

    Returns:
        `v` of shape `(batch, 2 * sentence_units)`, and with
        `return_attention_scores=True` a dict `{"word": (batch, sentences,
        words), "sentence": (batch, sentences)}`.

    Example:

    >>> import numpy as np
    >>> x = np.random.rand(2, 4, 6, 8).astype("float32")
    >>> v, w = HierarchicalAttention(word_units=5, sentence_units=3)(
    ...     x, return_attention_scores=True)
    >>> tuple(v.shape), tuple(w["word"].shape), tuple(w["sentence"].shape)
    ((2, 6), (2, 4, 6), (2, 4))
    """

    def __init__(self, word_units=50, sentence_units=50, attention_units=None,
                 **kwargs):
        super().__init__(**kwargs)
        checks.positive_int("word_units", word_units)
        checks.positive_int("sentence_units", sentence_units)
        checks.positive_int("attention_units", attention_units,
                            allow_none=True)
        self.word_units = word_units
        self.sentence_units = sentence_units
        self.attention_units = attention_units
        self.supports_masking = True

    def build(self, inputs_shape):
        checks.rank("inputs", inputs_shape, (4,),
                    "(batch, sentences, words, dim)")
        att = self.attention_units or 2 * self.word_units
        self.word_encoder = bidirectional(
            GRU(self.word_units, return_sequences=True,
                dtype=self.dtype_policy),
            dtype=self.dtype_policy, name="word_encoder",
        )
        self.word_attention = AttentionPooling(att, dtype=self.dtype_policy,
                                               name="word_attention")
        self.sentence_encoder = bidirectional(
            GRU(self.sentence_units, return_sequences=True,
                dtype=self.dtype_policy),
            dtype=self.dtype_policy, name="sentence_encoder",
        )
        self.sentence_attention = AttentionPooling(
            self.attention_units or 2 * self.sentence_units,
            dtype=self.dtype_policy, name="sentence_attention",
        )
        words, dim = inputs_shape[2], inputs_shape[3]
        self.word_encoder.build((None, words, dim))
        self.word_attention.build((None, words, 2 * self.word_units))
        self.sentence_encoder.build((None, inputs_shape[1], 2 * self.word_units))
        self.sentence_attention.build(
            (None, inputs_shape[1], 2 * self.sentence_units))
        self.built = True

    def call(self, inputs, mask=None, return_attention_scores=False):
        checks.rank("inputs", inputs.shape, (4,),
                    "(batch, sentences, words, dim)")
        checks.nonempty("inputs", inputs, (1, 2), "sentence and word")
        checks.mask("mask", mask, tuple(inputs.shape[:3]))
        shape = ops.shape(inputs)
        batch, sentences, words = shape[0], shape[1], shape[2]
        if mask is None:
            mask = ops.ones((batch, sentences, words), dtype="bool")
        mask = ops.cast(mask, "bool")

        # === Word level: every sentence of every document at once ===
        flat = ops.reshape(inputs, (-1, words, inputs.shape[-1]))
        flat_mask = ops.reshape(mask, (-1, words))
        h_it = self.word_encoder(flat, mask=flat_mask)  # (b*S, W, 2u)
        s_i, alpha_it = self.word_attention(
            h_it, mask=flat_mask, return_attention_scores=True
        )  # (b*S, 2u), (b*S, W)

        # === Sentence level ===
        s_i = ops.reshape(s_i, (batch, sentences, 2 * self.word_units))
        sentence_mask = ops.any(mask, axis=-1)  # (b, S)
        h_i = self.sentence_encoder(s_i, mask=sentence_mask)
        v, alpha_i = self.sentence_attention(
            h_i, mask=sentence_mask, return_attention_scores=True
        )
        if return_attention_scores:
            word = ops.reshape(alpha_it, (batch, sentences, words))
            return v, {"word": word, "sentence": alpha_i}
        return v

    def compute_mask(self, inputs, previous_mask):
        return None

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False):
        checks.rank("inputs", inputs.shape, (4,),
                    "(batch, sentences, words, dim)")
        v = keras.KerasTensor((inputs.shape[0], 2 * self.sentence_units),
                              dtype=self.compute_dtype)
        if not return_attention_scores:
            return v
        return v, {
            "word": keras.KerasTensor(inputs.shape[:3], dtype=self.compute_dtype),
            "sentence": keras.KerasTensor(inputs.shape[:2],
                                          dtype=self.compute_dtype),
        }

    def get_config(self):
        config = super().get_config()
        config.update({
            "word_units": self.word_units,
            "sentence_units": self.sentence_units,
            "attention_units": self.attention_units,
        })
        return config
