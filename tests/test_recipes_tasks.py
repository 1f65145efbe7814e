"""The captioning recipe end to end (tiny), the other reports from fake results."""

import functools
import json
import os

import numpy as np
import pytest

from kerattn.datasets import WordVocabulary
from kerattn.recipes import captioning, classification, reading


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


def test_classification_and_reading_reports():
    han = {"meta": {"backend": "jax", "embeddings": "lsa", "unlabelled_texts": 10,
                    "documents": {"train": 7, "valid": 2, "test": 3},
                    "vocabulary": 50, "max_sentences": 10, "max_words": 40,
                    "sizes": {"embedding_dim": 200}},
           "han_test_accuracy": 0.75, "han_best_valid_accuracy": 0.74,
           "baselines": {"majority_class": 0.19, "tfidf_logistic_regression": 0.719},
           "train": {"epochs": 9, "minutes": 4.0, "parameters": 1000,
                     "schedule": "two-stage"}}
    text = classification.report(han)
    assert "| **HAN** (kerattn.zoo.han_classifier) | **0.750** |" in text
    assert "| TF-IDF + logistic regression (computed by the recipe) | 0.719 |" in text
    kinds = {"names": 0.5, "nouns": 0.4, "verbs": 0.3, "prepositions": 0.6, "all": 0.5}
    aoa = {"meta": {"backend": "jax", "questions": {"train": 1, "valid": 1, "test": 1},
                    "test_per_kind": {"names": 1}, "vocabulary": 5, "sizes": {}},
           "aoa_test_accuracy": kinds,
           "baselines": {"most_frequent": kinds, "bigram": kinds},
           "train": {"epochs": 1, "steps": 3, "minutes": 1.0, "parameters": 10,
                     "final_val_accuracy": 0.5}}
    text = reading.report(aoa)
    assert "| **AoA Reader** (kerattn.zoo.aoa_reader) | 0.500 | 0.400 | 0.300 | 0.600 | 0.500 |" in text
    assert "names +0.000 ± 1.386" in text   # one question: 1.96 * sqrt(2 * 0.25)


def test_classification_seeds_aggregate_and_report():
    """Several seeds: the mean and sample deviation of the test accuracy
    (NumPy's), each seed listed, the first seed's split figures kept."""
    base = {"baselines": {"majority_class": 0.19, "tfidf_logistic_regression": 0.719},
            "schedule": "two-stage", "parameters": 1000}
    runs = [dict(base, seed=s, accuracy=a, best_valid_accuracy=v, epochs=e, minutes=m)
            for s, a, v, e, m in [(1, 0.734, 0.73, 19, 11.6), (2, 0.751, 0.74, 16, 9.0),
                                  (3, 0.722, 0.72, 22, 13.1)]]
    r = classification.aggregate(runs)
    accuracies = [0.734, 0.751, 0.722]
    assert r["han_test_accuracy"] == round(np.mean(accuracies), 4)
    assert r["han_test_accuracy_sd"] == round(np.std(accuracies, ddof=1), 4)
    assert r["seeds"] == [1, 2, 3] and r["per_seed"] == runs
    assert r["train"]["epochs"] == round(np.mean([19, 16, 22]), 1)
    r["meta"] = {"backend": "jax", "embeddings": "lsa", "unlabelled_texts": 10,
                 "documents": {"train": 7, "valid": 2, "test": 857},
                 "vocabulary": 50, "max_sentences": 10, "max_words": 40,
                 "sizes": {"embedding_dim": 200}}
    r["settings"] = dict(classification.DEFAULTS)   # a run at today's defaults
    text = classification.report(r)
    assert "`python zoo/han_classifier/recipe.py --seeds 3`" in text
    assert "mean ± sd of 3 seeds | **0.736 ± 0.015** |" in text
    assert "seed 1: 0.734, seed 2: 0.751, seed 3: 0.722" in text
    one = classification.aggregate(runs[1:2])
    assert one["han_test_accuracy"] == 0.751 and "han_test_accuracy_sd" not in one
    one["meta"], one["settings"] = r["meta"], r["settings"]
    text = classification.report(one)
    assert "`python zoo/han_classifier/recipe.py --seed 2`" in text
    half = 1.96 * np.sqrt(0.751 * 0.249 / 857)
    assert f"test documents is ± {half:.3f}." in text


def test_reading_difference_intervals_against_the_formula():
    """AoA minus a baseline, with the 95% interval of a difference of two
    independent proportions: 1.96 * sqrt(p(1-p)/n + q(1-q)/n)."""
    r = {"meta": {"test_per_kind": {"verbs": 192, "all": 3994}},
         "aoa_test_accuracy": {"verbs": 0.375, "all": 0.534, "names": 0.5},
         "baselines": {"bigram": {"verbs": 0.401, "all": 0.423, "names": 0.44}}}
    rows = {kind: (d, h) for kind, d, h in reading.difference_intervals(r, "bigram")}
    assert set(rows) == {"verbs", "all"}   # names has no count: left out
    for kind, (p, q) in {"verbs": (0.375, 0.401), "all": (0.534, 0.423)}.items():
        n = r["meta"]["test_per_kind"][kind]
        want = 1.96 * np.sqrt(p * (1 - p) / n + q * (1 - q) / n)
        np.testing.assert_allclose(rows[kind], (p - q, want), rtol=1e-12)
    assert rows["verbs"][1] > abs(rows["verbs"][0])      # not told apart
    assert rows["all"][1] < rows["all"][0]               # ahead


def test_reading_report_only_rewrites_results_md_without_training(tmp_path):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(repo, "zoo", "aoa_reader", "results.json")) as f:
        results = json.load(f)
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert reading.main(["--report-only", "--out", str(tmp_path)]) == results
    text = (tmp_path / "RESULTS.md").read_text()
    assert text == reading.report(results)
    assert "verbs -0.026 ± 0.097" in text   # the committed run's verbs


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


def test_classification_runs_are_kept_and_join_their_seeds():
    """Every setting the HAN recipe trained stays in results.json's `runs`
    (a results file from before `runs` becomes its first run); seeds of the
    same settings join their run; the top level is the defaults' run."""
    seed_row = {"baselines": {"majority_class": 0.19, "tfidf_logistic_regression": 0.719},
                "schedule": "two-stage", "parameters": 1000, "best_valid_accuracy": 0.7,
                "epochs": 10, "minutes": 5.0}
    meta = {"backend": "jax", "embeddings": "lsa", "unlabelled_texts": 10,
            "documents": {"train": 7, "valid": 2, "test": 857}, "vocabulary": 50,
            "max_sentences": 10, "max_words": 40, "sizes": {"embedding_dim": 200}}
    old = dict(classification.aggregate([dict(seed_row, seed=1, accuracy=0.75)]),
               meta=dict(meta))   # written before `runs` existed: patience 3
    longer = dict(classification.DEFAULTS, patience=classification.PATIENCE + 3)
    r = classification.with_run(old, meta, longer,
                                [dict(seed_row, seed=s, accuracy=a)
                                 for s, a in [(1, 0.76), (2, 0.74)]])
    assert [run["settings"]["patience"] for run in r["runs"]] == [3, longer["patience"]]
    if classification.PATIENCE == 3:   # the defaults' run stays on top
        assert r["han_test_accuracy"] == 0.75 and r["settings"]["patience"] == 3
    again = classification.with_run(r, meta, longer,
                                    [dict(seed_row, seed=3, accuracy=0.78),
                                     dict(seed_row, seed=2, accuracy=0.72)])
    joined = again["runs"][-1]
    assert joined["seeds"] == [1, 2, 3]
    assert joined["han_test_accuracy"] == round(np.mean([0.76, 0.72, 0.78]), 4)
    assert joined["han_test_accuracy_sd"] == round(np.std([0.76, 0.72, 0.78], ddof=1), 4)
    text = classification.report(again)
    assert "## What each change bought" in text
    assert (f"| lsa embeddings, two-stage, patience {longer['patience']}, at most 30 "
            "epochs a stage | 3 | 0.753 ± 0.031 | 0.760, 0.720, 0.780 |") in text
    assert "| lsa embeddings, two-stage, patience 3, at most 30 epochs a stage | 1 " \
           "| 0.750 | 0.750 |" in text
    # A run of other settings alone, without the defaults' run: it is the top.
    alone = classification.with_run(None, meta, longer, [dict(seed_row, seed=1, accuracy=0.7)])
    assert alone["settings"] == longer and len(alone["runs"]) == 1
    assert f"recipe.py --patience {longer['patience']}`" in classification.report(alone)
    # A run recorded before `--ema` existed ran without averaging: seeds of
    # EMA-off settings join it, an EMA run is a row of its own.
    before = {k: v for k, v in longer.items() if k != "ema"}
    recorded = dict(alone, settings=before,
                    runs=[dict(alone["runs"][0], settings=before)])
    off = classification.with_run(recorded, meta, dict(longer, ema=0.0),
                                  [dict(seed_row, seed=2, accuracy=0.72)])
    assert len(off["runs"]) == 1 and off["runs"][0]["seeds"] == [1, 2]
    averaged = dict(classification.DEFAULTS, ema=0.99)
    both = classification.with_run(off, meta, averaged,
                                   [dict(seed_row, seed=1, accuracy=0.77)])
    assert [run["settings"]["ema"] for run in both["runs"]] == [0.0, 0.99]
    text = classification.report(classification.with_run(
        None, meta, averaged, [dict(seed_row, seed=1, accuracy=0.77)]))
    assert "recipe.py --ema 0.99`" in text
    assert "weights averaged with momentum 0.99" in text
    assert ("| lsa embeddings, two-stage, patience "
            f"{classification.PATIENCE}, at most 30 epochs a stage, weights "
            "averaged (EMA 0.99) | 1 | 0.770 |") in text


def test_classification_recipe_rejects_bad_patience(tmp_path):
    with pytest.raises(ValueError, match="patience"):
        classification.main(["--patience", "0", "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="ema"):
        classification.main(["--ema", "1", "--out", str(tmp_path)])


def test_reading_paired_difference_and_earlier_question_sets():
    """AoA minus bigram on the same questions: the mean per-question
    difference and 1.96 x its sample sd / sqrt(n) (by hand in NumPy); the
    report takes the paired interval when the results carry it and lists
    runs on earlier question sets."""
    rng = np.random.default_rng(3)
    a, b = rng.random(500) < 0.6, rng.random(500) < 0.5
    d, half = reading.paired_difference(a, b)
    diff = a.astype(float) - b.astype(float)
    assert d == round(diff.mean(), 4)
    assert half == round(1.96 * np.sqrt(((diff - diff.mean()) ** 2).sum() / 499 / 500), 4)
    kinds = {"names": 0.5, "nouns": 0.4, "verbs": 0.3, "prepositions": 0.6, "all": 0.5}
    old = {"meta": {"backend": "jax", "questions": {"train": 1, "valid": 1, "test": 1},
                    "test_per_kind": {"verbs": 192, "all": 3994}, "vocabulary": 5,
                    "sizes": {}},
           "aoa_test_accuracy": dict(kinds, verbs=0.375),
           "baselines": {"most_frequent": kinds, "bigram": dict(kinds, verbs=0.401)},
           "kinds": "the old rule"}
    new = dict(old, command="python zoo/aoa_reader/recipe.py --minutes 30",
               paired_vs_bigram={"verbs": [0.05, 0.03], "all": [0.1, 0.01]},
               earlier=[old])
    new["meta"] = dict(old["meta"], kinds="the SemCor rule",
                       test_per_kind={"verbs": 1252, "all": 5411})
    new["train"] = {"epochs": 1, "steps": 3, "minutes": 1.0, "parameters": 10,
                    "final_val_accuracy": 0.5}
    text = reading.report(new)
    assert "`python zoo/aoa_reader/recipe.py --minutes 30`" in text
    assert "(paired: both answer" in text and "verbs +0.050 ± 0.030, all +0.100 ± 0.010" in text
    assert "the SemCor rule" in text and "the time budget ended it" in text
    # The earlier set: its unpaired interval, as its own report gave it.
    half_old = 1.96 * np.sqrt(0.375 * 0.625 / 192 + 0.401 * 0.599 / 192)
    assert f"| the old rule | 0 / 0 / 192 / 0 |" in text
    assert f"verbs -0.026 ± {half_old:.3f}" in text


def test_reading_recipe_rejects_a_bad_batch_size(tmp_path):
    with pytest.raises(ValueError, match="batch_size"):
        reading.main(["--batch-size", "0", "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="seeds"):
        reading.main(["--seeds", "0", "--out", str(tmp_path)])


def _aoa_seed(seed, accuracy, difference, half, steps):
    kinds = ("names", "nouns", "verbs", "prepositions", "all")
    return {"seed": seed,
            "aoa_test_accuracy": {k: accuracy + 0.01 * i for i, k in enumerate(kinds)},
            "paired_vs_bigram": {k: [difference, half] for k in kinds},
            "train": {"epochs": 2, "minutes": 40.0 + seed, "steps": steps,
                      "batch_size": 32, "parameters": 10,
                      "final_val_accuracy": accuracy}}


def test_reading_seeds_join_one_run_with_their_mean_and_spread():
    """Seeds trained later with the same settings on the same question set
    join the recorded seed: the mean and sample deviation per kind (by hand
    in NumPy), the mean AoA-minus-bigram difference with the widest seed's
    interval, one report row a seed. Other settings start a new run; another
    question set moves to "earlier"."""
    kinds = {"names": 0.5, "nouns": 0.4, "verbs": 0.3, "prepositions": 0.6, "all": 0.5}
    meta = {"backend": "jax", "kinds": "rule A",
            "questions": {"train": 100, "valid": 1, "test": 1},
            "test_per_kind": {"verbs": 1252, "all": 5411}, "vocabulary": 5,
            "sizes": {}}
    first = _aoa_seed(1, 0.58, 0.15, 0.02, 3532)
    recorded = {"command": "python zoo/aoa_reader/recipe.py --minutes 40",
                "meta": meta, **{k: v for k, v in first.items() if k != "seed"},
                "baselines": {"most_frequent": kinds, "bigram": kinds}, "earlier": []}
    settings = reading.settings_of("python zoo/aoa_reader/recipe.py --minutes 40")
    assert settings == {"epochs": 3, "minutes": 40.0, "max_train": None,
                        "batch_size": 32}
    later = [_aoa_seed(3, 0.55, 0.12, 0.03, 3000), _aoa_seed(2, 0.57, 0.13, 0.025, 3400)]
    r = reading.with_seeds(recorded, meta, settings, later, recorded["baselines"])
    assert r["seeds"] == [1, 2, 3] and r["command"] == (
        "python zoo/aoa_reader/recipe.py --minutes 40 --seeds 3")
    verbs = np.array([0.60, 0.59, 0.57])     # accuracy + 0.02, seeds 1, 2, 3
    assert r["aoa_test_accuracy"]["verbs"] == round(verbs.mean(), 4)
    assert r["aoa_test_accuracy_sd"]["verbs"] == round(verbs.std(ddof=1), 4)
    assert r["paired_vs_bigram"]["all"] == [round(np.mean([0.15, 0.13, 0.12]), 4), 0.03]
    assert r["train"]["steps"] == round(np.mean([3532, 3400, 3000]), 1)
    text = reading.report(r)
    assert "`python zoo/aoa_reader/recipe.py --minutes 40 --seeds 3`" in text
    assert "mean of 3 seeds (1, 2, 3)" in text
    assert "| 3 | 0.550 | 0.560 | 0.570 | 0.580 | 0.590 | 3,000 | 43.0 |" in text
    assert "all +0.133 ± 0.030" in text
    # A seed trained again keeps its newest result.
    again = reading.with_seeds(r, meta, settings, [_aoa_seed(2, 0.50, 0.1, 0.02, 1)],
                               r["baselines"])
    assert again["seeds"] == [1, 2, 3]
    assert again["per_seed"][1]["aoa_test_accuracy"]["names"] == 0.50
    # Other settings: a run of their own (one seed, its command); the
    # recorded run moves to earlier, its command named.
    other = reading.with_seeds(r, meta, dict(settings, minutes=20.0),
                               [_aoa_seed(1, 0.5, 0.1, 0.02, 9)], r["baselines"])
    assert "per_seed" not in other and other["seed"] == 1
    assert other["command"] == "python zoo/aoa_reader/recipe.py --minutes 20"
    assert [e["kinds"] for e in other["earlier"]] == [
        "rule A; `python zoo/aoa_reader/recipe.py --minutes 40 --seeds 3`"]
    # Another question set: the recorded run, all its seeds, moves to earlier.
    moved = reading.with_seeds(r, dict(meta, kinds="rule B"), settings,
                               [_aoa_seed(1, 0.5, 0.1, 0.02, 9)], r["baselines"])
    assert [e["kinds"] for e in moved["earlier"]] == ["rule A"]
    assert moved["earlier"][0]["seeds"] == [1, 2, 3]
    assert "| rule A |" in reading.report(moved)
