"""Beam search reorders the state of every attention that carries one (the
long-input families and the location family): a pure beam as wide as every
prefix scores each hypothesis as the model run along it alone, and a search
that leaves the attention's state out of the reorder does not
(`cases.check_beam_carries_attention_state`). Each family's weights are
drawn from NumPy (the same model on every backend) at a scale and seed
where its state moves the scores: the control search then scores at
least one hypothesis wrong by more than 1e-3."""

import pytest

from cases import check_beam_carries_attention_state
from kerattn import layers

# name -> (the attention, the scale of its weights, the seed)
FAMILIES = {
    "gmm": (lambda: layers.GMMAttention(2, units=4, initial_scale=0.8), 0.5, 6),
    "dca": (lambda: layers.DynamicConvolutionAttention(
        4, static_filters=2, static_width=3, dynamic_filters=2, dynamic_width=3,
        prior_length=3), 1.0, 6),
    "forward": (lambda: layers.ForwardAttention(4, filters=2, kernel_size=3), 1.0, 5),
    "forward-ta": (lambda: layers.ForwardAttention(4, filters=2, kernel_size=3,
                                                   transition_agent="move"), 0.5, 5),
    "stepwise-monotonic": (lambda: layers.StepwiseMonotonicAttention(4, noise_std=0.0),
                           1.0, 5),
    "location-two-channels": (lambda: layers.LocationSensitiveAttention(
        4, filters=2, kernel_size=3, channels=("previous", "cumulative")), 1.0, 5),
    "location-2d": (lambda: layers.LocationSensitiveAttention(
        4, filters=2, kernel_size=3, previous_steps=3), 1.0, 5),
    "recurrent-location": (lambda: layers.RecurrentLocationAttention(
        4, filters=2, kernel_size=3), 1.0, 4),
    "multi-head-location": (lambda: layers.MultiHeadLocationAttention(
        2, 2, location=True, filters=2, kernel_size=3), 1.0, 4),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_beam_search_carries_each_hypothesis_attention_state(name):
    make, boost, seed = FAMILIES[name]
    check_beam_carries_attention_state(make(), seed=seed, boost=boost)
