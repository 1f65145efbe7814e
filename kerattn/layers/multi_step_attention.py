"""Multi-step attention and gated convolution blocks (Gehring et al., 2017)."""

import math

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils

SQRT_HALF = math.sqrt(0.5)


@keras.saving.register_keras_serializable(package="kerattn")
class GLUConvBlock(keras.layers.Layer):
    """A gated convolution block with a residual connection (ConvS2S).

    Gehring et al. (2017), "Convolutional Sequence to Sequence Learning",
    section 3.2: a 1-D convolution with `2d` output channels `[A B]`, a
    gated linear unit `v([A B]) = A * sigmoid(B)` (Dauphin et al., 2016),
    and a residual connection scaled by `sqrt(0.5)` (section 3.4):

        h^l = (v(W^l [h^{l-1}_{i-k/2}, ..., h^{l-1}_{i+k/2}] + b^l) + h^{l-1})
              * sqrt(0.5)

    In the decoder (`causal=True`) the input is padded with `k - 1` zeros on
    the left only, so output `i` sees inputs `<= i` alone. Padded positions
    (mask False) are zeroed before the convolution and in the output.

    Args:
        filters: int, the output size `d`; a linear projection maps the
            residual when the input size differs.
        kernel_size: int `k`.
        causal: bool, the decoder's causal convolution.
        dropout: float in [0, 1), dropout on the block's input.
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: `(batch, T, dim)`.
        mask: optional boolean `(batch, T)`; the implicit Keras mask when None.
        training: bool.

    Returns:
        `(batch, T, filters)`.

    Example:

    >>> import numpy as np
    >>> x = np.random.rand(2, 9, 8).astype("float32")
    >>> tuple(GLUConvBlock(8, kernel_size=3, causal=True)(x).shape)
    (2, 9, 8)
    """

    def __init__(self, filters, kernel_size=3, causal=False, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        checks.positive_int("filters", filters)
        checks.positive_int("kernel_size", kernel_size)
        checks.rate("dropout", dropout)
        checks.boolean("causal", causal)
        checks.require(
            causal or kernel_size % 2 == 1, "kernel_size",
            "odd for a non-causal block (k/2 on each side)", kernel_size)
        self.filters = filters
        self.kernel_size = kernel_size
        self.causal = causal
        self.dropout = dropout
        self.supports_masking = True

    def build(self, inputs_shape):
        checks.rank("inputs", inputs_shape, (3,), "(batch, T, dim)")
        self.conv = keras.layers.Conv1D(
            2 * self.filters,
            self.kernel_size,
            padding="causal" if self.causal else "same",
            dtype=self.dtype_policy,
            name="conv",
        )
        self.conv.build(inputs_shape)
        self.conv.supports_masking = True  # masks are applied by this block
        self.residual_projection = None
        if inputs_shape[-1] != self.filters:
            self.residual_projection = keras.layers.Dense(
                self.filters, dtype=self.dtype_policy, name="residual_projection"
            )
            self.residual_projection.build(inputs_shape)
            self.residual_projection.supports_masking = True
        self.dropout_layer = keras.layers.Dropout(self.dropout,
                                                  dtype=self.dtype_policy)
        self.built = True

    def call(self, inputs, mask=None, training=None):
        checks.rank("inputs", inputs.shape, (3,), "(batch, T, dim)")
        checks.nonempty("inputs", inputs)
        x = inputs
        if mask is not None:
            keep = ops.expand_dims(utils.mask_as(mask, x.dtype), -1)
            x = x * keep
        residual = x if self.residual_projection is None else (
            self.residual_projection(x))
        y = self.conv(self.dropout_layer(x, training=training))
        a, b = y[..., : self.filters], y[..., self.filters:]
        out = (a * ops.sigmoid(b) + residual) * ops.cast(SQRT_HALF, x.dtype)
        if mask is not None:
            out = out * keep
        return out

    def init_buffer(self, batch_size, dim):
        """The zeros `step` starts from: `(batch, kernel_size - 1, dim)`.

        They are the causal convolution's left padding.
        """
        return ops.zeros((batch_size, self.kernel_size - 1, dim),
                         self.compute_dtype)

    def step(self, inputs, buffer):
        """One decoder position of the causal block, without the prefix.

        Args:
            inputs: `(batch, dim)`, this position's input.
            buffer: `(batch, kernel_size - 1, dim)`, the previous
                `kernel_size - 1` inputs (`init_buffer` at position 0).

        Returns:
            `(output (batch, filters), new buffer)`; equal to position `i`
            of `call` on the whole prefix.
        """
        checks.require(self.causal, "causal", "True to call `step`", False,
                       note="`step` needs a causal block.")
        window = ops.concatenate([buffer, ops.expand_dims(inputs, 1)], 1)
        kernel = ops.cast(self.conv.kernel, window.dtype)     # (k, dim, 2d)
        y = ops.einsum("bkd,kdf->bf", window, kernel)
        y = y + ops.cast(self.conv.bias, y.dtype)
        a, b = y[..., : self.filters], y[..., self.filters:]
        residual = inputs if self.residual_projection is None else (
            self.residual_projection(inputs))
        out = (a * ops.sigmoid(b) + residual) * ops.cast(SQRT_HALF, y.dtype)
        return out, window[:, 1:]

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.filters,)

    def get_config(self):
        config = super().get_config()
        config.update({
            "filters": self.filters, "kernel_size": self.kernel_size,
            "causal": self.causal, "dropout": self.dropout,
        })
        return config


@keras.saving.register_keras_serializable(package="kerattn")
class MultiStepAttention(keras.layers.Layer):
    """The per-layer decoder attention of ConvS2S (Gehring et al., 2017).

    "Convolutional Sequence to Sequence Learning", section 3.3. For decoder
    layer `l` with states `h_i`, target embeddings `g_i`, encoder outputs
    `z_j` and source embeddings `e_j`:

        d_i = W_d h_i + b_d + g_i
        a_ij = exp(d_i . z_j) / sum_t exp(d_i . z_t)
        c_i = sum_j a_ij (z_j + e_j)

    and `c_i` is added to `h_i`. With the paper's scaling (section 3.4),
    `d_i = (W_d h_i + b_d + g_i) sqrt(0.5)`, `c_i` is multiplied by
    `m sqrt(1/m)` with `m` the real (unpadded) source length, and the
    output is `(h_i + W_o c_i + b_o) sqrt(0.5)`, as in the authors' fairseq
    code (`W_o` maps the embedding size back to the decoder size).
    `scale=False` gives the unscaled equations (`W_o` kept).

    Args:
        scale: bool, apply the section 3.4 scaling factors.
        **kwargs: base layer keyword arguments.

    Call arguments:
        query: `(batch, T, dec_dim)` decoder states `h_i` (rank 2 for one
            step).
        target_embeddings: `(batch, T, emb_dim)` the `g_i`.
        encoder_outputs: `(batch, S, emb_dim)` the `z_j`.
        source_embeddings: `(batch, S, emb_dim)` the `e_j`.
        source_mask: optional boolean `(batch, S)`; the implicit Keras mask
            of `encoder_outputs` is not used (pass it explicitly).
        return_attention_scores: bool, also return `a` `(batch, T, S)`.

    Returns:
        `(batch, T, dec_dim)` (and the weights).

    Example:

    >>> import numpy as np
    >>> h = np.random.rand(2, 5, 12).astype("float32")
    >>> g = np.random.rand(2, 5, 8).astype("float32")
    >>> z = np.random.rand(2, 7, 8).astype("float32")
    >>> e = np.random.rand(2, 7, 8).astype("float32")
    >>> out, a = MultiStepAttention()(h, g, z, e, return_attention_scores=True)
    >>> tuple(out.shape), tuple(a.shape)
    ((2, 5, 12), (2, 5, 7))
    """

    def __init__(self, scale=True, **kwargs):
        super().__init__(**kwargs)
        checks.boolean("scale", scale)
        self.scale = scale
        self.supports_masking = True

    @staticmethod
    def _validate(query_shape, target_shape, encoder_shape, source_shape):
        checks.rank("query", query_shape, (2, 3),
                    "(batch, T, dec_dim), or (batch, dec_dim) for one step")
        checks.rank("target_embeddings", target_shape,
                    (len(query_shape),), "like `query` with emb_dim")
        checks.rank("encoder_outputs", encoder_shape, (3,),
                    "(batch, S, emb_dim)")
        checks.rank("source_embeddings", source_shape, (3,),
                    "(batch, S, emb_dim)")
        checks.same("encoder_outputs", encoder_shape[-1],
                    "target_embeddings", target_shape[-1], "embedding size")
        checks.same("encoder_outputs", encoder_shape[-1],
                    "source_embeddings", source_shape[-1], "embedding size")
        checks.same("encoder_outputs", encoder_shape[1],
                    "source_embeddings", source_shape[1], "length S")

    def build(self, query_shape, target_embeddings_shape, encoder_outputs_shape,
              source_embeddings_shape):
        self._validate(query_shape, target_embeddings_shape,
                       encoder_outputs_shape, source_embeddings_shape)
        emb, dec = encoder_outputs_shape[-1], query_shape[-1]
        self.in_projection = keras.layers.Dense(emb, dtype=self.dtype_policy,
                                                name="in_projection")  # W_d
        self.in_projection.build((None, dec))
        self.out_projection = keras.layers.Dense(dec, dtype=self.dtype_policy,
                                                 name="out_projection")  # W_o
        self.out_projection.build((None, emb))
        self.built = True

    def call(self, query, target_embeddings, encoder_outputs, source_embeddings,
             source_mask=None, return_attention_scores=False):
        self._validate(query.shape, target_embeddings.shape,
                       encoder_outputs.shape, source_embeddings.shape)
        checks.mask("source_mask", source_mask,
                    tuple(encoder_outputs.shape[:2]))
        single = len(query.shape) == 2
        if single:
            query = ops.expand_dims(query, 1)
            target_embeddings = ops.expand_dims(target_embeddings, 1)
        half = ops.cast(SQRT_HALF, query.dtype)
        d = self.in_projection(query) + target_embeddings  # (b, T, emb)
        if self.scale:
            d = d * half
        scores = ops.matmul(d, ops.transpose(encoder_outputs, (0, 2, 1)))
        mask = None
        if source_mask is not None:
            mask = ops.expand_dims(ops.cast(source_mask, "bool"), 1)
        a = utils.masked_softmax(scores, mask)  # (b, T, S)
        c = ops.matmul(a, encoder_outputs + source_embeddings)
        if self.scale:
            if source_mask is None:
                m = ops.cast(ops.shape(encoder_outputs)[1], c.dtype)
                m = ops.ones((ops.shape(c)[0], 1, 1), c.dtype) * m
            else:
                m = ops.sum(utils.mask_as(source_mask, c.dtype), axis=1)
                m = ops.reshape(m, (-1, 1, 1))
            c = c * ops.sqrt(m)  # m * sqrt(1/m)
        out = query + self.out_projection(c)
        if self.scale:
            out = out * half
        if single:
            out, a = ops.squeeze(out, 1), ops.squeeze(a, 1)
        if return_attention_scores:
            return out, a
        return out

    def compute_output_spec(self, query, target_embeddings, encoder_outputs,
                            source_embeddings, source_mask=None,
                            return_attention_scores=False):
        self._validate(query.shape, target_embeddings.shape,
                       encoder_outputs.shape, source_embeddings.shape)
        out = keras.KerasTensor(query.shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return out
        return out, keras.KerasTensor(
            tuple(query.shape[:-1]) + (encoder_outputs.shape[1],),
            dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"scale": self.scale})
        return config
