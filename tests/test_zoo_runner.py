"""zoo/runner.py and the task descriptions beside it: seeds joined into
runs, their mean ± spread, results.json and RESULTS.md, the ablation
tables; every recipe's command line (`--help`) and one tiny run a task."""

import json
import os
import runpy
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO = os.path.join(REPO, "zoo")
DATA = os.path.join(REPO, "tests", "data")
sys.path.insert(0, ZOO)   # zoo/runner.py and the task modules beside it

import runner  # noqa: E402
import translation as translation_task  # noqa: E402  (zoo/translation.py)

RECIPES = {"translation": "bahdanau_nmt"}


def run_recipe(name, argv, monkeypatch):
    """`python zoo/<name>/recipe.py ARGV`, in this process."""
    path = os.path.join(ZOO, name, "recipe.py")
    monkeypatch.setattr(sys, "argv", [path, *argv])
    return runpy.run_path(path, run_name="__main__")


# -----------------------------------------------------------------------------
# The runner's pieces


def test_seeds_join_their_run_newest_first_and_in_seed_order():
    earlier = [{"seed": 0, "x": 1, "epochs": 6}, {"seed": 2, "x": 2, "epochs": 6},
               {"seed": 5, "x": 3, "epochs": 3}]
    rows = [{"seed": 2, "x": 9, "epochs": 6}, {"seed": 1, "x": 4, "epochs": 6}]
    joined = runner.join_seeds(earlier, rows, match=("epochs",))
    assert [(r["seed"], r["x"]) for r in joined] == [(0, 1), (1, 4), (2, 9)]
    assert runner.join_commands(["a", "b", None], "a") == ["b", "a"]


def test_mean_sd_spread_and_shown_are_numpys():
    values = [0.734, 0.751, 0.722]
    mean, sd = runner.mean_sd(values, 4)
    assert (mean, sd) == (round(np.mean(values), 4), round(np.std(values, ddof=1), 4))
    assert runner.mean_sd([0.5], 4) == (0.5, None)
    assert runner.spread([1.0, 3.0], 2) == f"2.0 ± {round(np.sqrt(2), 2)}"
    assert runner.shown({"a": 0.75, "a_sd": 0.0123}, "a", 3) == "0.750 ± 0.012"
    assert runner.shown({"a": 0.75}, "a") == "0.75"
    assert runner.command(runner.Task("m", *[None] * 7),
                          ["--seeds", "2", "--out", "x", "--output=y"]) == (
        "python zoo/m/recipe.py --seeds 2")


# -----------------------------------------------------------------------------
# Translation


def _nmt_row(seed, greedy, beam, **more):
    return {"seed": seed, "backend": "jax", "replicas": 1, "train_pairs": 40,
            "epochs": 1, "steps": 5, "train_minutes": 0.1 + seed, "parameters": 123,
            "final_loss": 1.0, "final_val_loss": 1.5, "test_sentences": 4,
            "length_bucket_sentences": 4, "beam_greedy_fallback": False,
            "bleu_greedy": greedy, "bleu_beam2": beam,
            "bleu_beam2_by_source_length": {"1-5": {"sentences": 2, "bleu": beam}},
            "examples_beam2": [{"source": "a", "reference": "b", "hypothesis": "c"}],
            **more}


def _nmt_run(rows, command="python zoo/bahdanau_nmt/recipe.py", **config):
    settings = {"builder": "kerattn.zoo.bahdanau_nmt(V_x, V_y, preset='tiny'): ...",
                "lang": "fr", "max_tokens": 20, "vocab_size": 8000,
                "tokenizer": "word", "batch_size": 64, "learning_rate": 0.002,
                "label_smoothing": 0.0, "warmup_steps": 0, **config}
    return runner.Run(settings, rows, command, None, None)


def test_translation_seeds_are_reported_as_mean_and_spread():
    runs = [{"seed": seed, "bleu_greedy": g, "bleu_beam5": b, "epochs": 6,
             "train_minutes": 10.0 + seed, "examples_greedy": [seed],
             "bleu_beam5_by_source_length": {"1-5": {"sentences": 7, "bleu": b}}}
            for seed, g, b in ((0, 30.0, 33.0), (1, 32.0, 36.0), (2, 31.0, 30.0))]
    result = translation_task.aggregate(runs)
    assert result["bleu_greedy"] == 31.0 and result["bleu_greedy_sd"] == 1.0
    assert result["bleu_beam5"] == 33.0 and result["bleu_beam5_sd"] == 3.0
    assert result["bleu_beam5_by_source_length"]["1-5"] == {
        "sentences": 7, "bleu": 33.0, "bleu_sd": 3.0}
    assert result["train_minutes"] == 11.0 and result["epochs"] == 6
    assert result["examples_greedy"] == [0] and result["seeds"] == 3
    assert [r["bleu_beam5"] for r in result["by_seed"]] == [33.0, 36.0, 30.0]


def test_translation_seeds_of_the_same_config_join_and_others_start_afresh(tmp_path):
    """A second command's seed joins the first command's two (same config);
    a seed trained again keeps its newest row; another config replaces the
    record; RESULTS.md shows the mean ± sd, both commands and the seq2seq
    baseline beside it."""
    first = translation_task.record("bahdanau_nmt", None, _nmt_run(
        [_nmt_row(0, 30.0, 33.0), _nmt_row(1, 32.0, 36.0)],
        "python zoo/bahdanau_nmt/recipe.py --seeds 2"))
    assert first["seeds"] == 2 and first["config"]["seed"] == 0
    assert first["command"] == "python zoo/bahdanau_nmt/recipe.py --seeds 2"
    more = translation_task.record("bahdanau_nmt", first, _nmt_run(
        [_nmt_row(2, 31.0, 30.0), _nmt_row(1, 34.0, 36.0)],
        "python zoo/bahdanau_nmt/recipe.py --seed 1 --seeds 2"))
    assert [r["seed"] for r in more["per_seed"]] == [0, 1, 2]
    assert more["bleu_greedy"] == round(np.mean([30.0, 34.0, 31.0]), 2)
    assert more["bleu_greedy_sd"] == round(np.std([30.0, 34.0, 31.0], ddof=1), 2)
    assert more["commands"] == ["python zoo/bahdanau_nmt/recipe.py --seeds 2",
                                "python zoo/bahdanau_nmt/recipe.py --seed 1 --seeds 2"]
    other = translation_task.record("bahdanau_nmt", more, _nmt_run(
        [_nmt_row(3, 1.0, 2.0)], learning_rate=0.5))
    assert "per_seed" not in other and other["config"]["seed"] == 3
    assert "commands" not in other
    # Rendered beside seq2seq's results.json.
    (tmp_path / "seq2seq").mkdir()
    (tmp_path / "seq2seq" / "results.json").write_text(json.dumps(
        dict(_nmt_row(0, 1.5, 2.5), model="seq2seq")))
    text = translation_task.render("bahdanau_nmt", "RNNsearch.", more,
                                   str(tmp_path / "bahdanau_nmt"))
    assert "| bahdanau_nmt | 31.67 ± 2.08 | 33.0 ± 3.0 | 123 | 1 |" in text
    assert "| seq2seq (no attention, baseline) | 1.5 | 2.5 | 123 | 1 | 0.1 |" in text
    assert "`python zoo/bahdanau_nmt/recipe.py --seeds 2` and `python" in text
    assert "(greedy / beam2: seed 0: 30.0 / 33.0, seed 1: 34.0 / 36.0" in text
    assert "| 1-5 | 2 | 33.0 ± 3.0 | 2.5 |" in text


def test_the_ablation_table_shows_each_row_and_its_long_bucket(tmp_path):
    assert translation_task.ablation_section(str(tmp_path)) == ""
    row = {"what": "Adam 1e-2", "epochs": 1, "final_loss": 4.5,
           "final_val_loss": 4.25, "bleu_greedy": 3.2, "minutes": 2.5}
    table = {"old@1": row, "local-p@6": dict(
        row, what="local-p", epochs=6, bleu_greedy=30.5,
        bleu_greedy_by_source_length={"16-20": {"sentences": 44, "bleu": 19.5}})}
    runner.save(str(tmp_path), table, "ablation.json")
    lines = translation_task.ablation_section(str(tmp_path)).splitlines()
    assert "| old@1 | Adam 1e-2 | 1 | 4.5 | 4.25 | 3.2 | - | 2.5 |" in lines
    assert ("| local-p@6 | local-p | 6 | 4.5 | 4.25 | 30.5 | 19.5 (44 sentences) "
            "| 2.5 |") in lines
    assert not any(line.startswith("| variant | seeds") for line in lines)


def test_the_ablation_table_averages_alignment_rates_over_seeds(tmp_path):
    bucket = {"16-20": {"sentences": 44, "bleu": 20.0}}
    row = {"what": "coverage", "epochs": 1, "final_loss": 4.5,
           "final_val_loss": 4.25, "bleu_greedy": 16.0, "minutes": 2.5,
           "bleu_greedy_by_source_length": bucket,
           "alignment_rates": {"sentences": 44, "dropped": 0.1,
                               "repeated": 0.2, "repeated_output": 0.05}}
    other = dict(row, bleu_greedy=18.0, bleu_greedy_by_source_length={
        "16-20": {"sentences": 44, "bleu": 22.0}}, alignment_rates={
        "sentences": 44, "dropped": 0.3, "repeated": 0.2, "repeated_output": 0.07})
    runner.save(str(tmp_path), {"coverage@1": row, "coverage@1 seed 1": other,
                                "old@1": {k: v for k, v in row.items()
                                          if k != "alignment_rates"}},
                "ablation.json")
    lines = translation_task.ablation_section(str(tmp_path)).splitlines()
    assert ("| coverage@1 | 2 | 17.0 ± 1.41 | 21.0 ± 1.41 | 0.2 ± 0.1414 "
            "| 0.2 ± 0.0 | 0.06 ± 0.0141 |") in lines
    assert not any(line.startswith("| old@1 | 1 |") for line in lines)


# -----------------------------------------------------------------------------
# Every recipe's command line


@pytest.mark.parametrize("name", ["seq2seq", "cho_encoder_decoder", "bahdanau_nmt",
                                  "luong_nmt", "transformer_nmt", "convs2s_nmt"])
def test_recipe_help_lists_its_options(name, monkeypatch, capsys):
    with pytest.raises(SystemExit) as exit:
        run_recipe(name, ["--help"], monkeypatch)
    assert exit.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: recipe.py")
    for flag in ("--seeds", "--report-only", "--preset", "--epochs", "--out",
                 "--distribute"):
        assert flag in out, (name, flag)


def test_translation_recipe_tiny_run(tmp_path, monkeypatch):
    """`zoo/bahdanau_nmt/recipe.py --preset tiny` on 200 gettext pairs, one
    epoch; then `--report-only` writes the same RESULTS.md again."""
    run_recipe("bahdanau_nmt", ["--preset", "tiny", "--epochs", "1", "--max-train",
                                "200", "--max-test", "20", "--beam-width", "2",
                                "--out", str(tmp_path)], monkeypatch)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["epochs"] == 1 and 0 <= results["bleu_greedy"] <= 100
    assert results["beam_greedy_fallback"] is False
    assert results["command"] == ("python zoo/bahdanau_nmt/recipe.py --preset tiny "
                                  "--epochs 1 --max-train 200 --max-test 20 "
                                  "--beam-width 2")
    assert results["config"]["builder"].startswith(
        "kerattn.zoo.bahdanau_nmt(V_x, V_y, preset='tiny'): embedding_dim=8")
    text = (tmp_path / "RESULTS.md").read_text()
    assert "| model | greedy | beam2 (alpha 0.6) |" in text
    assert f"| bahdanau_nmt | {results['bleu_greedy']} |" in text
    for file in ("model.keras", "source_vocab.json", "target_vocab.json"):
        assert (tmp_path / file).exists()
    (tmp_path / "RESULTS.md").unlink()
    run_recipe("bahdanau_nmt", ["--report-only", "--out", str(tmp_path)], monkeypatch)
    assert (tmp_path / "RESULTS.md").read_text() == text
