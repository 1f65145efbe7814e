"""The heavy-test placement (tests/placement.py) is valid and documented."""

import importlib
import os

import placement

HERE = os.path.dirname(os.path.abspath(__file__))


def test_every_heavy_key_names_a_real_test_on_a_real_backend():
    assert placement.HEAVY, "no heavy test placed"
    for key, (backend, what) in placement.HEAVY.items():
        assert backend in placement.BACKENDS, key
        assert what, key
        path, _, rest = key.partition("::")
        assert os.path.exists(os.path.join(HERE, path)), key
        if rest:
            module = importlib.import_module(os.path.basename(path)[:-3])
            assert callable(getattr(module, rest.split("[")[0], None)), key


def test_longest_key_wins_and_other_tests_run_everywhere(monkeypatch):
    monkeypatch.setattr(placement, "HEAVY", {
        "test_a.py": ("jax", "a file"),
        "test_a.py::test_fit": ("torch", "a function"),
        "test_a.py::test_fit[big]": ("tensorflow", "one case"),
    })
    assert placement.placement("tests/test_a.py::test_other") == "jax"
    assert placement.placement("test_a.py::test_fit[small]") == "torch"
    assert placement.placement("test_a.py::test_fit") == "torch"
    assert placement.placement("test_a.py::test_fit[big]") == "tensorflow"
    assert placement.placement("test_a.py::test_fitness") == "jax"
    assert placement.placement("test_ab.py::test_fit") is None
    assert placement.placement("test_b.py::test_fit[big]") is None


def test_readme_prints_the_table():
    with open(os.path.join(os.path.dirname(HERE), "README.md")) as f:
        readme = f.read()
    assert placement.table() in readme, (
        "README's testing section must carry tests/placement.py's table:\n"
        + placement.table())
