"""Model-independent decoding loops: greedy, beam search and sampling.

Every loop drives a step function

    step_fn(tokens, state, index) -> (logits, state)            or
    step_fn(tokens, state, index) -> (logits, state, attention)

where `tokens` is `(batch,)` int32 (the previous token, BOS at index 0),
`state` any nest of tensors with the batch as leading axis (RNN states,
encoder keys, a key/value cache), `logits` `(batch, vocab)` and `attention`
`(batch, source_length)` (the alignment that produced the logits; kept for
the chosen hypothesis). The loops are `keras.ops.while_loop`s over
fixed-size buffers of `max_length` tokens (finished hypotheses extend with
PAD at zero cost) that stop as soon as every hypothesis has finished, so
they compile under `tf.function(jit_compile=True)` and `jax.jit` (see
`kerattn.decoding.compiled`), run eagerly on torch, and a batch of short
sentences costs its longest output, not `max_length` steps.
"""

import numpy as np
from keras import ops

import keras

from kerattn import checks
from kerattn.checks import known_dim

NEG = -1e9  # "impossible" in float32 arithmetic without inf - inf = NaN


def _call(step_fn, tokens, state, index):
    result = step_fn(tokens, state, index)
    if len(result) == 3:
        logits, state, attention = result
    else:
        (logits, state), attention = result, None
    rows = known_dim(tokens.shape[0])
    got = known_dim(logits.shape[0]) if len(logits.shape) else None
    checks.require(
        rows is None or got is None or rows == got, "step_fn",
        f"a function returning logits of shape (batch, vocab) for the {rows} "
        "rows of tokens it was given",
        note=f"It returned shape {tuple(logits.shape)}. Check `batch_size` "
        "against the state.")
    return logits, state, attention



def _loop(body, carry, max_length, finished_of):
    """`carry = body(t, carry)` for t = 0, 1, ... while t < max_length and
    some hypothesis is unfinished (`finished_of(carry)`, any shape).

    The output is the same as running all `max_length` steps: a finished
    hypothesis only appends PAD at zero cost. The stopping test runs on the
    device inside compiled loops; on torch it reads one bool per step.
    """
    def cond(t, carry):
        return ops.logical_and(ops.less(t, max_length),
                               ops.logical_not(ops.all(finished_of(carry))))

    def step(t, carry):
        return t + 1, body(t, carry)

    _, carry = ops.while_loop(cond, step, (0, carry))
    return carry


def _check_common(bos_id, eos_id, pad_id, max_length, min_length,
                  step_fn=None, batch_size=1):
    checks.function("step_fn", step_fn, "a function `(tokens, state, index) "
                    "-> (logits, state[, attention])`")
    checks.positive_int("batch_size", batch_size)
    for name, value in (("bos_id", bos_id), ("eos_id", eos_id),
                        ("pad_id", pad_id)):
        checks.nonnegative_int(name, value)
    checks.positive_int("max_length", max_length)
    checks.require(
        not isinstance(min_length, bool) and isinstance(min_length, int)
        and 0 <= min_length <= max_length,
        "min_length", f"an int in [0, max_length={max_length}]", min_length)


def _log_probs(logits, pad_id, bos_id):
    """log-softmax over the tokens a hypothesis can produce (no PAD, no BOS)."""
    logits = ops.cast(logits, "float32")
    ids = ops.expand_dims(ops.arange(ops.shape(logits)[-1]), 0)
    never = ops.logical_or(ops.equal(ids, pad_id), ops.equal(ids, bos_id))
    return ops.log_softmax(ops.where(never, NEG, logits), axis=-1)


def _ban_token(logp, token_id, condition):
    """Set `logp[:, token_id]` to NEG where `condition` (a scalar bool)."""
    vocab = ops.shape(logp)[-1]
    column = ops.expand_dims(ops.equal(ops.arange(vocab), token_id), 0)
    return ops.where(ops.logical_and(column, condition), NEG, logp)


def _only_pad(logp, pad_id, finished):
    """Finished rows: PAD at zero cost, every other token impossible."""
    vocab = ops.shape(logp)[-1]
    pad_row = ops.where(ops.equal(ops.arange(vocab), pad_id), 0.0, NEG)
    return ops.where(ops.expand_dims(finished, -1),
                     ops.expand_dims(pad_row, 0), logp)


def _write(history, t, values):
    """history[:, t] = values, for a traced `t`."""
    return ops.slice_update(history, (0, t), ops.expand_dims(values, 1))


def _write_step(array, t, values):
    """array[:, :, t] = values `(batch, K)`, for a traced `t`."""
    return ops.slice_update(array, (0, 0, t), ops.expand_dims(
        ops.cast(values, array.dtype), -1))


def gather_tree(step_ids, step_parents):
    """Each beam slot's tokens, followed back through its parents: the
    hypothesis that ends in slot `j` after the last step, `(batch,
    max_length, K)` (TensorFlow Addons' `gather_tree`, without its
    end-token fill: the steps after a hypothesis ended hold what the
    search wrote there, PAD).

    Args:
        step_ids, step_parents: `beam_search(..., return_steps=True)`'s,
            `(batch, max_length, K)`.

    Returns:
        A NumPy array `(batch, max_length, K)`.

    Example:

    >>> import numpy as np
    >>> ids = np.array([[[4, 5], [6, 7]]])       # two steps, two slots
    >>> parents = np.array([[[0, 0], [1, 0]]])   # slot 0 came from slot 1
    >>> gather_tree(ids, parents)[0].tolist()
    [[5, 4], [6, 7]]
    """
    ids = np.asarray(keras.ops.convert_to_numpy(step_ids))
    parents = np.asarray(keras.ops.convert_to_numpy(step_parents))
    checks.require(ids.ndim == 3, "step_ids", "(batch, max_length, K) token ids",
                   ids.shape)
    checks.require(parents.shape == ids.shape, "step_parents",
                   f"the shape of step_ids {ids.shape}", parents.shape)
    for name, array in (("step_ids", ids), ("step_parents", parents)):
        checks.require(np.issubdtype(array.dtype, np.integer), name,
                       "integers", array.dtype)
    checks.require(parents.size == 0 or (parents.min() >= 0
                                         and parents.max() < ids.shape[2]),
                   "step_parents", f"beam slots in [0, {ids.shape[2]})",
                   (int(parents.min()), int(parents.max())) if parents.size else ())
    out = np.zeros_like(ids)
    slot = np.broadcast_to(np.arange(ids.shape[2]), (ids.shape[0], ids.shape[2])).copy()
    rows = np.arange(ids.shape[0])[:, None]
    for t in range(ids.shape[1] - 1, -1, -1):
        out[:, t] = ids[rows, t, slot]
        slot = parents[rows, t, slot]
    return out


def _write_attention(history, t, attention):
    return ops.slice_update(history, (0, t, 0), ops.expand_dims(attention, 1))


def _banned_ngrams(history, t, vocab, n):
    """Tokens that would repeat an n-gram of `history[:, :t]`: (rows, vocab).

    Position `j` bans `history[:, j + n - 1]` when `history[:, j:j + n - 1]`
    equals the last `n - 1` tokens and the whole n-gram ends before `t`.
    """
    rows, length = history.shape[0], history.shape[1]
    span = length - n + 1
    if span <= 0:
        return ops.zeros((rows, vocab), "bool")
    match = ops.less_equal(ops.arange(span), t - n)  # n-gram fully before t
    match = ops.broadcast_to(ops.expand_dims(match, 0), (rows, span))
    for k in range(n - 1):
        segment = history[:, k: k + span]
        last = ops.take(history, ops.maximum(t - n + 1 + k, 0), axis=1)
        match = ops.logical_and(match, ops.equal(segment, ops.expand_dims(last, 1)))
    banned = history[:, n - 1: n - 1 + span]
    row_ids = ops.broadcast_to(ops.expand_dims(ops.arange(rows), 1), (rows, span))
    indices = ops.stack([ops.reshape(row_ids, (-1,)),
                         ops.reshape(banned, (-1,))], axis=1)
    counts = ops.scatter(indices, ops.reshape(ops.cast(match, "float32"), (-1,)),
                         (rows, vocab))
    return counts > 0


def greedy_search(step_fn, state, batch_size, bos_id, eos_id, pad_id=0,
                  max_length=50, min_length=0, return_attention=True):
    """Greedy decoding: the most likely token at every step.

    Args:
        step_fn: `step_fn(tokens, state, index) -> (logits, state[, attention])`.
        state: the initial state nest (batch-leading tensors).
        batch_size: int, the batch size.
        bos_id, eos_id, pad_id: the vocabulary's special ids.
        max_length: int, the number of tokens generated (EOS included).
        min_length: int, EOS is impossible before this many tokens.
        return_attention: keep each step's attention weights and return
            them (when the step function gives them); False keeps none,
            which saves writing a `(batch, max_length, S)` buffer at every
            step.

    Returns:
        A dict: `tokens` int32 `(batch, max_length)` (PAD after EOS),
        `scores` float32 `(batch,)` the sum of the chosen tokens' log
        probabilities (EOS included), `lengths` int32 `(batch,)` (EOS
        included), and `attention` `(batch, max_length, S)` when the step
        function returns attention.

    Example:

    A fake model (no weights) that says token 4, then EOS (3):

    >>> import numpy as np
    >>> table = np.log(np.array([[0.01, 0.01, 0.01, 0.07, 0.9],
    ...                          [0.01, 0.01, 0.01, 0.9, 0.07]] * 3, "float32"))
    >>> def step_fn(tokens, state, index):
    ...     logits = keras.ops.take(table, index, axis=0)
    ...     return keras.ops.tile(logits[None], (tokens.shape[0], 1)), state
    >>> state = {"h": np.zeros((2, 1), "float32")}
    >>> out = greedy_search(step_fn, state, batch_size=2, bos_id=2, eos_id=3,
    ...                     max_length=4)
    >>> keras.ops.convert_to_numpy(out["tokens"]).tolist()
    [[4, 3, 0, 0], [4, 3, 0, 0]]
    """
    _check_common(bos_id, eos_id, pad_id, max_length, min_length, step_fn,
                  batch_size)

    def choose(logp, t):  # logp: finished rows allow PAD only
        return ops.cast(ops.argmax(logp, axis=-1), "int32")

    return _one_hypothesis_loop(step_fn, state, batch_size, bos_id, eos_id,
                                pad_id, max_length, min_length, choose,
                                return_attention)


def _one_hypothesis_loop(step_fn, state, batch_size, bos_id, eos_id, pad_id,
                         max_length, min_length, choose, return_attention):
    """The loop of greedy search and sampling: one hypothesis per input.

    `choose(logp, t) -> (batch,) int32` picks each step's token from the
    log-probabilities (EOS banned before `min_length`, finished rows
    allowing PAD only).
    """
    tokens = ops.full((batch_size,), bos_id, dtype="int32")
    logits, state, attention = _call(step_fn, tokens, state, 0)
    history = ops.full((batch_size, max_length), pad_id, dtype="int32")
    use_attention = attention is not None and bool(return_attention)
    if attention is None:  # loops carry tensors only: placeholders
        attention = ops.zeros((batch_size, 1), "float32")
    att_history = ops.zeros(
        (batch_size, max_length, ops.shape(attention)[-1]) if use_attention
        else (batch_size, 1, 1), "float32")
    carry = (logits, state, attention, history, att_history,
             ops.zeros((batch_size,), "bool"), ops.zeros((batch_size,), "float32"),
             ops.zeros((batch_size,), "int32"))

    def body(t, carry):
        logits, state, attention, history, att_history, finished, score, length = carry
        logp = _ban_token(_log_probs(logits, pad_id, bos_id), eos_id, t < min_length)
        logp = _only_pad(logp, pad_id, finished)
        token = ops.where(finished, pad_id, choose(logp, t))
        chosen = ops.take_along_axis(logp, ops.expand_dims(token, -1), axis=-1)[:, 0]
        score = score + chosen  # 0 for the PAD of finished rows
        length = length + ops.cast(ops.logical_not(finished), "int32")
        history = _write(history, t, token)
        if use_attention:
            att = ops.where(ops.expand_dims(finished, -1), 0.0,
                            ops.cast(attention, "float32"))
            att_history = _write_attention(att_history, t, att)
        finished = ops.logical_or(finished, ops.equal(token, eos_id))
        logits, state, new_attention = _call(step_fn, token, state, t + 1)
        attention = new_attention if use_attention else attention
        return (logits, state, attention, history, att_history, finished,
                score, length)

    carry = _loop(body, carry, max_length, lambda c: c[5])
    result = {"tokens": carry[3], "scores": carry[6], "lengths": carry[7]}
    if use_attention:
        result["attention"] = carry[4]
    return result


def gnmt_length_penalty(lengths, alpha):
    """Wu et al. (2016), eq. 14: `lp(Y) = (5 + |Y|)^alpha / (5 + 1)^alpha`.

    Args:
        lengths: the hypotheses' lengths `|Y|` (any shape).
        alpha: the penalty's exponent (0 gives 1: no penalty).

    Returns:
        `lp(Y)`, float32, the shape of `lengths`; scores are divided by it.

    Example:

    >>> lp = gnmt_length_penalty(np.array([1, 5]), alpha=1.0)
    >>> np.round(keras.ops.convert_to_numpy(lp).astype("float64"), 3).tolist()
    [1.0, 1.667]
    """
    checks.nonnegative_number("alpha", alpha)
    checks.require(not isinstance(lengths, str), "lengths",
                   "a tensor of lengths", lengths)
    checks.require(
        not (isinstance(lengths, (np.ndarray, list, int, float))
             and np.any(np.asarray(lengths) < 0)),
        "lengths", ">= 0", lengths)
    lengths = ops.cast(lengths, "float32")
    return ops.power((5.0 + lengths) / 6.0, alpha)


def gnmt_coverage_penalty(coverage, beta, mask=None):
    """Wu et al. (2016), eq. 14: `beta sum_i log(min(sum_j p_ij, 1))`.

    Args:
        coverage: `(..., S)` the attention summed over the steps so far.
        beta: the penalty's weight.
        mask: optional boolean `(..., S)`; padded source positions are left out.

    Returns:
        The penalty, `(...)`: 0 when every source word got at least a
        total weight of 1, negative otherwise; it is added to the score.

    Example:

    >>> coverage = np.array([[0.5, 1.5]], "float32")
    >>> cp = gnmt_coverage_penalty(coverage, beta=1.0)   # log 0.5 + log 1
    >>> round(float(keras.ops.convert_to_numpy(cp)[0]), 3)
    -0.693
    """
    checks.nonnegative_number("beta", beta)
    checks.require(not isinstance(coverage, str), "coverage",
                   "a tensor (..., S)", coverage)
    if mask is not None:
        try:
            ok = len(mask.shape) <= len(coverage.shape) and tuple(np.broadcast_shapes(
                tuple(mask.shape), tuple(coverage.shape))) == tuple(coverage.shape)
        except (ValueError, TypeError):  # unknown sizes pass; a clash fails
            ok = None in tuple(mask.shape) + tuple(coverage.shape)
        if not ok:  # not broadcastable: the shapes differ, so this raises
            checks.mask("mask", mask, tuple(coverage.shape))
    clipped = ops.log(ops.clip(coverage, 1e-10, 1.0))
    if mask is not None:
        clipped = ops.where(mask, clipped, 0.0)
    return beta * ops.sum(clipped, axis=-1)


def beam_search(step_fn, state, batch_size, bos_id, eos_id, pad_id=0,
                beam_width=4, max_length=50, min_length=0, length_penalty=0.0,
                coverage_penalty=0.0, no_repeat_ngram_size=0, num_return=1,
                source_mask=None, never_worse_than_greedy=False,
                beam_invariant=(), return_attention=True, return_steps=False):
    """Beam search with the GNMT scoring of Wu et al. (2016), section 7.

    Hypotheses are ranked, while searching and at the end, by

        s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y)

    with the length penalty `lp` (`length_penalty` = alpha) and the coverage
    penalty `cp` (`coverage_penalty` = beta, needs a step function that
    returns attention). `length_penalty="average"` ranks by See et al.'s
    (2017) average log-probability per token instead: `lp(Y) = |Y| + 1`,
    as their code's `Hypothesis.avg_log_prob` divides by its tokens, the
    start token (log-probability 0) and the end token included
    (github.com/abisee/pointer-generator, `beam_search.py`). A finished
    hypothesis stays in the beam and extends with PAD at zero cost, so its score is frozen while it competes with the
    live ones. `beam_width=1` (with both penalties at 0) is greedy decoding
    exactly. By default this is pure beam search, which can end below the
    greedy hypothesis: a prefix greedy keeps can fall out of the beam. With
    `never_worse_than_greedy=True` the greedy hypothesis is decoded too and
    returned instead of the best beam when it scores higher; report figures
    decoded that way as "the better of beam and greedy", not as beam search.

    Args:
        step_fn, state, batch_size, bos_id, eos_id, pad_id: as `greedy_search`.
        max_length, min_length: as `greedy_search`.
        beam_width: int `K >= 1`.
        length_penalty: GNMT's alpha (0 = raw log-probability), or
            "average" (See et al.'s average per token, above).
        coverage_penalty: GNMT's beta (0 = none): a decode-time term of
            every hypothesis's score, live or finished, while searching
            and at the end (as `s(Y, X)` above), with any attention model. Not the
            coverage of See et al. (2017), `BahdanauAttention(coverage=
            True)`, which the model learns and carries as a decoder state
            (a state this search reorders with its hypotheses).
        no_repeat_ngram_size: int; if > 0, no n-gram of this size appears
            twice in a hypothesis.
        num_return: int in [1, K], the n-best hypotheses returned per input.
        source_mask: optional boolean `(batch, S)` for the coverage penalty.
        never_worse_than_greedy: bool, the greedy fallback (off by default),
            see above.
        beam_invariant: names of entries of a dict `state` that are the same
            for every hypothesis of a sentence and that `step_fn` returns
            unchanged (the encoder's memory): they are repeated once and
            never reordered, which saves copying the memory at every step.
            Each zoo model names its own (`GenerativeModel.beam_invariant`).
        return_attention: as `greedy_search`: False keeps no attention
            history (the coverage penalty still sums the weights it needs).
        return_steps: bool; also return the search step by step, as
            TensorFlow Addons' `BeamSearchDecoderOutput`: `step_ids`,
            `step_parents` (the beam each slot came from), `step_scores`
            (each slot's ranking score after the step) and `step_log_probs`,
            each `(batch, max_length, K)` in the order of the beam's slots
            (not sorted; `gather_tree(step_ids, step_parents)` follows each
            slot back to the start, as tfa's `gather_tree`).

    Returns:
        A dict: `tokens` `(batch, num_return, max_length)`, `scores`
        `(batch, num_return)` (the ranking score `s`), `log_probs`
        `(batch, num_return)`, `lengths`, and `attention` `(batch,
        num_return, max_length, S)` when the step function returns it;
        best first; with `return_steps`, the step arrays above.

    Example:

    A fake model (no weights) that says token 4, then EOS (3):

    >>> import numpy as np
    >>> table = np.log(np.array([[0.01, 0.01, 0.01, 0.07, 0.9],
    ...                          [0.01, 0.01, 0.01, 0.9, 0.07]] * 3, "float32"))
    >>> def step_fn(tokens, state, index):
    ...     logits = keras.ops.take(table, index, axis=0)
    ...     return keras.ops.tile(logits[None], (tokens.shape[0], 1)), state
    >>> state = {"h": np.zeros((2, 1), "float32")}
    >>> out = beam_search(step_fn, state, batch_size=2, bos_id=2, eos_id=3,
    ...                   beam_width=3, num_return=2, max_length=4)
    >>> keras.ops.convert_to_numpy(out["tokens"])[0].tolist()   # 2-best
    [[4, 3, 0, 0], [3, 0, 0, 0]]
    """
    _check_common(bos_id, eos_id, pad_id, max_length, min_length, step_fn,
                  batch_size)
    k = beam_width
    checks.positive_int("beam_width", k)
    checks.require(isinstance(num_return, int) and 1 <= num_return <= k,
                   "num_return", f"an int in [1, beam_width={k}]", num_return)
    checks.nonnegative_int("no_repeat_ngram_size", no_repeat_ngram_size)
    if length_penalty != "average":
        checks.require(not isinstance(length_penalty, str), "length_penalty",
                       "a number >= 0 (GNMT's alpha) or 'average'", length_penalty)
        checks.nonnegative_number("length_penalty", length_penalty)
    checks.nonnegative_number("coverage_penalty", coverage_penalty)

    initial_state = state
    bk = batch_size * k
    tile = lambda x: ops.repeat(x, k, axis=0)  # (B, ...) -> (B*K, ...)
    invariant = set(beam_invariant or ())
    checks.require(
        not invariant or (isinstance(state, dict) and invariant <= set(state)),
        "beam_invariant", "names of entries of a dict `state`",
        sorted(invariant),
        note="The state has entries "
        f"{sorted(state) if isinstance(state, dict) else type(state).__name__}.")

    def reorder(state, rows):
        """Each hypothesis' state from its parent `rows` (invariants kept)."""
        take = lambda x: ops.take(x, rows, axis=0)
        if not invariant:
            return keras.tree.map_structure(take, state)
        return {key: value if key in invariant
                else keras.tree.map_structure(take, value)
                for key, value in state.items()}

    state = keras.tree.map_structure(tile, state)
    tokens = ops.full((bk,), bos_id, dtype="int32")
    logits, state, attention = _call(step_fn, tokens, state, 0)
    gives_attention = attention is not None
    use_attention = gives_attention and bool(return_attention)  # kept, returned
    checks.require(
        not (coverage_penalty and not gives_attention), "coverage_penalty",
        "0 for a step function without attention", coverage_penalty,
        note="`coverage_penalty` needs a step function that returns "
        "attention weights as its third output.")
    cov_mask = None
    if source_mask is not None:
        cov_mask = ops.cast(source_mask, "bool")
    # Only beam 0 is alive at first: no K copies of the same hypothesis.
    first = ops.where(ops.equal(ops.arange(k), 0), 0.0, NEG)
    raw = ops.broadcast_to(ops.expand_dims(first, 0), (batch_size, k))
    s_len = ops.shape(attention)[-1] if gives_attention else 1
    # Loops carry tensors only: a history or coverage not kept is a
    # placeholder of one position.
    carry = (
        logits, state, attention if gives_attention else ops.zeros((bk, 1)),
        ops.full((bk, max_length), pad_id, dtype="int32"),
        ops.zeros((bk, max_length, s_len) if use_attention else (bk, 1, 1),
                  "float32"),
        ops.zeros((batch_size, k, s_len if coverage_penalty else 1),
                  "float32"),  # coverage
        raw, ops.zeros((batch_size, k), "bool"),
        ops.zeros((batch_size, k), "int32"),
        # The step arrays (return_steps), (batch, K, max_length) each, or
        # placeholders of one step.
        *[ops.zeros((batch_size, k, max_length if return_steps else 1), dtype)
          for dtype in ("int32", "int32", "float32", "float32")],
    )
    offsets = ops.expand_dims(ops.arange(batch_size) * k, 1)  # (B, 1)

    def score_of(raw, lengths, coverage):
        """GNMT's s(Y, X) for (B, K) or (B, K, V) raw log-probabilities."""
        score = raw
        if length_penalty == "average":   # See et al.: |Y| tokens + the start
            score = score / (ops.cast(lengths, "float32") + 1.0)
        elif length_penalty:
            score = score / gnmt_length_penalty(lengths, length_penalty)
        if coverage_penalty:
            mask = None if cov_mask is None else ops.expand_dims(cov_mask, 1)
            cp = gnmt_coverage_penalty(coverage, coverage_penalty, mask)  # (B, K)
            score = score + (ops.expand_dims(cp, -1) if len(raw.shape) == 3
                             else cp)
        return score

    def body(t, carry):
        (logits, state, attention, history, att_history, coverage, raw,
         finished, lengths, *steps) = carry
        vocab = ops.shape(logits)[-1]
        flat_finished = ops.reshape(finished, (bk,))
        logp = _ban_token(_log_probs(logits, pad_id, bos_id), eos_id, t < min_length)
        if no_repeat_ngram_size:
            banned = _banned_ngrams(history, t, vocab, no_repeat_ngram_size)
            logp = ops.where(banned, NEG, logp)
        logp = _only_pad(logp, pad_id, flat_finished)
        att = None
        if use_attention or coverage_penalty:
            att = ops.where(ops.expand_dims(flat_finished, -1), 0.0,
                            ops.cast(attention, "float32"))
        if coverage_penalty:
            coverage = coverage + ops.reshape(att, (batch_size, k, -1))
        cand_raw = ops.expand_dims(raw, -1) + ops.reshape(logp, (batch_size, k, -1))
        cand_len = ops.expand_dims(ops.where(finished, lengths, t + 1), -1)
        cand = score_of(cand_raw, cand_len, coverage)  # (B, K, V)
        _, top = ops.top_k(ops.reshape(cand, (batch_size, -1)), k)  # (B, K)
        beam = top // vocab
        token = ops.cast(top % vocab, "int32")
        rows = ops.reshape(beam + offsets, (bk,))  # the parent of each new beam
        raw = ops.take_along_axis(ops.reshape(cand_raw, (batch_size, -1)), top,
                                  axis=1)
        was_finished = ops.take_along_axis(finished, beam, axis=1)
        lengths = ops.where(was_finished, ops.take_along_axis(lengths, beam, 1),
                            t + 1)
        finished = ops.logical_or(was_finished, ops.equal(token, eos_id))
        history = _write(ops.take(history, rows, axis=0), t,
                         ops.reshape(token, (bk,)))
        if coverage_penalty:
            coverage = ops.reshape(
                ops.take(ops.reshape(coverage, (bk, -1)), rows, axis=0),
                (batch_size, k, -1))
        if use_attention:
            att_history = _write_attention(ops.take(att_history, rows, axis=0), t,
                                           ops.take(att, rows, axis=0))
        if return_steps:
            steps = [_write_step(a, t, v) for a, v in zip(steps, (
                token, ops.cast(beam, "int32"), score_of(raw, lengths, coverage), raw))]
        state = reorder(state, rows)
        logits, state, new_attention = _call(step_fn, ops.reshape(token, (bk,)),
                                             state, t + 1)
        attention = new_attention if gives_attention else attention
        return (logits, state, attention, history, att_history, coverage, raw,
                finished, lengths, *steps)

    carry = _loop(body, carry, max_length, lambda c: c[7])
    (_, _, _, history, att_history, coverage, raw, finished, lengths,
     *steps) = carry
    final = score_of(raw, lengths, coverage)
    order = ops.argsort(-final, axis=1)[:, :num_return]  # best first
    rows = ops.reshape(order + offsets, (-1,))
    out = {
        "tokens": ops.reshape(ops.take(history, rows, axis=0),
                              (batch_size, num_return, max_length)),
        "scores": ops.take_along_axis(final, order, axis=1),
        "log_probs": ops.take_along_axis(raw, order, axis=1),
        "lengths": ops.take_along_axis(lengths, order, axis=1),
    }
    if use_attention:
        out["attention"] = ops.reshape(
            ops.take(att_history, rows, axis=0),
            (batch_size, num_return, max_length, -1))
    if return_steps:   # (batch, max_length, K), as tfa's
        out.update({name: ops.transpose(value, (0, 2, 1)) for name, value in zip(
            ("step_ids", "step_parents", "step_scores", "step_log_probs"), steps)})
    if never_worse_than_greedy and k > 1 and not no_repeat_ngram_size:
        # Greedy obeys min_length but knows no n-gram blocking: only then.
        greedy = greedy_search(step_fn, initial_state, batch_size, bos_id, eos_id,
                               pad_id, max_length, min_length,
                               return_attention=use_attention or coverage_penalty)
        g_cov = None
        if coverage_penalty:
            g_cov = ops.expand_dims(ops.sum(greedy["attention"], axis=1), 1)
        g_score = score_of(ops.expand_dims(greedy["scores"], 1),
                           ops.expand_dims(greedy["lengths"], 1), g_cov)[:, 0]
        better = g_score > out["scores"][:, 0]  # (B,)

        def pick(beam_value, greedy_value):
            first_is = ops.reshape(better, (-1,) + (1,) * (len(beam_value.shape) - 1))
            top = ops.where(first_is, ops.cast(greedy_value, beam_value.dtype),
                            beam_value[:, :1])
            return ops.concatenate([top, beam_value[:, 1:]], axis=1)

        out["tokens"] = pick(out["tokens"], ops.expand_dims(greedy["tokens"], 1))
        out["scores"] = pick(out["scores"], ops.expand_dims(g_score, 1))
        out["log_probs"] = pick(out["log_probs"],
                                ops.expand_dims(greedy["scores"], 1))
        out["lengths"] = pick(out["lengths"], ops.expand_dims(greedy["lengths"], 1))
        if use_attention:
            out["attention"] = pick(out["attention"],
                                    ops.expand_dims(greedy["attention"], 1))
    return out


def _filter_logits(logits, temperature, top_k, top_p):
    logits = ops.cast(logits, "float32") / temperature
    if top_k:
        kth = ops.top_k(logits, top_k)[0][:, -1:]
        logits = ops.where(logits < kth, NEG, logits)
    if top_p < 1.0:
        order = ops.argsort(-logits, axis=-1)
        sorted_logits = ops.take_along_axis(logits, order, axis=-1)
        probs = ops.softmax(sorted_logits, axis=-1)
        before = ops.cumsum(probs, axis=-1) - probs  # mass of better tokens
        keep_sorted = before < top_p  # the smallest set reaching top_p
        # Back to vocabulary order.
        inverse = ops.argsort(order, axis=-1)
        keep = ops.take_along_axis(keep_sorted, inverse, axis=-1)
        logits = ops.where(keep, logits, NEG)
    return logits


def sample(step_fn, state, batch_size, bos_id, eos_id, pad_id=0, max_length=50,
           min_length=0, temperature=1.0, top_k=0, top_p=1.0, seed=None,
           return_attention=True):
    """Ancestral sampling with temperature, top-k and nucleus (top-p) filters.

    `p(y_t) ~ softmax(logits / temperature)`, restricted to the `top_k` most
    likely tokens and to the smallest set of tokens whose probability reaches
    `top_p` (Holtzman et al., 2020). The uniforms of all steps are drawn
    before the loop from `seed`, so a seeded call is reproducible, compiled
    or not.

    Args:
        step_fn, state, batch_size, bos_id, eos_id, pad_id: as `greedy_search`.
        max_length, min_length: as `greedy_search`.
        temperature: float > 0.
        top_k: int >= 0 (0 = no top-k filter).
        top_p: float in (0, 1] (1 = no nucleus filter).
        seed: optional int.
        return_attention: as `greedy_search`.

    Returns:
        As `greedy_search`; `scores` are the log-probabilities of the drawn
        tokens under the unfiltered model.

    Example:

    A fake model (no weights) that says token 4, then EOS (3):

    >>> import numpy as np
    >>> table = np.log(np.array([[0.01, 0.01, 0.01, 0.07, 0.9],
    ...                          [0.01, 0.01, 0.01, 0.9, 0.07]] * 3, "float32"))
    >>> def step_fn(tokens, state, index):
    ...     logits = keras.ops.take(table, index, axis=0)
    ...     return keras.ops.tile(logits[None], (tokens.shape[0], 1)), state
    >>> state = {"h": np.zeros((2, 1), "float32")}
    >>> out = sample(step_fn, state, batch_size=2, bos_id=2, eos_id=3,
    ...              max_length=4, top_k=1, seed=0)   # top_k=1 is greedy
    >>> keras.ops.convert_to_numpy(out["tokens"]).tolist()
    [[4, 3, 0, 0], [4, 3, 0, 0]]
    """
    _check_common(bos_id, eos_id, pad_id, max_length, min_length, step_fn,
                  batch_size)
    checks.positive_number("temperature", temperature)
    checks.nonnegative_int("top_k", top_k)
    checks.number("top_p", top_p, 0.0, 1.0, low_open=True)
    # All randomness is drawn before the loop (one uniform per step and
    # row), so the loop is a pure function: it compiles and a seed
    # reproduces it on every backend.
    uniforms = keras.random.uniform((max_length, batch_size), seed=seed)

    def choose(logp, t):
        filtered = _filter_logits(logp, temperature, top_k, top_p)
        # Inverse-CDF draw with this step's pre-drawn uniform.
        cdf = ops.cumsum(ops.softmax(filtered, axis=-1), axis=-1)
        u_t = ops.expand_dims(ops.take(uniforms, t, axis=0), -1)
        token = ops.sum(ops.cast(cdf < u_t, "int32"), axis=-1)
        return ops.minimum(token, ops.shape(filtered)[-1] - 1)

    return _one_hypothesis_loop(step_fn, state, batch_size, bos_id, eos_id,
                                pad_id, max_length, min_length, choose,
                                return_attention)
