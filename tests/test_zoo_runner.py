"""zoo/runner.py and the task descriptions beside it: seeds joined into
runs, their mean ± spread, results.json and RESULTS.md, the ablation
tables; every recipe's command line (`--help`) and one tiny run a task."""

import argparse
import functools
import importlib.util
import json
import os
import re
import runpy
import sys

import keras
import numpy as np
import pytest

from kerattn.datasets import cmudict_g2p, data_fingerprint

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO = os.path.join(REPO, "zoo")
DATA = os.path.join(REPO, "tests", "data")
sys.path.insert(0, ZOO)   # zoo/runner.py and the task modules beside it

import hosts  # noqa: E402
import runner  # noqa: E402
import translation as translation_task  # noqa: E402  (zoo/translation.py)



recipe = runner.recipe_module   # zoo/<name>/recipe.py as a module


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


def test_machines_are_named_once_each_and_old_records_read_as_the_cpu():
    """A page names each machine its seeds ran on once; a seed recorded
    before machines were (no "machine") reads as the project's CPU."""
    cpu = {"accelerator": "cpu", "cpu": "a Xeon", "cpus": 2, "backend": "jax",
           "platform": "Linux", "versions": {"keras": "3.15.1", "jax": "0.10.2"}}
    gpu = dict(cpu, accelerator="NVIDIA H200", backend="torch",
               versions={"keras": "3.15.1", "torch": "2.13.0"})
    rows = [{"seed": 1, "machine": cpu}, {"seed": 2, "machine": gpu},
            {"seed": 3, "machine": cpu}]
    assert runner.machines(rows) == ("2 cores of a Xeon with JAX 0.10.2 and Keras "
                                     "3.15.1; one NVIDIA H200 with PyTorch 2.13.0 "
                                     "and Keras 3.15.1")
    assert runner.machines([{"seed": 1}], "torch") == (
        "this project's 2-core CPU with backend torch (the machine was not recorded)")
    assert runner.machines(None) == runner.machines([])
    # The splits' fingerprint, where the seeds recorded one, each once, and
    # how many of them did.
    rows[0]["data_sha256"] = rows[2]["data_sha256"] = "0123456789abcdef"
    assert runner.machines(rows[:1] + [{"seed": 5}]).endswith(
        "; the data's fingerprint (`data_sha256`) 0123456789abcdef (recorded by 1 "
        "of the 2 seeds; the others were measured before fingerprints were recorded)")
    assert runner.machines(rows[:1] + rows[2:]).endswith(
        "3.15.1; the data's fingerprint (`data_sha256`) 0123456789abcdef")
    rows[1]["data_sha256"] = "fedcba9876543210"
    assert runner.machines(rows).endswith(
        "3.15.1; the data's fingerprints (`data_sha256`) 0123456789abcdef, "
        "fedcba9876543210")
    # An ablation's row keeps its sizes and fingerprint under "data".
    ablated = {"seed": 0, "machine": cpu, "data": {"train_pairs": 9,
                                                   "data_sha256": "00000000ffffffff"}}
    assert runner.machines([ablated]).endswith(
        "; the data's fingerprint (`data_sha256`) 00000000ffffffff")
    # A seed resumed from its backup names each call's machine, then the
    # one it was evaluated on (an unrecorded call's as the CPU's).
    resumed = {"seed": 4, "machine": cpu,
               "calls": [{"epochs": 3, "machine": None}, {"epochs": 2, "machine": gpu},
                         {"epochs": 1, "machine": cpu}]}
    assert runner.machine_list([resumed], "jax") == [
        "this project's 2-core CPU with backend jax (the machine was not recorded)",
        "one NVIDIA H200 with PyTorch 2.13.0 and Keras 3.15.1",
        "2 cores of a Xeon with JAX 0.10.2 and Keras 3.15.1"]


def test_versions_are_read_without_importing_keras_hub(monkeypatch):
    """A record's versions: keras-hub's from its installed metadata, not
    imported (it would bring TensorFlow into a JAX or torch process, at
    every backup's first call); the backend's from the imported module."""
    import importlib.metadata

    from kerattn import environment

    monkeypatch.delitem(sys.modules, "keras_hub", raising=False)
    versions = environment.versions()
    assert "keras_hub" not in sys.modules
    assert versions["keras_hub"] == importlib.metadata.version("keras-hub")
    package = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}[
        keras.backend.backend()]
    assert versions[package] == sys.modules[package].__version__


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


def test_translation_bucket_table_sets_seq2seq_beside_the_others_only():
    """BLEU by source length: seq2seq's figure beside an attention model's
    (n/a where the baseline has none); seq2seq's own page has no such
    column."""
    key = "bleu_beam5_by_source_length"
    r = {key: {"1-5": {"sentences": 7, "bleu": 33.0}, "6-10": {"sentences": 3, "bleu": 20.0}}}
    baseline = {key: {"1-5": {"sentences": 7, "bleu": 12.5}}}
    text = translation_task._bucket_table(r, baseline, "beam5")
    assert text.splitlines()[0] == "| source words | sentences | BLEU | seq2seq BLEU |"
    assert "| 1-5 | 7 | 33.0 | 12.5 |" in text and "| 6-10 | 3 | 20.0 | n/a |" in text
    text = translation_task._bucket_table(r, None, "beam5", beside=False)
    assert text.splitlines()[0] == "| source words | sentences | BLEU |"
    assert "| 1-5 | 7 | 33.0 |" in text.splitlines()


@pytest.mark.parametrize("p90,moved,words", [
    ((0.02, 0.3, 0.48), (19.3, 14.9), ("rise all through training", "it is ahead")),
    ((0.02, 0.5, 0.48), (9.0, 3.0), ("go from 0.02 to 0.48 (90th percentile)",
                                     "it is behind")),
    ((0.02, 0.3, 0.48), (19.3, 3.0), ("rise all through training",
                                      "it is ahead on some lengths only")),
    ((0.48,), (9.82, 3.36), ("go from 0.48 to 0.48 (90th percentile)", "it is level")),
    ((0.02, 0.02), (9.82, 3.0), ("go from 0.02 to 0.02 (90th percentile)",
                                 "it is behind or level"))])
def test_monotonic_findings_choose_their_words_from_the_numbers(p90, moved, words):
    """The monotonic study's sentences say what the rows show: the
    stopping probabilities rise only where every epoch's 90th percentile
    is above the last (one epoch is no rise), and the from-soft phase is
    ahead on the longest sources only where it is in every such bucket
    (level on a tie)."""
    variants = {
        "hard-monotonic@6": {
            "selection": [{"r": -4.0 + i, "p_quantiles": {"90": p}, "decides": 0.1}
                          for i, p in enumerate(p90)],
            "alignment_rates": {"attended_nowhere": 0.9}, "bleu_greedy": 17.95},
        "monotonic-from-soft@6+2": {
            "phase": {"from": "recipe@6"}, "selection": [{"decides": 0.884}],
            "alignment_rates": {"attended_nowhere": 0.003}, "bleu_greedy": 36.0,
            "bleu_beam": 38.0, "bleu_beam_by_source_length": {
                "21-30": {"bleu": moved[0]}, "31-50": {"bleu": moved[1]}}},
        "plain-phase@6+2": {
            "bleu_greedy": 39.0, "bleu_beam": 41.0, "bleu_beam_by_source_length": {
                "21-30": {"bleu": 9.82}, "31-50": {"bleu": 3.36}}}}
    text = translation_task._monotonic_findings(variants)
    assert f"the stopping probabilities {words[0]} while `r` moves from -4.0" in text
    assert f"; on the longest sources {words[1]} (beam BLEU 21-30 words: {moved[0]} " in text


def test_translation_seeds_of_the_same_config_join_and_others_start_afresh(tmp_path):
    """A second command's seed joins the first command's two (same config);
    a seed trained again keeps its newest row; another config replaces the
    record; RESULTS.md shows the mean ± sd, both commands and the seq2seq
    baseline beside it."""
    first = translation_task.record("bahdanau_nmt", None, _nmt_run(
        [_nmt_row(0, 30.0, 33.0), _nmt_row(1, 32.0, 36.0)],
        "python zoo/bahdanau_nmt/recipe.py --seeds 2"))
    assert first["seeds"] == 2 and first["config"]["seed"] == 0
    # The recipe refuses a seed of these settings on other pairs (the
    # machine's gettext catalogs change with its packages).
    sizes = translation_task.task("bahdanau_nmt", "doc").data_sizes(
        {"train_pairs": 41, "test": [("a", "b")] * 3})
    assert sizes == {"train_pairs": 41, "test_pairs": 3}
    with pytest.raises(ValueError, match=r"seed 0 of these settings on other data "
                       r"\(train_pairs 40 there, 41 now\)"):
        runner.refuse_other_data(first, _nmt_run([]).settings, sizes, str(tmp_path))
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


def test_translation_seeds_join_on_their_budget_not_the_epochs_they_trained():
    """A time cap ends seeds at different epochs: seeds given the same
    budget join; another budget starts afresh; a row recorded before the
    budget was (no time cap) joins a new seed given its epochs."""
    capped = {"epochs": 40, "minutes": 25.0}
    first = translation_task.record("bahdanau_nmt", None, _nmt_run(
        [_nmt_row(0, 30.0, 33.0, epochs=12, budget=capped)]))
    both = translation_task.record("bahdanau_nmt", first, _nmt_run(
        [_nmt_row(1, 32.0, 35.0, epochs=11, budget=capped)]))
    assert [r["seed"] for r in both["per_seed"]] == [0, 1]
    assert [r["epochs"] for r in both["per_seed"]] == [12, 11]
    other = translation_task.record("bahdanau_nmt", both, _nmt_run(
        [_nmt_row(2, 31.0, 34.0, epochs=12, budget={"epochs": 40, "minutes": 30.0})]))
    assert "per_seed" not in other and other["config"]["seed"] == 2
    old = translation_task.record("bahdanau_nmt", None, _nmt_run(
        [_nmt_row(0, 30.0, 33.0, epochs=6)]))
    joined = translation_task.record("bahdanau_nmt", old, _nmt_run(
        [_nmt_row(1, 32.0, 35.0, epochs=6, budget={"epochs": 6, "minutes": None})]))
    assert [r["seed"] for r in joined["per_seed"]] == [0, 1]


def test_an_ablation_phase_starts_from_its_saved_converged_variant(tmp_path, monkeypatch):
    """zoo/ablation.py's phases on a tiny model: the converged variant is
    trained once and saved as a run folder; the coverage phase and its
    control train their steps from it; a second command loads the folder
    instead of training again; a folder of other data is refused; the
    page shows the rows by source length."""
    import ablation

    from kerattn.recipes import translation

    pairs = [("a b c", "x y"), ("b c", "y z w"), ("c a b a", "z x"), ("a", "w x y")]
    prepare = translation.prepare
    monkeypatch.setattr(translation, "prepare", lambda **kw: prepare(
        splits={"train": pairs * 3, "valid": pairs[:2], "test": pairs[1:3]}))
    monkeypatch.setattr(translation, "settings",
                        lambda name: dict(translation.DEFAULTS, preset="tiny"))
    monkeypatch.setattr(ablation, "HERE", str(tmp_path))
    runs = str(tmp_path / "runs")
    table = ablation.run("bahdanau_nmt", ["coverage-phase", "plain-phase"], 1,
                         phase_steps=2, runs=runs)
    assert sorted(table) == ["coverage-phase@1+2", "plain-phase@1+2", "recipe@1"]
    assert (tmp_path / "runs" / "bahdanau_nmt" / "recipe@1" / "run.json").exists()
    covered = table["coverage-phase@1+2"]
    assert covered["builder"] == {"coverage": True}
    # 12 training pairs fill one batch of 64: the phase asked for 2 trains
    # that one (each pair once), and its row and page say so.
    assert covered["phase"] == {"from": "recipe@1", "asked": 2, "steps": 1,
                                "learning_rate": 2e-3}
    assert table["plain-phase@1+2"]["builder"] == {}
    assert list(covered["alignment_rates_by_source_length"]) == [
        f"{low}-{high}" for low, high in translation.LENGTH_BUCKETS]
    assert covered["alignment_rates_by_source_length"]["1-5"]["sentences"] == 2

    def retrained(*args):
        raise AssertionError("the converged variant was trained again")

    monkeypatch.setattr(ablation, "_variant", retrained)
    again = ablation.run("bahdanau_nmt", ["plain-phase"], 1, phase_steps=1, runs=runs)
    assert again["plain-phase@1+1"]["phase"] == {"from": "recipe@1", "asked": 1,
                                                 "steps": 1, "learning_rate": 2e-3}
    # As many pairs, other words: the rows' fingerprint of their data
    # refuses before anything trains; without ablation.json, the run
    # folder's vocabulary does.
    monkeypatch.setattr(translation, "prepare", lambda **kw: prepare(
        splits={"train": [("d e", "u v")] * 12, "valid": pairs[:1], "test": pairs[1:3]}))
    with pytest.raises(ValueError, match=(
            r"`variants`: .*ablation.json holds 'plain-phase@1\+1' on other data "
            r"\(\{'train_pairs': 12, 'test_pairs': 2, 'data_sha256': '([0-9a-f]{16})'\} "
            r"there, \{'train_pairs': 12, 'test_pairs': 2, 'data_sha256': "
            r"'(?!\1)[0-9a-f]{16}'\} now\)")):
        ablation.run("bahdanau_nmt", ["plain-phase"], 1, phase_steps=1, runs=runs)
    recorded = tmp_path / "bahdanau_nmt" / "ablation.json"
    recorded.rename(tmp_path / "aside.json")
    with pytest.raises(ValueError, match="`runs`.*source vocabulary is another"):
        ablation.run("bahdanau_nmt", ["plain-phase"], 1, phase_steps=1, runs=runs)
    (tmp_path / "aside.json").rename(recorded)
    # Other pairs: a seed of a row (or of a phase's start) recorded on other
    # data is refused before anything trains.
    monkeypatch.setattr(translation, "prepare", lambda **kw: prepare(
        splits={"train": pairs * 2, "valid": pairs[:1], "test": pairs[1:3]}))
    for variants in (["plain-phase"], ["recipe"]):
        with pytest.raises(ValueError, match=(
                r"`variants`: .*ablation.json holds '(plain-phase@1\+1|recipe@1)' "
                r"on other data \(\{'train_pairs': 12, 'test_pairs': 2, "
                r"'data_sha256': '[0-9a-f]{16}'\} there, \{'train_pairs': 8, "
                r"'test_pairs': 2, 'data_sha256': '[0-9a-f]{16}'\} now\)")):
            ablation.run("bahdanau_nmt", variants, 1, phase_steps=1, seed=3, runs=runs)
    assert not (tmp_path / "runs" / "bahdanau_nmt" / "recipe@1-seed3").exists()
    with pytest.raises(ValueError, match="`phase_steps`"):
        ablation.run("bahdanau_nmt", ["plain-phase"], 1, runs=runs)
    with pytest.raises(ValueError, match="`variants`"):
        ablation.run("bahdanau_nmt", ["no-such-phase"], 1, runs=runs)
    text = translation_task.ablation_section(str(tmp_path / "bahdanau_nmt"))
    assert "| coverage-phase@1+2 | 1 | 1-5 | 2 |" in text
    assert "By source length" in text
    assert ("the phases trained 1 batch in `plain-phase@1+1`; 1 batch of the 2 "
            "asked, one pass over the training pairs, in `coverage-phase@1+2`, "
            "`plain-phase@1+2`):") in text
    # Each row records its machine (backend and versions with it); the
    # page names it.
    assert covered["machine"]["backend"] == keras.backend.backend()
    seen = prepare(splits={"train": pairs * 3, "valid": pairs[:2], "test": pairs[1:3]})
    sizes = {"train_pairs": seen["train_pairs"], "test_pairs": len(seen["test"])}
    assert covered["data"] == dict(sizes, data_sha256=data_fingerprint(
        {"train": pairs * 3, "valid": pairs[:2], "test": pairs[1:3]}))
    assert (f"The rows that recorded their machine ran on {runner.machines([covered])}, "
            f"with {sizes['train_pairs']} training and {sizes['test_pairs']} test "
            "pairs. The training pairs column gives each row's data") in text
    assert "| coverage-phase@1+2 | " in text
    assert f"| 1 | {sizes['train_pairs']} | " in text


def test_each_monotonic_row_is_compared_with_soft_attention_of_its_seed():
    """The findings under the ablation tables set each hard monotonic row
    beside the soft recipe of the same seed and budget (`recipe@6` for
    seed 0, `recipe@6 seed 1` for seed 1), not beside seed 0's."""
    def row(greedy, beam, nowhere=0.0):
        return {"bleu_greedy": greedy, "bleu_beam": beam,
                "alignment_rates": {"attended_nowhere": nowhere}}

    variants = {"recipe@6": row(39.27, 42.03), "recipe@6 seed 1": row(38.49, 42.16)}
    text = [translation_task._against_soft(k, v, variants.get(
        "recipe@" + k.split("@", 1)[1])) for k, v in (
            ("hard-monotonic-r-1@6", row(36.43, 39.12, 0.0009)),
            ("hard-monotonic-r-1@6 seed 1", row(34.94, 38.16, 0.0034)),
            ("hard-monotonic-r-1@6 seed 2", row(35.0, 38.0)),
            ("hard-monotonic@6", {"bleu_greedy": 17.95, "alignment_rates": {}}))]
    assert text == [
        "`hard-monotonic-r-1@6` 36.43 / 39.12 (0.1% attending nowhere; 2.84 / "
        "2.91 behind soft attention of its seed)",
        "`hard-monotonic-r-1@6 seed 1` 34.94 / 38.16 (0.3% attending nowhere; "
        "3.55 / 4.00 behind soft attention of its seed)",
        "`hard-monotonic-r-1@6 seed 2` 35.0 / 38.0 (0.0% attending nowhere)",
        # a row that did not record it says so, not 0.0%
        "`hard-monotonic@6` 17.95 / - (attending nowhere not recorded)"]


def test_the_phase_findings_pair_each_seed_with_its_own_control():
    """The coverage phase's findings: the mean ± sd over the seeds that have
    both rows, and in how many seeds the expected shape holds (dropped and
    repeated source words fall, long-source beam BLEU holds or rises)."""
    def row(greedy, dropped, repeated, long):
        return {"bleu_greedy": greedy, "bleu_beam": greedy + 2,
                "alignment_rates": {"dropped": dropped, "repeated": repeated,
                                    "repeated_output": 0.1},
                "bleu_beam_by_source_length": {"21-30": {"bleu": long},
                                               "31-50": {"bleu": long / 2}}}

    variants = {"coverage-phase@6+1000": row(40.0, 0.10, 0.10, 16.0),
                "plain-phase@6+1000": row(41.0, 0.20, 0.20, 8.0),
                "coverage-phase@6+1000 seed 1": row(42.0, 0.10, 0.30, 10.0),
                "plain-phase@6+1000 seed 1": row(41.0, 0.30, 0.20, 10.0),
                "coverage-phase@6+1000 seed 2": row(1.0, 0.0, 0.0, 1.0)}
    text = translation_task._phase_findings(variants)
    assert text.startswith(
        "Coverage switched on for the phase (`coverage-phase@6+1000`) against the "
        "same batches without it, 2 seeds (0, 1; mean ± sd): greedy / beam BLEU "
        f"41.0 ± {round(np.sqrt(2), 2)} / 43.0 ± {round(np.sqrt(2), 2)} against "
        "41.0 ± 0.0 / 43.0 ± 0.0; on the 16-20-word sources dropped source words "
        "10.0 ± 0.0% against 25.0 ± 7.1%")
    assert text.endswith(
        "not in every seed: dropped words fell in 2 of 2 seeds, repeated words in "
        "1 of 2, long-source BLEU held or rose in 2 of 2.")
    del variants["coverage-phase@6+1000 seed 1"]
    assert "shown in every seed: dropped words fell in 1 of 1 seed, " in \
        translation_task._phase_findings(variants)
    assert translation_task._phase_findings({"coverage-phase@6+1000": row(
        1.0, 0.0, 0.0, 1.0)}) == ""


def test_each_from_soft_seed_is_set_beside_the_soft_model_it_started_from():
    def row(greedy, nowhere=None, **more):
        rates = {} if nowhere is None else {"attended_nowhere": nowhere}
        return {"bleu_greedy": greedy, "bleu_beam": greedy + 2,
                "alignment_rates": rates, **more}

    phase = {"from": "recipe@6"}
    variants = {"recipe@6": row(39.0), "recipe@6 seed 1": row(38.5),
                "monotonic-from-soft@6+1000": row(36.5, 0.012, phase=phase),
                "monotonic-from-soft@6+1000 seed 1": row(35.0, 0.01, phase=phase),
                "monotonic-from-soft@6+1000 seed 2": row(38.0, 0.0, phase=phase)}
    text = translation_task._from_soft_by_seed(variants, "monotonic-from-soft@6+1000")
    by_seed = (
        " By seed, greedy / beam BLEU: `monotonic-from-soft@6+1000` 36.5 / 38.5 "
        "(1.2% attending nowhere; 2.50 / 2.50 behind soft attention of its seed), "
        "`monotonic-from-soft@6+1000 seed 1` 35.0 / 37.0 (1.0% attending nowhere; "
        "3.50 / 3.50 behind soft attention of its seed).")
    assert text == by_seed + (
        " Within 3 greedy BLEU of soft attention of its seed, with under 5% of "
        "output words attending nowhere (the target): `monotonic-from-soft@6+1000` "
        f"1 of 2 seeds (3.0 ± {round(np.sqrt(2) / 2, 2)} greedy BLEU behind).")
    # Each hard monotonic row of several seeds too, beside the recipe of its
    # seed; a row of one seed, or too many attending nowhere, is no target met.
    variants.update({"hard-monotonic-r-1@6": row(37.0, 0.001),
                     "hard-monotonic-r-1@6 seed 1": row(36.0, 0.2),
                     "hard-monotonic@6": row(18.0, 0.9)})
    assert translation_task._from_soft_by_seed(
        variants, "monotonic-from-soft@6+1000").endswith(
        "; `hard-monotonic-r-1@6` 1 of 2 seeds (2.25 ± 0.35 greedy BLEU behind).")
    del variants["monotonic-from-soft@6+1000 seed 1"]
    del variants["hard-monotonic-r-1@6 seed 1"]
    assert translation_task._from_soft_by_seed(
        variants, "monotonic-from-soft@6+1000").endswith("soft attention of its seed).")


def test_the_ablation_table_shows_each_row_and_its_long_bucket(tmp_path):
    assert translation_task.ablation_section(str(tmp_path)) == ""
    row = {"what": "Adam 1e-2", "epochs": 1, "final_loss": 4.5,
           "final_val_loss": 4.25, "bleu_greedy": 3.2, "minutes": 2.5}
    table = {"old@1": row, "local-p@6": dict(
        row, what="local-p", epochs=6, bleu_greedy=30.5,
        bleu_greedy_by_source_length={"16-20": {"sentences": 44, "bleu": 19.5}})}
    runner.save(str(tmp_path), table, "ablation.json")
    lines = translation_task.ablation_section(str(tmp_path)).splitlines()
    assert "| old@1 | Adam 1e-2 | 1 | - | 4.5 | 4.25 | 3.2 | - | 2.5 |" in lines
    assert ("| local-p@6 | local-p | 6 | - | 4.5 | 4.25 | 30.5 | 19.5 (44 sentences) "
            "| 2.5 |") in lines
    assert not any(line.startswith("| variant | seeds") for line in lines)


def test_the_ablation_table_gives_each_rows_training_pairs(tmp_path):
    """A machine's gettext catalogs set the data: each row, and the
    recipe's own result below them, says how many training pairs it saw,
    so that rows of other data are not read as one comparison."""
    row = {"what": "relative", "epochs": 6, "final_loss": 2.1,
           "final_val_loss": 2.5, "bleu_greedy": 38.4, "minutes": 22.2,
           "data": {"train_pairs": 39970, "test_pairs": 2329}}
    runner.save(str(tmp_path), {"relative16@6": row}, "ablation.json")
    recipe = {"epochs": 6, "seeds": 1, "train_pairs": 37739, "final_loss": 2.3,
              "final_val_loss": 2.6, "bleu_greedy": 31.75, "train_minutes": 19.8,
              "bleu_greedy_by_source_length": {"16-20": {"sentences": 44,
                                                          "bleu": 14.4}}}
    lines = translation_task.ablation_section(str(tmp_path), recipe).splitlines()
    assert ("| relative16@6 | relative | 6 | 39,970 | 2.1 | 2.5 | 38.4 | - "
            "| 22.2 |") in lines
    assert ("| the recipe (above) | its result, 1 seed | 6 | 37,739 | 2.3 | 2.6 "
            "| 31.75 | 14.4 (44 sentences) | 19.8 |") in lines


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
# Document classification (zoo/han_classifier/recipe.py)

HAN_META = {"backend": "jax", "embeddings": "lsa", "unlabelled_texts": 10,
            "documents": {"train": 7, "valid": 2, "test": 857}, "vocabulary": 50,
            "max_sentences": 10, "max_words": 40, "preset": "base",
            "sizes": {"embedding_dim": 200}}


def _han_row(seed, accuracy, epochs=10, minutes=5.0):
    return {"seed": seed, "accuracy": accuracy, "best_valid_accuracy": 0.7,
            "epochs": epochs, "minutes": minutes, "parameters": 1000,
            "schedule": "two-stage",
            "baselines": {"majority_class": 0.19, "tfidf_logistic_regression": 0.719}}


def _han_run(settings, rows):
    data = {"examples": {k: [None] * n for k, n in HAN_META["documents"].items()},
            "unlabelled": [None] * 10, "vocab": [None] * 50}
    args = argparse.Namespace(embeddings=settings["embeddings"],
                              preset=settings.get("preset", "base"))
    return runner.Run(settings, rows, "", args, data)


def test_classification_seeds_aggregate_and_report():
    """Several seeds: the mean and sample deviation of the test accuracy
    (NumPy's), each seed listed, the first seed's split figures kept."""
    han = recipe("han_classifier")
    rows = [_han_row(1, 0.734, 19, 11.6), _han_row(2, 0.751, 16, 9.0),
            _han_row(3, 0.722, 22, 13.1)]
    r = han.aggregate(rows)
    accuracies = [0.734, 0.751, 0.722]
    assert r["han_test_accuracy"] == round(np.mean(accuracies), 4)
    assert r["han_test_accuracy_sd"] == round(np.std(accuracies, ddof=1), 4)
    assert r["seeds"] == [1, 2, 3] and r["per_seed"] == rows
    assert r["train"]["epochs"] == round(np.mean([19, 16, 22]), 1)
    text = han.render(dict(r, meta=HAN_META, settings=dict(han.DEFAULTS)))
    assert "`python zoo/han_classifier/recipe.py --seeds 3`" in text
    assert "mean ± sd of 3 seeds | **0.736 ± 0.015** |" in text
    assert "seed 1: 0.734, seed 2: 0.751, seed 3: 0.722" in text
    assert "| TF-IDF + logistic regression (computed by the recipe) | 0.719 |" in text
    assert ("Here 0.7357: above the baseline's 0.7190, below 0.75."
            in text)   # the targets, scored on 3 seeds
    one = han.aggregate(rows[1:2])
    assert one["han_test_accuracy"] == 0.751 and "han_test_accuracy_sd" not in one
    text = han.render(dict(one, meta=HAN_META, settings=dict(han.DEFAULTS)))
    assert "`python zoo/han_classifier/recipe.py --seed 2`" in text
    assert "| **HAN** (kerattn.zoo.han_classifier) | **0.751** |" in text
    assert "0.75 as the mean of 3 seeds. Not scored: 1 seed." in text
    half = 1.96 * np.sqrt(0.751 * 0.249 / 857)
    assert f"test documents is ± {half:.3f}." in text


def test_classification_runs_are_kept_and_join_their_seeds():
    """Every setting the HAN recipe trained stays in results.json's `runs`;
    seeds of the same settings join their run; the top level is the
    defaults' run (or the newest, until the defaults ran)."""
    han = recipe("han_classifier")
    longer = dict(han.DEFAULTS, patience=han.DEFAULTS["patience"] + 3)
    alone = han.record(None, _han_run(longer, [_han_row(1, 0.76), _han_row(2, 0.74)]))
    assert alone["settings"] == longer and len(alone["runs"]) == 1
    assert f"recipe.py --patience {longer['patience']} --seeds 2`" in han.render(alone)
    both = han.record(alone, _han_run(han.DEFAULTS, [_han_row(1, 0.75)]))
    assert both["settings"] == han.DEFAULTS and both["han_test_accuracy"] == 0.75
    again = han.record(both, _han_run(longer, [_han_row(3, 0.78), _han_row(2, 0.72)]))
    assert again["settings"] == han.DEFAULTS
    joined = again["runs"][-1]
    assert joined["seeds"] == [1, 2, 3] and joined["settings"] == longer
    assert joined["han_test_accuracy"] == round(np.mean([0.76, 0.72, 0.78]), 4)
    text = han.render(again)
    assert "## What each change bought" in text
    assert (f"| lsa embeddings, two-stage, patience {longer['patience']}, at most 30 "
            "epochs a stage | 3 | 0.753 ± 0.031 | 0.760, 0.720, 0.780 |") in text
    averaged = han.record(None, _han_run(dict(han.DEFAULTS, ema=0.99),
                                         [_han_row(1, 0.77)]))
    text = han.render(averaged)
    assert "recipe.py --ema 0.99`" in text and "weights averaged with momentum 0.99" in text


def test_classification_recipe_rejects_bad_flags(tmp_path):
    han = recipe("han_classifier")
    with pytest.raises(ValueError, match="patience"):
        runner.main(han.TASK, argv=["--patience", "0", "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="ema"):
        runner.main(han.TASK, argv=["--ema", "1", "--out", str(tmp_path)])


# -----------------------------------------------------------------------------
# Reading comprehension (zoo/aoa_reader/recipe.py)

KINDS = {"names": 0.5, "nouns": 0.4, "verbs": 0.3, "prepositions": 0.6, "all": 0.5}


def test_reading_difference_intervals_against_the_formula():
    """AoA minus a baseline, with the 95% interval of a difference of two
    independent proportions: 1.96 * sqrt(p(1-p)/n + q(1-q)/n)."""
    aoa = recipe("aoa_reader")
    r = {"meta": {"test_per_kind": {"verbs": 192, "all": 3994}},
         "aoa_test_accuracy": {"verbs": 0.375, "all": 0.534, "names": 0.5},
         "baselines": {"bigram": {"verbs": 0.401, "all": 0.423, "names": 0.44}}}
    rows = {kind: (d, h) for kind, d, h in aoa.difference_intervals(r, "bigram")}
    assert set(rows) == {"verbs", "all"}   # names has no count: left out
    for kind, (p, q) in {"verbs": (0.375, 0.401), "all": (0.534, 0.423)}.items():
        n = r["meta"]["test_per_kind"][kind]
        want = 1.96 * np.sqrt(p * (1 - p) / n + q * (1 - q) / n)
        np.testing.assert_allclose(rows[kind], (p - q, want), rtol=1e-12)
    assert rows["verbs"][1] > abs(rows["verbs"][0])      # not told apart
    assert rows["all"][1] < rows["all"][0]               # ahead


def _aoa_seed(seed, accuracy, difference, half, steps):
    return {"seed": seed,
            "aoa_test_accuracy": {k: accuracy + 0.01 * i for i, k in enumerate(KINDS)},
            "paired_vs_bigram": {k: [difference, half] for k in KINDS},
            "train": {"epochs": 2, "minutes": 40.0 + seed, "steps": steps,
                      "batch_size": 32, "parameters": 10,
                      "final_val_accuracy": accuracy}}


def _aoa_run(aoa, settings, rows, rule="rule A"):
    """A `Run` of the reader's; its question set's meta says `rule`."""
    meta = {"backend": "jax", "kinds": rule,
            "questions": {"train": 100, "valid": 1, "test": 1},
            "test_per_kind": {"verbs": 1252, "all": 5411}, "vocabulary": 5,
            "preset": "base", "sizes": {}}
    aoa._meta = lambda run: meta
    data = {"baselines": {"most_frequent": KINDS, "bigram": KINDS}}
    return runner.Run(settings, rows, "", None, data)


def test_reading_seeds_join_one_run_with_their_mean_and_spread():
    """Seeds trained later with the same settings on the same question set
    join the recorded seeds: the mean and sample deviation per kind (by hand
    in NumPy), the mean AoA-minus-bigram difference with the widest seed's
    interval, one report row a seed. Other settings, or another question
    set, move the recorded run to "earlier", whole."""
    aoa = recipe("aoa_reader")
    settings = aoa.settings_of("python zoo/aoa_reader/recipe.py --minutes 40")
    assert settings == {"epochs": 3, "minutes": 40.0, "max_train": None,
                        "batch_size": 32, "preset": "base"}
    recorded = aoa.record(None, _aoa_run(aoa, settings,
                                         [_aoa_seed(1, 0.58, 0.15, 0.02, 3532)]))
    assert recorded["command"] == "python zoo/aoa_reader/recipe.py --minutes 40"
    r = aoa.record(recorded, _aoa_run(aoa, settings, [
        _aoa_seed(3, 0.55, 0.12, 0.03, 3000), _aoa_seed(2, 0.57, 0.13, 0.025, 3400)]))
    assert r["seeds"] == [1, 2, 3] and r["command"] == (
        "python zoo/aoa_reader/recipe.py --minutes 40 --seeds 3")
    verbs = np.array([0.60, 0.59, 0.57])     # accuracy + 0.02, seeds 1, 2, 3
    assert r["aoa_test_accuracy"]["verbs"] == round(verbs.mean(), 4)
    assert r["aoa_test_accuracy_sd"]["verbs"] == round(verbs.std(ddof=1), 4)
    assert r["paired_vs_bigram"]["all"] == [round(np.mean([0.15, 0.13, 0.12]), 4), 0.03]
    assert r["train"]["steps"] == round(np.mean([3532, 3400, 3000]), 1)
    text = aoa.render(r)
    assert "`python zoo/aoa_reader/recipe.py --minutes 40 --seeds 3`" in text
    assert "mean of 3 seeds (1, 2, 3)" in text and "the time budget ended it" in text
    assert "| 3 | 0.550 | 0.560 | 0.570 | 0.580 | 0.590 | 3,000 | 43.0 |" in text
    assert "all +0.133 ± 0.030" in text
    other = aoa.record(json.loads(json.dumps(r)), _aoa_run(
        aoa, dict(settings, minutes=20.0), [_aoa_seed(1, 0.5, 0.1, 0.02, 9)]))
    assert "seeds" not in other and other["seed"] == 1
    assert other["command"] == "python zoo/aoa_reader/recipe.py --minutes 20"
    assert [e["kinds"] for e in other["earlier"]] == [
        "rule A; `python zoo/aoa_reader/recipe.py --minutes 40 --seeds 3`"]
    moved = aoa.record(json.loads(json.dumps(r)), _aoa_run(
        aoa, settings, [_aoa_seed(1, 0.5, 0.1, 0.02, 9)], rule="rule B"))
    assert [e["kinds"] for e in moved["earlier"]] == ["rule A"]
    assert moved["earlier"][0]["seeds"] == [1, 2, 3]
    # An earlier run's interval is unpaired where it recorded no pairs.
    old = dict(moved["earlier"][0], aoa_test_accuracy=dict(KINDS, verbs=0.375),
               baselines={"most_frequent": KINDS, "bigram": dict(KINDS, verbs=0.401)},
               meta=dict(moved["meta"], test_per_kind={"verbs": 192}))
    del old["paired_vs_bigram"]
    text = aoa.render(dict(moved, earlier=[old]))
    half_old = 1.96 * np.sqrt(0.375 * 0.625 / 192 + 0.401 * 0.599 / 192)
    assert "| rule A | 0 / 0 / 192 / 0 |" in text
    assert f"verbs -0.026 ± {half_old:.3f}" in text


def test_reading_recipe_rejects_bad_flags(tmp_path):
    aoa = recipe("aoa_reader")
    with pytest.raises(ValueError, match="batch_size"):
        runner.main(aoa.TASK, argv=["--batch-size", "0", "--out", str(tmp_path)])
    with pytest.raises(ValueError, match="seeds"):
        runner.main(aoa.TASK, argv=["--seeds", "0", "--out", str(tmp_path)])


# -----------------------------------------------------------------------------
# Captioning (zoo/show_attend_tell/recipe.py)


def _caption_seed(seed, exact, share, minutes=1.0):
    figures = {"exact_caption_accuracy": exact, "own_digit_share_correct": share,
               "own_digit_share_all": share - 0.01}
    return {"train": {"epochs": 1, "train_minutes": minutes, "final_loss": 0.5,
                      "parameters": 100},
            "beam1": dict(figures), "examples": [{"caption": "one", "truth": "one"}],
            "beam3": dict(figures)}


def _caption_run(sat, flags, rows):
    args = runner.parser(sat.TASK, ".").parse_args(flags)
    return runner.Run(sat.settings(args), rows,
                      runner.command(sat.TASK, flags), args, None)


def test_captioning_seeds_join_their_study_row_and_the_defaults_lead(tmp_path):
    """Each command's seeds join the study row of its settings, per
    attention (mean ± sample sd, NumPy's); the top level is the defaults'
    row once it ran, else the newest; RESULTS.md shows both tables."""
    sat = recipe("show_attend_tell")
    hard = ["--attention", "hard", "--expectation-rate", "0.2"]
    first = sat.record(None, _caption_run(sat, hard, [
        {"seed": 1, "hard": _caption_seed(1, 0.5, 0.4)}]))
    assert list(first["study"]) == [
        "40,000 strips x 8 epochs, initial state mean; hard: expected context p=0.2"]
    assert first["results"]["hard"]["seeds"] == 1   # the newest leads
    both = sat.record(first, _caption_run(sat, ["--seeds", "2"], [
        {"seed": 1, "soft": _caption_seed(1, 0.9, 0.8), "hard": _caption_seed(1, 0.7, 0.6)},
        {"seed": 2, "soft": _caption_seed(2, 0.8, 0.7), "hard": _caption_seed(2, 0.6, 0.5)}]))
    again = sat.record(both, _caption_run(sat, ["--attention", "soft", "--seed", "3"], [
        {"seed": 3, "soft": _caption_seed(3, 0.85, 0.9)}]))
    assert len(again["study"]) == 2 and set(again["results"]) == {"soft", "hard"}
    soft = again["results"]["soft"]
    exact = [0.9, 0.8, 0.85]
    assert [s["seed"] for s in soft["by_seed"]] == [1, 2, 3]
    assert soft["beam1"]["exact_caption_accuracy"] == round(np.mean(exact), 4)
    assert soft["beam1"]["exact_caption_accuracy_sd"] == round(np.std(exact, ddof=1), 4)
    assert again["results"]["hard"]["seeds"] == 2
    assert again["meta"]["commands"] == ["python zoo/show_attend_tell/recipe.py --seeds 2",
                                         "python zoo/show_attend_tell/recipe.py "
                                         "--attention soft --seed 3"]
    defaults = "40,000 strips x 8 epochs, initial state mean"
    assert again["overlays"] == {"hard": defaults, "soft": defaults}
    (tmp_path / "attention_soft.png").write_bytes(b"")
    text = sat.render(again, str(tmp_path))
    assert "| soft | greedy | 0.850 ± 0.050 |" in text
    assert "| 40,000 strips x 8 epochs, initial state mean | soft | 3 | 0.850 ± 0.050 |" in text
    assert "hard: expected context p=0.2 | hard | 1 | 0.500 |" in text
    assert "![soft attention](attention_soft.png)" in text
    assert "![hard attention]" not in text   # not drawn here


def test_captioning_run_names_say_where_a_run_leaves_its_preset():
    """A flag set to its preset's value names the same run as leaving it
    out (so their seeds join one study row); soft-only runs are not named
    by settings of hard attention."""
    parser_defaults = ["--train", "40000", "--epochs", "8"]

    sat = recipe("show_attend_tell")

    def name(*flags):
        args = runner.parser(sat.TASK, ".").parse_args([*parser_defaults, *flags])
        return sat.run_name(sat.settings(args))

    from kerattn.recipes import captioning

    base = captioning.sizes("base")
    pools = sat.pools_text(base["encoder_pool_sizes"])
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
    captioning = recipe("show_attend_tell")
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


def test_captioning_page_scores_each_target():
    """Each target is scored against its greedy mean of 3 seeds, at the
    bound included: met at the target, missed below it; fewer seeds are not
    scored; an attention without results is left out."""
    captioning = recipe("show_attend_tell")

    def result(exact, own, seeds=3):
        return {"seeds": seeds, "beam1": {"exact_caption_accuracy": exact,
                                          "own_digit_share_all": own}}

    text = captioning._targets({"soft": result(0.95, 0.69), "hard": result(0.8999, 0.9)})
    assert text.endswith(" Here: soft exact 0.9500 met, own digit 0.6900 missed; "
                         "hard exact 0.8999 missed, own digit 0.9000 met.")
    text = captioning._targets({"soft": result(0.5, 0.5)})
    assert "hard" not in text.split("Here:")[1] and "soft exact 0.5000 missed" in text
    text = captioning._targets({"soft": result(0.99, 0.99, seeds=1)})
    assert text.endswith(" Here: soft not scored (1 seed).")


@pytest.mark.parametrize("flags", [["--expectation-rate", "0.5"],
                                   ["--samples-per-caption", "2"]])
def test_captioning_recipe_refuses_hard_flags_for_soft(flags, tmp_path, capsys):
    with pytest.raises(SystemExit):
        runner.main(recipe("show_attend_tell").TASK,
                    argv=["--attention", "soft", "--train", "8", "--test", "4",
                          *flags, "--out", str(tmp_path)])
    assert "hard attention's" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()



# -----------------------------------------------------------------------------
# Every recipe's command line


def test_only_the_chief_writes_the_records(tmp_path, monkeypatch):
    """The runner writes results.json and RESULTS.md (each atomically) on
    the chief alone: on another worker it trains its seeds and writes
    nothing, even when a task returns a row there. Every process waits at
    the strategy's barrier after each seed (while the chief evaluates)."""
    from kerattn import distribute

    def toy(chief):
        events = []

        class Strategy:
            num_replicas, processes, is_chief = 2, 2, chief

            def barrier(self, name="barrier", timeout=None):
                events.append("barrier")

        monkeypatch.setattr(distribute, "from_arguments", lambda args, name: Strategy())
        seeds = []

        def train_seed(args, data, seed, strategy, keep):
            seeds.append(seed)
            events.append(f"seed {seed}")
            if chief and seed == 2:   # each seed is on record as it ends
                assert json.loads((out / "results.json").read_text())["rows"][0][
                    "seed"] == 1
            return {"loss": 1.0}

        task = runner.Task(
            "toy", "a toy task", options=lambda p: None, prepare=lambda args: None,
            train_seed=train_seed,
            settings=lambda args: {},
            record=lambda saved, run: {"rows": (saved or {}).get("rows", []) + run.rows},
            render=lambda results, folder: f"{len(results['rows'])} seeds\n")
        out = tmp_path / str(chief)
        returned = runner.main(task, argv=["--seeds", "2", "--epochs", "1", "--out", str(out)])
        assert events == ["seed 1", "barrier", "seed 2", "barrier"]
        return returned, seeds, sorted(os.listdir(out)) if out.exists() else None

    assert toy(chief=False) == (None, [1, 2], None)   # not even the folder
    returned, seeds, files = toy(chief=True)
    assert seeds == [1, 2] and files == ["RESULTS.md", "results.json"]
    assert (tmp_path / "True" / "RESULTS.md").read_text() == "2 seeds\n"


def test_a_paused_seed_is_not_recorded(tmp_path, capsys):
    """A seed whose training paused (`runner.Paused`, its backup kept) ends
    the command with exit status 75: nothing is recorded or rendered, no
    later seed trains, and the log says to run the same command again."""
    seeds = []

    def train_seed(args, data, seed, strategy, keep):
        seeds.append(seed)
        raise runner.Paused("2 epochs so far, backed up in b.")

    task = runner.Task(
        "toy", "a toy task", options=lambda p: None, prepare=lambda args: None,
        train_seed=train_seed, settings=lambda args: {},
        record=lambda saved, run: pytest.fail("a paused seed was recorded"),
        render=lambda results, folder: pytest.fail("rendered"))
    with pytest.raises(SystemExit) as exit:
        runner.main(task, argv=["--seeds", "2", "--epochs", "1", "--out", str(tmp_path)])
    assert exit.value.code == runner.PAUSED == 75
    assert seeds == [1] and os.listdir(tmp_path) == []
    assert ("seed 1 paused: 2 epochs so far, backed up in b. Run the same "
            "command to go on (exit status 75).") in capsys.readouterr().out


@pytest.mark.parametrize("name", ["seq2seq", "cho_encoder_decoder", "bahdanau_nmt",
                                  "luong_nmt", "transformer_nmt", "convs2s_nmt",
                                  "show_attend_tell", "han_classifier",
                                  "aoa_reader", "pointer_generator", "g2p"])
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
    """`zoo/bahdanau_nmt/recipe.py --preset tiny --distribute data` on 200
    gettext pairs, one epoch, on two stand-in hosts of this process'
    backend (tests/hosts.py, each host in its own directory: only the
    chief's gets the output); then `--report-only` writes the same
    RESULTS.md again."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [REPO, os.environ.get("PYTHONPATH", "")]))
    hosts.run(keras.backend.backend(), [
        os.path.join(ZOO, "bahdanau_nmt", "recipe.py"), "--preset", "tiny",
        "--epochs", "1", "--max-train", "200", "--max-test", "20",
        "--beam-width", "2", "--distribute", "data", "--out", "out"],
        str(tmp_path), env=env, timeout=300)
    assert os.listdir(tmp_path / "host1") == []
    tmp_path = tmp_path / "host0" / "out"
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["epochs"] == 1 and 0 <= results["bleu_greedy"] <= 100
    assert results["beam_greedy_fallback"] is False
    assert re.fullmatch("[0-9a-f]{16}", results["data_sha256"])   # which pairs
    assert results["command"] == ("python zoo/bahdanau_nmt/recipe.py --preset tiny "
                                  "--epochs 1 --max-train 200 --max-test 20 "
                                  "--beam-width 2 --distribute data")
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


def test_classification_recipe_tiny_run(tmp_path, monkeypatch):
    """`zoo/han_classifier/recipe.py --preset tiny` on the topical-10 sample."""
    from kerattn.recipes import classification

    monkeypatch.setattr(classification, "prepare", functools.partial(
        classification.prepare, os.path.join(DATA, "topical10_sample.jsonl")))
    run_recipe("han_classifier", ["--preset", "tiny", "--epochs", "1",
                                  "--out", str(tmp_path)], monkeypatch)
    results = json.loads((tmp_path / "results.json").read_text())
    assert 0 <= results["han_test_accuracy"] <= 1 and results["seed"] == 1
    assert results["settings"]["preset"] == "tiny" and len(results["runs"]) == 1
    text = (tmp_path / "RESULTS.md").read_text()
    assert "`python zoo/han_classifier/recipe.py --epochs 1 --preset tiny`" in text
    assert f"| **HAN** (kerattn.zoo.han_classifier) | **{results['han_test_accuracy']:.3f}** |" in text
    assert (tmp_path / "model.keras").exists()


def test_self_attentive_recipe_tiny_run(tmp_path, monkeypatch):
    """`zoo/self_attentive_classifier/recipe.py --preset tiny` on the
    topical-10 sample, with the penalty and without it: two runs, each
    with its test accuracy and how alike its hops are (NumPy's
    `hop_overlap` of the rows the model gives), the defaults' run on top."""
    from kerattn.recipes import classification

    monkeypatch.setattr(classification, "prepare", functools.partial(
        classification.prepare, os.path.join(DATA, "topical10_sample.jsonl")))
    for extra in (["--penalty", "0"], []):
        run_recipe("self_attentive_classifier",
                   ["--preset", "tiny", "--epochs", "1", "--out", str(tmp_path), *extra],
                   monkeypatch)
    results = json.loads((tmp_path / "results.json").read_text())
    assert [run["settings"]["penalty"] for run in results["runs"]] == [0.0, 0.1]
    # The recipe's default is the one `classification.fit` trains with.
    assert results["settings"]["penalty"] == classification.SELF_ATTENTIVE_PENALTY
    assert results["seed"] == 1
    assert 0 <= results["accuracy"] <= 1 and 0 <= results["overlap"] <= 1
    assert "penalty" not in results["meta"]["sizes"]
    data = classification.prepare()
    assert results["meta"] == dict(
        results["meta"], documents={k: len(data["examples"][k])
                                    for k in ("train", "valid", "test")},
        vocabulary=len(data["vocab"]), max_tokens=classification.MAX_TOKENS)
    text = (tmp_path / "RESULTS.md").read_text()
    assert ("`python zoo/self_attentive_classifier/recipe.py --epochs 1 --preset tiny`"
            in text)
    assert (f"penalty 0.1 | **{results['accuracy']:.3f}** |") in text
    assert "| penalty 0.0, embeddings lsa, patience 3, epochs 1, preset tiny | 1 |" in text
    assert (tmp_path / "hops.png").exists() and (tmp_path / "model.keras").exists()
    # A seed of the same settings on other documents is refused before
    # anything trains (the machine's apt lists change): another count, or
    # as many documents of other text (the fingerprint of the documents
    # and of the texts the vocabulary was learned on).
    row = results["runs"][1]["per_seed"][0]
    tested = row["test_documents"]
    assert tested == len(data["y"]["test"])
    assert row["data_sha256"] == data["data_sha256"] == data_fingerprint(
        {"unlabelled": data["unlabelled"],
         **{k: data["examples"][k] for k in ("train", "valid", "test")}})
    for other, there, now in (({"test_documents": tested + 1},
                               f"test_documents {tested + 1}", tested),
                              ({"data_sha256": "0" * 16}, "data_sha256 0{16}",
                               data["data_sha256"])):
        (tmp_path / "results.json").write_text(json.dumps(dict(results, runs=[
            results["runs"][0], dict(results["runs"][1], per_seed=[dict(row, **other)])])))
        with pytest.raises(ValueError, match=(
                rf"`--out`: .*results.json holds seed 1 of these settings on other "
                rf"data \({there} there, {now} now\)")):
            run_recipe("self_attentive_classifier",
                       ["--preset", "tiny", "--epochs", "1", "--out", str(tmp_path)],
                       monkeypatch)


def test_a_run_refuses_seeds_on_other_data(tmp_path):
    """`runner.refuse_other_data`: only a recorded run of the same settings
    whose seed recorded another size refuses; a row from before the size
    was recorded does not."""
    saved = {"runs": [{"settings": {"a": 1}, "per_seed": [
        {"seed": 1}, {"seed": 2, "test_pairs": 4334}]}]}
    for settings, sizes in (({"a": 2}, {"test_pairs": 4339}),
                            ({"a": 1}, {"test_pairs": 4334})):
        runner.refuse_other_data(saved, settings, sizes, str(tmp_path))
    runner.refuse_other_data(None, {"a": 1}, {"test_pairs": 4339}, str(tmp_path))
    with pytest.raises(ValueError, match="holds seed 2 of these settings on other "
                       r"data \(test_pairs 4334 there, 4339 now\)"):
        runner.refuse_other_data(saved, {"a": 1}, {"test_pairs": 4339}, str(tmp_path))
    # A translation recipe's record: one run, its settings in `config` with
    # the first seed's, `per_seed` from the second seed on.
    one = {"model": "m", "config": {"a": 1, "seed": 0}, "train_pairs": 37739}
    two = dict(one, per_seed=[{"seed": 0, "train_pairs": 37739},
                              {"seed": 1, "train_pairs": 39970}])
    sizes = {"train_pairs": 39970, "test_pairs": 2329}
    assert runner.recorded_seeds(one, {"a": 1}) == [dict(one, seed=0)]
    assert runner.recorded_seeds(one, {"a": 2}) == []
    assert runner.recorded_seeds(None, {"a": 1}) == []
    runner.refuse_other_data(one, {"a": 2}, sizes, str(tmp_path))
    runner.refuse_other_data(dict(one, train_pairs=39970), {"a": 1}, sizes, str(tmp_path))
    for saved, seed in ((one, 0), (two, 0)):
        with pytest.raises(ValueError, match=rf"holds seed {seed} of these settings "
                           r"on other data \(train_pairs 37739 there, 39970 now\)"):
            runner.refuse_other_data(saved, {"a": 1}, sizes, str(tmp_path))
    # The same sizes, other text (an upgraded package): the fingerprints
    # differ. A seed recorded before fingerprints were passes.
    fingerprinted = {"runs": [{"settings": {"a": 1}, "per_seed": [
        {"seed": 1, "test_pairs": 4339}, {"seed": 2, "test_pairs": 4339,
                                          "data_sha256": "0123456789abcdef"}]}]}
    runner.refuse_other_data(fingerprinted, {"a": 1}, {
        "test_pairs": 4339, "data_sha256": "0123456789abcdef"}, str(tmp_path))
    with pytest.raises(ValueError, match="holds seed 2 of these settings on other data "
                       r"\(data_sha256 0123456789abcdef there, fedcba9876543210 now\)"):
        runner.refuse_other_data(fingerprinted, {"a": 1}, {
            "test_pairs": 4339, "data_sha256": "fedcba9876543210"}, str(tmp_path))


def test_the_runner_writes_the_datas_fingerprint_beside_its_sizes():
    """`runner.data_sizes`: the task's sizes and, where `prepare` recorded
    it, the splits' fingerprint; a task without sizes gives the fingerprint
    alone."""
    task = translation_task.task("bahdanau_nmt", "doc")
    data = {"train_pairs": 41, "test": [("a", "b")] * 3}
    assert runner.data_sizes(task.data_sizes, data) == {"train_pairs": 41, "test_pairs": 3}
    data["data_sha256"] = "0123456789abcdef"
    assert runner.data_sizes(task.data_sizes, data) == {
        "train_pairs": 41, "test_pairs": 3, "data_sha256": "0123456789abcdef"}
    # The task's own sizes leave the fingerprint to the runner (one place).
    assert task.data_sizes(data) == {"train_pairs": 41, "test_pairs": 3}
    assert runner.data_sizes(None, data) == {"data_sha256": "0123456789abcdef"}
    assert runner.data_sizes(None, {}) == runner.data_sizes(None, None) == {}


def test_reading_recipe_tiny_run(tmp_path, monkeypatch):
    """`zoo/aoa_reader/recipe.py --preset tiny` on the KJV cloze sample."""
    from kerattn.recipes import reading

    monkeypatch.setattr(reading, "prepare", functools.partial(
        reading.prepare, os.path.join(DATA, "kjv_cloze_sample.txt")))
    run_recipe("aoa_reader", ["--preset", "tiny", "--epochs", "1",
                              "--out", str(tmp_path)], monkeypatch)
    results = json.loads((tmp_path / "results.json").read_text())
    assert 0 <= results["aoa_test_accuracy"]["all"] <= 1 and results["seed"] == 1
    assert results["command"] == "python zoo/aoa_reader/recipe.py --epochs 1 --preset tiny"
    text = (tmp_path / "RESULTS.md").read_text()
    assert f"`{results['command']}`" in text
    assert "| **AoA Reader** (kerattn.zoo.aoa_reader) |" in text
    assert (tmp_path / "model.keras").exists()


def test_summarisation_recipe_tiny_run(tmp_path, monkeypatch):
    """`zoo/pointer_generator/recipe.py --preset tiny` on the committed sample
    of apt's lists: the three rows of Table 1, the phase's control and the
    lead baselines, each model's test summaries decoded with the length
    settings it recorded (chosen on validation); then `--report-only`
    writes the same RESULTS.md again."""
    from kerattn.recipes import summarisation

    searches, summarise = [], summarisation.summarise

    def spy(model, data, texts, *args, **kwargs):   # what reaches the search
        test = list(texts) == [cut for _, cut, _ in data["test"]]
        searches.append((test, kwargs.get("min_length", 0),
                         kwargs.get("length_penalty", 0.0)))
        return summarise(model, data, texts, *args, **kwargs)

    monkeypatch.setattr(summarisation, "summarise", spy)
    monkeypatch.setattr(summarisation, "LENGTH_GRID",
                        {"min_length": (0, 3), "length_penalty": (0.0, "average")})
    run_recipe("pointer_generator", [
        "--preset", "tiny", "--epochs", "1", "--coverage-steps", "2",
        "--beam-width", "2", "--lists-dir", os.path.join(DATA, "debian_lists"),
        "--out", str(tmp_path)], monkeypatch)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["seed"] == 1 and results["settings"]["preset"] == "tiny"
    assert re.fullmatch("[0-9a-f]{16}", results["per_seed"][0]["data_sha256"])
    models = results["models"]
    assert list(models) == ["attention", "pointer_generator", "plain_phase",
                            "coverage"]
    decoded = [(m, p) for test, m, p in searches if test]
    for key in models:
        length = results["per_seed"][0][key]["length"]
        assert len(length["valid_rougeL"]) == 4 and length["valid_pairs"] > 0
        best = max(length["valid_rougeL"].values())
        assert length["valid_rougeL"][
            f"{length['min_length']}/{length['length_penalty']}"] == best
        # The chosen settings decode the test summaries (then the plain
        # search, for the comparison).
        assert decoded.pop(0) == (length["min_length"], length["length_penalty"])
        if (length["min_length"], length["length_penalty"]) != (0, 0.0):
            assert decoded.pop(0) == (0, 0.0)
    assert not decoded
    for figures in models.values():
        assert all(0 <= figures[k] <= 100 for k in ("rouge1", "rouge2", "rougeL"))
        assert all(0 <= figures[k] <= 1 for k in ("copied", "oov", "repeated_trigrams"))
    assert models["attention"]["oov"] == 0   # it cannot write an OOV
    # 22 training pairs: the coverage phase's 2 batches of 64 are one batch.
    assert models["coverage"]["steps"] == 1 and models["attention"]["epochs"] == 1
    report = results["meta"]["report"]
    assert report["exact_duplicates"] >= 1 and report["near_duplicates"] >= 1
    text = (tmp_path / "RESULTS.md").read_text()
    lead = results["meta"]["lead"]["lead_sentence"]
    assert (f"| lead: first sentence of the description | {lead['rouge1']:.2f} | "
            f"{lead['rouge2']:.2f} | {lead['rougeL']:.2f} |") in text
    r1 = models["pointer_generator"]["rouge1"]
    assert f"| + pointer-generator | {r1:.2f} |" in text
    assert "`python zoo/pointer_generator/recipe.py --preset tiny --epochs 1" in text
    assert (tmp_path / "attention.png").stat().st_size > 1000
    assert (tmp_path / "model.keras").exists()
    (tmp_path / "RESULTS.md").unlink()
    run_recipe("pointer_generator", ["--report-only", "--out", str(tmp_path)],
               monkeypatch)
    assert (tmp_path / "RESULTS.md").read_text() == text


def test_each_recorded_g2p_run_is_retrained_by_its_command():
    """The command RESULTS.md shows for each run of zoo/g2p/results.json
    parses back to that run's settings (a switch such as --end-marker
    written as its name alone, a rate as its number)."""
    g2p = recipe("g2p")
    with open(os.path.join(ZOO, "g2p", "results.json")) as f:
        runs = json.load(f)["runs"]
    assert any(r["settings"].get("end_marker") for r in runs)
    p = runner.parser(g2p.TASK, ".")
    for run in runs:
        command = runner.command_for(g2p.TASK, run["settings"], [1])
        assert g2p.settings(p.parse_args(command.split()[2:])) == run["settings"], command


def test_g2p_seeds_stopped_at_different_epochs_join_one_run():
    """Early stopping and a time cap end seeds at different epochs: the
    seeds of one run's settings still join (the budget is a setting), and
    a row scored on other test words starts afresh."""
    import types

    g2p = recipe("g2p")
    settings = dict(g2p.DEFAULTS, attention="hard-monotonic", epochs=40,
                    minutes=25.0, patience=3)
    data = {"train_words": 9, "train_pairs": 10, "valid_words": 2,
            "source_vocab": [0] * 30, "target_vocab": [0] * 43}

    def row(seed, wer, epochs, test_words=100):
        return {"seed": seed, "wer": wer, "per": wer / 4, "attended_nowhere": 0.0,
                "minutes": 25.0, "steps": 1900 * epochs, "epochs": epochs,
                "parameters": 7, "test_words": test_words, "examples": []}

    def run(*rows):
        return types.SimpleNamespace(rows=list(rows), settings=settings, data=data,
                                     command="python zoo/g2p/recipe.py ...")

    first = g2p.record(None, run(row(1, 33.0, 15)))
    both = g2p.record(first, run(row(2, 31.0, 14)))["runs"][0]
    assert both["seeds"] == [1, 2] and both["wer"] == 32.0
    assert [r["epochs"] for r in both["per_seed"]] == [15, 14]
    other = g2p.record({"runs": [both]}, run(row(3, 30.0, 14, test_words=50)))
    assert other["runs"][0]["seed"] == 3 and "seeds" not in other["runs"][0]


def test_g2p_per_seed_rows_say_what_ended_their_training():
    """A seed under `patience` that reached neither its time cap nor its
    epoch budget was ended by early stopping (Keras' `EarlyStopping`: a tie
    is no improvement, so the best is the first of equal losses); else the
    cap or the budget ended it, and the page says which, and whether the
    loss was still falling at the cap."""
    g2p = recipe("g2p")
    budget = {"epochs": 40, "minutes": 60.0, "patience": 3}
    # The best at epoch 2, then 3 epochs without improvement (one a tie).
    early = {"epochs": 5, "minutes": 20.0, "val_losses": [0.5, 0.3, 0.31, 0.3, 0.4]}
    assert runner.stopped_by(budget, early) == "early"
    assert g2p.ended_by(budget, early) == "early stopping after epoch 5 (best: epoch 2)"
    # Two epochs since the best when the cap struck: not early stopping.
    capped = {"epochs": 4, "minutes": 60.05, "val_losses": [0.5, 0.3, 0.31, 0.32]}
    assert runner.stopped_by(budget, capped) == "minutes"
    assert g2p.ended_by(budget, capped) == "the 60-minute cap in epoch 4"
    falling = dict(capped, val_losses=[0.5, 0.3, 0.29, 0.28])
    assert g2p.ended_by(budget, falling) == (
        "the 60-minute cap in epoch 4 (the validation loss still falling)")
    # A tie at the cap: not "still falling".
    tied = dict(capped, val_losses=[0.5, 0.3, 0.29, 0.29])
    assert g2p.ended_by(budget, tied) == "the 60-minute cap in epoch 4"
    # The epoch budget reached under patience: the budget ended it.
    assert runner.stopped_by(dict(budget, epochs=5), early) == "epochs"
    # Without patience the same losses end by the budget or the cap.
    plain = {"epochs": 2, "minutes": 60.0}
    assert runner.stopped_by(plain, dict(early, epochs=2)) == "epochs"
    assert g2p.ended_by(plain, dict(early, epochs=2)) == "its 2 epochs"
    assert runner.stopped_by(plain, dict(early, epochs=1, minutes=61.0)) == "minutes"
    # A seed that recorded neither its epochs nor a cap's minutes, or a run
    # without patience short of both: unknown.
    assert runner.stopped_by(plain, {"minutes": 3.0}) is None
    assert g2p.ended_by(plain, {"minutes": 3.0}) == "not recorded"
    assert runner.stopped_by(plain, dict(early, epochs=1)) is None
    assert runner.stopped_by({"patience": 3}, {"minutes": 3.0}) is None


# A stand-in for the `phonetisaurus` command: `train` keeps the lexicon it
# is given as its "model"; `predict` answers each word from the JSON file
# ANSWERS names (a word not in it gets no line, as a tool can fail to).
FAKE_PHONETISAURUS = """\
import json, os, shutil, sys
command, model = sys.argv[1], sys.argv[sys.argv.index("--model") + 1]
if command == "train":
    shutil.copy(sys.argv[-1], model)
else:
    answers = json.load(open(os.environ["ANSWERS"]))
    for word in sys.stdin.read().split():
        if word in answers:
            print(word, answers[word])
"""


def test_g2p_joint_ngram_baseline_is_recorded_beside_the_runs(tmp_path, monkeypatch):
    """zoo/g2p/joint_ngram.py with a stand-in tool: it trains on a line
    for every training pronunciation of the split, a word's answer is
    scored as the recipe scores its models (a word the tool did not
    answer, wrong), the figure joins results.json beside the runs and
    RESULTS.md shows it against the best run, and a later seed's record
    keeps it."""
    import types

    from kerattn.recipes import g2p as g2p_recipes

    g2p = recipe("g2p")
    spec = importlib.util.spec_from_file_location(
        "joint_ngram", os.path.join(ZOO, "g2p", "joint_ngram.py"))
    joint_ngram = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(joint_ngram)
    sample = os.path.join(DATA, "cmudict_sample.dict")
    splits = cmudict_g2p(path=sample)
    test = splits["test"]
    # Right (the last listed pronunciation), wrong, and one not answered.
    answers = {w: prons[-1] for w, prons in test[:4]}
    answers.update({w: "AH" for w, _ in test[4:-1]})
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    monkeypatch.setenv("ANSWERS", str(tmp_path / "answers.json"))
    tool = tmp_path / "phonetisaurus"
    tool.write_text(f"#!{sys.executable}\n{FAKE_PHONETISAURUS}")
    tool.chmod(0o755)
    kept = {}
    real_measure = joint_ngram.measure

    def measure(command, splits, folder):   # the lexicon, read before it goes
        figures = real_measure(command, splits, folder)
        kept["model"] = open(os.path.join(folder, "model.fst")).read()
        return figures

    monkeypatch.setattr(joint_ngram, "measure", measure)
    settings = dict(g2p.DEFAULTS, attention="global")
    row = {"seed": 1, "wer": 60.0, "per": 30.0, "attended_nowhere": 0.0,
           "minutes": 1.0, "steps": 10, "epochs": 2, "parameters": 7,
           "test_words": len(test), "examples": [], "val_losses": [1.0, 0.9],
           # the recipe's own fingerprint of the split
           "data_sha256": g2p_recipes.prepare(splits)["data_sha256"]}
    data = {"train_words": 9, "train_pairs": 10, "valid_words": 2,
            "source_vocab": [0] * 30, "target_vocab": [0] * 43}

    def run(seed):
        return types.SimpleNamespace(rows=[dict(row, seed=seed)], settings=settings,
                                     data=data, command="python zoo/g2p/recipe.py")

    runner.save(str(tmp_path), g2p.record(None, run(1)))
    results = joint_ngram.main(["--phonetisaurus", str(tool), "--dict", sample,
                                "--out", str(tmp_path)])
    lines = kept["model"].splitlines()
    assert sorted(lines) == sorted(f"{w}\t{p}" for w, prons in splits["train"]
                                   for p in prons)
    b = results["baselines"]["joint_ngram"]
    assert b["wer"] == round(100 * (len(test) - 4) / len(test), 2)
    assert b["unpronounced"] == 1 and b["test_words"] == len(test)
    assert b["train_pairs"] == len(lines) and b["data_sha256"] == row["data_sha256"]
    text = (tmp_path / "RESULTS.md").read_text()
    assert f"**WER {b['wer']:.2f}, PER {b['per']:.2f}** (one run; trained in" in text
    assert f"trained on all {b['train_pairs']:,} training pronunciations" in text
    assert "1 word it gave no pronunciation, scored wrong" in text
    assert "other data" not in text
    assert (f"The best run here, {g2p.NAMES['global']}, 60.00, is ahead of it by "
            f"{b['wer'] - 60:.2f} WER points; the same tool scores 24.4 on the "
            "CMUdict split its authors distribute, and the papers' single neural "
            "models 22.08-25.8 on theirs") in text
    # A later seed keeps the baseline; a page without one has no paragraph.
    later = g2p.record(results, run(2))
    assert later["baselines"] == results["baselines"]
    assert "The baseline beside them" not in g2p.render({"runs": later["runs"]})
    with pytest.raises(ValueError, match="`phonetisaurus` must be"):
        joint_ngram.main(["--phonetisaurus", str(tmp_path / "none"), "--out",
                          str(tmp_path)])


def test_g2p_page_sets_streaming_error_against_latency():
    """The page's "error against latency" table: every run of the one-way
    encoder, best WER first, "-" for one read whole; the best two-way run
    by its greedy WER named, and how far the best model that streams is
    behind it; no table without a run that streams."""
    g2p = recipe("g2p")

    def run(preset, wer, seeds=1, **streaming):
        return {"settings": dict(g2p.DEFAULTS, preset=preset), "wer": wer,
                "per": wer / 4, "seeds": list(range(1, seeds + 1)),
                "per_seed": [{"seed": i + 1, "wer": wer} for i in range(seeds)],
                **{f"streaming_{k}": v for k, v in streaming.items()}}

    runs = [run("g2p-streaming", 36.41, early=0.511, lagging=3.59, same_as_offline=1.0),
            run("g2p", 28.0), run("g2p", 27.5),
            run("g2p-streaming", 35.56),
            run("g2p-streaming", 32.5, 3, early=0.466, lagging=4.07, same_as_offline=1.0)]

    def name(x):
        return f"{x['settings']['preset']} {x['wer']}"

    def seeds(x):
        return x["seeds"]

    text = g2p._latency_table(runs, name, seeds)
    lines = [line for line in text.splitlines() if line.startswith("| g2p")]
    assert lines == ["| g2p-streaming 32.5 | 3 | 32.50 | 8.12 | 46.6% | 4.07 | 100.0% |",
                     "| g2p-streaming 35.56 | 1 | 35.56 | 8.89 | - | - | - |",
                     "| g2p-streaming 36.41 | 1 | 36.41 | 9.10 | 51.1% | 3.59 | 100.0% |"]
    assert ("gives 1). The best two-way run by its greedy WER, which reads the whole "
            "word first: g2p 27.5, WER 27.50 greedy; the best model that streams, "
            "g2p-streaming 32.5, greedy 32.50, is 5.00 WER points behind it.\n") in text
    assert g2p._latency_table(runs[1:4], name, seeds) == ""
    # A two-way run decoded with a beam: set by its greedy figures (28.00
    # here, behind the greedy run's 28.0: that one is the best).
    runs[2]["settings"]["beam_width"] = 5
    runs[2]["per_seed"] = [{"wer": 27.0, "greedy": {"wer": 27.25}},
                           {"wer": 28.0, "greedy": {"wer": 28.75}}]
    runs[1]["wer"] = runs[1]["per_seed"][0]["wer"] = 28.5
    assert ("word first: g2p 27.5, WER 28.00 greedy (27.50 with its beam); the best "
            "model that streams, g2p-streaming 32.5, greedy 32.50, is 4.50 WER "
            "points behind it.") in g2p._latency_table(runs, name, seeds)
    # A beam run without its seeds' greedy figures is not set against; a
    # run on part of the words neither; a streaming model ahead says so.
    del runs[2]["per_seed"][1]["greedy"]
    runs.append(run("g2p", 20.0))
    runs[-1]["settings"]["max_train"] = 100
    runs.append(run("g2p-streaming", 27.0, early=0.5, lagging=3.0, same_as_offline=1.0))
    assert ("word first: g2p 28.5, WER 28.50 greedy; the best model that streams, "
            "g2p-streaming 27.0, greedy 27.00, is ahead of it by 1.50 WER points."
            ) in g2p._latency_table(runs, name, seeds)
    runs[1]["settings"]["max_test"] = 10   # no two-way run of every word left
    assert "The best two-way run" not in g2p._latency_table(runs, name, seeds)


def test_g2p_page_sets_the_attentions_side_by_side():
    """"The attentions side by side": a table for each budget that more than
    one attention trained under (a run of another budget is left out), and
    which rows can be told apart from the best (lowest mean) row: apart
    when its mean + sd is below the row's mean - sd, over two seeds or more
    each;
    rows measured on different machines are named with them."""
    g2p = recipe("g2p")

    def run(attention, wers, **settings):
        seeds = [{"seed": i + 1, "wer": w, "per": w / 4, "steps": 100 * (i + 1)}
                 for i, w in enumerate(wers)]
        mean = float(np.mean(wers))
        return {"settings": dict(g2p.DEFAULTS, attention=attention, **settings),
                "wer": mean, "per": mean / 4, "minutes": 5.0, "per_seed": seeds}

    def name(x):
        tags = [f"{k} {v}" for k, v in x["settings"].items()
                if g2p.DEFAULTS.get(k) != v and k != "attention"]
        return g2p.NAMES[x["settings"]["attention"]] + (f" ({', '.join(tags)})" if tags else "")

    # Overlapping: global 41 +- 1 (40-42), mocha 42 +- 1 (41-43).
    runs = [run("global", [40.0, 41.0, 42.0]), run("mocha", [41.0, 42.0, 43.0]),
            run("location-sensitive", [30.0], epochs=9)]
    text = g2p._side_by_side(runs, name)
    assert text.count("### ") == 1 and "### The default budget" in text
    assert "| global (Luong, general score) | 3 | 41.00 | 10.25 | 200 | 5.0 |" in text
    assert "location-sensitive" not in text
    assert ("global cannot be told apart from mocha: mocha's WER interval (mean ± "
            "sd over seeds) overlaps global's (global 40.00-42.00, mocha "
            "41.00-43.00%).") in text
    # Apart: global 41 +- 1 below mocha 45 +- 1 (44-46).
    text = g2p._side_by_side([run("global", [40.0, 41.0, 42.0]),
                             run("mocha", [44.0, 45.0, 46.0])], name)
    assert "global is ahead of every other attention by more than a standard deviation" in text
    # Both: mocha's interval overlaps the best's, location-sensitive's not.
    text = g2p._side_by_side([run("global", [40.0, 41.0, 42.0]),
                             run("mocha", [41.0, 42.0, 43.0]),
                             run("location-sensitive", [44.0, 45.0, 46.0])], name)
    assert ("global cannot be told apart from mocha: mocha's WER interval (mean ± "
            "sd over seeds) overlaps global's; location-sensitive is behind global "
            "by more than a standard deviation of each (global 40.00-42.00, mocha "
            "41.00-43.00, location-sensitive 44.00-46.00%).") in text
    # Two of each: the plural, every name listed.
    text = g2p._side_by_side([run("mocha", [41.0, 42.0, 43.0]),
                             run("global", [40.0, 41.0, 42.0]),
                             run("location-sensitive", [44.0, 45.0, 46.0]),
                             run("hard-monotonic", [40.5, 41.5, 42.5]),
                             run("mocha", [47.0, 48.0], epochs=9)], name)
    assert ("global cannot be told apart from mocha and hard-monotonic: their WER "
            "intervals (mean ± sd over seeds) overlap global's; location-sensitive "
            "is behind global") in text
    text = g2p._side_by_side([run("global", [40.0, 41.0, 42.0]),
                             run("mocha", [41.0, 42.0, 43.0]),
                             run("location-sensitive", [44.0, 45.0, 46.0]),
                             run("hard-monotonic", [44.0, 44.5, 45.0])], name)
    assert "; location-sensitive and hard-monotonic are behind global by more" in text
    # One seed somewhere: the difference, not a verdict; the budget named.
    text = g2p._side_by_side([run("global", [28.0], epochs=40), run(
        "location-sensitive", [29.5], epochs=40)], name)
    assert "### epochs 40" in text
    assert ("Not yet two seeds of every attention (global 1 seed, location-sensitive "
            "1 seed): a difference of 1.50 WER points") in text
    assert "compare machines" not in text   # neither machine recorded: one machine
    # Rows measured on two machines: each named, the minutes not compared.
    machine = {"accelerator": "cpu", "cpu": "a Xeon", "cpus": 2, "backend": "jax",
               "versions": {"keras": "3.15.1", "jax": "0.10.2"}}
    two = [run("global", [28.0], epochs=40), run("location-sensitive", [29.5], epochs=40)]
    two[1]["per_seed"][0]["machine"] = machine
    text = g2p._side_by_side(two, name, "tensorflow")
    assert (" The minutes compare machines, not attentions (global on this project's "
            "2-core CPU with backend tensorflow (the machine was not recorded); "
            "location-sensitive on 2 cores of a Xeon with JAX 0.10.2 and Keras 3.15.1): "
            "the steps compare the budgets.") in text
    # The same two machines under each attention, in another order: no sentence.
    a, b = (run("global", [28.0, 28.2], epochs=40),
            run("location-sensitive", [29.5, 29.7], epochs=40))
    a["per_seed"][0]["machine"] = b["per_seed"][1]["machine"] = machine
    assert "compare machines" not in g2p._side_by_side([a, b], name, "tensorflow")
    b["per_seed"][0]["machine"] = machine   # now only the Xeon under location-sensitive
    assert ("(global on 2 cores of a Xeon with JAX 0.10.2 and Keras 3.15.1 and on this "
            "project's 2-core CPU with backend tensorflow (the machine was not recorded); "
            "location-sensitive on 2 cores of a Xeon") in g2p._side_by_side([a, b], name,
                                                                           "tensorflow")
    assert g2p._side_by_side(runs[2:], name) == ""


def test_g2p_recipe_tiny_run(tmp_path, monkeypatch):
    """`zoo/g2p/recipe.py --preset tiny` on the committed CMUdict sample: two
    seeds of MoChA, then a global-attention run beside it trained the
    papers' way (early stopping, a learning-rate decay, a backup folder,
    beam search), paused after its first epoch (exit status 75, nothing
    recorded) and finished by the same command; the runs' WER / PER are
    their seeds' mean and sample deviation; each seed records its machine
    (the resumed one each call's) and the page names it; the learning
    curve is on the page; `--report-only` writes the same RESULTS.md
    again."""
    sample = os.path.join(DATA, "cmudict_sample.dict")
    data = ["--preset", "tiny", "--dict", sample, "--out", str(tmp_path)]
    common = [*data, "--epochs", "1"]
    run_recipe("g2p", ["--attention", "mocha", "--seeds", "2", *common], monkeypatch)
    papers = ["--patience", "2", "--lr-decay", "0.5", "--beam-width", "2",
              "--wait-k", "2", "--wait-rate", "1.5", "--monitor", "val_wer",
              "--backup", str(tmp_path / "backup")]
    paused = ["--attention", "global", *data, "--epochs", "2", *papers,
              "--pause-after", "1e-6"]
    before = {n: (tmp_path / n).read_text() for n in ("RESULTS.md", "results.json")}
    with pytest.raises(SystemExit) as stop:
        run_recipe("g2p", paused, monkeypatch)
    assert stop.value.code == 75 and os.listdir(tmp_path / "backup")
    assert {n: (tmp_path / n).read_text() for n in before} == before
    assert not any(n.startswith("alignments_global") for n in os.listdir(tmp_path))
    run_recipe("g2p", paused, monkeypatch)
    runs = json.loads((tmp_path / "results.json").read_text())["runs"]
    assert [r["settings"]["attention"] for r in runs] == ["global", "mocha"]
    glob, mocha = runs
    assert mocha["seeds"] == [1, 2] and glob["seed"] == 1
    for key in ("wer", "per"):
        values = [s[key] for s in mocha["per_seed"]]
        assert mocha[key] == round(float(np.mean(values)), 4)
        assert mocha[f"{key}_sd"] == round(float(np.std(values, ddof=1)), 4)
        assert glob[key] >= 0 and f"{key}_sd" not in glob   # PER may pass 100
    assert glob["attended_nowhere"] == 0          # a softmax always attends
    assert 0 <= mocha["attended_nowhere"] <= 1
    assert mocha["test_words"] == glob["test_words"] == 15   # 5% of the sample
    # Every seed's row says which data it saw: the splits' fingerprint.
    splits = cmudict_g2p(path=sample)
    assert {s["data_sha256"] for r in runs for s in r["per_seed"]} == {
        data_fingerprint({k: splits[k] for k in ("train", "valid", "test")})}
    assert {k: glob["settings"][k] for k in ("patience", "lr_decay", "beam_width",
                                             "wait_k", "wait_rate", "monitor")} == {
        "patience": 2, "lr_decay": 0.5, "beam_width": 2, "wait_k": 2, "wait_rate": 1.5,
        "monitor": "val_wer"}
    assert "backup" not in glob["settings"] and "patience" not in mocha["settings"]
    assert set(glob["per_seed"][0]["greedy"]) == {"wer", "per"}   # beside the beam's
    curve = glob["per_seed"][0]["val_losses"]
    assert len(curve) == 2 and np.isfinite(curve).all()
    # Decoded after each epoch, both calls' (--monitor val_wer); not asked, none.
    assert len(glob["per_seed"][0]["val_wers"]) == 2
    assert "val_wers" not in mocha["per_seed"][0]
    machine = glob["per_seed"][0]["machine"]
    assert machine["backend"] == keras.backend.backend()
    assert machine["versions"]["keras"] == keras.__version__
    calls = glob["per_seed"][0]["calls"]   # trained in two calls: each one's
    assert [(c["epochs"], c["machine"]) for c in calls] == [(1, machine)] * 2
    assert "calls" not in mocha["per_seed"][0]   # one call
    text = (tmp_path / "RESULTS.md").read_text()
    assert f"Measured on {machine['cpus']} cores of " in text or "Measured on one " in text
    assert f"seed 1: {curve[0]:.3f} {curve[1]:.3f}\n" in text
    assert (f"| {recipe('g2p').NAMES['mocha']} (preset tiny, epochs 1, dict {sample}) | 2 | "
            f"{mocha['wer']:.2f} ± {mocha['wer_sd']:.2f} | ") in text
    assert (f"python zoo/g2p/recipe.py --attention mocha --preset tiny --epochs 1 "
            f"--dict {sample} --seeds 2") in text
    assert (tmp_path / "alignments_mocha_tiny.png").stat().st_size > 1000
    assert (tmp_path / "alignments_global_tiny_patience2-lr_decay0.5-beam_width2"
            "-wait_k2-wait_rate1.5-monitorval_wer.png").exists()
    (tmp_path / "RESULTS.md").unlink()
    run_recipe("g2p", ["--report-only", "--out", str(tmp_path)], monkeypatch)
    assert (tmp_path / "RESULTS.md").read_text() == text
    with pytest.raises(SystemExit):   # a backup is one seed's training
        run_recipe("g2p", ["--backup", str(tmp_path / "b"), "--seeds", "2", *common],
                   monkeypatch)
    with pytest.raises(SystemExit):   # a rate without its schedule
        run_recipe("g2p", ["--wait-rate", "1.2", *common], monkeypatch)
    with pytest.raises(SystemExit):   # a pause keeps a backup
        run_recipe("g2p", ["--pause-after", "30", *common], monkeypatch)


def test_g2p_phrases_page_says_whether_the_papers_shape_holds():
    """The verdict reads the rows of the most seeds: GMM v2b's and DCA's
    growth from 2 to 8 words against the others', on average and by seed."""
    module = recipe("g2p_phrases")

    def run(attention, growths):   # one seed a growth: WER 40 at 2 words
        rows = [{"seed": i + 1, "by_length": {"2": {"wer": 40.0},
                                               "8": {"wer": 40.0 + g}}}
                for i, g in enumerate(growths)]
        mean = float(np.mean(growths))
        return {"settings": {"attention": attention}, "seeds": [1, 2, 3][:len(rows)],
                "per_seed": rows, "by_length": {"2": {"wer": 40.0},
                                                "8": {"wer": 40.0 + mean}}}

    gmm, dca = run("gmm", [0.0, 1.0, 2.0]), run("dca", [1.0, 2.0, 4.0])
    mocha = dict(run("mocha", [-5.0]), seeds=[1])   # one seed: not compared
    text = module.verdict([gmm, dca, run("global", [50.0, 60.0, 70.0]), mocha])
    assert "ours shows it: GMM v2b and DCA grow least. In every seed." in text
    assert (" Of the rows of fewer seeds, " + module.NAMES["mocha"] + " (1 seed, "
            "-5.00 points) grew less than GMM v2b and DCA; more seeds would tell "
            "whether its small growth holds.") in text
    # Between GMM v2b's mean (1.00) and DCA's (2.33): not less than both; a
    # GMM v2b row of fewer seeds is not set against GMM v2b.
    between = dict(run("forward", [1.5]), seeds=[1])
    fewer_gmm = dict(run("gmm", [-1.0]), seeds=[1])
    text = module.verdict([gmm, dca, run("global", [50.0, 60.0, 70.0]), between,
                           fewer_gmm])
    assert "rows of fewer seeds" not in text
    text = module.verdict([gmm, dca, run("global", [50.0, 60.0, 70.0]), mocha,
                           dict(run("forward", [0.5]), seeds=[1])])
    assert (" Of the rows of fewer seeds, " + module.NAMES["mocha"] + " (1 seed, "
            "-5.00 points) and " + module.NAMES["forward"] + " (1 seed, +0.50 "
            "points) grew less than GMM v2b and DCA; more seeds would tell "
            "whether their small growth holds.") in text
    assert f"- {module.NAMES['dca']}: +2.33 points (3 seeds; +1.00 to +4.00 by seed)" in text
    text = module.verdict([gmm, dca, run("location-sensitive", [3.0, 20.0, 40.0])])
    assert "rows of fewer seeds" not in text
    assert ("On average only: a seed of " + module.NAMES["location-sensitive"]
            + " grew +3.00 points, below the +4.00 of a seed of GMM v2b or DCA.") in text
    text = module.verdict([gmm, dca, run("global", [0.0, 0.0, 0.0])])
    assert "does not show it: another attention grows less" in text


def test_g2p_phrases_recipe_tiny_run(tmp_path, monkeypatch):
    """`zoo/g2p_phrases/recipe.py --preset tiny` on the committed CMUdict
    sample: two seeds of GMM attention and one of DCA; each length's
    figures are the seeds' mean and sample deviation; the page shows each
    run by phrase length, the failures and the growth from 2 to 8 words;
    the alignment picture is drawn; `--report-only` writes the same page."""
    sample = os.path.join(DATA, "cmudict_sample.dict")
    common = ["--preset", "tiny", "--epochs", "1", "--train-phrases", "120",
              "--test-phrases", "4", "--dict", sample, "--out", str(tmp_path)]
    run_recipe("g2p_phrases", ["--attention", "gmm", "--seeds", "2", *common],
               monkeypatch)
    run_recipe("g2p_phrases", ["--attention", "dca", *common], monkeypatch)
    runs = json.loads((tmp_path / "results.json").read_text())["runs"]
    assert [r["settings"]["attention"] for r in runs] == ["gmm", "dca"]
    gmm, dca = runs
    assert gmm["seeds"] == [1, 2] and dca["seed"] == 1
    for n in ("2", "4", "8"):
        for key in ("wer", "per", "skipped", "repeated", "stalled"):
            values = [s["by_length"][n][key] for s in gmm["per_seed"]]
            assert gmm["by_length"][n][key] == round(float(np.mean(values)), 2)
            assert gmm["by_length"][n][f"{key}_sd"] == round(
                float(np.std(values, ddof=1)), 2)
            assert f"{key}_sd" not in dca["by_length"][n]
        assert 0 <= gmm["by_length"][n]["stalled"] <= 100
        assert gmm["by_length"][n]["phrases"] == 4
    text = (tmp_path / "RESULTS.md").read_text()
    name = recipe("g2p_phrases").NAMES["gmm"]
    assert (f"| {name} (preset tiny, epochs 1, train_phrases 120, test_phrases 4, "
            f"dict {sample}) | 2 | ") in text
    assert "## What these rows show" in text
    assert (f"python zoo/g2p_phrases/recipe.py --attention gmm --preset tiny "
            f"--epochs 1 --train-phrases 120 --test-phrases 4 --dict {sample} "
            "--seeds 2") in text
    assert (tmp_path / "alignments_gmm.png").stat().st_size > 1000
    (tmp_path / "RESULTS.md").unlink()
    run_recipe("g2p_phrases", ["--report-only", "--out", str(tmp_path)], monkeypatch)
    assert (tmp_path / "RESULTS.md").read_text() == text
    with pytest.raises(SystemExit):   # not an attention of the test
        run_recipe("g2p_phrases", ["--attention", "coverage", *common], monkeypatch)


def test_summarisation_seeds_join_with_mean_sd_and_interval():
    """Three seeds of one setting: each model's ROUGE is the mean with the
    sample sd (NumPy's), and the 95% interval of the mean is t(2) sd /
    sqrt(3); a fourth seed of other settings is a run of its own."""
    pg = recipe("pointer_generator")

    def seed(s, base):
        model = {"rouge1": base, "rouge2": base / 2, "rougeL": base - 1,
                 "copied": 0.5, "oov": 0.01, "unk": 0.02, "repeated_trigrams": 0.0,
                 "tokens_per_summary": 5.0, "minutes": 1.0, "epochs": 2,
                 "steps": 10, "parameters": 100, "examples": []}
        model.update({f"plain_{k}": model[k] - 1 for k in
                      ("rouge1", "rouge2", "rougeL", "tokens_per_summary")})
        return {"seed": s, "attention": dict(model),
                "pointer_generator": dict(model, rouge1=base + 2),
                "plain_phase": dict(model, rouge1=base + 2.5),
                "coverage": dict(model, rouge1=base + 3),
                "reference_figures": dict(model), "test_pairs": 40}

    args = runner.parser(pg.TASK, ".").parse_args(["--seeds", "3"])
    data = {"train_pairs": [0] * 3, "valid_pairs": [0], "test": [0] * 40,
            "vocab": [0] * 9, "max_summary": 20, "report": None,
            "lead": {"lead_sentence": {"rouge1": 1, "rouge2": 2, "rougeL": 3},
                     "lead_words": {"rouge1": 1, "rouge2": 2, "rougeL": 3, "k": 9}}}
    rows = [seed(1, 30.0), seed(2, 32.0), seed(3, 37.0)]
    r = pg.record(None, runner.Run(pg.settings(args), rows,
                                   "python zoo/pointer_generator/recipe.py --seeds 3",
                                   args, data))
    values = [32.0, 34.0, 39.0]
    assert r["models"]["pointer_generator"]["rouge1"] == round(np.mean(values), 4)
    sd = np.std(values, ddof=1)
    assert r["models"]["pointer_generator"]["rouge1_sd"] == round(sd, 4)
    text = pg.render(json.loads(json.dumps(r)))
    assert f"| + pointer-generator | {np.mean(values):.2f} ± {sd:.2f} |" in text
    half = 4.303 * np.std([29.0, 31.0, 36.0], ddof=1) / np.sqrt(3)
    assert f"attention baseline (`copy=False`) ROUGE-L 32.00 ± {half:.2f}" in text
    assert "`python zoo/pointer_generator/recipe.py --seeds 3`" in text
    other = runner.parser(pg.TASK, ".").parse_args(["--epochs", "3"])
    more = pg.record(r, runner.Run(pg.settings(other), [seed(1, 20.0)],
                                   "python zoo/pointer_generator/recipe.py --epochs 3",
                                   other, data))
    assert len(more["runs"]) == 2 and more["seeds"] == [1, 2, 3]   # defaults lead


def test_captioning_recipe_tiny_run(tmp_path, monkeypatch):
    """`zoo/show_attend_tell/recipe.py --preset tiny`, both attentions, on 32
    strips; then `--report-only` writes the same RESULTS.md again."""
    run_recipe("show_attend_tell", ["--preset", "tiny", "--train", "32", "--test",
                                    "8", "--epochs", "1", "--out", str(tmp_path)],
               monkeypatch)
    results = json.loads((tmp_path / "results.json").read_text())
    for attention in ("soft", "hard"):
        r = results["results"][attention]
        for beam in ("beam1", "beam3"):
            assert 0.0 <= r[beam]["exact_caption_accuracy"] <= 1.0
            assert 0.0 <= r[beam]["own_digit_share_all"] <= 1.0
        assert (tmp_path / f"model_{attention}.keras").exists()
    text = (tmp_path / "RESULTS.md").read_text()
    assert "| hard | greedy |" in text and "| soft | beam 3 |" in text
    assert "`python zoo/show_attend_tell/recipe.py --preset tiny --train 32" in text
    (tmp_path / "RESULTS.md").unlink()
    run_recipe("show_attend_tell", ["--report-only", "--out", str(tmp_path)],
               monkeypatch)
    assert (tmp_path / "RESULTS.md").read_text() == text


def test_a_user_split_run_is_recorded_once_on_its_own_files(tmp_path):
    """zoo/user_split.py: a fit.py run folder becomes a seed's row of the
    split its files are (by SHA-1); a run on other files, a seed recorded
    already and a run of another seed are refused; the page's section
    counts the seeds ahead of both lead baselines."""
    import user_split

    assert user_split.to_test("hello") in (True, False)
    share = np.mean([user_split.to_test(f"package{i}") for i in range(4000)])
    assert abs(share - user_split.TEST_SHARE) < 0.02
    (tmp_path / "train.tsv").write_text("a b c\tx\nd e\ty\n")
    (tmp_path / "test.tsv").write_text("f g\tz\n")
    folder = tmp_path / "page"
    folder.mkdir()

    def run(name, seed, rouge, test="test.tsv"):
        out = tmp_path / name
        out.mkdir()
        score = {"rouge1": rouge, "rouge2": 10.0, "rougeL": rouge - 3}
        (out / "results.json").write_text(json.dumps({
            "model": "pointer_generator", "seed": seed, "size": "small",
            "backend": "jax",
            "data": str(tmp_path / "train.tsv"), "test_data": str(tmp_path / test),
            "rouge": score, "baselines": {
                "lead_sentence": {"rouge1": 32.0, "rouge2": 15.0, "rougeL": 28.0},
                "lead_words": {"rouge1": 33.0, "rouge2": 15.0, "rougeL": 29.0, "k": 10}},
            "figures": {"tokens_per_summary": 6.5},
            "reference_figures": {"tokens_per_summary": 7.7},
            "min_length": 6, "length_penalty": 1.2, "beam_width": 4, "epochs": 2,
            "steps": 1092, "train_minutes": 8.86, "minutes": 14.1, "test_pairs": 1}))
        return str(out)

    user_split.add(run("s1", 1, 31.0), 1, folder=str(folder))   # behind the lead
    table = user_split.add(run("s0", 0, 38.0), 0, folder=str(folder))
    assert [r["seed"] for r in table["per_seed"]] == [0, 1]
    assert table["split"]["train_pairs"] == 2 and table["split"]["test_pairs"] == 1
    with pytest.raises(ValueError, match="`seeds`.*a seed not recorded yet"):
        user_split.add(run("again", 0, 38.0), 0, folder=str(folder))
    with pytest.raises(ValueError, match=r"`seeds`.*the seed the run trained \(2\)"):
        user_split.add(run("s2", 2, 38.0), 3, folder=str(folder))
    (tmp_path / "other.tsv").write_text("f g\tw\n")
    with pytest.raises(ValueError, match="`record`.*a run on the split"):
        user_split.add(run("other", 4, 38.0, test="other.tsv"), 4, folder=str(folder))
    with pytest.raises(ValueError, match="`record`.*a fit.py run folder"):
        user_split.add(str(tmp_path / "nothing"), 5, folder=str(folder))
    text = user_split.section(str(folder))
    assert "| 0 | 38.00 / 10.00 / 35.00 | 32.00 / 15.00 / 28.00 | " in text
    assert "| 1 | 31.00 / 10.00 / 28.00 | " in text and "| no |" in text
    assert "| 6, alpha 1.2 |" in text   # the ranking as the recipe's table writes it
    assert "| mean ± sd | 34.50 ± 4.95 / 10.00 ± 0.00 / 31.50 ± 4.95 |  |  | 1 of 2 |" in text
    assert text.rstrip().endswith("ROUGE-L in 1 of 2 seeds on this split.")
    assert user_split.section(str(tmp_path)) == ""


def test_g2p_page_says_what_each_step_bought():
    """"What each step bought": the global two-way model's runs picked by
    `STEPS`' settings, a greedy row read from a beam run's per-seed greedy
    figures, each change against the step it changes (the mean WER moved),
    the steps not trained left out, and no section for a single row."""
    g2p = recipe("g2p")

    def run(wers, greedy=None, attention="global", **settings):
        seeds = [{"seed": i, "wer": w, "per": w / 4} for i, w in enumerate(wers)]
        for seed, g in zip(seeds, greedy or ()):
            seed["greedy"] = {"wer": g, "per": g / 4}
        return {"settings": dict(g2p.DEFAULTS, attention=attention, **settings),
                "per_seed": seeds, "parameters": 14000000 if settings.get(
                    "preset") == "g2p-paper" else 1000000}

    converged = dict(epochs=40, minutes=60.0, patience=3, lr_decay=0.5)
    runs = [run([20.0], beam_width=5, max_train=500, **converged),   # part of the words
            run([28.0, 29.0], greedy=[28.5, 29.5], beam_width=5, **converged),
            run([41.0, 40.0, 42.0]),
            run([30.0], attention="mocha", beam_width=5, **converged),   # not global
            run([27.0], preset="g2p-paper", beam_width=5,
                **dict(converged, minutes=None))]
    text = g2p._steps(runs)
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    assert lines[1:] == [
        "| 1 | 2 epochs at one rate (the default budget), greedy | 1,000,000 | 3 | "
        "41.00 ± 1.00 | 10.25 ± 0.25 |  |",
        "| 2 | trained to convergence: early stopping on the validation loss (patience "
        "3, the best epoch's weights kept), the rate halved on a plateau, at most 40 "
        "epochs and 60 minutes; greedy | 1,000,000 | 2 | 29.00 ± 0.71 | 7.25 ± 0.18 | "
        "-12.00 (against 1) |",
        "| 3 | + beam search, width 5 | 1,000,000 | 2 | 28.50 ± 0.71 | 7.12 ± 0.18 | "
        "-0.50 (against 2) |",
        "| 4 | the papers' size (`g2p-paper`) instead, stopped on the validation loss, "
        "no time cap | 14,000,000 | 1 | 27.00 | 6.75 | -1.50 (against 3) |"]
    # The largest spread between one row's seeds, beside the one-seed rows.
    assert "The seeds of one row differ by up to 2.00 WER points" in text
    # The validation WER watched at the "g2p" size: its own row, against
    # the beam row; a step whose base was not trained shows no change.
    runs.append(run([27.5], beam_width=5, monitor="val_wer", **converged))
    assert ("| 4 | + early stopping and the decay on the validation words' WER "
            "instead of their loss (`--monitor val_wer`) | 1,000,000 | 1 | 27.50 | "
            "6.88 | -1.00 (against 3) |") in g2p._steps(runs)
    text = g2p._steps(runs[3:])
    assert "| 2 | the papers' size" in text and "(against" not in text
    assert "differ by up to" not in text   # no row of two seeds
    assert g2p._steps(runs[2:4]) == ""
    # A beam run without its seeds' greedy figures gives no greedy row.
    del runs[1]["per_seed"][0]["greedy"]
    assert "trained to convergence" not in g2p._steps(runs)
