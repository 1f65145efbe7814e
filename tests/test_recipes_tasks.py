"""The captioning recipe end to end (tiny), the other reports from fake results."""

import functools
import json
import os

import numpy as np
import pytest

from kerattn.datasets import WordVocabulary
from kerattn.recipes import captioning, reading


def test_captioning_recipe_end_to_end(tmp_path, monkeypatch):
    pretrain = functools.partial(captioning.pretrained_encoder, epochs=1, copies=1)
    monkeypatch.setattr(captioning, "pretrained_encoder", pretrain)
    results = captioning.main(["--attention", "both", "--train", "32", "--test", "8",
                               "--epochs", "1", "--pretrain-encoder", "--preset", "tiny",
                               "--seeds", "2", "--out", str(tmp_path)])
    for attention in ("soft", "hard"):
        r = results[attention]
        for beam in ("beam1", "beam3"):
            assert 0.0 <= r[beam]["exact_caption_accuracy"] <= 1.0
            assert 0.0 <= r[beam]["own_digit_share_all"] <= 1.0
        # Two seeds: the mean and standard deviation of the per-seed figures.
        exact = [s["exact"] for s in r["by_seed"]]
        assert [s["seed"] for s in r["by_seed"]] == [1, 2]
        assert abs(r["beam1"]["exact_caption_accuracy"] - np.mean(exact)) < 1e-4
        assert abs(r["beam1"]["exact_caption_accuracy_sd"] - np.std(exact, ddof=1)) < 1e-4
        assert os.path.exists(os.path.join(tmp_path, f"model_{attention}.keras"))
    # A second command (hard only, the paper's expected context and two
    # samples a caption) joins the study; with no run of the recipe's
    # default settings, the headline is the latest run.
    captioning.main(["--attention", "hard", "--train", "32", "--test", "8",
                     "--epochs", "1", "--preset", "tiny", "--expectation-rate", "0.5",
                     "--samples-per-caption", "2", "--out", str(tmp_path)])
    with open(os.path.join(tmp_path, "results.json")) as f:
        saved = json.load(f)
    assert set(saved["results"]) == {"hard"} and saved["results"]["hard"]["seeds"] == 1
    assert len(saved["study"]) == 2
    first = [e for e in saved["study"].values() if "--seeds 2" in e["command"]]
    assert set(first[0]["results"]) == {"soft", "hard"}
    new = [e for e in saved["study"].values() if "--expectation-rate" in e["command"]]
    assert set(new[0]["results"]) == {"hard"} and new[0]["results"]["hard"]["seeds"] == 1
    # The same settings with another seed add it: two seeds, one row.
    captioning.main(["--attention", "hard", "--train", "32", "--test", "8",
                     "--epochs", "1", "--preset", "tiny", "--expectation-rate", "0.5",
                     "--samples-per-caption", "2", "--seed", "4", "--out", str(tmp_path)])
    with open(os.path.join(tmp_path, "results.json")) as f:
        saved = json.load(f)
    assert len(saved["study"]) == 2
    assert [s["seed"] for s in saved["results"]["hard"]["by_seed"]] == [1, 4]
    assert len(saved["study"][next(k for k in saved["study"] if "p=0.5" in k)]
               ["commands"]) == 2
    with open(os.path.join(tmp_path, "RESULTS.md")) as f:
        text = f.read()
    assert "| hard | greedy |" in text and "| hard | beam 3 |" in text
    assert "| soft | 2 |" in text
    assert "hard: expected context p=0.5, 2 samples per caption | hard | 2 |" in text
    assert "![hard attention](attention_hard.png)" in text
    assert "- hard, run \"32 strips x 1 epochs, initial state mean, preset tiny; hard:" in text
    # A results.json from before the study (one run of the defaults, no
    # "study") becomes the study's defaults row and stays the headline;
    # --report-only rewrites RESULTS.md from it and trains nothing.
    old = {"meta": {"backend": "jax", "train": 40000, "test": 1000, "jitter": 0,
                    "other_runs": [{"run": "an earlier run", "soft": [0.8, 0.5],
                                    "hard": [0.7, 0.2]}]},
           "results": {"soft": saved["results"]["hard"]["per_seed"][0]}}
    with open(os.path.join(tmp_path, "results.json"), "w") as f:
        json.dump(old, f)
    captioning.main(["--attention", "soft", "--train", "32", "--test", "8",
                     "--epochs", "1", "--preset", "tiny", "--out", str(tmp_path)])
    with open(os.path.join(tmp_path, "results.json")) as f:
        saved = json.load(f)
    assert len(saved["study"]) == 2
    assert saved["results"] == old["results"]
    assert saved["meta"]["other_runs"] == old["meta"]["other_runs"]
    os.remove(os.path.join(tmp_path, "RESULTS.md"))
    captioning.main(["--report-only", "--out", str(tmp_path)])
    with open(os.path.join(tmp_path, "RESULTS.md")) as f:
        text = f.read()
    assert "| 40,000 strips x 8 epochs, initial state mean | soft | 1 |" in text
    assert "| an earlier run | 0.800 | 0.500 | 0.700 | 0.200 |" in text


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


def test_captioning_run_names_say_where_a_run_leaves_its_preset():
    """A flag set to its preset's value names the same run as leaving it
    out (so their seeds join one study row); soft-only runs are not named
    by settings of hard attention."""
    parser_defaults = ["--train", "40000", "--epochs", "8"]

    def name(*flags):
        args = captioning._parser().parse_args([*parser_defaults, *flags])
        return captioning.run_name(captioning._settings(args))

    base = captioning.sizes("base")
    pools = captioning.pools_text(base["encoder_pool_sizes"])
    assert pools == "1x1,8x9"
    assert name() == "40,000 strips x 8 epochs, initial state mean"
    assert name("--encoder-pool-sizes", pools, "--expectation-rate",
                str(base["expectation_rate"])) == name()
    assert name("--encoder-pool-sizes", "2x2,4x1") == (
        "40,000 strips x 8 epochs, initial state mean, encoder pools 2x2,4x1")
    assert name("--expectation-rate", "0") == (
        "40,000 strips x 8 epochs, initial state mean; hard: expected context p=0.0")
    assert name("--attention", "soft", "--encoder-pool-sizes", "2x2,4x1").endswith(
        "encoder pools 2x2,4x1")
    assert name("--preset", "tiny").endswith("preset tiny")
    # One grid, one spelling: spaces around the windows name the same run.
    assert name("--encoder-pool-sizes", "2x2, 4x1") == name(
        "--encoder-pool-sizes", "2x2,4x1")


def test_captioning_grid_text_follows_the_pooling():
    """RESULTS.md's grid sentence is computed from the pools (valid max
    pooling: each stage floors the strip's size), for any pools."""
    assert captioning.parse_pools(" 1x1 , 8x9") == ((1, 1), (8, 9))
    assert "a 1 x 5 annotation grid" in captioning.grid_text(((1, 1), (8, 9)))
    assert "pools 8 x 9 pixels" in captioning.grid_text(((1, 1), (8, 9)))
    # 8 x 45 -> 4 x 22 -> 1 x 22; each location 8 x 2 pixels
    assert "a 1 x 22 annotation grid: each location pools 8 x 2" in (
        captioning.grid_text(((2, 2), (4, 1))))
    assert "a 2 x 7 annotation grid" in captioning.grid_text(((2, 3), (2, 2)))
    for bad in ("2x", "0x1", "2x2x2", "a,b"):
        with pytest.raises(ValueError, match="encoder_pool_sizes"):
            captioning.parse_pools(bad)


@pytest.mark.parametrize("flags", [["--expectation-rate", "0.5"],
                                   ["--samples-per-caption", "2"]])
def test_captioning_recipe_refuses_hard_flags_for_soft(flags, tmp_path, capsys):
    with pytest.raises(SystemExit):
        captioning.main(["--attention", "soft", "--train", "8", "--test", "4",
                         *flags, "--out", str(tmp_path)])
    assert "hard attention's" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


def test_reading_paired_difference():
    """AoA minus bigram on the same questions: the mean per-question
    difference and 1.96 x its sample sd / sqrt(n) (by hand in NumPy)."""
    rng = np.random.default_rng(3)
    a, b = rng.random(500) < 0.6, rng.random(500) < 0.5
    d, half = reading.paired_difference(a, b)
    diff = a.astype(float) - b.astype(float)
    assert d == round(diff.mean(), 4)
    assert half == round(1.96 * np.sqrt(((diff - diff.mean()) ** 2).sum() / 499 / 500), 4)
