"""A phase: an option switched on for the last steps of training (See et
al. 2017 add coverage and its loss for their last 3,000 iterations).

`kerattn.recipes.common.carry_weights` and `translation.with_options`
carry every weight of a converged model into the model built with the
option on, checked by what the model computes: with the option's own new
weights at zero, coverage's score is the concat score, so the phase's model
gives the converged model's logits exactly, and only the phase's model has
the coverage loss. `luong_nmt(coverage_loss_weight=)` against NumPy's eq.
12-13 over the alignments of the model's own decoding step; a phase trains
exactly its steps."""

import numpy as np
import pytest

import kerattn
from cases import to_numpy
from kerattn.recipes import translation
from kerattn.recipes.common import carry_weights

PAIRS = [("a b c", "x y"), ("b c", "y z w"), ("c a b a", "z x"), ("a", "w x y"),
         ("b a", "x"), ("c c b", "y y z")]
SOURCE = np.array([[4, 5, 0, 0], [6, 7, 8, 5], [5, 4, 6, 0]], "int32")
TARGET_IN = np.array([[2, 4, 5, 0], [2, 6, 7, 8], [2, 7, 0, 0]], "int32")
INPUTS = {"source_ids": SOURCE, "target_in_ids": TARGET_IN}


def _data():
    return translation.prepare(splits={"train": PAIRS * 2, "valid": PAIRS[:2],
                                       "test": PAIRS[2:4]})


def _randomised(model, seed=1):
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(0, 0.3, w.shape).astype("float32")
                       for w in model.get_weights()])
    return model


def np_coverage_loss(alphas, weight, step_mask, location_mask):
    """See et al. (2017), eq. 12-13: step t pays sum_i min(a^t_i, c^t_i),
    c^t = sum_{t' < t} a^{t'}, over the real source positions; lambda times
    the mean over the batch's real steps."""
    total, steps = 0.0, 0
    for a, real_steps, places in zip(alphas.astype(np.float64), step_mask,
                                     location_mask):
        c = np.zeros(a.shape[-1])
        for t in range(a.shape[0]):
            if real_steps[t]:
                total += float((np.minimum(a[t], c) * places).sum())
                steps += 1
            c = c + a[t]
    return weight * total / max(steps, 1)


def _carries_all_but_coverage(converged, switched, expected):
    """`carry_weights(converged, switched)` leaves only coverage's own
    weights fresh: w_c (eq. 11) and, where the score has none yet, a bias;
    at zero the coverage term vanishes and `switched` gives `expected`,
    the converged model's logits."""
    fresh = carry_weights(converged, switched)
    assert fresh and all(p.split("/")[-1] in ("w_c", "b") for p in fresh), fresh
    for variable in switched.weights:
        if variable.path in fresh:
            variable.assign(np.zeros(variable.shape, "float32"))
    np.testing.assert_allclose(to_numpy(switched(INPUTS)), expected,
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,base,phase", [
    ("bahdanau_nmt", {}, {"coverage": True}),
    ("luong_nmt", {"score": "concat"},
     {"attention": "coverage", "coverage_loss_weight": 1.0}),
])
def test_a_phase_carries_every_weight_and_switches_the_option_on_only_there(
        name, base, phase):
    data = _data()
    converged = _randomised(translation.build(name, data, "tiny", **base))
    expected = to_numpy(converged(INPUTS))
    switched = translation.build(name, data, "tiny", **base, **phase)
    _carries_all_but_coverage(converged, switched, expected)
    assert len(switched.losses) == 1 and not converged.losses
    # The control: the same options, every weight carried, nothing new.
    control = translation.with_options(converged, name, data, "tiny", **base)
    np.testing.assert_allclose(to_numpy(control(INPUTS)), expected,
                               rtol=1e-6, atol=1e-6)
    assert not control.losses
    assert len(control.weights) == len(converged.weights)


def test_carrying_refuses_a_model_that_cannot_hold_the_weights():
    data = _data()
    tiny = translation.build("bahdanau_nmt", data, "tiny")
    covered = translation.build("bahdanau_nmt", data, "tiny", coverage=True)
    with pytest.raises(ValueError, match="`target`.*No place for decoder/attention"):
        carry_weights(covered, tiny)                 # w_c has nowhere to go
    wider = translation.build("bahdanau_nmt", data, "tiny", units=12)
    with pytest.raises(ValueError, match="shape of"):
        carry_weights(tiny, wider)


def test_luong_nmt_adds_the_coverage_loss_of_its_alignments():
    """The graph's loss term equals NumPy's eq. 12-13 over the alignments
    that the model's own step gives, step by step."""
    model = _randomised(kerattn.zoo.luong_nmt(
        12, 10, attention="coverage", preset="tiny", units=8, embedding_dim=6,
        coverage_loss_weight=0.5))
    model(INPUTS)
    assert len(model.losses) == 1
    state = model.encode(SOURCE)
    alphas = []
    for t in range(TARGET_IN.shape[1]):
        _, state, weights = model.step(TARGET_IN[:, t], state, t)
        alphas.append(to_numpy(weights))
    alphas = np.stack(alphas, axis=1)                       # (B, T, S)
    expected = np_coverage_loss(alphas, 0.5, TARGET_IN > 0, SOURCE > 0)
    assert expected > 0.01
    np.testing.assert_allclose(float(to_numpy(model.losses[0])), expected,
                               rtol=1e-4)


def test_a_phase_trains_exactly_its_steps():
    data = _data()
    model = translation.build("bahdanau_nmt", data, "tiny")
    summary = translation.train(model, data, steps=3, batch_size=2, verbose=0)
    assert summary["epochs"] == 1 and summary["steps"] == 3
    with pytest.raises(ValueError, match="`steps`"):
        translation.train(model, data, steps=0)


def test_two_phases_start_from_one_converged_model():
    """The phase and its control both start from the same converged model:
    training the first must leave that model whole (under JAX an assigned
    array was shared, and training donated, so deleted, the source's)."""
    data = _data()
    converged = _randomised(translation.build("bahdanau_nmt", data, "tiny"))
    before = [w.copy() for w in converged.get_weights()]
    control = translation.with_options(converged, "bahdanau_nmt", data, "tiny")
    translation.train(control, data, steps=2, batch_size=2, verbose=0)
    for got, expected in zip(converged.get_weights(), before):
        np.testing.assert_array_equal(got, expected)
    phase = translation.with_options(converged, "bahdanau_nmt", data, "tiny",
                                     coverage=True)
    translation.train(phase, data, steps=2, batch_size=2, verbose=0)
    assert not np.allclose(control.get_weights()[0], before[0])   # it trained


def test_a_stack_is_carried_layer_by_layer_from_a_run_folder(tmp_path):
    """`luong_nmt`'s stacked decoder cells are `lstm` and `lstm_2` (the
    recipe's two layers): one place once Keras' numbering of unnamed layers
    is left out, so each is matched by its rank in its layer. From the run
    folder the ablation saves its converged model in (a `.keras` file,
    loaded back), every weight lands in its own layer: with coverage's new
    weights at zero the phase's model gives the saved model's logits."""
    from kerattn.runs import Run

    data = _data()
    stack = {"score": "concat", "num_layers": 2}
    built = _randomised(translation.build("luong_nmt", data, "tiny", **stack))
    expected = to_numpy(built(INPUTS))
    Run(built, "translation", {"source": data["source_vocab"],
                               "target": data["target_vocab"]}).save(
        str(tmp_path / "run"))
    converged = kerattn.load_run(str(tmp_path / "run")).model
    switched = translation.build("luong_nmt", data, "tiny", **stack,
                                 attention="coverage", coverage_loss_weight=1.0)
    _carries_all_but_coverage(converged, switched, expected)
