"""zoo/README.md's table: one row per zoo model, every measured number in
it taken from that model's results.json (written by its recipe)."""

import json
import os
import re

import pytest

from kerattn import zoo

ZOO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "zoo")
BUILDERS = ["seq2seq", "cho_encoder_decoder", "bahdanau_nmt", "luong_nmt",
            "transformer_nmt", "convs2s_nmt", "show_attend_tell", "han_classifier",
            "aoa_reader"]


def table_rows():
    text = open(os.path.join(ZOO, "README.md"), encoding="utf-8").read()
    rows = {}
    for line in text.splitlines():
        match = re.match(r"\| \[`(\w+)`\]\((\w+)/RESULTS\.md\) \|", line)
        if match:
            rows[match.group(1)] = [c.strip() for c in line.strip("|").split("|")]
    return rows


def numbers(obj):
    if isinstance(obj, bool):
        return []
    if isinstance(obj, (int, float)):
        return [float(obj)]
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, list):
        return [n for item in obj for n in numbers(item)]
    return []


def test_every_builder_has_a_row_and_a_recipe():
    rows = table_rows()
    assert sorted(rows) == sorted(BUILDERS)
    for name in BUILDERS:
        assert callable(getattr(zoo, name))
        for file in ("recipe.py", "RESULTS.md", "results.json"):
            assert os.path.exists(os.path.join(ZOO, name, file)), (name, file)
        model, paper, task, ours, theirs, command = rows[name]
        assert command == f"`python zoo/{name}/recipe.py`" or command.startswith(
            f"`python zoo/{name}/recipe.py ")
        assert re.search(r"\b(19|20)\d\d\b", paper), f"{name}: the paper's year"
        assert re.search(r"\d", theirs), f"{name}: the paper's own number"


@pytest.mark.parametrize("name", BUILDERS)
def test_measured_numbers_come_from_results_json(name):
    ours = table_rows()[name][3]
    shown = [float(n) for n in re.findall(r"\d+\.\d+", ours)]
    assert shown, f"{name}: no measured number"
    with open(os.path.join(ZOO, name, "results.json")) as f:
        measured = numbers(json.load(f))
    for value in shown:
        assert any(abs(value - m) <= 6e-4 for m in measured), (
            f"{name}: {value} is not in results.json")
