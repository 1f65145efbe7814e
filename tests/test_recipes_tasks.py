"""The captioning and reading recipes' pieces (their runs: tests/test_zoo_runner.py)."""

import numpy as np

from kerattn.datasets import WordVocabulary
from kerattn.recipes import captioning, reading


def test_caption_arrays_shift_by_one():
    vocab = WordVocabulary.build(["six five", "one"])
    c_in, c_out = captioning.caption_arrays(["six five", "one"], vocab)
    assert c_in[0, 0] == vocab.bos_id and c_out[0, 2] == vocab.eos_id
    shifted = c_in[:, 1:] > 0
    np.testing.assert_array_equal(c_in[:, 1:][shifted], c_out[:, :-1][shifted])
    assert c_out[1, 2] == 0 and c_in[1, 2] == 0


def test_pretrained_encoder_is_fixed():
    # One epoch of one copy of each digit: the test asks for a fixed CNN
    # and its grid, not for how well it classifies.
    encoder = captioning.pretrained_encoder((8, 45, 1), epochs=1, copies=1)
    assert not encoder.trainable and encoder.trainable_weights == []
    # The base preset's grid: one location per 9-pixel digit cell.
    assert tuple(encoder.compute_output_shape((None, 8, 45, 1))) == (None, 1, 5, 64)


def test_reading_paired_difference():
    """AoA minus bigram on the same questions: the mean per-question
    difference and 1.96 x its sample sd / sqrt(n) (by hand in NumPy)."""
    rng = np.random.default_rng(3)
    a, b = rng.random(500) < 0.6, rng.random(500) < 0.5
    d, half = reading.paired_difference(a, b)
    diff = a.astype(float) - b.astype(float)
    assert d == round(diff.mean(), 4)
    assert half == round(1.96 * np.sqrt(((diff - diff.mean()) ** 2).sum() / 499 / 500), 4)
