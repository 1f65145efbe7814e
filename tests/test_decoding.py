"""Decoding loops tested with fake step functions, and beam search over a
zoo model whose decoder state carries the alignment history."""

import itertools

import keras
import numpy as np
import pytest
from keras import ops

from cases import to_numpy
from kerattn import zoo
from kerattn.decoding import (
    beam_search,
    gather_tree,
    gnmt_length_penalty,
    greedy_search,
    sample,
)

PAD, UNK, BOS, EOS = 0, 1, 2, 3


def markov_step(table, source_length=5):
    """A fake model: logits depend on the previous token only; attention is
    a one-hot on min(step, S - 1), so alignments are predictable."""
    table = ops.convert_to_tensor(table)

    def step(tokens, state, index):
        logits = ops.take(table, tokens, axis=0)
        position = ops.minimum(ops.cast(index, "int32"), source_length - 1)
        attention = ops.one_hot(position * ops.ones_like(tokens), source_length)
        return logits, state + 1.0, attention

    return step


def random_table(seed, vocab=7, scale=2.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((vocab, vocab)) * scale).astype("float32")


def np_log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def sequence_log_prob(table, seq):
    """log P of a hypothesis under the Markov table (PAD/BOS impossible)."""
    total, prev = 0.0, BOS
    for tok in seq:
        logits = table[prev].astype("float64").copy()
        logits[[PAD, BOS]] = -1e9
        total += np_log_softmax(logits)[tok]
        prev = tok
        if tok == EOS:
            break
    return total


def length_norm(length, alpha):
    """The divisor of a hypothesis' log-probability: GNMT's lp(Y) =
    ((5 + |Y|) / 6)^alpha (Wu et al. 2016, section 7), or for "average" See
    et al.'s average per token, their start token counted (|Y| + 1:
    abisee/pointer-generator, beam_search.py, `Hypothesis.avg_log_prob`)."""
    return length + 1 if alpha == "average" else ((5 + length) / 6) ** alpha


def brute_force_best(table, max_length, alpha, vocab):
    """The best hypothesis over every sequence, by GNMT's length-normalised
    score (hypotheses end at EOS or at max_length)."""
    best, best_score = None, -np.inf
    tokens = [t for t in range(vocab) if t not in (PAD, BOS)]
    for length in range(1, max_length + 1):
        for seq in itertools.product(tokens, repeat=length):
            if EOS in seq[:-1] or (length < max_length and seq[-1] != EOS):
                continue
            score = sequence_log_prob(table, seq) / length_norm(length, alpha)
            if score > best_score:
                best, best_score = seq, score
    return best, best_score


def _tokens(result, index=None):
    tokens = to_numpy(result["tokens"])
    return tokens if index is None else tokens[:, index]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_width_one_equals_greedy(seed):
    step = markov_step(random_table(seed))
    state = ops.zeros((4, 1))
    greedy = greedy_search(step, state, 4, BOS, EOS, PAD, max_length=8)
    beam = beam_search(step, state, 4, BOS, EOS, PAD, beam_width=1, max_length=8)
    np.testing.assert_array_equal(_tokens(beam, 0), _tokens(greedy))
    np.testing.assert_allclose(to_numpy(beam["log_probs"])[:, 0],
                               to_numpy(greedy["scores"]), atol=1e-5)
    np.testing.assert_allclose(to_numpy(beam["attention"])[:, 0],
                               to_numpy(greedy["attention"]), atol=1e-6)


def batch_markov_step(tables):
    """`markov_step` with one table per row: `tables` `(B, V, V)`. The state
    is the row's index `(B, 1)` (`row_state`), which a search repeats and
    reorders with its hypotheses."""
    tables = ops.convert_to_tensor(tables)
    vocab = tables.shape[-1]

    def step(tokens, state, index):
        rows = ops.cast(state[:, 0], "int32") * vocab + ops.cast(tokens, "int32")
        logits = ops.take(ops.reshape(tables, (-1, vocab)), rows, axis=0)
        return logits, state, None

    return step


def row_state(rows):
    return ops.convert_to_tensor(np.arange(rows, dtype="float32")[:, None])


# Two scores closer than this are a tie: float rounding (which varies with
# the CPU's vector instructions, in NumPy as in the backends) may order them
# either way, so a tie may keep either hypothesis.
TIE = 1e-6


def gnmt_score(table, seq, alpha):
    """GNMT's length-normalised score of a hypothesis, in float64."""
    return sequence_log_prob(table, seq) / length_norm(len(seq), alpha)


def assert_same_or_tied(table, got, expected, expected_score, alpha, max_length):
    """`got` is the hypothesis `expected`, or a valid one whose score (from
    the table, in NumPy) agrees with `expected_score` to `TIE`: a tie that
    round-off may break either way."""
    if got == expected:
        return
    assert got and PAD not in got and BOS not in got and EOS not in got[:-1], got
    assert got[-1] == EOS or len(got) == max_length, got
    got_score = gnmt_score(table, got, alpha)
    assert abs(got_score - expected_score) < TIE, (got, got_score, expected,
                                                   expected_score)


def numpy_beam_search(table, width, max_length, alpha, steps=None):
    """Beam search written out in NumPy, the independent reference: keep the
    `width` best hypotheses by GNMT's length-normalised score at every
    step; a finished one stays in the beam with its score frozen.

    Also returns, as `(step, kept, dropped)`, each cut between two candidates
    that round-off could order either way (scores within 1e-4, the test's
    float32 tolerance) unless they are alike: tied to `TIE`, the same length
    and last token and both finished or not, so that the Markov table scores
    their futures alike and either choice leads to the same scores."""
    def score(hyp):
        return hyp[1] / length_norm(len(hyp[0]), alpha)

    def alike(a, b):
        return (abs(score(a) - score(b)) < TIE and len(a[0]) == len(b[0])
                and a[0][-1] == b[0][-1] and a[2] == b[2])

    beams, ambiguous = [((), 0.0, False)], []
    for step in range(max_length):
        candidates = []
        for tokens, log_p, done in beams:
            if done:
                candidates.append((tokens, log_p, True))
                continue
            logits = table[tokens[-1] if tokens else BOS].astype("float64")
            logits[[PAD, BOS]] = -1e9
            log_probs = np_log_softmax(logits)
            candidates += [(tokens + (t,), log_p + log_probs[t], t == EOS)
                           for t in range(len(table)) if t not in (PAD, BOS)]
        ranked = sorted(candidates, key=score, reverse=True)
        beams = ranked[:width]
        if steps is not None:   # the beam's scores after each step, best first
            steps.append([score(b) for b in beams])
        ambiguous += [(step, kept[0], dropped[0]) for kept in beams
                      for dropped in ranked[width:]
                      if abs(score(kept) - score(dropped)) < 1e-4
                      and not alike(kept, dropped)]
    # The n-best's order, too, must be clear or a tie.
    ambiguous += [(max_length, a[0], b[0]) for a, b in zip(beams, beams[1:])
                  if TIE <= score(a) - score(b) < 1e-4]
    return [(tokens, score((tokens, log_p))) for tokens, log_p, _ in beams], ambiguous


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0, "average"])
def test_wide_beam_finds_the_brute_force_optimum(alpha):
    """Pure beam search (the greedy fallback off) as wide as every prefix is
    exact: it finds the best of all sequences, enumerated in NumPy."""
    vocab, max_length = 5, 4
    tables = np.stack([random_table(seed, vocab, scale=1.5) for seed in (3, 7, 8)])
    step = batch_markov_step(tables)
    # Width 3^3 keeps every prefix: the search is exact.
    beam = beam_search(step, row_state(3), 3, BOS, EOS, PAD,
                       beam_width=27, max_length=max_length, length_penalty=alpha,
                       never_worse_than_greedy=False)
    lengths = to_numpy(beam["lengths"])[:, 0]
    for row, table in enumerate(tables):
        best, best_score = brute_force_best(table, max_length, alpha, vocab)
        assert_same_or_tied(table, tuple(_tokens(beam)[row, 0, :lengths[row]]),
                            best, best_score, alpha, max_length)
        np.testing.assert_allclose(float(to_numpy(beam["scores"])[row, 0]),
                                   best_score, atol=1e-4)
    assert len(set(lengths)) > 1   # rows end at different lengths


def coverage_model():
    """`bahdanau_nmt(coverage=True)` (tiny) over target ids PAD, UNK, BOS, EOS
    and 4, with weights scaled so that the coverage vector moves the scores.

    At the tiny preset's initial weights (embeddings within +-0.05) every
    context is near the mean annotation and a step's logits change by less
    than 1e-4 whatever the coverage. Scaled: annotations and states that
    differ with the tokens, sharp alignments that follow the state, a large
    `w_c` (See et al.'s coverage weight) and a deep output that reads the
    context; EOS made unlikely, so that the best hypotheses are long ones
    whose late steps read the coverage of their own earlier steps."""
    keras.utils.set_random_seed(0)
    model = zoo.bahdanau_nmt(12, 5, preset="tiny", coverage=True)
    model({"source_ids": np.ones((1, 2), "int32"),
           "target_in_ids": np.ones((1, 2), "int32")})
    attention = model.get_layer("decoder").attention
    for variable, scale in [
            (model.get_layer("source_embedding").embeddings, 40.0),
            (model.get_layer("target_embedding").embeddings, 40.0),
            (attention.W_a, 3.0), (attention.v_a, 5.0), (attention.w_c, 20.0),
            (model.get_layer("deep_output").kernel, 5.0)]:
        variable.assign(variable * scale)
    model.get_layer("output_projection").bias.assign(
        np.array([0, 0, 0, -2, 0], "float32"))
    return model


def model_sequence_scores(model, source_ids, max_length, alpha):
    """Every hypothesis over the tokens {UNK, EOS, 4} up to `max_length`
    (ending at EOS or at `max_length`), for every source row: `{tokens:
    GNMT score}` per row, each scored by running the model's `step` along
    that sequence alone (all sequences of all rows as one batch)."""
    seqs = [body + (EOS,) * (max_length - len(body))
            for n in range(max_length + 1)
            for body in itertools.product((UNK, 4), repeat=n)]
    tokens = np.tile(np.array(seqs, "int32"), (len(source_ids), 1))
    rows = len(tokens)
    state = model.encode(np.repeat(source_ids, len(seqs), axis=0))
    log_p, length = np.zeros(rows), np.zeros(rows, "int64")
    done, previous = np.zeros(rows, bool), np.full(rows, BOS, "int32")
    for t in range(max_length):
        logits, state, _ = model.step(ops.convert_to_tensor(previous), state, t)
        logits = to_numpy(logits).astype("float64")
        logits[:, [PAD, BOS]] = -np.inf
        chosen = np_log_softmax(logits)[np.arange(rows), tokens[:, t]]
        log_p = np.where(done, log_p, log_p + chosen)
        length = np.where(done, length, t + 1)
        done |= tokens[:, t] == EOS
        previous = tokens[:, t]
    score = log_p / ((5 + length) / 6) ** alpha
    return [{tuple(tokens[i, :length[i]]): score[i]
             for i in range(row * len(seqs), (row + 1) * len(seqs))}
            for row in range(len(source_ids))]


def test_beam_reorders_the_alignment_state():
    """Beam search over a model whose decoder carries the coverage vector as
    a state entry (`bahdanau_nmt(coverage=True)`): a pure beam as wide as
    every prefix is exact, so its n-best (32 of the 63 hypotheses) are the
    best sequences of all, each with the score the model's `step` gives it
    along that sequence alone. A hypothesis whose parent sat in another row
    must take its parent's coverage with its hidden state: a search that
    leaves the coverage out of the reorder (each row keeping the coverage of
    the hypothesis that was there before) scores 11 to 25 of the 32 wrong,
    by up to 0.13, on every backend."""
    model = coverage_model()
    source_ids = np.array([[5, 6, 7, 0, 0], [7, 8, 9, 10, 11]], "int32")
    max_length, width, alpha = 5, 32, 0.6
    expected = model_sequence_scores(model, source_ids, max_length, alpha)

    def search(step, state, invariant):
        # Every prefix fits: after 4 steps, 16 live and 15 finished.
        out = beam_search(step, state, 2, BOS, EOS, PAD, beam_width=width,
                          max_length=max_length, length_penalty=alpha,
                          num_return=width, beam_invariant=invariant)
        tokens, lengths = _tokens(out), to_numpy(out["lengths"])
        got = [[tuple(tokens[row, k, :lengths[row, k]]) for k in range(width)]
               for row in range(2)]
        return got, to_numpy(out["scores"]).astype("float64")

    got, scores = search(model.step, model.encode(source_ids),
                         model.beam_invariant)
    errors = []
    for row in range(2):
        best = sorted(expected[row].values(), reverse=True)
        np.testing.assert_allclose(scores[row], best[:width], atol=2e-4)
        assert len(set(got[row])) == width, got[row]
        errors += [scores[row, k] - expected[row][hyp]
                   for k, hyp in enumerate(got[row])]
        assert best[0] - best[1] > 1e-3  # the optimum is clear: it is found
        assert got[row][0] == max(expected[row], key=expected[row].get)
    np.testing.assert_allclose(errors, 0.0, atol=2e-4)

    # The same search with the attention's state left out of the reorder
    # (moved to the top of the state and named invariant): it goes wrong.
    def split(state):
        states = dict(state["states"])
        return {"cache": state["cache"], "states": states,
                "attention": states.pop("attention")}

    def step(tokens, state, index):
        whole = {"cache": state["cache"],
                 "states": {**state["states"], "attention": state["attention"]}}
        logits, new, weights = model.step(tokens, whole, index)
        return logits, split(new), weights

    got, scores = search(step, split(model.encode(source_ids)),
                         ("cache", "attention"))
    wrong = [abs(scores[row, k] - expected[row].get(hyp, np.inf))
             for row in range(2) for k, hyp in enumerate(got[row])]
    assert sum(w > 1e-3 for w in wrong) >= 5, wrong


@pytest.mark.parametrize("alpha", [0.6, "average"])
@pytest.mark.parametrize("width", [2, 3])
def test_narrow_beam_matches_a_numpy_beam_search(width, alpha):
    """A narrow pure beam search keeps what the NumPy reference keeps, step by
    step: same n-best hypotheses, same scores (where it differs from the
    brute-force optimum, it differs the same way). Table 85 holds exact ties
    ((1, 4, 1, 1) and (1, 1, 4, 1) score alike), which round-off may break
    either way: a hypothesis may differ from the reference's only where their
    scores tie, and the tables hold no tie at a cut that would change what
    the search keeps afterwards. Ranked by GNMT's score, or by See et
    al.'s average log-probability per token."""
    vocab, max_length = 6, 5
    # Tables 85 and 94 (26 and 128 by the average) are ones where widths 2
    # and 3 miss the optimum.
    misses = (26, 128) if alpha == "average" else (85, 94)
    tables = np.stack([random_table(seed, vocab, scale=2.0)
                       for seed in (20, misses[0], 21, 22, misses[1], 23)])
    beam = beam_search(batch_markov_step(tables), row_state(6), 6, BOS, EOS,
                       PAD, beam_width=width, max_length=max_length,
                       length_penalty=alpha, num_return=width,
                       never_worse_than_greedy=False)
    tokens, lengths = _tokens(beam), to_numpy(beam["lengths"])
    scores = to_numpy(beam["scores"])
    below_optimum = 0
    for row, table in enumerate(tables):
        expected, ambiguous = numpy_beam_search(table, width, max_length, alpha)
        assert not ambiguous, (row, ambiguous)
        got = [tuple(tokens[row, k, :lengths[row, k]]) for k in range(width)]
        assert len(set(got)) == width, got   # distinct hypotheses
        for k, (hyp, score) in enumerate(expected):
            assert_same_or_tied(table, got[k], hyp, score, alpha, max_length)
            np.testing.assert_allclose(scores[row, k], score, atol=1e-4)
        _, best = brute_force_best(table, max_length, alpha, vocab)
        below_optimum += expected[0][1] < best - 1e-6
    assert below_optimum > 0  # the tables include searches that miss the optimum


@pytest.mark.parametrize("width", [2, 3])
def test_the_steps_are_the_searchs_own(width):
    """`return_steps=True` (tfa's `BeamSearchDecoderOutput`): the search
    returns the same n-best; each step's slot scores are the NumPy
    reference's beam scores after that step (best first, as top-k keeps
    them); following each final slot back through `step_parents`
    (`gather_tree`) gives the returned hypotheses, each slot's last score
    and log-probability theirs."""
    vocab, max_length, alpha = 6, 5, 0.6
    tables = np.stack([random_table(seed, vocab, scale=2.0) for seed in (20, 85, 21)])
    common = dict(beam_width=width, max_length=max_length, length_penalty=alpha,
                  num_return=width, never_worse_than_greedy=False)
    plain = beam_search(batch_markov_step(tables), row_state(3), 3, BOS, EOS, PAD,
                        **common)
    beam = beam_search(batch_markov_step(tables), row_state(3), 3, BOS, EOS, PAD,
                       return_steps=True, **common)
    for key in plain:
        np.testing.assert_allclose(to_numpy(beam[key]), to_numpy(plain[key]), atol=1e-6)
    ids, parents = to_numpy(beam["step_ids"]), to_numpy(beam["step_parents"])
    assert ids.shape == parents.shape == (3, max_length, width)
    step_scores = to_numpy(beam["step_scores"])
    paths = gather_tree(ids, parents)
    tokens, lengths = _tokens(beam), to_numpy(beam["lengths"])
    for row, table in enumerate(tables):
        steps = []
        numpy_beam_search(table, width, max_length, alpha, steps=steps)
        np.testing.assert_allclose(step_scores[row], steps, atol=1e-4)
        slots = {tuple(paths[row, :lengths[row, k], j]): j for k in range(width)
                 for j in range(width)}
        for k in range(width):
            j = slots[tuple(tokens[row, k, :lengths[row, k]])]
            assert step_scores[row, -1, j] == pytest.approx(
                float(to_numpy(beam["scores"])[row, k]), abs=1e-5)
            assert to_numpy(beam["step_log_probs"])[row, -1, j] == pytest.approx(
                float(to_numpy(beam["log_probs"])[row, k]), abs=1e-5)
    assert set(parents.reshape(-1)) <= set(range(width))
    with pytest.raises(ValueError, match="`step_parents`"):
        gather_tree(ids, parents[:, :2])


def test_greedy_fallback_keeps_greedy_when_it_scores_higher():
    """`never_worse_than_greedy=True` returns the greedy hypothesis where pure
    beam search ends below it, and pure beam search where it does not."""
    alpha, width = 0.7, 2
    # Pure beam search ends below greedy on table 211 (1 in 400 random tables).
    seeds = (10, 11, 211, 12, 13, 14)
    tables = np.stack([random_table(seed, vocab=8) for seed in seeds])
    rows = len(seeds)
    step = batch_markov_step(tables)
    state = row_state(rows)
    greedy = greedy_search(step, state, rows, BOS, EOS, PAD, max_length=7)
    g_score = to_numpy(greedy["scores"]) / to_numpy(
        gnmt_length_penalty(greedy["lengths"], alpha))
    pure = beam_search(step, state, rows, BOS, EOS, PAD, beam_width=width,
                       max_length=7, length_penalty=alpha)   # the default: pure
    kept = beam_search(step, state, rows, BOS, EOS, PAD, beam_width=width,
                       max_length=7, length_penalty=alpha,
                       never_worse_than_greedy=True)
    pure_score = to_numpy(pure["scores"])[:, 0]
    worse = pure_score < g_score - 1e-5
    assert worse.any() and not worse.all()   # both cases occur
    # No near-tie between two different hypotheses, which round-off could
    # settle either way: where the scores agree, the hypotheses are the same.
    tied = np.abs(pure_score - g_score) <= 1e-5
    np.testing.assert_array_equal(_tokens(pure, 0)[tied], _tokens(greedy)[tied])
    np.testing.assert_array_equal(_tokens(kept, 0)[worse], _tokens(greedy)[worse])
    np.testing.assert_array_equal(_tokens(kept, 0)[~worse], _tokens(pure, 0)[~worse])
    np.testing.assert_allclose(to_numpy(kept["scores"])[:, 0],
                               np.maximum(pure_score, g_score), atol=1e-5)


def test_eos_handling_and_nbest_order():
    table = random_table(4)
    table[:, EOS] += 1.0  # short hypotheses
    step = markov_step(table)
    beam = beam_search(step, ops.zeros((3, 1)), 3, BOS, EOS, PAD, beam_width=4,
                       max_length=6, num_return=4)
    tokens, lengths = _tokens(beam), to_numpy(beam["lengths"])
    scores = to_numpy(beam["scores"])
    assert tokens.shape == (3, 4, 6)
    assert np.all(np.diff(scores, axis=1) <= 1e-6)  # best first
    for b in range(3):
        for h in range(4):
            n = lengths[b, h]
            seq = tokens[b, h]
            assert PAD not in seq[:n] and BOS not in seq[:n]
            assert np.all(seq[n:] == PAD)
            if n < 6:
                assert seq[n - 1] == EOS and EOS not in seq[: n - 1]
            # Reported log-probabilities are those of the hypotheses.
            np.testing.assert_allclose(to_numpy(beam["log_probs"])[b, h],
                                       sequence_log_prob(table, seq[:n]),
                                       atol=1e-4)
    assert len({tuple(t) for t in tokens[0]}) == 4  # distinct hypotheses


def test_min_length_blocks_early_eos():
    table = np.zeros((6, 6), "float32")
    table[:, EOS] = 10.0  # the model wants to stop at once
    step = markov_step(table)
    for search in (
        lambda **kw: greedy_search(step, ops.zeros((2, 1)), 2, BOS, EOS, PAD, **kw),
        lambda **kw: beam_search(step, ops.zeros((2, 1)), 2, BOS, EOS, PAD,
                                 beam_width=3, **kw),
        lambda **kw: sample(step, ops.zeros((2, 1)), 2, BOS, EOS, PAD, seed=1, **kw),
    ):
        result = search(max_length=8, min_length=4)
        lengths = to_numpy(result["lengths"]).reshape(-1)
        assert np.all(lengths >= 5), lengths  # 4 tokens, then EOS


def test_no_repeat_ngram_blocking():
    table = np.full((7, 7), -5.0, "float32")
    table[BOS, 4] = table[4, 5] = table[5, 4] = 5.0  # loves "4 5 4 5 ..."
    table[:, 6] = 0.0
    step = markov_step(table)
    free = beam_search(step, ops.zeros((1, 1)), 1, BOS, EOS, PAD, beam_width=2,
                       max_length=8)
    seq = list(_tokens(free)[0, 0])
    assert seq[:4] == [4, 5, 4, 5]
    blocked = beam_search(step, ops.zeros((1, 1)), 1, BOS, EOS, PAD, beam_width=2,
                          max_length=8, no_repeat_ngram_size=2, num_return=2)
    for seq in _tokens(blocked)[0]:
        bigrams = [tuple(seq[i:i + 2]) for i in range(len(seq) - 1)
                   if PAD not in seq[i:i + 2]]
        assert len(bigrams) == len(set(bigrams)), seq


def test_alignments_of_the_chosen_hypothesis():
    step = markov_step(random_table(5), source_length=5)
    beam = beam_search(step, ops.zeros((2, 1)), 2, BOS, EOS, PAD, beam_width=3,
                       max_length=6)
    att, lengths = to_numpy(beam["attention"])[:, 0], to_numpy(beam["lengths"])[:, 0]
    for b in range(2):
        for t in range(6):
            expected = np.eye(5)[min(t, 4)] if t < lengths[b] else np.zeros(5)
            np.testing.assert_array_equal(att[b, t], expected)


def test_coverage_penalty_in_the_score():
    step = markov_step(random_table(6), source_length=5)
    source_mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
    beam = beam_search(step, ops.zeros((2, 1)), 2, BOS, EOS, PAD, beam_width=3,
                       max_length=6, length_penalty=0.5, coverage_penalty=0.3,
                       num_return=3, source_mask=source_mask,
                       never_worse_than_greedy=False)
    att = to_numpy(beam["attention"])  # (B, n, T, S)
    coverage = att.sum(2)
    cp = 0.3 * np.where(source_mask[:, None], np.log(np.clip(coverage, 1e-10, 1)),
                        0).sum(-1)
    lp = ((5 + to_numpy(beam["lengths"])) / 6) ** 0.5
    np.testing.assert_allclose(to_numpy(beam["scores"]),
                               to_numpy(beam["log_probs"]) / lp + cp, atol=1e-4)


@pytest.mark.parametrize("search", ["greedy", "beam", "beam_coverage", "beam_fallback",
                                    "sample"])
def test_no_attention_history_decodes_the_same(search):
    """`return_attention=False` keeps no history: the same tokens and
    scores (the coverage penalty still sums the weights it needs)."""
    step = markov_step(random_table(8), source_length=5)
    source_mask = np.array([[True] * 3 + [False] * 2, [True] * 5])
    fn, kwargs = {
        "greedy": (greedy_search, {}),
        "sample": (sample, {"seed": 3}),
        "beam": (beam_search, {"beam_width": 3, "num_return": 2}),
        "beam_coverage": (beam_search, {"beam_width": 3, "coverage_penalty": 0.4,
                                        "length_penalty": 0.6,
                                        "source_mask": source_mask}),
        "beam_fallback": (beam_search, {"beam_width": 2, "coverage_penalty": 0.4,
                                        "never_worse_than_greedy": True}),
    }[search]
    kept = fn(step, ops.zeros((2, 1)), 2, BOS, EOS, PAD, max_length=6, **kwargs)
    bare = fn(step, ops.zeros((2, 1)), 2, BOS, EOS, PAD, max_length=6,
              return_attention=False, **kwargs)
    assert "attention" in kept and "attention" not in bare
    assert set(kept) - {"attention"} == set(bare)
    for key in bare:
        np.testing.assert_array_equal(to_numpy(bare[key]), to_numpy(kept[key]))


def test_sampling_filters_and_seed():
    table = random_table(7, vocab=9)
    step = markov_step(table)
    state = ops.zeros((64, 1))
    greedy = greedy_search(step, state, 64, BOS, EOS, PAD, max_length=6)
    top1 = sample(step, state, 64, BOS, EOS, PAD, max_length=6, top_k=1, seed=3)
    np.testing.assert_array_equal(_tokens(top1), _tokens(greedy))
    nucleus = sample(step, state, 64, BOS, EOS, PAD, max_length=6, top_p=1e-6,
                     seed=3)
    np.testing.assert_array_equal(_tokens(nucleus), _tokens(greedy))
    a = sample(step, state, 64, BOS, EOS, PAD, max_length=6, seed=11)
    b = sample(step, state, 64, BOS, EOS, PAD, max_length=6, seed=11)
    np.testing.assert_array_equal(_tokens(a), _tokens(b))
    # top_k=2: the first token is one of the two most likely after BOS.
    first = _tokens(sample(step, state, 64, BOS, EOS, PAD, max_length=3, top_k=2,
                           seed=5))[:, 0]
    logits = table[BOS].copy()
    logits[[PAD, BOS]] = -1e9
    allowed = set(np.argsort(-logits)[:2])
    assert set(first) <= allowed and len(set(first)) == 2
    # Scores are the drawn tokens' log-probabilities.
    for row in range(3):
        n = int(to_numpy(a["lengths"])[row])
        np.testing.assert_allclose(to_numpy(a["scores"])[row],
                                   sequence_log_prob(table, _tokens(a)[row, :n]),
                                   atol=1e-4)


def test_sampling_matches_the_distribution():
    table = np.zeros((6, 6), "float32")
    table[BOS, 4], table[BOS, 5], table[BOS, EOS] = 1.0, 0.0, -1.0
    step = markov_step(table)
    n = 6000
    first = _tokens(sample(step, ops.zeros((n, 1)), n, BOS, EOS, PAD,
                           max_length=1, seed=0))[:, 0]
    logits = table[BOS].astype("float64")
    logits[[PAD, BOS]] = -np.inf
    p = np.exp(logits - logits.max())
    p /= p.sum()
    for tok in (UNK, EOS, 4, 5):
        assert abs((first == tok).mean() - p[tok]) < 0.03, tok


def test_bad_arguments():
    step = markov_step(random_table(0))
    state = ops.zeros((1, 1))
    with pytest.raises(ValueError, match="`beam_width`"):
        beam_search(step, state, 1, BOS, EOS, beam_width=0)
    with pytest.raises(ValueError, match="`num_return`"):
        beam_search(step, state, 1, BOS, EOS, beam_width=2, num_return=3)
    with pytest.raises(ValueError, match="`max_length`"):
        greedy_search(step, state, 1, BOS, EOS, max_length=0)
    with pytest.raises(ValueError, match="`min_length`"):
        greedy_search(step, state, 1, BOS, EOS, max_length=3, min_length=5)
    with pytest.raises(ValueError, match="`temperature`"):
        sample(step, state, 1, BOS, EOS, temperature=0)
    with pytest.raises(ValueError, match="`top_p`"):
        sample(step, state, 1, BOS, EOS, top_p=1.5)
    with pytest.raises(ValueError, match="`coverage_penalty` needs"):
        beam_search(lambda t, s, i: (ops.take(ops.convert_to_tensor(
            random_table(0)), t, axis=0), s), state, 1, BOS, EOS,
            coverage_penalty=0.2)


def test_step_functions_without_attention():
    table = ops.convert_to_tensor(random_table(8))

    def step(tokens, state, index):  # (logits, state): no attention output
        return ops.take(table, tokens, axis=0), state

    state = ops.zeros((2, 1))
    greedy = greedy_search(step, state, 2, BOS, EOS, PAD, max_length=5)
    beam = beam_search(step, state, 2, BOS, EOS, PAD, beam_width=1, max_length=5)
    drawn = sample(step, state, 2, BOS, EOS, PAD, max_length=5, seed=0)
    assert "attention" not in greedy and "attention" not in beam
    np.testing.assert_array_equal(_tokens(beam, 0), _tokens(greedy))
    assert _tokens(drawn).shape == (2, 5)


@pytest.mark.parametrize("search", ["greedy", "beam", "sample"])
def test_loops_stop_once_every_hypothesis_has_finished(search):
    # A chain BOS -> 4 -> 5 -> EOS (then PAD): the best hypothesis ends after
    # 3 tokens, so the loop must stop early, not run max_length = 20 steps.
    # Step calls are counted where the loop body runs once per step: eager
    # TensorFlow and torch, and JAX with jit disabled (lax.while_loop then
    # runs as a Python loop).
    table = np.full((7, 7), -30.0, "float32")
    table[:, EOS] = 0.0  # second best everywhere: the other beams end too
    table[BOS, 4] = table[4, 5] = table[5, EOS] = table[EOS, EOS] = 30.0
    inner = markov_step(table)
    calls = []

    def step(tokens, state, index):
        calls.append(index)
        return inner(tokens, state, index)

    def run():
        state = ops.zeros((2,))
        if search == "greedy":
            return greedy_search(step, state, 2, BOS, EOS, PAD, max_length=20)
        if search == "sample":
            return sample(step, state, 2, BOS, EOS, PAD, max_length=20, seed=1)
        return beam_search(step, state, 2, BOS, EOS, PAD, beam_width=3,
                           max_length=20, num_return=3,
                           never_worse_than_greedy=False)

    if keras.backend.backend() == "jax":
        import jax

        with jax.disable_jit():
            result = run()
    else:
        result = run()
    tokens = to_numpy(result["tokens"]).reshape(-1, 20)
    # The outputs are those of the full-length loop: PAD after EOS.
    np.testing.assert_array_equal(tokens[0], [4, 5, EOS] + [PAD] * 17)
    # The first step, then one per token of the longest hypothesis (beam
    # search goes on until all its K beams have ended).
    longest = int(np.max(to_numpy(result["lengths"])))
    assert longest < 20 and (search == "beam" or longest == 3), longest
    assert len(calls) == 1 + longest, calls
