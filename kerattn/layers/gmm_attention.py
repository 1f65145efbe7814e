"""GMM attention: Graves (2013) and the variants of Battenberg et al. (2020).

The weights over the source are a mixture of `K` Gaussian bumps whose
means only move forward: a purely location-based attention that reads no
source content, so it cannot jump back or skip ahead the way a content
score can on inputs longer than those seen in training.
"""

import math

import keras
from keras import ops

from kerattn import checks
from kerattn.layers.base_attention import BaseAttention

VARIANTS = ("v0", "v1", "v1b", "v2", "v2b")
# What the "b" variants start from: each step moves a bump this many
# positions, this wide (the standard deviation, in positions), before
# training. softplus(1) and softplus(10): the raw biases 1 and 10 of Coqui
# TTS's GravesAttention (a v2b, `layers/tacotron/attentions.py`).
INITIAL_OFFSET = math.log1p(math.e)
INITIAL_SCALE = math.log1p(math.exp(10.0))


def _inverse_softplus(y):
    return y + math.log(-math.expm1(-y))


@keras.saving.register_keras_serializable(package="kerattn")
class GMMAttention(BaseAttention):
    """Gaussian-mixture (GMM) attention: Graves (2013), Battenberg et al. (2020).

    Graves, "Generating Sequences With Recurrent Neural Networks", section
    5.1 (eq. 46-51), and Battenberg et al., "Location-Relative Attention
    Mechanisms for Robust Long-Form Speech Synthesis" (ICASSP 2020),
    section 2.1 and its table of GMM variants. From the query `s_i` a
    small network predicts, for each of `K` components, a weight, an
    offset and a width:

        (w^_i, D^_i, o^_i) = V tanh(W s_i + b_1) + b_2     (3K outputs)
        mu_i = mu_{i-1} + D_i,  mu_0 = 0                   (the means move)
        alpha_ij = sum_k (w_ik / Z_ik) exp(-(j - mu_ik)^2 / (2 sigma_ik^2))
        c_i = sum_j alpha_ij h_j

    with positions `j = 1 .. Tv` (Graves' `u`), and per `variant`:

        variant  D = offset     sigma (width)          w               Z
        v0       exp(D^)        sqrt(exp(-o^) / 2)     exp(w^)         1
        v1       exp(D^)        sqrt(exp(o^))          softmax(w^)     sqrt(2 pi) sigma
        v2       softplus(D^)   softplus(o^)           softmax(w^)     sqrt(2 pi) sigma

    "v0" is Graves' soft window (`beta = exp(o^) = 1 / (2 sigma^2)`, no
    normalisation: the weights need not sum to 1); "v1" and "v2" mix
    unit-area densities, so a bump inside the source sums to about 1;
    "v2"'s softplus avoids the exponentials' overflow. "v1b" and "v2b" add
    initial biases to `D^` and `o^` so that training starts with bumps
    that move `initial_offset` positions a step, `initial_scale` wide
    (Battenberg et al.'s v2b generalises to the longest utterances in
    their test). `units=None` predicts the parameters with one linear map
    (Graves' eq. 48) instead of the two-layer network.

    The weights are not renormalised over the source (none of the
    variants is): a padded position gets exactly 0, a fully padded row
    zeros. Means, widths and the mixture are computed in float32 whatever
    the compute dtype (positions up to thousands are not exact in
    bfloat16), and the state is kept in float32.

    The step protocol (`BaseAttention`): the state is `{"mean": mu_{i-1}}`
    `(batch, K)`, zeros at first; it does not depend on the source's
    length (`extend_source` keeps it). Called alone on `Tq` queries the
    means accumulate over the queries from `initial_mean` (zeros when
    None), a padded query not moving them; `return_mean=True` also
    returns `mu` `(batch, Tq, K)`.

    Args:
        num_components: int `K` (5 in Battenberg et al.).
        units: int, the hidden layer of the parameter network (None: one
            linear map).
        variant: one of "v0", "v1", "v1b", "v2", "v2b".
        initial_offset, initial_scale: positive floats, the "b" variants'
            starting offset and width, in positions (defaults:
            softplus(1) = 1.31 and softplus(10) = 10.0).
        kernel_initializer, kernel_regularizer: of the network's kernels.
        dropout: float in [0, 1), dropout on the attention weights.
        **kwargs: base layer keyword arguments.

    Example:

    >>> import numpy as np
    >>> s = np.random.rand(2, 3, 8).astype("float32")      # s_1 .. s_3
    >>> h = np.random.rand(2, 20, 4).astype("float32")
    >>> attention = GMMAttention(num_components=2, units=6)
    >>> context, alpha, mean = attention(s, h, return_attention_scores=True,
    ...                                  return_mean=True)
    >>> tuple(context.shape), tuple(alpha.shape), tuple(mean.shape)
    ((2, 3, 4), (2, 3, 20), (2, 3, 2))
    >>> bool(np.all(np.diff(keras.ops.convert_to_numpy(mean), axis=1) > 0))   # forward only
    True
    """

    _causal_refused = "its weights are a mixture over positions, not a score"

    def __init__(self, num_components=5, units=128, variant="v2b",
                 initial_offset=INITIAL_OFFSET, initial_scale=INITIAL_SCALE,
                 kernel_initializer="glorot_uniform", kernel_regularizer=None,
                 **kwargs):
        super().__init__(**kwargs)
        checks.positive_int("num_components", num_components)
        checks.positive_int("units", units, allow_none=True)
        checks.one_of("variant", variant, VARIANTS)
        checks.number("initial_offset", initial_offset, low=0.0, low_open=True)
        checks.number("initial_scale", initial_scale, low=0.0, low_open=True)
        self.num_components = num_components
        self.units = units
        self.variant = variant
        self.initial_offset = float(initial_offset)
        self.initial_scale = float(initial_scale)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        # Keras would cast every floating argument of `call` to the compute
        # dtype, `initial_mean` included (in bfloat16 a mean of 1,500 is
        # off by up to 4 positions): `__call__` converts them itself.
        self._convert_input_args = False

    # --- weights --------------------------------------------------------------

    def _output_bias(self):
        """`b_2`: zeros, or for a "b" variant the raw offset and width that
        give `initial_offset` and `initial_scale`."""
        k = self.num_components
        if not self.variant.endswith("b"):
            return keras.initializers.Zeros()
        if self.variant == "v1b":     # D = exp(D^), sigma^2 = exp(o^)
            offset = math.log(self.initial_offset)
            scale = 2.0 * math.log(self.initial_scale)
        else:                         # softplus
            offset = _inverse_softplus(self.initial_offset)
            scale = _inverse_softplus(self.initial_scale)
        return keras.initializers.Constant([0.0] * k + [offset] * k + [scale] * k)

    def build(self, query_shape, value_shape, key_shape=None):
        self._record_dims(query_shape, value_shape, key_shape)
        common = dict(initializer=self.kernel_initializer,
                      regularizer=self.kernel_regularizer,
                      dtype=self.variable_dtype)
        width = query_shape[-1]
        if self.units is not None:
            self.hidden_kernel = self.add_weight(
                name="hidden_kernel", shape=(width, self.units), **common)
            self.hidden_bias = self.add_weight(
                name="hidden_bias", shape=(self.units,), initializer="zeros",
                dtype=self.variable_dtype)
            width = self.units
        self.output_kernel = self.add_weight(
            name="output_kernel", shape=(width, 3 * self.num_components),
            **common)
        self.output_bias = self.add_weight(
            name="output_bias", shape=(3 * self.num_components,),
            initializer=self._output_bias(), dtype=self.variable_dtype)
        self.built = True

    # --- the equations ----------------------------------------------------------

    def mixture_parameters(self, query):
        """`(w, D, sigma)`, each `(batch, Tq, K)` in float32, from queries
        `(batch, Tq, query_dim)` (the table in the class docstring)."""
        x = query
        if self.units is not None:
            x = ops.tanh(ops.matmul(x, self.hidden_kernel) + self.hidden_bias)
        raw = ops.cast(ops.matmul(x, self.output_kernel) + self.output_bias,
                       "float32")
        k = self.num_components
        w, d, o = raw[..., :k], raw[..., k:2 * k], raw[..., 2 * k:]
        if self.variant == "v0":
            return ops.exp(w), ops.exp(d), ops.sqrt(ops.exp(-o) / 2.0)
        if self.variant in ("v1", "v1b"):
            return ops.softmax(w, axis=-1), ops.exp(d), ops.sqrt(ops.exp(o))
        return ops.softmax(w, axis=-1), ops.softplus(d), ops.softplus(o)

    def mixture(self, w, mean, sigma, length):
        """`alpha` `(batch, Tq, length)`, float32: the table's mixture at
        positions `1 .. length` (unmasked)."""
        j = ops.arange(1, length + 1, dtype="float32")          # (Tv,)
        z = (j[None, None, :, None] - mean[:, :, None, :]) / sigma[:, :, None, :]
        bumps = ops.exp(-0.5 * ops.square(z))                    # (b, Tq, Tv, K)
        if self.variant == "v0":
            scale = w
        else:
            scale = w / (math.sqrt(2.0 * math.pi) * sigma)
        return ops.sum(bumps * scale[:, :, None, :], axis=-1)

    # --- call and step ------------------------------------------------------------

    def _compute_attention(self, query, key, value, mask, training,
                           return_attention_scores, initial_mean=None,
                           moves=None):
        """The hook `BaseAttention._attend` runs: `(output, weights,
        {"mean": mu (batch, Tq, K)})`. `moves` `(batch, Tq)` (1 = a real
        query) says which queries advance the means."""
        w, offset, sigma = self.mixture_parameters(query)
        if moves is not None:
            offset = offset * ops.cast(moves, "float32")[..., None]
        mean = ops.cumsum(offset, axis=1)
        if initial_mean is not None:
            mean = mean + ops.cast(initial_mean, "float32")[:, None, :]
        weights = self.mixture(w, mean, sigma, ops.shape(value)[1])
        if mask is not None:
            weights = ops.where(mask, weights, 0.0)
        weights = ops.cast(weights, self.compute_dtype)
        dropped = self._dropout_layer(weights, training=training)
        output = ops.matmul(dropped, ops.cast(value, self.compute_dtype))
        return output, weights, {"mean": mean}

    def __call__(self, *args, initial_mean=None, **kwargs):
        """Keras' conversion of the inputs (floats to the compute dtype),
        except `initial_mean`, kept in float32."""
        def convert(x):
            return self.dtype_policy.convert_input(x, self.autocast,
                                                   self.input_dtype)

        args = keras.tree.map_structure(convert, args)
        kwargs = keras.tree.map_structure(convert, kwargs)
        if initial_mean is not None:
            kwargs["initial_mean"] = ops.cast(initial_mean, "float32")
        return super().__call__(*args, **kwargs)

    def call(self, query, value, key=None, query_mask=None, value_mask=None,
             attention_mask=None, projected_key=None, initial_mean=None,
             return_attention_scores=False, return_mean=False, training=None):
        moves = None
        if query_mask is not None and len(query.shape) == 3:
            moves = query_mask
        output, weights, extras = self._attend(
            query, value, key=key, query_mask=query_mask, value_mask=value_mask,
            attention_mask=attention_mask, projected_key=projected_key,
            training=training, initial_mean=self._check_mean(initial_mean, query),
            moves=moves)
        result = (output,)
        if return_attention_scores:
            result += (weights,)
        if return_mean:
            result += (extras["mean"],)
        return result[0] if len(result) == 1 else result

    def _check_mean(self, mean, query):
        if mean is None:
            return None
        mean = ops.convert_to_tensor(mean, "float32")
        checks.rank("initial_mean", mean.shape, (2,), "(batch, num_components)")
        checks.same("initial_mean", mean.shape[-1], "num_components",
                    self.num_components, "number of components")
        checks.same("initial_mean", mean.shape[0], "query", query.shape[0],
                    "batch size")
        return mean

    def initial_state(self, cache, batch_size):
        """`{"mean": mu_0}`: zeros `(batch, K)`, float32."""
        first = ops.zeros_like(ops.cast(cache["mask"][:, :1], "float32"))
        return {"mean": first + ops.zeros((self.num_components,), "float32")}

    def step(self, query, cache, state, *, position=None, training=None,
             noise=None, mode=None):
        """One step from `mu_{i-1}`: the context, the weights and
        `{"mean": mu_i}`."""
        context, weights, extras = self._attend(
            query, cache["values"], projected_key=cache["keys"],
            value_mask=cache["mask"], training=training,
            initial_mean=state["mean"])
        return context, weights, {"mean": extras["mean"]}

    def extend_source(self, state, cache):
        """The means do not depend on the source's length: `state`."""
        return state

    def compute_output_spec(self, query, value, key=None, query_mask=None,
                            value_mask=None, attention_mask=None,
                            projected_key=None, initial_mean=None,
                            return_attention_scores=False, return_mean=False,
                            training=None):
        spec = super().compute_output_spec(query, value, key,
                                           return_attention_scores=True)
        result = (spec[0],)
        if return_attention_scores:
            result += (spec[1],)
        if return_mean:
            result += (keras.KerasTensor(
                tuple(query.shape[:-1]) + (self.num_components,), "float32"),)
        return result[0] if len(result) == 1 else result

    def get_config(self):
        config = super().get_config()
        config.pop("causal", None)
        config.update({
            "num_components": self.num_components,
            "units": self.units,
            "variant": self.variant,
            "initial_offset": self.initial_offset,
            "initial_scale": self.initial_scale,
            "kernel_initializer": keras.initializers.serialize(
                self.kernel_initializer),
            "kernel_regularizer": keras.regularizers.serialize(
                self.kernel_regularizer),
        })
        return config
