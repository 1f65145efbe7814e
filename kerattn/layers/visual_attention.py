"""Soft and hard visual attention (Xu et al., 2015, Show, Attend and Tell)."""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.base_attention import BaseAttention


@keras.saving.register_keras_serializable(package="kerattn")
class SoftVisualAttention(BaseAttention):
    """Deterministic soft attention of Xu et al. (2015), section 4.2.

    "Show, Attend and Tell: Neural Image Caption Generation with Visual
    Attention". Over the `L` annotation vectors `a_i` of an image, given the
    previous decoder state `h_{t-1}`:

        e_ti = f_att(a_i, h_{t-1}) = w^T tanh(W_a a_i + W_h h_{t-1} + b)
        alpha_ti = softmax_i(e_ti)
        z_t = beta_t * sum_i alpha_ti a_i,   beta_t = sigmoid(f_beta(h_{t-1}))

    `f_att` is the one-hidden-layer perceptron of the authors' code
    (`W_a a_i` is computed once per image by `project_key`). With
    `gating=True` the context is scaled by the gating scalar `beta_t` of
    section 4.2.1 (`f_beta` a linear map of `h_{t-1}`); `gate(query)`
    returns it.

    Args:
        units: int, the hidden size of `f_att`.
        gating: bool, multiply the context by `beta_t`.
        kernel_initializer, kernel_regularizer: of the weights.
        dropout: float in [0, 1), dropout on the attention weights.
        **kwargs: base layer keyword arguments.

    Call arguments, Returns: as `kerattn.layers.BaseAttention`, with
    `query = h_{t-1}` `(batch, dim)` (one step) or `(batch, T, dim)` and
    `value = a` `(batch, L, D)` the annotation vectors.

    Example:

    >>> import numpy as np
    >>> a = np.random.rand(2, 196, 32).astype("float32")   # 14 x 14 x 32
    >>> h = np.random.rand(2, 64).astype("float32")
    >>> z, alpha = SoftVisualAttention(units=16)(h, a,
    ...     return_attention_scores=True)
    >>> tuple(z.shape), tuple(alpha.shape)
    ((2, 32), (2, 196))
    """

    _causal_refused = "it attends over image locations, which have no order"

    def __init__(
        self,
        units,
        gating=True,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(dropout=dropout, **kwargs)
        checks.positive_int("units", units)
        checks.boolean("gating", gating)
        self.units = units
        self.gating = gating
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    def build(self, query_shape, value_shape, key_shape=None):
        self._record_dims(query_shape, value_shape, key_shape)
        key_dim = (value_shape if key_shape is None else key_shape)[-1]
        common = dict(
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            dtype=self.variable_dtype,
        )
        self.W_h = self.add_weight(
            name="W_h", shape=(query_shape[-1], self.units), **common
        )
        self.W_a = self.add_weight(name="W_a", shape=(key_dim, self.units), **common)
        self.b = self.add_weight(
            name="b", shape=(self.units,), initializer="zeros",
            dtype=self.variable_dtype,
        )
        self.w = self.add_weight(name="w", shape=(self.units,), **common)
        if self.gating:
            self.W_beta = self.add_weight(
                name="W_beta", shape=(query_shape[-1], 1), **common
            )
            self.b_beta = self.add_weight(
                name="b_beta", shape=(1,), initializer="zeros",
                dtype=self.variable_dtype,
            )
        self.built = True

    def project_key(self, key):
        """`W_a a_i + b` for every location: `(batch, L, units)`."""
        self._check_key(key)
        return utils.project(key, self.W_a) + self.b

    def _calculate_scores(self, query, key):
        hidden = ops.expand_dims(utils.project(query, self.W_h), 2)
        hidden = ops.tanh(hidden + ops.expand_dims(key, 1))
        return ops.sum(hidden * self.w, axis=-1)

    def gate(self, query):
        """`beta_t = sigmoid(f_beta(h_{t-1}))`: `query.shape[:-1] + (1,)`."""
        checks.require(self.gating, "gating", "True (at construction) to call "
                       "`gate`", self.gating)
        return ops.sigmoid(utils.project(query, self.W_beta) + self.b_beta)

    def _compute_attention(
        self, query, key, value, mask, training, return_attention_scores
    ):
        output, weights = super()._compute_attention(
            query, key, value, mask, training, return_attention_scores
        )
        if self.gating:
            output = output * self.gate(query)
        return output, weights

    def get_config(self):
        config = super().get_config()
        config.pop("causal", None)
        config.update(
            {
                "units": self.units,
                "gating": self.gating,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="kerattn")
class HardVisualAttention(SoftVisualAttention):
    """Stochastic hard attention of Xu et al. (2015), section 4.1.

    The same `alpha_ti` as `SoftVisualAttention`; during training the layer
    samples one location per step from the multinoulli,

        s_t ~ Multinoulli_L({alpha_i}),   z_t = sum_i s_{t,i} a_i,

    and exposes `log p(s_t | a) = log alpha_{t, s_t}` and the entropy
    `H[s_t]` for the REINFORCE gradient (eq. 12; see
    `kerattn.layers.hard_attention_surrogate_loss` and
    `MovingAverageBaseline`). At inference it returns the expected context
    `sum_i alpha_ti a_i` (`inference="expectation"`, what the paper
    evaluates with) or the context of the most likely location
    (`inference="argmax"`). Sampling uses a Keras `SeedGenerator`, so it
    runs on every backend and is reproducible with `seed`.

    With `expectation_rate` p > 0, each row (each image's caption) takes,
    with probability p, the expected context `sum_i alpha_ti a_i` at every
    step instead of a sample (section 4.1: "with probability 0.5 for a
    given image, we set the sampled attention location s~ to its expected
    value alpha", the deterministic attention of section 4.2). Such a row
    trains through `alpha` by backpropagation and samples nothing: its
    `sample` is all zeros and its `log_prob` 0, so REINFORCE
    (`HardAttentionReinforce`) leaves it out.

    Args:
        units, gating, kernel_initializer, kernel_regularizer, dropout: as
            `SoftVisualAttention`.
        inference: "expectation" or "argmax".
        expectation_rate: the probability p above, in [0, 1] (0: always
            sample; the paper's 0.5).
        seed: optional int seed of the sampler.
        **kwargs: base layer keyword arguments.

    Call arguments:
        As `SoftVisualAttention`, plus `return_sample`: bool; if True the
        result ends with a dict `{"sample": (batch, Tq, L) one-hot of the
        location used, "log_prob": (batch, Tq), "entropy": (batch, Tq)}`
        (without the `Tq` axis for one step). At inference `sample` is the
        argmax location and `log_prob` its log-probability.
        `sample_noise`: optional uniform noise in (0, 1) shaped like the
        weights; in training the location is then `argmax(log alpha +
        Gumbel(noise))` (the same distribution) instead of a draw from the
        layer's seed generator. Loops pass it in (under JAX a seed
        generator cannot advance inside a scan).
        `expectation_noise`: optional uniform `(batch,)`: in training, a
        row whose value is below `expectation_rate` takes the expected
        context (drawn from the seed generator when not given).

    Returns:
        `output`, then the weights `alpha` if `return_attention_scores`,
        then the sample dict if `return_sample`.

    Example:

    >>> import numpy as np
    >>> a = np.random.rand(2, 9, 8).astype("float32")
    >>> h = np.random.rand(2, 4).astype("float32")
    >>> layer = HardVisualAttention(units=6, seed=1)
    >>> z, info = layer(h, a, return_sample=True, training=True)
    >>> tuple(info["sample"].shape), tuple(info["log_prob"].shape)
    ((2, 9), (2,))
    """


    def __init__(self, units, inference="expectation", expectation_rate=0.0,
                 seed=None, **kwargs):
        super().__init__(units, **kwargs)
        checks.one_of("inference", inference, ("expectation", "argmax"))
        checks.require(
            not isinstance(expectation_rate, bool)
            and isinstance(expectation_rate, (int, float))
            and 0 <= expectation_rate <= 1, "expectation_rate",
            "a probability in [0, 1]", expectation_rate)
        self.inference = inference
        self.expectation_rate = float(expectation_rate)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed, name="sampler")

    def call(self, query, value, key=None, query_mask=None, value_mask=None,
             attention_mask=None, projected_key=None,
             return_attention_scores=False, return_sample=False,
             sample_noise=None, expectation_noise=None, training=None):
        output, weights, info = self._attend(
            query, value, key=key, query_mask=query_mask,
            value_mask=value_mask, attention_mask=attention_mask,
            projected_key=projected_key, training=training,
            sample_noise=sample_noise, expectation_noise=expectation_noise)
        out = (output,)
        if return_attention_scores:
            out += (weights,)
        if return_sample:
            out += (info,)
        return out[0] if len(out) == 1 else out

    # --- the step protocol (see `BaseAttention`) ------------------------------

    def initial_state(self, cache, batch_size):
        """`{"sample": (batch, L)}`: the one-hot location of the last step
        (zeros before the first); `AttentionRNN(...,
        return_attention_samples=True)` returns it for every step."""
        return {"sample": ops.zeros_like(cache["mask"])}

    def sample_of(self, state):
        """The location sampled at the step that left `state`."""
        return state["sample"]

    def step(self, query, cache, state, *, position=None, training=None,
             noise=None, mode=None):
        """A step with the decoder's draws (`noise` `{"sample": (batch, L),
        "coin": (batch,)}`, or `{}`: drawn here); the state is its sample."""
        noise = noise or {}
        context, weights, info = self._attend(
            query, cache["values"], projected_key=cache["keys"],
            value_mask=cache["mask"], training=training,
            sample_noise=noise.get("sample"),
            expectation_noise=noise.get("coin"))
        return context, weights, {"sample": info["sample"]}

    def draw_noise(self, cache, steps, *, training=None, mode=None):
        """In training, one uniform per step and location (`"sample"`,
        `(batch, steps, L)`) and, with `expectation_rate` > 0, one coin per
        row for the expected context, the same at every step of the row
        (`"coin"`, `(batch, steps)`); `{}` at inference or when `L` is not
        known."""
        length = cache["values"].shape[1]
        if not training or length is None:
            return {}
        dtype = cache["values"].dtype
        batch = ops.shape(cache["values"])[0]
        noise = {"sample": keras.random.uniform(
            (batch, steps, length), seed=self.seed_generator, dtype=dtype)}
        if self.expectation_rate > 0:
            coin = keras.random.uniform((batch,), seed=self.seed_generator,
                                        dtype=dtype)
            noise["coin"] = ops.repeat(ops.expand_dims(coin, 1), steps, axis=1)
        return noise

    def _compute_attention(
        self, query, key, value, mask, training, return_attention_scores,
        sample_noise=None, expectation_noise=None,
    ):
        """`(output, alpha, {"sample", "log_prob", "entropy"})`."""
        training = bool(training)
        scores = self._calculate_scores(query, key)
        alpha = utils.masked_softmax(scores, mask)  # (b, Tq, L)
        length = ops.shape(alpha)[-1]
        tiny = 1e-12 if keras.backend.standardize_dtype(alpha.dtype) == "float32" else 1e-6
        tiny = ops.cast(tiny, alpha.dtype)
        log_alpha = ops.log(ops.maximum(alpha, tiny))
        entropy = -ops.sum(alpha * log_alpha, axis=-1)
        if training:
            # float32 logits: -1e9 would be -inf in float16.
            log_alpha32 = ops.cast(log_alpha, "float32")
            logits = ops.where(
                alpha > 0, log_alpha32, ops.full_like(log_alpha32, -1e9)
            )
            if sample_noise is None:
                index = keras.random.categorical(
                    ops.reshape(logits, (-1, length)), 1, seed=self.seed_generator
                )
                index = ops.reshape(index, ops.shape(alpha)[:-1])
            else:
                # Gumbel-max with the given uniform noise: the same
                # distribution, and no seed state to update inside a loop.
                u = ops.reshape(ops.cast(sample_noise, "float32"), ops.shape(logits))
                u = ops.clip(u, 1e-7, 1.0 - 1e-7)
                index = ops.argmax(logits - ops.log(-ops.log(u)), axis=-1)
        else:
            index = ops.argmax(alpha, axis=-1)
        sample = ops.one_hot(index, length, dtype=alpha.dtype)
        # Rows with nothing to attend to sample nothing.
        has_any = ops.sum(alpha, axis=-1, keepdims=True) > 0
        sample = ops.where(has_any, sample, ops.zeros_like(sample))
        expected = self._expected_rows(alpha, training, expectation_noise)
        if expected is not None:   # these rows sample nothing
            sample = ops.where(expected, ops.zeros_like(sample), sample)
        log_prob = ops.sum(sample * log_alpha, axis=-1)
        info = {"sample": sample, "log_prob": log_prob, "entropy": entropy}
        if training or self.inference == "argmax":
            output = ops.matmul(ops.stop_gradient(sample), value)
            if expected is not None:
                output = ops.where(expected, ops.matmul(alpha, value), output)
        else:
            output = ops.matmul(alpha, value)
        if self.gating:
            output = output * self.gate(query)
        return output, alpha, info

    def _expected_rows(self, alpha, training, coin):
        """In training with `expectation_rate` > 0: which rows take the
        expected context, `(b, 1, 1)` bool; else None."""
        if not training or self.expectation_rate <= 0:
            return None
        batch = ops.shape(alpha)[0]
        if coin is None:
            coin = keras.random.uniform((batch,), seed=self.seed_generator)
        coin = ops.reshape(ops.cast(coin, "float32"), (batch, 1, 1))
        return coin < self.expectation_rate

    def compute_output_spec(self, query, value, key=None, return_sample=False,
                            return_attention_scores=False, **kwargs):
        spec = super().compute_output_spec(
            query, value, key=key,
            return_attention_scores=return_attention_scores,
        )
        if not return_sample:
            return spec
        lead = tuple(query.shape[:-1])
        info = {
            "sample": keras.KerasTensor(lead + (value.shape[1],), self.compute_dtype),
            "log_prob": keras.KerasTensor(lead, self.compute_dtype),
            "entropy": keras.KerasTensor(lead, self.compute_dtype),
        }
        spec = spec if isinstance(spec, tuple) else (spec,)
        return spec + (info,)

    def get_config(self):
        config = super().get_config()
        config.update({"inference": self.inference, "seed": self.seed,
                       "expectation_rate": self.expectation_rate})
        return config


@keras.saving.register_keras_serializable(package="kerattn")
class MovingAverageBaseline(keras.layers.Layer):
    """The moving-average REINFORCE baseline of Xu et al. (2015), eq. 12.

        b_k = decay * b_{k-1} + (1 - decay) * log p(y | s_k, a)

    (decay 0.9 in the paper). Called on the batch's rewards (the
    log-likelihoods of the captions), it returns the baseline to subtract
    and, in training, updates it with the batch mean (with `keep`, a
    `(batch,)` bool, the mean of the rows it keeps; none kept, no update).

    Args:
        decay: float in [0, 1).

    Example:

    >>> baseline = MovingAverageBaseline(decay=0.9)
    >>> b = baseline(keras.ops.ones((4,)) * -3.0, training=True)
    """

    def __init__(self, decay=0.9, **kwargs):
        super().__init__(**kwargs)
        checks.rate("decay", decay)
        self.decay = decay

    def build(self, input_shape):
        self.baseline = self.add_weight(
            name="baseline", shape=(), initializer="zeros", trainable=False,
            dtype="float32",
        )

    def call(self, rewards, training=None, keep=None):
        checks.rank("rewards", rewards.shape, (1,), "(batch,)")
        checks.nonempty("rewards", rewards, (0,), "example")
        # A float32 copy read before the update (not an alias of the
        # variable; under a mixed policy Keras would hand the variable over
        # cast to float16, so it is cast back).
        current = ops.multiply(
            ops.cast(ops.convert_to_tensor(self.baseline), "float32"), 1.0)
        if training:
            rewards32 = ops.cast(ops.stop_gradient(rewards), "float32")
            if keep is None:
                mean = ops.mean(rewards32)
                updated = self.decay * current + (1.0 - self.decay) * mean
            else:   # the mean over the rows that count; none: no update
                weight = ops.cast(keep, "float32")
                count = ops.sum(weight)
                mean = ops.sum(rewards32 * weight) / ops.maximum(count, 1.0)
                updated = ops.where(
                    count > 0, self.decay * current + (1.0 - self.decay) * mean,
                    current)
            self.baseline.assign(updated)
        return ops.cast(ops.broadcast_to(current, ops.shape(rewards)),
                        rewards.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"decay": self.decay})
        return config


def hard_attention_surrogate_loss(
    log_likelihood, sample_log_prob, entropy, baseline, lambda_r=1.0,
    lambda_e=0.0,
):
    """A loss whose gradient is the hard-attention update of Xu et al., eq. 12.

        dL_s/dW ~ d log p(y|s,a)/dW
                  + lambda_r (log p(y|s,a) - b) d log p(s|a)/dW
                  + lambda_e dH[s]/dW

    Minimising the returned value ascends that estimate.

    Args:
        log_likelihood: `(batch,)`, `log p(y | s, a)` of each caption under
            its sampled locations.
        sample_log_prob: `(batch,)` or `(batch, T)`, `log p(s | a)` of the
            samples (summed over steps if given per step).
        entropy: like `sample_log_prob`, the entropy of each step's
            multinoulli.
        baseline: `(batch,)` or scalar, e.g. from `MovingAverageBaseline`.
        lambda_r, lambda_e: the paper's weights of the two terms.

    Returns:
        A scalar loss (mean over the batch).

    Example:

    >>> import numpy as np
    >>> log_likelihood = np.array([-2.0, -4.0], "float32")
    >>> sample_log_prob = np.array([-1.0, -1.5], "float32")
    >>> entropy = np.array([0.7, 0.6], "float32")
    >>> loss = hard_attention_surrogate_loss(log_likelihood, sample_log_prob,
    ...                                      entropy, baseline=-3.0)
    >>> round(float(loss), 4)   # mean of -(ll + (ll - b) log p): (3 + 2.5) / 2
    2.75
    """
    log_likelihood = ops.convert_to_tensor(log_likelihood)
    sample_log_prob = ops.convert_to_tensor(sample_log_prob)
    entropy = ops.convert_to_tensor(entropy)
    baseline = ops.convert_to_tensor(baseline, dtype=log_likelihood.dtype)
    if len(sample_log_prob.shape) == 2:
        sample_log_prob = ops.sum(sample_log_prob, axis=-1)
    if len(entropy.shape) == 2:
        entropy = ops.sum(entropy, axis=-1)
    advantage = ops.stop_gradient(log_likelihood - baseline)
    objective = (
        log_likelihood + lambda_r * advantage * sample_log_prob + lambda_e * entropy
    )
    return -ops.mean(objective)


def doubly_stochastic_penalty(alphas, lam=1.0, step_mask=None, location_mask=None):
    """Xu et al. (2015), eq. 14: `lam * sum_i (1 - sum_t alpha_ti)^2`.

    Encourages the model to pay equal attention to every part of the image
    over the course of the caption.

    Args:
        alphas: `(batch, T, L)`, the attention weights of every step.
        lam: the penalty's weight `lambda`.
        step_mask: optional boolean `(batch, T)`; padded steps are left out.
        location_mask: optional boolean `(batch, L)`; padded locations are
            left out of the sum over `i`.

    Returns:
        The penalty averaged over the batch (a scalar).

    Example:

    >>> import numpy as np
    >>> alphas = np.array([[[1.0, 0.0], [1.0, 0.0]]], "float32")  # 2 steps, 2 places
    >>> float(doubly_stochastic_penalty(alphas))   # (1 - 2)^2 + (1 - 0)^2
    2.0
    """
    checks.rank("alphas", alphas.shape, (3,), "(batch, T, L)")
    checks.mask("step_mask", step_mask, tuple(alphas.shape[:2]))
    checks.mask("location_mask", location_mask,
                (alphas.shape[0], alphas.shape[2]))
    # In float32 under mixed precision: a loss term (Keras adds the losses
    # in float32, and TensorFlow will not add a float16 one to them).
    alphas = ops.cast(ops.convert_to_tensor(alphas), "float32")
    if step_mask is not None:
        alphas = alphas * ops.expand_dims(utils.mask_as(step_mask, alphas.dtype), -1)
    per_location = ops.square(1.0 - ops.sum(alphas, axis=1))  # (batch, L)
    if location_mask is not None:
        per_location = per_location * utils.mask_as(location_mask, alphas.dtype)
    return lam * ops.mean(ops.sum(per_location, axis=-1))


@keras.saving.register_keras_serializable(package="kerattn")
class DoublyStochasticRegularization(keras.layers.Layer):
    """Adds `doubly_stochastic_penalty(alphas)` to the model's losses.

    Pass the alignment history `(batch, T, L)` through it in a functional
    model; it returns its input unchanged, or `passthrough` when given (a
    functional model keeps only layers on the path to its outputs, so pass
    e.g. the logits through it when the alignments are not an output).

    Args:
        lam: the penalty's weight `lambda` (Xu et al., 2015, eq. 14).

    Example:

    >>> import numpy as np
    >>> reg = DoublyStochasticRegularization(lam=1.0)
    >>> _ = reg(np.full((2, 3, 4), 0.25, "float32"))
    """

    def __init__(self, lam=1.0, **kwargs):
        super().__init__(**kwargs)
        checks.nonnegative_number("lam", lam)
        self.lam = lam
        self.supports_masking = True

    def call(self, alphas, step_mask=None, passthrough=None):
        self.add_loss(doubly_stochastic_penalty(alphas, self.lam, step_mask))
        return alphas if passthrough is None else passthrough

    def compute_output_spec(self, alphas, step_mask=None, passthrough=None):
        out = alphas if passthrough is None else passthrough
        return keras.KerasTensor(out.shape, dtype=out.dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"lam": self.lam})
        return config


@keras.saving.register_keras_serializable(package="kerattn")
class HardAttentionReinforce(keras.layers.Layer):
    """The REINFORCE terms of hard attention (Xu et al., 2015, eq. 12), as a loss.

    The layer sits at the end of a hard-attention training graph (the
    "endpoint layer" pattern): given the logits, the target ids, the
    attention weights `alpha` and the sampled locations `s`, it adds

        - [ lambda_r (log p(y | s, a) - b) log p(s | a) + lambda_e H[s] ]

    to the model's losses, per target token (the same normalisation as the
    token-level cross-entropy the model is compiled with, which supplies the
    first term of eq. 12, d log p(y | s, a) / dW). `log p(y | s, a)` is the
    caption's log-likelihood under the sampled locations (no gradient flows
    through the reward), and `b` is the moving-average baseline
    (`MovingAverageBaseline`, decay 0.9), updated in training. A caption
    that sampled no location (the expected context of
    `HardVisualAttention(expectation_rate=...)`) gets no score-function
    term and does not move the baseline. It returns the logits unchanged.

    Args:
        lambda_r: the weight of the score-function term (1 in the paper).
        lambda_e: the weight of the entropy term.
        decay: the baseline's decay (0.9 in the paper).
        pad_id: the target id of padding (not counted).
        **kwargs: base layer keyword arguments.

    Call arguments:
        logits: `(batch, T, V)`; targets: int `(batch, T)` (PAD = 0);
        alphas: `(batch, T, L)`; samples: one-hot `(batch, T, L)`;
        training: bool, the REINFORCE terms are added only in training.

    Example:

    >>> import numpy as np
    >>> logits = np.random.rand(2, 3, 5).astype("float32")
    >>> targets = np.array([[1, 2, 0], [3, 0, 0]])
    >>> alphas = np.full((2, 3, 4), 0.25, "float32")
    >>> samples = np.eye(4, dtype="float32")[[[0, 1, 2], [3, 0, 1]]]
    >>> layer = HardAttentionReinforce()
    >>> out = layer(logits, targets, alphas, samples, training=True)
    >>> tuple(out.shape), len(layer.losses)
    ((2, 3, 5), 1)
    """

    def __init__(self, lambda_r=1.0, lambda_e=0.01, decay=0.9, pad_id=0,
                 **kwargs):
        super().__init__(**kwargs)
        for name, value in (("lambda_r", lambda_r), ("lambda_e", lambda_e)):
            checks.nonnegative_number(name, value)
        self.lambda_r = lambda_r
        self.lambda_e = lambda_e
        self.decay = decay
        self.pad_id = pad_id
        # float32 whatever the policy: a running mean of log-likelihoods.
        self.baseline = MovingAverageBaseline(decay, name="baseline",
                                              dtype="float32")

    def build(self, logits_shape, targets_shape, alphas_shape, samples_shape):
        self.baseline.build((None,))
        self.built = True

    def call(self, logits, targets, alphas, samples, training=None):
        checks.rank("logits", logits.shape, (3,), "(batch, T, V)")
        checks.rank("targets", targets.shape, (2,), "(batch, T)")
        checks.integer_ids("targets", targets)
        checks.rank("alphas", alphas.shape, (3,), "(batch, T, L)")
        checks.same("targets", targets.shape[1], "logits", logits.shape[1],
                    "length T")
        if tuple(alphas.shape) != tuple(samples.shape):
            checks.fail(
                "samples", "of the shape (batch, T, L) of `alphas`",
                tuple(samples.shape), note="`alphas` and `samples` differ: "
                f"`alphas` has shape {tuple(alphas.shape)}.")
        if not training:
            return logits
        step_mask = ops.cast(ops.not_equal(targets, self.pad_id), "float32")
        logits32 = ops.cast(logits, "float32")
        token_log_p = -keras.losses.sparse_categorical_crossentropy(
            ops.maximum(targets, 0), logits32, from_logits=True)  # (b, T)
        reward = ops.stop_gradient(ops.sum(token_log_p * step_mask, axis=-1))
        alphas = ops.cast(alphas, "float32")
        log_alpha = ops.log(ops.maximum(alphas, 1e-12))
        log_p_s = ops.sum(ops.cast(samples, "float32") * log_alpha, axis=-1)
        entropy = -ops.sum(alphas * log_alpha, axis=-1)
        log_p_s = ops.sum(log_p_s * step_mask, axis=-1)  # (b,)
        entropy = ops.sum(entropy * step_mask, axis=-1)
        # Rows that sampled nothing (expected context, or no steps) have no
        # REINFORCE term and do not move the baseline.
        sampled = ops.sum(ops.cast(samples, "float32") * step_mask[..., None],
                          axis=(1, 2)) > 0
        advantage = ops.stop_gradient(
            reward - self.baseline(reward, training=True, keep=sampled))
        tokens = ops.maximum(ops.sum(step_mask), 1.0)
        objective = self.lambda_r * advantage * log_p_s + self.lambda_e * entropy
        self.add_loss(-ops.sum(objective) / tokens)
        return logits

    def compute_output_spec(self, logits, *args, **kwargs):
        return keras.KerasTensor(logits.shape, dtype=logits.dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"lambda_r": self.lambda_r, "lambda_e": self.lambda_e,
                       "decay": self.decay, "pad_id": self.pad_id})
        return config
