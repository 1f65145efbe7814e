"""Masking, softmax and projection helpers shared by the attention layers.

Everything here is written with `keras.ops` only, so it runs unchanged on
TensorFlow, JAX and PyTorch.
"""

import math

import keras
from keras import ops

from kerattn import checks, keras_fixes


def project(x, kernel):
    """`x @ kernel` for `x` of any rank >= 2 and a 2-D `kernel`.

    One 2-D matmul over the flattened leading axes. Not `ops.matmul` of
    the rank-3 tensor: on TensorFlow that is a `tf.tensordot`, whose
    gradient inside an RNN's while loop has a run-time transpose
    permutation that XLA (`jit_compile=True`) rejects. Not an einsum
    `"...i,ij->...j"` either: TensorFlow's einsum gradient with an ellipsis
    made `bahdanau_nmt`'s training step 6x slower under XLA
    (`benchmarks/bahdanau.py`, figure 3).
    """
    if len(x.shape) == 2:
        return ops.matmul(x, kernel)
    shape = ops.shape(x)
    flat = ops.matmul(ops.reshape(x, (-1, shape[-1])), kernel)
    return ops.reshape(flat, tuple(shape[:-1]) + (kernel.shape[-1],))


def large_negative_number(dtype):
    """A masking constant that is finite and safe in `dtype`.

    float16 saturates at 65504, so `-1e9` would become `-inf` and a fully
    masked row would turn into NaN; bfloat16 and float32 hold `-1e9` fine.
    """
    if keras.backend.standardize_dtype(dtype) == "float16":
        return -3e4
    return -1e9


def mask_as(mask, dtype="bool"):
    """Keras' mask rule, the one place kerattn reads a mask: nonzero attends.

    A float mask of 0.5 attends (as in `keras.layers.Attention`); only 0
    (or False) is masked. Every layer turns its masks into booleans here
    first, then into 0/1 in `dtype` when it multiplies or counts with them.

    Args:
        mask: a mask of any dtype, or None.
        dtype: "bool", or the dtype of the 0/1 result.

    Returns:
        The mask as booleans (or 0/1 in `dtype`); None for None.

    Example:

    >>> keras.ops.convert_to_numpy(mask_as(np.array([[0.0, 0.5, 1.0]]), "float32"))
    array([[0., 1., 1.]], dtype=float32)
    """
    if mask is None:
        return None
    mask = ops.cast(mask, "bool")
    return mask if dtype == "bool" else ops.cast(mask, dtype)


def masked_softmax(scores, mask=None, axis=-1):
    """Softmax over `axis` that gives masked positions exactly zero weight.

    Args:
        scores: float tensor.
        mask: boolean tensor broadcastable to `scores`, True = attend.
        axis: the axis to normalise over.

    Returns:
        Weights of the shape and dtype of `scores`. A row whose positions are
        all masked gets all-zero weights (never NaN).
    """
    if mask is None:
        return ops.softmax(scores, axis=axis)
    mask = ops.cast(mask, "bool")
    scores = ops.where(
        mask,
        scores,
        ops.cast(large_negative_number(scores.dtype), scores.dtype),
    )
    weights = ops.softmax(scores, axis=axis)
    return ops.where(mask, weights, ops.zeros_like(weights))


def masked_hardmax(scores, mask=None, axis=-1):
    """One-hot at the largest score of each row (the first of equal ones),
    masked positions never chosen; a fully masked row gets zeros. The
    weights of TensorFlow Addons' `hardmax` (`probability_fn=hardmax`); no
    gradient reaches the scores through them."""
    if mask is not None:
        mask = ops.cast(mask, "bool")
        scores = ops.where(mask, scores, ops.cast(
            large_negative_number(scores.dtype), scores.dtype))
    hot = ops.one_hot(ops.argmax(scores, axis=axis), ops.shape(scores)[axis],
                      axis=axis, dtype=scores.dtype)
    if mask is None:
        return hot
    return ops.where(mask, hot, ops.zeros_like(hot))


def masked_sparsemax(scores, mask=None):
    """Sparsemax over the last axis (Martins and Astudillo, 2016, eq. 2 and
    Algorithm 1): the Euclidean projection of the scores onto the simplex,

        sparsemax(z)_j = max(z_j - tau(z), 0),
        tau(z) = (sum_{j <= k(z)} z_(j) - 1) / k(z),
        k(z) = max{k : 1 + k z_(k) > sum_{j <= k} z_(j)}

    with `z_(1) >= z_(2) >= ...` the sorted scores: weights that sum to 1
    and are exactly 0 below the threshold. Computed in float32. A masked
    position is scored 2 below the row's lowest real score, which the
    threshold (`tau >= max z - 1`) always leaves at 0 (no infinity enters
    the sums); a fully masked row gets zeros.
    """
    dtype = scores.dtype
    z = ops.cast(scores, "float32")
    if mask is not None:
        mask = ops.broadcast_to(ops.cast(mask, "bool"), ops.shape(z))
        lowest = ops.min(ops.where(mask, z, ops.full_like(z, 3.0e38)), axis=-1,
                         keepdims=True)
        z = ops.where(mask, z, lowest - 2.0)
        z = ops.where(ops.any(mask, axis=-1, keepdims=True), z, ops.zeros_like(z))
    ordered = ops.flip(ops.sort(z, axis=-1), axis=-1)         # descending
    k = ops.cast(ops.arange(1, ops.shape(z)[-1] + 1), "float32")
    running = ops.cumsum(ordered, axis=-1)
    support = ops.cast(1.0 + k * ordered > running, "float32")
    size = ops.sum(support, axis=-1, keepdims=True)           # k(z) >= 1
    total = ops.sum(support * ordered, axis=-1, keepdims=True)
    tau = (total - 1.0) / size
    weights = ops.maximum(z - tau, 0.0)
    if mask is not None:
        weights = ops.where(mask, weights, ops.zeros_like(weights))
    return ops.cast(weights, dtype)


def normalize(scores, mask, probability_fn="softmax"):
    """The weights of `scores` by `probability_fn`: "softmax"
    (`masked_softmax`), "hardmax" or "sparsemax"."""
    if probability_fn == "hardmax":
        return masked_hardmax(scores, mask)
    if probability_fn == "sparsemax":
        return masked_sparsemax(scores, mask)
    return masked_softmax(scores, mask)


PROBABILITY_FNS = ("softmax", "hardmax", "sparsemax")


def causal_mask(query_length, value_length):
    """A boolean `(query_length, value_length)` lower-triangular mask.

    Aligned at the end: query `i` of `Tq` sees keys `j <= i + (Tv - Tq)`.
    For `Tq == Tv` this is the usual `j <= i`; for one decoder step
    (`Tq == 1`) the step sees every key, which is what incremental decoding
    with a key/value cache needs.
    """
    rows = ops.expand_dims(ops.arange(query_length), -1)
    cols = ops.expand_dims(ops.arange(value_length), 0)
    return ops.less_equal(cols, rows + (value_length - query_length))


def wait_reads(position, wait_k, wait_rate=1.0):
    """How many memory positions output step `position` (from 0) may read
    under a wait-k schedule: `g(i) = wait_k + floor(wait_rate * i)`.

    Ma et al. (2019, STACL): the wait-k policy writes output `t`
    (from 1) after `g(t) = k + t - 1` source words, `k` behind, and reads
    one more word for each word it writes (`wait_rate=1`). Where outputs
    are shorter than inputs (phonemes for letters: 1.18 letters a phoneme
    in CMUdict), a rate above 1 keeps the window level with the input
    instead of falling behind it (STACL's "catch-up" addresses the same
    length ratio). A step never reads past the memory's end (its mask), so
    `min(g(i), |x|)` is implicit.

    Computed in float32 then floored, the same in a decoder's loop and in
    a streaming decoder's schedule (`AttentionRNN.reads`, which
    `kerattn.decoding.StreamingDecoder` reads), which must agree on every
    step.

    Args:
        position: int tensor or array of steps (any shape).
        wait_k: int >= 1, the positions read before the first output.
        wait_rate: float > 0, the positions read per output written.

    Returns:
        int32 of `position`'s shape.

    Example:

    >>> [int(n) for n in wait_reads(ops.arange(7), 2, 1.2)]
    [2, 3, 4, 5, 6, 8, 9]
    """
    steps = ops.cast(position, "float32") * ops.cast(wait_rate, "float32")
    return ops.cast(ops.floor(steps), "int32") + wait_k


def merge_masks(
    query_mask=None,
    value_mask=None,
    attention_mask=None,
    causal=False,
    query_length=None,
    value_length=None,
):
    """AND together the masks that apply to `(batch, Tq, Tv)` scores.

    Returns a boolean tensor broadcastable to `(batch, Tq, Tv)`, or None when
    no mask applies.
    """
    mask = None

    def _and(a, b):
        return b if a is None else ops.logical_and(a, b)

    if query_mask is not None:
        mask = _and(mask, ops.expand_dims(ops.cast(query_mask, "bool"), -1))
    if value_mask is not None:
        mask = _and(mask, ops.expand_dims(ops.cast(value_mask, "bool"), -2))
    if attention_mask is not None:
        mask = _and(mask, ops.cast(attention_mask, "bool"))
    if causal:
        mask = _and(
            mask, ops.expand_dims(causal_mask(query_length, value_length), 0)
        )
    return mask


def dot_product_attention(
    query,
    key,
    value,
    mask=None,
    scale=None,
    dropout_layer=None,
    training=None,
    return_attention_scores=False,
):
    """Multi-head scaled dot-product attention, fused when it can be.

    `softmax(Q K^T * scale) V` (Vaswani et al., 2017, eq. 1) over heads.

    Args:
        query: `(batch, Tq, heads, dk)`.
        key: `(batch, Tv, heads, dk)`.
        value: `(batch, Tv, heads, dv)`.
        mask: boolean, broadcastable to `(batch, Tq, Tv)`; True = attend.
        scale: the logit scale; `1 / sqrt(dk)` when None.
        dropout_layer: a `keras.layers.Dropout` applied to the weights.
        training: forwarded to the dropout layer.
        return_attention_scores: also return the weights. Forces the
            explicit path, since the fused kernel does not expose them.

    Returns:
        `output` of shape `(batch, Tq, heads, dv)`, and with
        `return_attention_scores` the weights `(batch, heads, Tq, Tv)`.
        Query rows with no attendable key give zero output and zero weights.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    row_valid = None
    if mask is not None:
        mask = ops.expand_dims(ops.cast(mask, "bool"), 1)  # (B, 1, Tq, Tv)
        row_valid = ops.any(mask, axis=-1, keepdims=True)  # (B, 1, Tq, 1)
        # Rows with nothing to attend to attend everywhere, then are zeroed:
        # no NaN in the forward or the backward pass, on any kernel.
        mask = ops.logical_or(mask, ops.logical_not(row_valid))

    use_dropout = (
        dropout_layer is not None and dropout_layer.rate > 0 and training
    )
    fused = (
        not return_attention_scores
        and not use_dropout
        and query.shape[-1] == value.shape[-1]
        and _fused_supports(query.dtype)
    )
    weights = None
    if fused:
        output = ops.dot_product_attention(
            query, key, value, mask=mask, scale=scale,
            flash_attention=keras_fixes.flash_attention_flag(),
        )
    else:
        scores = ops.einsum("bqhd,bkhd->bhqk", query, key)
        scores = scores * ops.cast(scale, scores.dtype)
        weights = masked_softmax(scores, mask)
        dropped = (
            dropout_layer(weights, training=training)
            if use_dropout
            else weights
        )
        output = ops.einsum("bhqk,bkhd->bqhd", dropped, value)

    if row_valid is not None:
        # (B, 1, Tq, 1) -> (B, Tq, 1, 1)
        valid_q = ops.transpose(row_valid, (0, 2, 1, 3))
        output = ops.where(valid_q, output, ops.zeros_like(output))
        if weights is not None:
            weights = ops.where(row_valid, weights, ops.zeros_like(weights))
    if return_attention_scores:
        return output, weights
    return output


_FUSED_F16_ON_JAX_CPU = None


def _fused_supports(dtype):
    """False where `ops.dot_product_attention` fails for `dtype`.

    JAX's kernel asks XLA:CPU for a float16 x float16 -> float32 dot, which
    it does not implement ("precision 'F16_F16_F32' is not supported by
    dot_general on CPU"): float16 on JAX with only CPU devices takes the
    explicit path, as `mixed_float16` training of `transformer_nmt` does.
    """
    global _FUSED_F16_ON_JAX_CPU
    if keras.backend.standardize_dtype(dtype) != "float16":
        return True
    if keras.backend.backend() != "jax":
        return True
    if _FUSED_F16_ON_JAX_CPU is None:
        devices = keras.distribution.list_devices()
        _FUSED_F16_ON_JAX_CPU = not all(
            d.lower().startswith("cpu") for d in devices)
    return _FUSED_F16_ON_JAX_CPU


def prepare_query(query, value, query_mask=None, value_mask=None,
                  attention_mask=None):
    """Check the masks against the inputs; give a one-step query a time axis.

    A rank-2 query `(batch, dim)` is one decoder step: it becomes
    `(batch, 1, dim)`, its `(batch,)` mask `(batch, 1)` and a `(batch, Tv)`
    attention mask `(batch, 1, Tv)`.

    Returns:
        `(query, query_mask, attention_mask, single_step)`.
    """
    single_step = len(query.shape) == 2
    checks.nonempty("value", value)
    if not single_step:
        checks.nonempty("query", query)
    batch = checks.static_dim(query, 0)
    if single_step:
        checks.mask("query_mask", query_mask, (batch,))
        query = ops.expand_dims(query, 1)
        if query_mask is not None:
            query_mask = ops.expand_dims(query_mask, 1)
        if attention_mask is not None and len(attention_mask.shape) == 2:
            attention_mask = ops.expand_dims(attention_mask, 1)
    tq, tv = checks.static_dim(query, 1), checks.static_dim(value, 1)
    checks.mask("query_mask", query_mask, (batch, tq))
    checks.mask("value_mask", value_mask, (batch, tv))
    checks.mask("attention_mask", attention_mask, (batch, tq, tv))
    return query, query_mask, attention_mask, single_step


def gather_positions(x, positions):
    """Rows of `x` at per-query positions, without a `(Tq, Tv)` matrix.

    Args:
        x: `(batch, T, ...)`.
        positions: int `(batch, Tq, W)` in `[0, T)` (clip before calling).

    Returns:
        `(batch, Tq, W, ...)`: `x[b, positions[b, q, w]]`. Time and memory
        are linear in `Tq * W`.
    """
    shape = ops.shape(x)
    batch, length = shape[0], shape[1]
    offsets = ops.reshape(ops.arange(batch) * length, (-1, 1, 1))
    flat = ops.reshape(x, (-1,) + tuple(x.shape[2:]))
    return ops.take(flat, positions + offsets, axis=0)


def scatter_positions(weights, positions, length):
    """Window weights `(..., Tq, W)` back to a dense `(..., Tq, length)`.

    Only for `return_attention_scores`: this is the one place a windowed
    layer builds a `(Tq, Tv)` array.
    """
    one_hot = ops.one_hot(positions, length, dtype=weights.dtype)
    return ops.sum(ops.expand_dims(weights, -1) * one_hot, axis=-2)


def alignment_features(history, projection, kernel=None):
    """`U f_j` for every source position, from an alignment history.

    Chorowski et al. (2015), eq. 8-9: `f = F * a` is a 1-D convolution of
    the history `a` with `k` filters of odd width `r` ("same" padding, as
    a cross-correlation: `f_j = sum_r F_r a_{j + r - (w - 1) / 2}`, zeros
    outside `[0, Tv)`), and `U` maps its `k` features into the score's
    hidden layer. Coverage's `w_c c_j` (See et al., 2017, eq. 11) is the
    width-1, one-filter case: `kernel=None` and `projection = w_c` as a
    `(1, units)` row.

    A history of several channels (Tacotron 2's previous and cumulative
    weights) is convolved as one multi-channel input, `f_j = sum_c sum_r
    F_{r,c} a^c_{j + r - (w - 1) / 2}`.

    Args:
        history: `(batch, Tq, Tv)`, or `(batch, Tq, Tv, C)` for `C`
            channels; zero on padded positions.
        projection: `U`, `(k, units)` (`(1, units)` without `kernel`).
        kernel: `F`, `(r, C, k)` (`C = 1` for a history without a channel
            axis), or None (the history itself is the one feature).

    Returns:
        `(batch, Tq, Tv, units)`.
    """
    features = (history if len(history.shape) == 4
                else ops.expand_dims(history, -1))         # (b, Tq, Tv, C)
    if kernel is not None:
        shape = ops.shape(features)
        flat = ops.reshape(features, (-1, shape[2], shape[3]))  # (b Tq, Tv, C)
        flat = ops.conv(flat, kernel, padding="same")      # (b Tq, Tv, k)
        features = ops.reshape(
            flat, (shape[0], shape[1], shape[2], kernel.shape[-1]))
    return project(features, projection)


def first_position(mask):
    """One-hot at each row's first real position, float32 (zeros for a row
    with none): the alignment before the first step of the attentions that
    start at the source's beginning.

    Args:
        mask: `(..., Tv)`, of any dtype (nonzero or True = real).
    """
    real = ops.cast(ops.cast(mask, "float32") > 0.5, "float32")
    return real * ops.cast(ops.cumsum(real, axis=-1) - real < 0.5, "float32")
