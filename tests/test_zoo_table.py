"""zoo/README.md's table: one row per zoo model, every measured number in
it taken from that model's results.json (written by its recipe)."""

import importlib.util
import os
import re
import runpy
import shutil
import sys

import pytest

from kerattn import zoo

ZOO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "zoo")
BUILDERS = ["seq2seq", "cho_encoder_decoder", "bahdanau_nmt", "luong_nmt",
            "transformer_nmt", "convs2s_nmt", "show_attend_tell", "han_classifier",
            "self_attentive_classifier", "aoa_reader", "pointer_generator"]
# Recipes of a task whose models are a builder's variants (zoo/g2p and
# zoo/g2p_phrases train luong_nmt's attentions).
TASKS = ["g2p", "g2p_phrases"]
RECIPES = BUILDERS + TASKS


def table_rows():
    text = open(os.path.join(ZOO, "README.md"), encoding="utf-8").read()
    rows = {}
    for line in text.splitlines():
        match = re.match(r"\| \[`(\w+)`\]\((\w+)/RESULTS\.md\) \|", line)
        if match:
            rows[match.group(1)] = [c.strip() for c in line.strip("|").split("|")]
    return rows


def summarize():
    """zoo/summarize.py, the script that writes the README's numbers."""
    spec = importlib.util.spec_from_file_location(
        "summarize", os.path.join(ZOO, "summarize.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_builder_has_a_row_and_a_recipe():
    rows = table_rows()
    assert sorted(rows) == sorted(RECIPES)
    for name in RECIPES:
        assert name in TASKS or callable(getattr(zoo, name))
        for file in ("recipe.py", "RESULTS.md", "results.json"):
            assert os.path.exists(os.path.join(ZOO, name, file)), (name, file)
        model, paper, task, ours, theirs, command = rows[name]
        assert command == f"`python zoo/{name}/recipe.py`" or command.startswith(
            f"`python zoo/{name}/recipe.py ")
        assert re.search(r"\b(19|20)\d\d\b", paper), f"{name}: the paper's year"
        # The paper's own number; where none was reachable from this
        # machine, the cell says so (and what the paper states).
        assert re.search(r"\d", theirs) or "not reachable" in theirs, (
            f"{name}: the paper's own number")


@pytest.mark.parametrize("name", RECIPES)
def test_each_shown_result_is_the_field_of_its_column(name):
    """The "our result" cell says what results.json holds, each number in the
    place of its own field: swapped greedy and beam figures, a stale number or
    a beam figure not marked as "the better of beam and greedy" fail."""
    s = summarize()
    ours = table_rows()[name][3]
    results = s.results_of(name)
    assert ours == s.result_cell(name, results)
    assert re.search(r"\d+\.\d+", ours), f"{name}: no measured number"
    if "bleu_beam5" in results:   # the label follows the recorded decoding
        fallback = results.get("beam_greedy_fallback", True)
        assert ("the better" in ours) == fallback


def test_the_translation_table_is_written_from_results_json():
    """The table between the results markers, column by column."""
    s = summarize()
    text = open(os.path.join(ZOO, "README.md"), encoding="utf-8").read()
    block = text.split(s.BEGIN)[1].split(s.END)[0].strip()
    assert block == s.table()
    header = block.splitlines()[0]
    assert header.startswith("| model | greedy BLEU | beam5 BLEU")
    row = next(line for line in block.splitlines() if "[bahdanau_nmt]" in line)
    r = s.results_of("bahdanau_nmt")
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1].split()[0] == str(r["bleu_greedy"])
    assert cells[2].split()[0] == str(r["bleu_beam5"])


def test_the_project_readme_shows_each_translation_result_as_recorded():
    """The README's short table: greedy then beam, labelled as recorded."""
    s = summarize()
    text = open(s.PROJECT_README, encoding="utf-8").read()
    # Every row of the short table, byte for byte as zoo/summarize.py writes
    # it from results.json; a row renamed away would be left alone, so each
    # model's row must be there.
    assert s.with_readme_cells(text) == text, "run python zoo/summarize.py"
    shown = [line.split("`")[1] for line in text.splitlines()
             if line.startswith("| `") and len(line.split(" | ")) == 3]
    assert sorted(set(shown) & set(RECIPES)) == sorted(s.README_ROWS) == sorted(RECIPES)
    for name in s.ORDER:
        row = next(line for line in text.splitlines()
                   if line.startswith(f"| `{name}` |"))
        r = s.results_of(name)
        cell = row.split(" | ")[2]
        spreads = re.findall(r" ± (\d+\.\d+)", cell)   # over seeds, if any
        assert spreads == [str(r[k]) for k in ("bleu_greedy_sd", "bleu_beam5_sd")
                           if k in r]
        greedy, beam = re.findall(r"\d+\.\d+", re.sub(r" ± \d+\.\d+", "", cell))[:2]
        assert (greedy, beam) == (str(r["bleu_greedy"]), str(r["bleu_beam5"]))
        assert ("the better" in cell) == r.get("beam_greedy_fallback", True)


def test_the_han_cell_shows_the_spread_of_its_seeds():
    s = summarize()
    b = {"tfidf_logistic_regression": 0.719, "majority_class": 0.189}
    r = {"han_test_accuracy": 0.736, "han_test_accuracy_sd": 0.015,
         "seeds": [1, 2, 3], "baselines": b}
    assert s.result_cell("han_classifier", r) == (
        "accuracy 0.736 ± 0.015, mean of 3 seeds (TF-IDF + LR 0.719, majority 0.189)")
    one = {"han_test_accuracy": 0.734, "seed": 1, "baselines": b}
    assert s.result_cell("han_classifier", one) == (
        "accuracy 0.734 (TF-IDF + LR 0.719, majority 0.189)")


def test_the_aoa_cell_shows_the_spread_of_its_seeds():
    s = summarize()
    b = {"bigram": {"all": 0.426}, "most_frequent": {"all": 0.2883}}
    r = {"aoa_test_accuracy": {"all": 0.58}, "aoa_test_accuracy_sd": {"all": 0.004},
         "seeds": [1, 2, 3], "baselines": b}
    assert s.result_cell("aoa_reader", r) == (
        "accuracy 0.58 ± 0.004, mean of 3 seeds (bigram 0.426, most frequent 0.2883)")
    one = {"aoa_test_accuracy": {"all": 0.5816}, "seed": 1, "baselines": b}
    assert s.result_cell("aoa_reader", one) == (
        "accuracy 0.5816 (bigram 0.426, most frequent 0.2883)")


def test_the_g2p_cell_names_each_run_its_preset_training_and_seeds():
    """Every run shown says how many seeds it has, one included."""
    s = summarize()
    runs = [{"settings": {"attention": "global", "preset": "g2p"}, "seeds": [1, 2, 3],
             "wer": 41.05, "wer_sd": 0.43, "per": 10.13, "per_sd": 0.19},
            {"settings": {"attention": "hard-monotonic", "preset": "g2p-streaming"},
             "seed": 1, "wer": 44.2, "per": 11.5},
            # Early stopping ended its seed: "to convergence".
            {"settings": {"attention": "mocha", "preset": "g2p-streaming",
                          "patience": 3, "beam_width": 5, "lookahead": 2,
                          "epochs": 40, "minutes": 25.0},
             "seed": 1, "wer": 30.1, "per": 7.25,
             "per_seed": [{"epochs": 5, "minutes": 20.0,
                           "val_losses": [0.5, 0.3, 0.31, 0.3, 0.32]}]},
            # Two more one-seed runs of a kind shown: the best of the three.
            {"settings": {"attention": "mocha", "preset": "g2p-streaming",
                          "patience": 3, "end_marker": True},
             "seed": 1, "wer": 40.0, "per": 9.0},
            {"settings": {"attention": "mocha", "preset": "g2p-streaming",
                          "lookahead": 1}, "seed": 1, "wer": 35.0, "per": 8.0},
            # A latency loss (hard monotonic attention only) says so.
            {"settings": {"attention": "hard-monotonic", "preset": "g2p-streaming",
                          "lookahead": 3, "latency_weight": 0.005},
             "seeds": [1, 2], "wer": 33.0, "wer_sd": 0.3, "per": 8.0, "per_sd": 0.1}]
    assert s.result_cell("g2p", {"runs": runs}) == (
        "WER / PER % global 41.05 ± 0.43 / 10.13 ± 0.19 (3 seeds); "
        "hard monotonic (g2p-streaming) 44.20 / 11.50 (1 seed); MoChA (g2p-streaming, "
        "to convergence, beam 5, lookahead 2) 30.10 / 7.25 (1 seed); hard monotonic "
        "(g2p-streaming, lookahead 3, latency loss 0.005) 33.00 ± 0.30 / 8.00 "
        "± 0.10 (2 seeds); 2 more one-seed runs in RESULTS.md")
    # The time cap ended a seed before early stopping did: it says so, and
    # not "to convergence" (nor where one seed of several converged).
    capped = [{"epochs": 4, "minutes": 25.01, "val_losses": [0.5, 0.3, 0.31, 0.29]}]
    cell = s.result_cell("g2p", {"runs": [dict(runs[2], per_seed=capped)]})
    assert "MoChA (g2p-streaming, 25-minute cap, beam 5" in cell
    cell = s.result_cell("g2p", {"runs": [dict(
        runs[2], seeds=[1, 2], per_seed=runs[2]["per_seed"] + capped)]})
    assert "(g2p-streaming, early stopping or 25-minute cap, beam 5" in cell
    # Stopped on another monitor than the validation loss: it says which.
    cell = s.result_cell("g2p", {"runs": [dict(
        runs[2], settings=dict(runs[2]["settings"], monitor="val_wer"))]})
    assert "(g2p-streaming, to convergence, monitor val_wer, beam 5" in cell
    cell = s.result_cell("g2p", {"runs": [dict(
        runs[2], settings=dict(runs[2]["settings"], monitor="val_loss"))]})
    assert "monitor" not in cell
    runs[2]["wer"] = 50.0
    assert "MoChA (g2p-streaming, lookahead 1) 35.00 / 8.00 (1 seed); " in s.result_cell(
        "g2p", {"runs": runs})
    assert s.readme_cell("g2p", None) == "not measured yet"
    # The project README's short form: the best offline and streaming runs.
    assert s.readme_cell("g2p", {"runs": runs}) == (
        "WER / PER % best: global 41.05 ± 0.43 / 10.13 ± 0.19 (3 seeds); best "
        "streaming: hard monotonic (g2p-streaming, lookahead 3, latency loss "
        "0.005) 33.00 ± 0.30 / 8.00 ± 0.10 (2 seeds); 4 more runs in zoo/g2p")


def test_the_phrase_cell_shows_each_attention_by_phrase_length():
    s = summarize()

    def at(wer, sd=None):
        return {"wer": wer, **({"wer_sd": sd} if sd is not None else {})}

    runs = [{"settings": {"attention": "global"}, "seeds": [1, 2, 3],
             "by_length": {"2": at(40.5, 1.25), "4": at(50.0, 2.0), "8": at(70.25, 3.5)}},
            {"settings": {"attention": "gmm"}, "seed": 1,
             "by_length": {"2": at(42.0), "4": at(43.0), "8": at(45.0)}}]
    assert s.result_cell("g2p_phrases", {"runs": runs}) == (
        "WER % at 2 / 4 / 8 words: global 40.50 ± 1.25 / 50.00 ± 2.00 / 70.25 ± "
        "3.50 (3 seeds); GMM v2b 42.00 / 43.00 / 45.00 (1 seed)")
    # The README's short cell: the runs with the most seeds, then a count.
    assert s.readme_cell("g2p_phrases", {"runs": runs}) == (
        "WER % at 2 / 8 words: global 40.50 ± 1.25 / 70.25 ± 3.50 (3 seeds each); "
        "1 more attention in zoo/g2p_phrases")
    runs[0] = dict(runs[0], seed=1)
    del runs[0]["seeds"]
    assert s.readme_cell("g2p_phrases", {"runs": runs}) == (   # the seeds said once
        "WER % at 2 / 8 words: global 40.50 ± 1.25 / 70.25 ± 3.50; "
        "GMM v2b 42.00 / 45.00 (one seed each)")


def _report_only(name, folder):
    """`python zoo/<name>/recipe.py --report-only`, writing into `folder`
    (a copy of zoo/<name>): RESULTS.md from results.json, no training."""
    recipe = runpy.run_path(os.path.join(ZOO, name, "recipe.py"))
    runner = sys.modules["runner"]   # zoo/runner.py, which the recipe imports
    runner.main(recipe["TASK"], argv=["--report-only"], folder=folder)


@pytest.mark.parametrize("name", RECIPES)
def test_the_committed_results_md_is_what_its_recipe_writes(name, tmp_path, capsys):
    """zoo/<name>/RESULTS.md (and results.json, which some recipes write
    again) byte for byte as the recipe's `--report-only` writes them from
    the committed results.json, in a copy of zoo/ (the translation reports
    read seq2seq's results beside them)."""
    copy = tmp_path / "zoo"
    shutil.copytree(ZOO, copy)
    _report_only(name, str(copy / name))
    for file in ("RESULTS.md", "results.json"):
        with open(os.path.join(ZOO, name, file), "rb") as f:
            committed = f.read()
        assert (copy / name / file).read_bytes() == committed, (
            f"zoo/{name}/{file} is not what `python zoo/{name}/recipe.py "
            "--report-only` writes from results.json")
