"""Hard monotonic attention (Raffel et al., 2017) and MoChA (Chiu and Raffel, 2018).

Both read the source left to right and never look back: at output step
`i` the attention starts where step `i - 1` stopped, walks right, and at
each position `j` stops with probability `p_ij = sigmoid(e_ij)`. At test
time ("hard" mode) it stops at the first position whose `p_ij >= 0.5`, so
decoding is online and linear in time; in training ("parallel" mode) the
layer uses the expected alignment under that stopping process, which is
differentiable. The functions `monotonic_alignment` and
`chunkwise_weights` are the two modes' equations on their own.
"""

import keras
from keras import ops

from kerattn import checks
from kerattn.layers import attention_utils as utils
from kerattn.layers.bahdanau_attention import BahdanauAttention
from kerattn.layers.base_attention import BaseAttention
from kerattn.layers.luong_attention import LuongAttention

MODES = ("parallel", "hard")
_TINY = 1.1754944e-38   # float32's smallest normal number
ENERGIES = ("bahdanau", "luong")


# === The equations ===

def _exclusive_cumsum(x):
    return ops.cumsum(x, axis=-1) - x


def _first(x):
    """One-hot at the first 1 of a 0/1 float32 `x` on its last axis (zeros
    where there is none)."""
    return x * ops.cast(_exclusive_cumsum(x) < 0.5, "float32")


def monotonic_alignment(p_choose, previous, mode="parallel"):
    """The monotonic alignment `a_i` from the stopping probabilities.

    Raffel et al. (2017), section 2.3. `previous` is `a_{i-1}`; the
    recursion over the source positions `j`

        q_ij = (1 - p_{i,j-1}) q_{i,j-1} + a_{i-1,j},    a_ij = p_ij q_ij

    has the closed form

        a_ij = p_ij sum_{k <= j} a_{i-1,k} prod_{l=k}^{j-1} (1 - p_il).

    "parallel" computes it with the exclusive cumulative sum `L` of
    `log(1 - p)` (the exclusive cumulative product in log space, each factor
    clipped at the dtype's smallest normal number): the product from `k` to
    `j - 1` is `exp(L_j - L_k)`, an exponent that is never positive. No
    division (the paper's `cumprod(1 - p) * cumsum(a / cumprod(1 - p))`
    divides by a product that reaches zero when some `p` is 1, and clipping
    that divisor gives wrong weights after such a position), no overflow,
    and right for `p` of exactly 0 or 1 (a `p` of 1 lets about 1e-38 pass,
    the clip); the cost is a `(Tv, Tv)` matrix per query instead of two
    vectors.

    "hard" is the test-time alignment: one-hot at the first position `j`
    at or after the previous one (`t_{i-1}`, the position where `a_{i-1}`'s
    cumulative mass passes one half: the position of a one-hot `a_{i-1}`)
    with `p_ij >= 0.5`, or all zeros (a zero context) when there is none.

    Args:
        p_choose: `(..., Tv)` probabilities in [0, 1]; zero at positions
            that must not be chosen (padding).
        previous: `(..., Tv)`, the previous alignment `a_{i-1}` (one-hot at
            the first position before the first step).
        mode: "parallel" or "hard".

    Returns:
        `a_i`, `(..., Tv)`, in float32.

    Example:

    >>> import numpy as np
    >>> p = np.array([[0.0, 1.0, 0.3, 1.0]], "float32")
    >>> a0 = np.array([[1.0, 0.0, 0.0, 0.0]], "float32")
    >>> np.round(np.asarray(monotonic_alignment(p, a0)), 3).tolist()
    [[0.0, 1.0, 0.0, 0.0]]
    >>> np.asarray(monotonic_alignment(p, a0, mode="hard")).tolist()
    [[0.0, 1.0, 0.0, 0.0]]
    """
    checks.one_of("mode", mode, MODES)
    p_choose = ops.cast(p_choose, "float32")
    previous = ops.cast(previous, "float32")
    if mode == "hard":
        started = ops.cumsum(previous, axis=-1) > 0.5          # j >= t_{i-1}
        return _first(ops.cast(ops.logical_and(started, p_choose >= 0.5),
                               "float32"))
    log_keep = ops.log(ops.clip(1.0 - p_choose, _TINY, 1.0))
    cum = _exclusive_cumsum(log_keep)                          # L_j
    # exp(L_j - L_k) for k <= j: (..., Tv_j, Tv_k)
    exponent = ops.expand_dims(cum, -1) - ops.expand_dims(cum, -2)
    tv = ops.shape(p_choose)[-1]
    lower = ops.greater_equal(ops.expand_dims(ops.arange(tv), -1),
                              ops.expand_dims(ops.arange(tv), 0))
    keep = ops.where(lower, ops.exp(ops.minimum(exponent, 0.0)), 0.0)
    q = ops.squeeze(ops.matmul(keep, ops.expand_dims(previous, -1)), -1)
    return p_choose * q


def moving_sum(x, back, forward):
    """`sum_{k=j-back}^{j+forward} x_k` along the last axis (zeros outside).

    Chiu and Raffel (2018), eq. 14's `MovingSum`, as `back + forward + 1`
    shifted additions (exact: no difference of cumulative sums).
    """
    total = x
    for s in range(1, back + 1):       # x_{j-s}
        total = total + ops.pad(x, [[0, 0]] * (len(x.shape) - 1) + [[s, 0]])[..., :-s]
    for s in range(1, forward + 1):    # x_{j+s}
        total = total + ops.pad(x, [[0, 0]] * (len(x.shape) - 1) + [[0, s]])[..., s:]
    return total


def chunkwise_weights(alpha, chunk_energy, mask, chunk_size, mode="parallel"):
    """MoChA's weights `beta_i` over the chunks that end at the stops.

    Chiu and Raffel (2018). "hard" (test time, section 2.2): a softmax of
    the chunk energies `u_ij` over the `w = chunk_size` positions ending at
    the stop `t_i` (the one-hot `alpha`),
    `beta_ik = exp(u_ik) / sum_{l=t_i-w+1}^{t_i} exp(u_il)`. "parallel"
    (training, eq. 13-14): the expectation of that softmax under the
    monotonic alignment `alpha` (the expected one),

        beta_ij = sum_{k=j}^{j+w-1} alpha_ik exp(u_ij) / sum_{l=k-w+1}^{k} exp(u_il)
                = exp(u_ij) MovingSum(alpha_i / MovingSum(exp(u_i), w-1, 0), 0, w-1)_j

    computed in log space: each window's denominator is a log-sum-exp of
    the `w` shifted copies of `u`, and every term is `alpha_ik exp(u_ij -
    log sum_l exp(u_il))`, an exponent that is never positive (no
    division, no floor, finite gradients however far apart the energies).

    Args:
        alpha: `(..., Tv)`, the monotonic alignment.
        chunk_energy: `(..., Tv)`, the energies `u`.
        mask: boolean, broadcastable to `(..., Tv)`, or None; True = real.
        chunk_size: int `w >= 1`.
        mode: "parallel" or "hard".

    Returns:
        `beta_i`, `(..., Tv)`, in float32: zero on masked positions.

    Example:

    >>> import numpy as np
    >>> alpha = np.array([[0.0, 0.0, 1.0, 0.0]], "float32")   # stop at 2
    >>> u = np.array([[0.0, 0.0, 0.0, 5.0]], "float32")
    >>> mask = np.array([[True, True, True, True]])
    >>> np.round(np.asarray(chunkwise_weights(alpha, u, mask, 2)), 3).tolist()
    [[0.0, 0.5, 0.5, 0.0]]
    """
    checks.one_of("mode", mode, MODES)
    alpha = ops.cast(alpha, "float32")
    u = ops.cast(chunk_energy, "float32")
    real = (ops.ones_like(u, dtype="bool") if mask is None
            else ops.logical_and(ops.cast(mask, "bool"), ops.ones_like(u, "bool")))
    alpha = ops.where(real, alpha, 0.0)
    if mode == "hard":
        window = moving_sum(alpha, 0, chunk_size - 1) > 0.5    # t_i - w < j <= t_i
        return utils.masked_softmax(u, ops.logical_and(window, real))
    low = utils.large_negative_number("float32")
    u = ops.where(real, u, low)
    pad = [[0, 0]] * (len(u.shape) - 1)
    # log sum_{l=k-w+1}^{k} exp(u_l) for every window end k: (..., Tv)
    ends = [u] + [ops.pad(u, pad + [[s, 0]], constant_values=low)[..., :-s]
                  for s in range(1, chunk_size)]
    log_den = ops.logsumexp(ops.stack(ends, -1), axis=-1)
    beta = ops.zeros_like(u)
    for s in range(chunk_size):   # the window ending at k = j + s
        alpha_k, log_den_k = alpha, log_den
        if s:
            alpha_k = ops.pad(alpha, pad + [[0, s]])[..., s:]
            log_den_k = ops.pad(log_den, pad + [[0, s]])[..., s:]
        beta = beta + alpha_k * ops.exp(ops.minimum(u - log_den_k, 0.0))
    return ops.where(real, beta, 0.0)


# === Hard monotonic attention ===

@keras.saving.register_keras_serializable(package="kerattn")
class HardMonotonicAttention(BaseAttention):
    """Monotonic attention of Raffel et al. (2017), Bahdanau or Luong energy.

    "Online and Linear-Time Attention by Enforcing Monotonic Alignments".
    The energy (section 2.4, eq. 16, and Luong's multiplicative form)

        e_ij = g v^T/||v|| tanh(W s_{i-1} + V h_j + b) + r    energy="bahdanau"
        e_ij = g s_i^T W h_j + r                              energy="luong"

    gives the probability of stopping at `j`, `p_ij = sigmoid(e_ij + N)`,
    with Gaussian noise `N` of standard deviation `noise_std` before the
    sigmoid in training only (it pushes the energies away from 0 so that
    training's expected alignment and the test's hard one agree). The
    alignment `a_i` is `monotonic_alignment(p_i, a_{i-1}, mode)`: the
    expected one in "parallel" mode (training), one-hot at the first `j >=
    t_{i-1}` with `p_ij >= 0.5` in "hard" mode (decoding), or nothing.
    The context is `c_i = sum_j a_ij h_j`; it is zero when the attention
    stops nowhere.

    The Bahdanau energy is `BahdanauAttention(units, normalize=True)`'s
    score (the weight-normalised `v` with Raffel's `g` and `b`); the Luong
    energy is `LuongAttention("general", scale=scale)`'s (its `scale` is the
    scalar `g`). They are the `energy` sublayer; `r` (`score_bias`) is a
    learned scalar initialised negative, as the paper advises, so that
    training starts from stopping rarely at any one position.

    Its state in the step protocol (`BaseAttention`) is `{"alignment":
    a_{i-1}}`: one-hot at the first real source position before the first
    step, and in float32 whatever the dtype policy, so that the full pass's
    expected alignment is not rounded at every step (`step()` goes through
    the cell's `__call__`, which casts its float inputs to the compute
    dtype: the hard mode's one-hot is exact there). Its `step` differs from
    the base class's by what it passes (`mode`, the noise the decoder drew
    with `draw_noise`) and its next state (the alignment, not MoChA's
    weights); the weights themselves come from the `_compute_attention`
    hook, under the base class's masks. It runs the "parallel" mode in a
    decoder's full pass and the "hard" mode in `step()` unless told
    otherwise (`attention_mode=`; `mode_for`). Called alone with
    several queries `(batch, Tq, ...)`, each query reads its own row of
    `alignment_history` (the same `a_0` for all when None): the alignment is
    monotonic from one decoder step to the next, which is the decoder's
    loop. Once a step stops nowhere (a zero context), so do the later
    steps: the attention has passed the end of the source.

    Not Luong et al.'s local-m (`LocalAttention(mode="monotonic")`, a
    window at `p_t = t`): that attention is soft inside its window and
    its position is fixed by the step; this one chooses where to stop.
    Its chunkwise extension is `MonotonicChunkwiseAttention` (MoChA).

    Args:
        units: int, the hidden size of the Bahdanau energy; None (the
            default) for the Luong energy.
        energy: "bahdanau" or "luong".
        scale: bool, the Luong energy's scalar `g` (TensorFlow Addons'
            `scale`).
        normalize: bool, the Bahdanau energy's weight normalisation, its
            `g` and `b` (TensorFlow Addons' `normalize`; the paper's, True).
            `with_tfa_defaults` builds the layer at tfa's defaults.
        score_bias_init: float, the initial `r` (-4).
        noise_std: float >= 0, the pre-sigmoid noise's standard deviation in
            training (1, as in the paper; 0 turns it off).
        seed: int or None, the noise's seed.
        kernel_initializer, kernel_regularizer: those of the energy.
        **kwargs: base layer keyword arguments.

    Call arguments:
        query, value, key, query_mask, value_mask, attention_mask,
        projected_key, alignment_history, return_attention_scores, training:
            as in `BaseAttention` (`alignment_history` is `a_{i-1}`).
        mode: "parallel" (the default) or "hard".
        score_noise: optional standard normal noise of the scores' shape,
            `(batch, Tq, Tv)` (`(batch, Tv)` for one step), used instead of
            drawing it (a decoder's loop draws it before the loop); used in
            training in "parallel" mode only.
        return_alignment: bool; also return `{"alignment": a_i}` in
            float32, the history the next step reads (the weights themselves
            here; MoChA's weights are not its alignment).

    Returns:
        `output` `(batch, Tq, value_dim)`, with `return_attention_scores=True`
        also the weights `a_i` `(batch, Tq, Tv)`, and with
        `return_alignment=True` then the dict (one decoder step drops the
        `Tq` axis).

    Example:

    >>> import numpy as np
    >>> h = np.random.rand(2, 7, 16).astype("float32")        # h_j
    >>> s_prev = np.random.rand(2, 32).astype("float32")      # s_{i-1}
    >>> attention = HardMonotonicAttention(8)
    >>> context, a = attention(s_prev, h, return_attention_scores=True)
    >>> context, a = attention(s_prev, h, alignment_history=a, mode="hard",
    ...                        return_attention_scores=True)
    >>> tuple(context.shape), tuple(a.shape)
    ((2, 16), (2, 7))
    """

    alignment_state = "previous"
    reads_prefix = True          # "hard" mode stops at the first j >= t_{i-1}

    @classmethod
    def with_tfa_defaults(cls, units=None, energy="bahdanau", **kwargs):
        """The layer at TensorFlow Addons' defaults
        (`BahdanauMonotonicAttention(normalize=False, sigmoid_noise=0.,
        score_bias_init=0.)`, `LuongMonotonicAttention(scale=False, ...)`):
        no weight normalisation, no `g`, `r` starting at 0, no noise.
        `kwargs` set any other argument (or override these).

        >>> HardMonotonicAttention.with_tfa_defaults(8).get_config()["noise_std"]
        0.0
        """
        defaults = {"scale": False, "score_bias_init": 0.0, "noise_std": 0.0}
        if energy == "bahdanau":
            defaults["normalize"] = False
        return cls(units, energy=energy, **{**defaults, **kwargs})
    _history_dtype = "float32"   # the state, whatever the weights' dtype
    _causal_refused = "its weights are a monotonic alignment"

    def __init__(self, units=None, energy="bahdanau", scale=True,
                 score_bias_init=-4.0, noise_std=1.0, seed=None,
                 kernel_initializer="glorot_uniform", kernel_regularizer=None,
                 normalize=True, **kwargs):
        checks.require(not kwargs.pop("dropout", False), "dropout",
                       f"unset for {type(self).__name__} (its weights "
                       "are a monotonic alignment)", True)
        super().__init__(**kwargs)
        checks.one_of("energy", energy, ENERGIES)
        if energy == "bahdanau":
            checks.positive_int("units", units)
        else:
            checks.require(units is None, "units",
                           "None with energy='luong' (its size is the query's)",
                           units)
        checks.boolean("scale", scale)
        checks.boolean("normalize", normalize)
        checks.require(normalize or energy == "bahdanau", "normalize",
                       "True with energy='luong' (it is the Bahdanau "
                       "energy's weight normalisation)", normalize)
        checks.number("score_bias_init", score_bias_init)
        checks.number("noise_std", noise_std, low=0.0)
        self.units = units
        self.energy_form = energy
        self.scale = scale
        self.normalize = normalize
        self.score_bias_init = float(score_bias_init)
        self.noise_std = float(noise_std)
        self.seed = seed
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.energy = self._energy_layer("energy", monotonic=True)
        self.seed_generator = keras.random.SeedGenerator(seed, name="noise")

    def _energy_layer(self, name, monotonic):
        common = dict(kernel_initializer=self.kernel_initializer,
                      kernel_regularizer=self.kernel_regularizer,
                      dtype=self.dtype_policy, name=name)
        if self.energy_form == "bahdanau":
            return BahdanauAttention(self.units, normalize=monotonic and self.normalize,
                                     **common)
        return LuongAttention("general", scale=self.scale and monotonic,
                              **common)

    # --- the step protocol (see `BaseAttention`) ------------------------------

    def mode_for(self, mode, *, decoding):
        """`mode` (the decoder's `attention_mode`) if given, else the full
        pass's "parallel" or, `decoding` one step at a time, "hard"."""
        if mode is None:
            return "hard" if decoding else MODES[0]
        checks.require(mode in MODES, "attention_mode",
                       f"one of {MODES} for {type(self).__name__}", mode)
        return mode

    def draw_noise(self, cache, steps, *, training=None, mode=None):
        """Training's pre-sigmoid noise in "parallel" mode, one standard
        normal per step and source position: `{"score": (batch, steps, S)}`
        (`{}` in "hard" mode, at inference, or with `noise_std=0`)."""
        if not training or self.noise_std <= 0 or mode not in (None, MODES[0]):
            return {}
        shape = (ops.shape(cache["keys"])[0], steps, ops.shape(cache["keys"])[1])
        return {"score": keras.random.normal(shape, seed=self.seed_generator,
                                             dtype="float32")}

    def step(self, query, cache, state, *, position=None, training=None,
             noise=None, mode=None):
        """`a_i` from `a_{i-1}` (the state `{"alignment"}`, float32): the
        context, the weights (`a_i`, MoChA's `beta_i`) and the next state."""
        context, weights, extras = self._attend(
            query, cache["values"], projected_key=cache["keys"],
            value_mask=cache["mask"], alignment_history=state["alignment"],
            training=training, mode=self.mode_for(mode, decoding=True),
            score_noise=(noise or {}).get("score"))
        return context, weights, {"alignment": extras["alignment"]}

    def initial_alignment(self, value_mask):
        """`a_0`: one-hot at each row's first real source position
        (float32)."""
        return _first(ops.cast(ops.cast(value_mask, "float32") > 0.5, "float32"))

    def build(self, query_shape, value_shape, key_shape=None):
        self._record_dims(query_shape, value_shape, key_shape)
        self.energy.build(query_shape, value_shape, key_shape)
        self.score_bias = self.add_weight(
            name="score_bias", shape=(),
            initializer=keras.initializers.Constant(self.score_bias_init),
            dtype=self.variable_dtype)
        self.built = True

    def project_key(self, key):
        """The energy's key projection (`V h_j` or `W h_j`), once per source."""
        self._check_key(key)
        return self.energy.project_key(key)

    def _energies(self, query, key):
        """The monotonic energies `e` `(batch, Tq, Tv)` and, for MoChA, the
        chunk energies `u` (None here), in float32."""
        e = ops.cast(self.energy._calculate_scores(query, key), "float32")
        return e + ops.cast(self.score_bias, "float32"), None

    def _probabilities(self, e, mode, training, score_noise):
        """`p = sigmoid(e + N)` (the noise in training only), or in "hard"
        mode its decision `e >= 0`, in float32."""
        if mode == "hard":
            return ops.cast(e >= 0.0, "float32")
        if training and self.noise_std > 0:
            if score_noise is None:
                score_noise = keras.random.normal(
                    ops.shape(e), seed=self.seed_generator)
            e = e + self.noise_std * ops.cast(score_noise, "float32")
        return ops.sigmoid(e)

    def _weights(self, e, u, history, mask, mode, training, score_noise):
        """`(weights, alignment)` from the energies: here both are `a_i`."""
        p = self._probabilities(e, mode, training, score_noise)
        if mask is not None:
            p = ops.where(mask, p, 0.0)
        alignment = monotonic_alignment(p, history, mode)
        return alignment, alignment

    def _compute_attention(self, query, key, value, mask, training,
                           return_attention_scores, alignment_history=None,
                           mode=None, score_noise=None):
        """The hook `BaseAttention._attend` runs: `(output, weights,
        {"alignment": a_i})`, the alignment in float32."""
        shape = (ops.shape(query)[0], ops.shape(query)[1], ops.shape(value)[1])
        if mask is not None:   # each query its own row: (batch, Tq, Tv)
            mask = ops.logical_and(mask, ops.ones(shape, "bool"))
        if score_noise is not None and len(score_noise.shape) == 2:
            score_noise = ops.expand_dims(score_noise, 1)   # one step
        e, u = self._energies(query, key)
        weights, alignment = self._weights(e, u, alignment_history, mask,
                                           mode, training, score_noise)
        weights = ops.cast(weights, self.compute_dtype)
        output = ops.matmul(weights, ops.cast(value, self.compute_dtype))
        return output, weights, {"alignment": alignment}

    def call(self, query, value, key=None, query_mask=None, value_mask=None,
             attention_mask=None, projected_key=None, alignment_history=None,
             return_attention_scores=False, training=None, mode=None,
             score_noise=None, return_alignment=False):
        mode = MODES[0] if mode is None else mode
        checks.one_of("mode", mode, MODES)
        output, weights, extras = self._attend(
            query, value, key=key, query_mask=query_mask,
            value_mask=value_mask, attention_mask=attention_mask,
            projected_key=projected_key, alignment_history=alignment_history,
            training=training, mode=mode, score_noise=score_noise)
        result = (output,)
        if return_attention_scores:
            result += (weights,)
        if return_alignment:
            result += (extras,)
        return result[0] if len(result) == 1 else result

    def compute_output_spec(self, query, value, key=None, query_mask=None,
                            value_mask=None, attention_mask=None,
                            projected_key=None, alignment_history=None,
                            return_attention_scores=False, training=None,
                            mode=None, score_noise=None,
                            return_alignment=False):
        spec = super().compute_output_spec(
            query, value, key, return_attention_scores=True)
        result = (spec[0],)
        if return_attention_scores:
            result += (spec[1],)
        if return_alignment:
            result += ({"alignment": keras.KerasTensor(
                spec[1].shape, dtype="float32")},)
        return result[0] if len(result) == 1 else result

    def get_config(self):
        config = super().get_config()
        for name in ("dropout", "causal"):   # configs written before held none
            config.pop(name, None)
        config.update({
            "units": self.units,
            "energy": self.energy_form,
            "scale": self.scale,
            **({} if self.normalize else {"normalize": False}),   # older files lack it
            "score_bias_init": self.score_bias_init,
            "noise_std": self.noise_std,
            "seed": self.seed,
            "kernel_initializer": keras.initializers.serialize(
                self.kernel_initializer),
            "kernel_regularizer": keras.regularizers.serialize(
                self.kernel_regularizer),
        })
        return config


# === Stepwise monotonic attention ===

def stepwise_alignment(p_stay, previous, mask=None):
    """The stepwise monotonic alignment of He et al. (2019), eq. 8:

        a_ij = a_{i-1,j} p_ij + a_{i-1,j-1} (1 - p_{i,j-1})

    each step stays where it was with probability `p_ij` or moves one
    position on. With `mask`, the last real position keeps all its mass
    (its `p` is taken as 1: the paper says nothing of the mass that would
    move past the end, which here never leaves the source), and padding
    gets none. A 0/1 `p_stay` and a one-hot `previous` (the "hard" mode)
    give a one-hot `a_i`.

    Args:
        p_stay: `(..., Tv)` probabilities of staying.
        previous: `(..., Tv)`, `a_{i-1}`.
        mask: optional boolean, broadcastable to `(..., Tv)`; True = real.

    Returns:
        `a_i` `(..., Tv)`, float32.

    Example:

    >>> import numpy as np
    >>> a = stepwise_alignment(np.array([[0.25, 0.5, 0.0]], "float32"),
    ...                        np.array([[1.0, 0.0, 0.0]], "float32"))
    >>> keras.ops.convert_to_numpy(a).round(2).tolist()
    [[0.25, 0.75, 0.0]]
    """
    p = ops.cast(p_stay, "float32")
    previous = ops.cast(previous, "float32")
    if mask is not None:
        mask = ops.logical_and(ops.cast(mask, "bool"), ops.ones_like(p, "bool"))
        width = len(p.shape)
        after = ops.pad(mask[..., 1:], [[0, 0]] * (width - 1) + [[0, 1]],
                        constant_values=False)
        last = ops.logical_and(mask, ops.logical_not(after))
        p = ops.where(last, 1.0, p)
        previous = ops.where(mask, previous, 0.0)
    moving = previous * (1.0 - p)
    moved = ops.pad(moving[..., :-1], [[0, 0]] * (len(p.shape) - 1) + [[1, 0]])
    return previous * p + moved


@keras.saving.register_keras_serializable(package="kerattn")
class StepwiseMonotonicAttention(HardMonotonicAttention):
    """Stepwise monotonic attention of He, Deng and He (2019).

    "Robust Sequence-to-Sequence Acoustic Modeling with Stepwise Monotonic
    Attention for Neural TTS", section 3: Raffel et al.'s energy and
    `p_ij = sigmoid(e_ij + N)` (`HardMonotonicAttention`'s, the noise in
    training only), but each step either stays at its position or moves
    exactly one on, so it can neither skip a position nor stop nowhere
    (`stepwise_alignment`): the expected alignment in training ("parallel"
    mode), and in "hard" mode (decoding) stay where `p_ij >= 0.5`, else
    move one position. `a_0` is one-hot at the first position; the last
    real position keeps its mass. The context is `c_i = sum_j a_ij h_j`.

    It differs from `HardMonotonicAttention` by one override (`_weights`)
    and its initial `r`: 0 by default, staying and moving equally likely
    at first (with Raffel's -4 every step would move at first, and an
    output longer than its source would run to the end).

    Args:
        units, energy, scale, noise_std, seed: as in `HardMonotonicAttention`.
        kernel_initializer, kernel_regularizer: likewise.
        score_bias_init: float, the initial `r` (0).
        **kwargs: base layer keyword arguments.

    Call arguments, Returns: as in `HardMonotonicAttention`.

    Example:

    >>> import numpy as np
    >>> h = np.random.rand(2, 7, 16).astype("float32")
    >>> s_prev = np.random.rand(2, 32).astype("float32")
    >>> attention = StepwiseMonotonicAttention(8)
    >>> _, a = attention(s_prev, h, return_attention_scores=True)
    >>> _, a = attention(s_prev, h, alignment_history=a, mode="hard",
    ...                  return_attention_scores=True)
    >>> float(keras.ops.min(keras.ops.sum(a, -1)))   # never nowhere
    1.0
    """

    def __init__(self, units=None, energy="bahdanau", score_bias_init=0.0,
                 **kwargs):
        super().__init__(units, energy=energy, score_bias_init=score_bias_init,
                         **kwargs)

    def _weights(self, e, u, history, mask, mode, training, score_noise):
        p = self._probabilities(e, mode, training, score_noise)
        alignment = stepwise_alignment(p, history, mask)
        return alignment, alignment


# === MoChA ===

@keras.saving.register_keras_serializable(package="kerattn")
class MonotonicChunkwiseAttention(HardMonotonicAttention):
    """MoChA: monotonic chunkwise attention of Chiu and Raffel (2018).

    "Monotonic Chunkwise Attention". The monotonic attention of
    `HardMonotonicAttention` chooses where to stop, `t_i`; a soft attention
    then reads the chunk of `w = chunk_size` positions that ends there,
    with its own chunk energy `u_ij` (the same form as the monotonic
    energy, with its own weights and without `g`, `b` and `r`: Bahdanau's
    `v^T tanh(W s_{i-1} + V h_j)` or Luong's `s_i^T W h_j`):

        beta_ik = exp(u_ik) / sum_{l=t_i-w+1}^{t_i} exp(u_il),  k in [t_i-w+1, t_i]
        c_i = sum_k beta_ik h_k

    In training ("parallel" mode) the weights are its expectation under the
    expected monotonic alignment `alpha_i` (eq. 13-14, with moving sums,
    `chunkwise_weights`). `w = 1` is hard monotonic attention; the
    returned weights are `beta`, and the alignment the decoder carries is
    the monotonic `alpha` (`return_alignment=True` gives it).

    Not Luong et al.'s local-m (`LocalAttention(mode="monotonic")`), whose
    window is centred at `p_t = t`; here the window ends where the
    monotonic attention stopped.

    Args:
        units, energy, scale, score_bias_init, noise_std, seed: as in
            `HardMonotonicAttention` (they apply to both energies; `scale`
            to the monotonic one).
        kernel_initializer, kernel_regularizer: likewise.
        chunk_size: int `w >= 1`, the chunk's length (2 to 8 in the paper).
        **kwargs: base layer keyword arguments.

    Call arguments, Returns: as in `HardMonotonicAttention`; the weights are
    `beta` `(batch, Tq, Tv)` and `{"alignment": alpha_i}` comes with
    `return_alignment=True`.

    Example:

    >>> import numpy as np
    >>> h = np.random.rand(2, 7, 16).astype("float32")
    >>> s_prev = np.random.rand(2, 32).astype("float32")
    >>> attention = MonotonicChunkwiseAttention(8, chunk_size=3)
    >>> context, beta, extra = attention(
    ...     s_prev, h, return_attention_scores=True, return_alignment=True)
    >>> tuple(beta.shape), tuple(extra["alignment"].shape)
    ((2, 7), (2, 7))
    """

    def __init__(self, units=None, chunk_size=2, energy="bahdanau", **kwargs):
        super().__init__(units, energy=energy, **kwargs)
        checks.positive_int("chunk_size", chunk_size)
        self.chunk_size = chunk_size
        self.chunk_energy = self._energy_layer("chunk_energy", monotonic=False)

    def build(self, query_shape, value_shape, key_shape=None):
        super().build(query_shape, value_shape, key_shape)
        self.chunk_energy.build(query_shape, value_shape, key_shape)
        self._split = self.units or int(query_shape[-1])
        self.built = True

    def project_key(self, key):
        """Both energies' key projections, concatenated on the last axis."""
        self._check_key(key)
        return ops.concatenate([self.energy.project_key(key),
                                self.chunk_energy.project_key(key)], -1)

    def _energies(self, query, key):
        k_monotonic, k_chunk = key[..., :self._split], key[..., self._split:]
        e, _ = super()._energies(query, k_monotonic)
        u = self.chunk_energy._calculate_scores(query, k_chunk)
        return e, ops.cast(u, "float32")

    def _weights(self, e, u, history, mask, mode, training, score_noise):
        alpha, _ = super()._weights(e, None, history, mask, mode, training,
                                    score_noise)
        beta = chunkwise_weights(alpha, u, mask, self.chunk_size, mode)
        return beta, alpha

    def get_config(self):
        config = super().get_config()
        config["chunk_size"] = self.chunk_size
        return config
