"""The heavy-test placement (tests/placement.py) is valid and documented."""

import os
import subprocess
import sys

import placement

HERE = os.path.dirname(os.path.abspath(__file__))


def _collected_whole(config):
    """The test files (names under `tests/`) this process collected whole:
    named on the command line without `::`, or inside a folder named so
    (none under `--last-failed`, which leaves files out)."""
    whole = set()
    if config.getoption("lf", False):
        return whole
    for arg in config.args:
        if "::" in arg:
            continue
        path = os.path.abspath(os.path.join(config.invocation_params.dir, arg))
        if os.path.isdir(path) and os.path.commonpath([path, HERE]) == path:
            return None   # every file under tests/
        if os.path.dirname(path) == HERE:
            whole.add(os.path.basename(path))
    return whole


def collected_ids(files, config):
    """The node ids (relative to `tests/`) of every test in `files`: those
    this process collected where it collected the file whole (a full or
    quick run), else those of a `--collect-only` run over the rest (about
    20 s on two shared cores), without conftest's deselection."""
    whole = _collected_whole(config)
    here = {f for f in files if whole is None or f in whole}
    ids = {i for i in placement.COLLECTED if i.split("::", 1)[0] in here}
    rest = sorted(set(files) - here)
    if rest:
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "--noconftest",
             "-p", "no:cacheprovider", *rest],
            cwd=HERE, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        ids |= {placement._relative(line.strip())
                for line in run.stdout.splitlines() if "::" in line}
    return ids


def test_every_heavy_key_names_a_collected_test_on_a_real_backend(pytestconfig):
    """Each key is a file, test function or parametrised case that pytest
    collects: a renamed case id would otherwise run the heavy test on all
    three backends, and a renamed function would drop out of the table."""
    assert placement.HEAVY, "no heavy test placed"
    files = {key.split("::", 1)[0] for key in placement.HEAVY}
    ids = collected_ids(files, pytestconfig)
    for file in files:   # the collection really holds each file's tests
        assert any(i.startswith(file + "::") for i in ids), file
    for key, (backend, what) in placement.HEAVY.items():
        assert backend in placement.BACKENDS, key
        assert what, key
        assert any(placement.matches(key, i) for i in ids), (
            f"{key} names no collected test")


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
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert placement.table() in readme, (
        "tests/README.md must carry tests/placement.py's table:\n"
        + placement.table())


def test_the_costliest_tests_are_ranked_by_their_cpu_seconds(tmp_path):
    """`tests/run_backends.py` lists tests by their junit property `cpu_s`
    (tests/conftest.py), by wall seconds where a test has none."""
    from run_backends import _slowest

    path = tmp_path / "junit.xml"
    path.write_text(
        '<testsuites><testsuite name="jax">'
        '<testcase classname="tests.a" name="wall" time="10.0">'
        '<properties><property name="cpu_s" value="1.50"/></properties></testcase>'
        '<testcase classname="tests.a" name="cpu" time="2.0">'
        '<properties><property name="cpu_s" value="5.25"/></properties></testcase>'
        '<testcase classname="tests.b" name="none" time="4.0"/>'
        '</testsuite></testsuites>')
    assert _slowest(str(path), 3) == [(5.25, 2.0, "tests.a::cpu"),
                                      (None, 4.0, "tests.b::none"),
                                      (1.5, 10.0, "tests.a::wall")]
    assert _slowest(str(path), 1) == [(5.25, 2.0, "tests.a::cpu")]
    assert _slowest(str(tmp_path / "missing.xml"), 3) == []
