"""The tools of the study of why hard monotonic attention does not decide on
translation (zoo/ablation.py): the stopping probabilities `p` recovered
from the expected alignments they gave, checked against the `p` that made
them and against the closed form of the mass that reaches each position
(Raffel et al. 2017, section 2.3); what `SelectionWatch` reports of a
model whose decisions are certain either way; `bahdanau_nmt`'s
`attention_options`; and the soft model's energy carried into a monotonic
one (the `monotonic-from-soft` phase)."""

import os
import sys

import numpy as np
import pytest

from cases import to_numpy
from kerattn.layers import monotonic_alignment
from kerattn.recipes import translation
from kerattn.recipes.common import carry_weights

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "zoo"))
import ablation  # noqa: E402  (zoo/ablation.py)

PAIRS = [("a b c", "x y"), ("b c", "y z w"), ("c a b a", "z x"), ("a", "w x y"),
         ("b a", "x"), ("c c b", "y y z")]
# Not the longest row first; the first row's last steps and positions padded.
SOURCE = np.array([[4, 5, 0, 0], [6, 7, 8, 5], [5, 4, 6, 0]], "int32")
TARGET_IN = np.array([[2, 4, 5, 0], [2, 6, 7, 8], [2, 7, 0, 0]], "int32")
INPUTS = {"source_ids": SOURCE, "target_in_ids": TARGET_IN}


def np_reaching_mass(p, previous):
    """q_ij = sum_{k <= j} a_{i-1,k} prod_{l=k}^{j-1} (1 - p_il): the mass
    that reaches position j (Raffel et al. 2017, section 2.3, closed form)."""
    q = np.zeros_like(p)
    for j in range(p.shape[-1]):
        for k in range(j + 1):
            q[..., j] += previous[..., k] * np.prod(1.0 - p[..., k:j], axis=-1)
    return q


def test_the_stopping_probabilities_come_back_from_the_alignments():
    """Alignments made by `monotonic_alignment` step after step from known
    `p` (padding at 0, rows of different lengths, not the longest first):
    `selection_probabilities` gives that `p` back wherever a thousandth of
    the mass reaches, and `q` equals the closed form."""
    rng = np.random.default_rng(0)
    lengths = [4, 6, 2]
    batch, steps, positions = 3, 5, 6
    p = rng.uniform(0.05, 0.95, (batch, steps, positions))
    for row, length in enumerate(lengths):
        p[row, :, length:] = 0.0
    initial = np.zeros((batch, positions))
    initial[:, 0] = 1.0
    alignments, previous = [], initial
    for i in range(steps):
        previous = to_numpy(monotonic_alignment(p[:, i].astype("float32"),
                                                previous.astype("float32")))
        alignments.append(previous)
    alignments = np.stack(alignments, 1)
    got_p, got_q = ablation.selection_probabilities(alignments, initial)
    previous = np.concatenate([initial[:, None], alignments[:, :-1]], 1)
    expected_q = np.stack([np_reaching_mass(p[:, i], previous[:, i])
                           for i in range(steps)], 1)
    np.testing.assert_allclose(got_q, expected_q, atol=1e-5)
    reached = expected_q > 1e-3
    assert reached.sum() > 30   # the check is not empty
    np.testing.assert_allclose(got_p[reached], p[reached], atol=2e-3)
    assert np.isnan(got_p[~reached]).all()


def _data():
    return translation.prepare(splits={"train": PAIRS * 2, "valid": PAIRS[:2],
                                       "test": PAIRS[2:4]})


@pytest.mark.parametrize("r", [-12.0, 12.0])
def test_the_watch_sees_certain_decisions_either_way(r):
    """With the energies' bias far from zero every p is about 0 or about 1:
    the watch must say that no step decides (and the mass stops nowhere)
    or that every step decides (and all the mass stops)."""
    data = _data()
    net = translation.build("bahdanau_nmt", data, "tiny",
                            attention="hard-monotonic",
                            attention_options={"score_bias_init": r})
    stats = ablation.selection_statistics(net, INPUTS)
    assert stats["r"] == r
    certain = r > 0
    assert stats["decides"] == float(certain)
    assert stats["p_at_least_half"] == float(certain)
    assert stats["stops_somewhere"] == pytest.approx(float(certain), abs=1e-3)
    assert (stats["p_quantiles"]["50"] > 0.99) == certain


def test_the_watch_records_before_training_and_at_each_epoch_end():
    data = _data()
    net = translation.build("bahdanau_nmt", data, "tiny",
                            attention="hard-monotonic")
    watch = ablation._watch(net, data)
    assert len(watch) == 1
    translation.train(net, data, epochs=2, callbacks=watch, verbose=0)
    rows = watch[0].rows
    assert [r["epoch"] for r in rows] == [0, 1, 2]
    # r starts at bahdanau_nmt's -1 and trains.
    assert rows[0]["r"] == -1.0 and rows[-1]["r"] != -1.0
    assert ablation._watch(translation.build("bahdanau_nmt", data, "tiny"),
                           data) == []   # soft attention: nothing to watch


def test_a_monotonic_attention_starts_from_the_soft_energy():
    """The `monotonic-from-soft` phase's model computes the converged soft
    model's energies plus r: its energy holds the soft W, U, v with
    g = ||v|| and b = 0 (checked on random queries and keys, the soft
    weights randomised so that ||v|| is not the initial g)."""
    data = _data()
    soft = translation.build("bahdanau_nmt", data, "tiny")
    rng = np.random.default_rng(3)
    soft.set_weights([rng.normal(0, 0.5, w.shape).astype("float32")
                      for w in soft.get_weights()])
    _, _, options, moved, finish = ablation.PHASES["bahdanau_nmt"][
        "monotonic-from-soft"]
    hard = translation.with_options(soft, "bahdanau_nmt", data, "tiny",
                                    moved=moved, **options)
    getattr(ablation, finish)(soft, hard)
    soft_energy = soft.get_layer("decoder").attention
    monotonic = hard.get_layer("decoder").attention
    query = rng.normal(size=(2, 3, soft_energy.W_a.shape[0])).astype("float32")
    key = rng.normal(size=(2, 5, soft_energy.U_a.shape[0])).astype("float32")
    expected = to_numpy(soft_energy._calculate_scores(
        query, soft_energy.project_key(key)))
    got, _ = monotonic._energies(query, monotonic.project_key(key))
    np.testing.assert_allclose(to_numpy(got), expected - 4.0, atol=1e-5)
    fresh = carry_weights(soft, translation.build(
        "bahdanau_nmt", data, "tiny", **options), moved)
    assert sorted(fresh) == ["decoder/attention/energy/b",
                             "decoder/attention/energy/g",
                             "decoder/attention/score_bias"]
    with pytest.raises(ValueError, match="`moved`"):
        carry_weights(soft, hard, {"decoder/attention/nothing": "x"})


def test_padding_changes_nothing_the_watch_reports():
    """The statistics of a short row padded inside the batch equal those of
    the row alone, trimmed: padded steps and positions count nowhere."""
    data = _data()
    net = translation.build("bahdanau_nmt", data, "tiny",
                            attention="hard-monotonic",
                            attention_options={"score_bias_init": 0.0})
    rng = np.random.default_rng(5)
    net.set_weights([rng.normal(0, 0.5, w.shape).astype("float32")
                     for w in net.get_weights()])
    for row, (sources, steps) in ((0, (2, 3)), (2, (3, 2))):
        padded = ablation.selection_statistics(
            net, {k: v[[row, 1]] for k, v in INPUTS.items()})
        alone = ablation.selection_statistics(
            net, {"source_ids": SOURCE[[row]][:, :sources],
                  "target_in_ids": TARGET_IN[[row]][:, :steps]})
        with_long = ablation.selection_statistics(
            net, {k: v[[1]] for k, v in INPUTS.items()})
        assert alone != with_long   # the rows differ, so the check can fail
        # The padded row's share of the pooled figures is its own.
        assert padded["decides"] == pytest.approx(
            (alone["decides"] * steps + with_long["decides"] * 4) / (steps + 4),
            abs=3e-4)
        assert padded["stops_somewhere"] == pytest.approx(
            (alone["stops_somewhere"] * steps + with_long["stops_somewhere"] * 4)
            / (steps + 4), abs=3e-4)
