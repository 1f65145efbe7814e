"""The structured self-attentive sentence embedding of Lin et al. (2017)."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils


@keras.saving.register_keras_serializable(package="kerattn")
class SelfAttentiveEmbedding(keras.layers.Layer):
    """A sentence as `r` weighted sums of its words' states, each hop
    attending to another part of it (Lin et al. 2017, "A Structured
    Self-attentive Sentence Embedding", section 2).

    From the word states `H` `(n, 2u)` (a BiLSTM's, eq. 1-3):

        A = softmax(W_s2 tanh(W_s1 H^T))        (eq. 6; softmax over words)
        M = A H                                  (eq. 7; (r, 2u))
        P = ||A A^T - I||_F^2                    (eq. 8)

    `W_s1` is `(d_a, 2u)` and `W_s2` `(r, d_a)`, no biases. `P` pushes the
    `r` hops apart (each row of `A` sums to 1, so `A A^T = I` means no two
    hops share a word and each sits on one). The layer adds `penalty * P`,
    averaged over the sentences with at least one word, to the model's
    losses (`model.losses`, which `fit` adds to the loss) when `penalty >
    0`; the paper tunes its coefficient per task.

    Masks: padded words (the `mask` argument, or the implicit Keras mask of
    `Embedding(mask_zero=True)`) get exactly zero weight; a sentence with no
    word gets `A = 0` and `M = 0` (never NaN) and is left out of `P`. `A`
    is computed in the layer's compute dtype and `P` in float32.

    Args:
        units: int `d_a`, the hidden size of the attention's MLP.
        hops: int `r`, the number of attention rows (30 in the paper's
            classification experiments).
        penalty: float >= 0, the coefficient of `P` in the loss (0: no
            penalty).
        kernel_initializer: initializer of `W_s1` and `W_s2`.
        kernel_regularizer: optional regularizer of the same.
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: `(batch, n, dim)`, the words' states.
        mask: optional boolean `(batch, n)`, True at real words.
        return_attention_scores: bool, also return `A` `(batch, r, n)`.

    Returns:
        `M` `(batch, r, dim)` (flatten it for a classifier, as the paper
        does), and `A` with `return_attention_scores=True`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> h = np.random.rand(2, 7, 10).astype("float32")
    >>> mask = np.array([[True] * 5 + [False] * 2, [True] * 7])
    >>> layer = SelfAttentiveEmbedding(units=8, hops=3, penalty=1.0)
    >>> m, a = layer(h, mask=mask, return_attention_scores=True)
    >>> tuple(m.shape), tuple(a.shape), len(layer.losses)
    ((2, 3, 10), (2, 3, 7), 1)
    >>> float(ops.max(ops.abs(a[0, :, 5:])))   # padding: no weight
    0.0
    """

    def __init__(self, units, hops=1, penalty=0.0,
                 kernel_initializer="glorot_uniform", kernel_regularizer=None,
                 **kwargs):
        super().__init__(**kwargs)
        checks.positive_int("units", units)
        checks.positive_int("hops", hops)
        checks.number("penalty", penalty, low=0.0)
        self.units = units
        self.hops = hops
        self.penalty = float(penalty)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.supports_masking = True

    def build(self, inputs_shape):
        checks.rank("inputs", inputs_shape, (3,), "(batch, n, dim)")
        checks.require(inputs_shape[-1] is not None, "inputs",
                       "a known feature size (axis -1)", inputs_shape)
        common = dict(initializer=self.kernel_initializer,
                      regularizer=self.kernel_regularizer,
                      dtype=self.variable_dtype)
        self.W_s1 = self.add_weight(name="W_s1", shape=(inputs_shape[-1], self.units),
                                    **common)
        self.W_s2 = self.add_weight(name="W_s2", shape=(self.units, self.hops),
                                    **common)
        self.built = True

    def call(self, inputs, mask=None, return_attention_scores=False):
        checks.rank("inputs", inputs.shape, (3,), "(batch, n, dim)")
        checks.mask("mask", mask, tuple(inputs.shape[:2]))
        hidden = ops.tanh(utils.project(inputs, self.W_s1))       # (b, n, d_a)
        scores = ops.transpose(utils.project(hidden, self.W_s2), (0, 2, 1))
        words = None if mask is None else ops.expand_dims(ops.cast(mask, "bool"), 1)
        weights = utils.masked_softmax(scores, words)              # A: (b, r, n)
        output = ops.matmul(weights, inputs)                        # M: (b, r, dim)
        if self.penalty > 0:
            self.add_loss(self.penalty * self._penalty(weights, mask))
        if return_attention_scores:
            return output, weights
        return output

    def _penalty(self, weights, mask):
        """`||A A^T - I||_F^2` per sentence (eq. 8), averaged over the
        sentences with a word, in float32."""
        a = ops.cast(weights, "float32")
        gram = ops.matmul(a, ops.transpose(a, (0, 2, 1)))          # (b, r, r)
        per = ops.sum(ops.square(gram - ops.eye(self.hops, dtype="float32")),
                      axis=(1, 2))
        if mask is None:
            return ops.mean(per)
        has_words = ops.cast(ops.any(ops.cast(mask, "bool"), axis=1), "float32")
        return ops.sum(per * has_words) / ops.maximum(ops.sum(has_words), 1.0)

    def compute_mask(self, inputs, mask=None):
        return None   # r rows, none of them padding

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False):
        checks.rank("inputs", inputs.shape, (3,), "(batch, n, dim)")
        b, n, d = inputs.shape
        output = keras.KerasTensor((b, self.hops, d), dtype=self.compute_dtype)
        if not return_attention_scores:
            return output
        return output, keras.KerasTensor((b, self.hops, n), dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units,
            "hops": self.hops,
            "penalty": self.penalty,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
        })
        return config
