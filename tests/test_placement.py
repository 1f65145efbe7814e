"""The heavy-test placement (tests/placement.py) is valid and documented."""

import functools
import json
import os
import re
import subprocess
import sys
import time

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
    """The node ids (relative to `tests/`) of every test in `files`, files
    that `placement.HEAVY`, `FULL_ONLY` or `QUICK_CASES` name: those this
    process collected where it collected the file whole (a full or quick
    run), else those of one `--collect-only` run over the rest of the
    tables' files (about 20 s on two shared cores), without conftest's
    deselection."""
    tables = frozenset(map(placement.file_of, [
        *placement.HEAVY, *placement.FULL_ONLY, *placement.QUICK_CASES]))
    assert set(files) <= tables
    return {i for i in _collected_ids(tables, config) if placement.file_of(i) in files}


@functools.lru_cache(maxsize=None)
def _collected_ids(files, config):
    whole = _collected_whole(config)
    here = {f for f in files if whole is None or f in whole}
    ids = {i for i in placement.COLLECTED if placement.file_of(i) in here}
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
    files = set(map(placement.file_of, placement.HEAVY))
    ids = collected_ids(files, pytestconfig)
    for file in files:   # the collection really holds each file's tests
        assert any(i.startswith(file + "::") for i in ids), file
    for key, (backend, what) in placement.HEAVY.items():
        assert backend in placement.BACKENDS, key
        assert what, key
        assert any(placement.matches(key, i) for i in ids), (
            f"{key} names no collected test")


def test_every_quick_tier_exclusion_names_a_collected_test(pytestconfig):
    """Each key of `placement.FULL_ONLY` (a file, a test function or one
    case) is collected and says what it runs: a renamed test would
    otherwise come back into the quick tier unseen."""
    files = set(map(placement.file_of, placement.FULL_ONLY))
    ids = collected_ids(files, pytestconfig)
    for key, what in placement.FULL_ONLY.items():
        assert what, key
        assert any(placement.matches(key, i) for i in ids), (
            f"{key} names no collected test")


def test_every_quick_tier_case_choice_keeps_and_leaves_out_collected_cases(pytestconfig):
    """Each key of `placement.QUICK_CASES` names collected parametrised
    tests, each kept entry keeps at least one of their cases, every test
    it names keeps a case, and at least one case is left out: a renamed
    case (or a new test under a file's key without such a case) would
    otherwise leave its test out of the quick tier, or keep all of it,
    unseen. No two keys name the same test (which would keep only what
    both keep)."""
    files = set(map(placement.file_of, placement.QUICK_CASES))
    ids = collected_ids(files, pytestconfig)
    for key, (kept, what) in placement.QUICK_CASES.items():
        assert what and kept, key
        others = [k for k in placement.QUICK_CASES
                  if k != key and (placement.matches(k, key) or placement.matches(key, k))]
        assert not others, f"{key} and {others} name the same tests"
        tests = {}
        for i in ids:
            case = placement.case_of(i)
            if placement.matches(key, i) and case is not None:
                tests.setdefault(i[:i.rindex("[")], []).append(case)
        assert tests, f"{key} names no collected parametrised test"
        cases = [c for group in tests.values() for c in group]
        for entry in kept:
            assert any(placement.kept_in_quick((entry,), c) for c in cases), (
                f"{key}: {entry!r} keeps no collected case")
        for test, group in tests.items():
            assert any(placement.kept_in_quick(kept, c) for c in group), (
                f"{key}: no case of {test} is kept in the quick tier")
        assert not all(placement.kept_in_quick(kept, c) for c in cases), (
            f"{key} keeps every case")


def test_the_quick_tier_keeps_the_named_cases_of_a_test(monkeypatch):
    monkeypatch.setattr(placement, "FULL_ONLY", {})
    monkeypatch.setattr(placement, "QUICK_CASES", {
        "test_a.py::test_fit": (("small", "*-float32"), "the other cases"),
        "test_b.py": (("x",), "a file's other cases")})
    assert not placement.full_only("tests/test_a.py::test_fit[small]")
    assert not placement.full_only("test_a.py::test_fit[gru-float32]")
    assert placement.full_only("test_a.py::test_fit[gru-float16]")
    assert placement.full_only("test_a.py::test_fit[smaller]")
    assert placement.full_only("test_a.py::test_fit[float32]")
    assert not placement.full_only("test_a.py::test_fit")       # no cases
    assert not placement.full_only("test_a.py::test_fitness[big]")
    assert not placement.full_only("test_b.py::TestC::test_d[x]")
    assert placement.full_only("test_b.py::TestC::test_d[y]")
    assert placement.case_of("test_a.py::test_fit[6--1-ids]") == "6--1-ids"
    assert placement.case_of("test_a.py::test_fit") is None


def test_only_the_table_marks_tests_slow():
    """`slow` comes from `placement.FULL_ONLY` and `placement.QUICK_CASES`
    alone (tests/conftest.py): a decorator in a test file would leave the
    quick tier unseen by the table that tests/README.md prints."""
    marker = "pytest.mark." + "slow"   # not this file's own text
    for name in sorted(os.listdir(HERE)):
        if name.startswith("test_") and name.endswith(".py"):
            with open(os.path.join(HERE, name), encoding="utf-8") as f:
                assert marker not in f.read(), name


def test_the_quick_tier_leaves_out_whole_files_and_single_tests(monkeypatch):
    monkeypatch.setattr(placement, "FULL_ONLY", {
        "test_a.py": "a file", "test_b.py::test_fit": "a function"})
    assert placement.full_only("tests/test_a.py::test_other")
    assert placement.full_only("test_b.py::test_fit[small]")
    assert not placement.full_only("test_b.py::TestC::test_fit")
    assert not placement.full_only("test_b.py::test_fitness")
    assert not placement.full_only("test_ab.py::test_fit")
    assert placement.file_of("tests/test_b.py::test_fit[small]") == "test_b.py"
    assert placement.file_of("test_a.py") == "test_a.py"


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


def test_readme_prints_the_tables():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    for table in (placement.table(), placement.full_only_table()):
        assert table in readme, (
            "tests/README.md must carry tests/placement.py's tables:\n" + table)


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


def test_the_compile_cache_counts_join_a_runs_pytest_processes(tmp_path):
    """`tests/run_backends.py` sums the compile cache's counts per kind of
    process: the pytest process and the quick tier's two workers (each
    marked `pytest` by tests/ci_site/sitecustomize.py) as one, a test's
    `python -c` child apart, whatever it inherited."""
    from run_backends import cache_summary

    records = [
        {"argv": ["-c"], "pytest": True, "requests": 10, "hits": 4, "read_seconds": 0.5},
        {"argv": ["-c"], "pytest": True, "requests": 6, "hits": 1, "read_seconds": 0.25},
        {"argv": ["-c"], "pytest": False, "requests": 3, "hits": 0, "read_seconds": 0.0},
    ]
    (tmp_path / "compile_cache.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records))
    lines = cache_summary(str(tmp_path))
    assert lines[0].split() == ["JAX", "processes", "runs", "compiles", "hits", "read", "s"]
    assert lines[1].split()[-4:] == ["2", "16", "5", "1"]
    assert lines[1].startswith("the JAX pytest process")
    assert lines[2].startswith("python -c") and lines[2].split()[-4:] == ["1", "3", "0", "0"]
    assert cache_summary(str(tmp_path / "none")) == []


def test_the_quick_tiers_compile_cache_is_kept_and_pruned_least_recently_used_first(tmp_path, monkeypatch):
    """The quick tier's JAX cache is one folder kept between runs
    (`KERATTN_QUICK_CACHE_DIR`, else the user's cache folder); the full
    suite's is the run's own; `KERATTN_JAX_CACHE=0` gives none. Empty
    files go; over its limit, the least recently used until half the limit
    is left."""
    from run_backends import compile_cache_env, prune_cache, quick_cache_dir

    kept = tmp_path / "kept"
    monkeypatch.setenv("KERATTN_QUICK_CACHE_DIR", str(kept))
    monkeypatch.delenv("KERATTN_JAX_CACHE", raising=False)
    assert quick_cache_dir() == str(kept)
    run = tmp_path / "run"
    assert compile_cache_env(str(run), "jax", quick=True)["JAX_COMPILATION_CACHE_DIR"] == str(kept)
    assert compile_cache_env(str(run), "jax")["JAX_COMPILATION_CACHE_DIR"] == str(run / "jax_cache")
    assert compile_cache_env(str(run), "tensorflow", quick=True) == {}
    monkeypatch.setenv("KERATTN_JAX_CACHE", "0")
    assert compile_cache_env(str(run), "jax", quick=True) == {}
    monkeypatch.delenv("KERATTN_QUICK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder = quick_cache_dir()   # one subfolder per jaxlib and CPU
    assert os.path.dirname(folder) == str(tmp_path / "xdg" / "kerattn" / "quick-tier-jax")
    assert re.fullmatch(r"[^-]+-[0-9a-f]{12}", os.path.basename(folder))
    assert quick_cache_dir() == folder

    # Five 100-byte entries last used one after another (the most recent
    # last), listed in another order than their age, and an empty one (a
    # write cut short), removed whatever the size.
    for age, name in zip([5, 1, 4, 2, 3], "abcde"):
        path = kept / name
        path.write_bytes(b"x" * 100)
        os.utime(path, (1000 - age, 1000 - age))
    (kept / "z").write_bytes(b"")
    assert prune_cache(str(kept), limit=500) == (0, 5, 500)   # at the limit: kept
    assert sorted(p.name for p in kept.iterdir()) == list("abcde")
    os.utime(kept / "a", (2000, 995))                      # read since: kept
    assert prune_cache(str(kept), limit=400) == (300, 2, 200)  # over: down to 200
    assert sorted(p.name for p in kept.iterdir()) == ["a", "b"]
    assert prune_cache(str(tmp_path / "missing"), limit=0) == (0, 0, 0)
    # The oldest entry removed by another run first: gone, not kept, and
    # not replaced by one more removal of this run's.
    other = tmp_path / "other"
    other.mkdir()
    for age, name in zip([3, 2, 1], "xyz"):
        (other / name).write_bytes(b"x" * 100)
        os.utime(other / name, (1000 - age, 1000 - age))
    remove = os.remove

    def removed_first(path):
        remove(path)
        if path.endswith("x"):
            raise FileNotFoundError(path)

    monkeypatch.setattr(os, "remove", removed_first)
    assert prune_cache(str(other), limit=250) == (100, 1, 100)
    assert [p.name for p in other.iterdir()] == ["z"]


def test_the_quick_tier_removes_its_stale_sibling_caches_and_nothing_else(tmp_path, monkeypatch):
    """As the quick tier starts, the default cache folder's siblings (other
    jaxlibs' and CPUs', named `<jaxlib>-<12 hex digits>`) that no run has
    used for 30 days are deleted; a recently used one (by any of its files),
    anything else in the parent and anything beside a folder given by
    `KERATTN_QUICK_CACHE_DIR` stay. `quick_cache_line` opens and tidies."""
    from run_backends import STALE_SIBLING_DAYS, open_quick_cache, prune_siblings, quick_cache_line

    monkeypatch.delenv("KERATTN_QUICK_CACHE_DIR", raising=False)
    monkeypatch.delenv("KERATTN_JAX_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    now = 10_000_000.0
    old = now - (STALE_SIBLING_DAYS + 1) * 86400
    recent = now - (STALE_SIBLING_DAYS - 1) * 86400
    folder, pruned = open_quick_cache(tidy=False)
    assert os.path.isdir(folder) and pruned == (0, 0, 0)
    parent = os.path.dirname(folder)

    def sibling(name, stamps):
        path = os.path.join(parent, name)
        os.makedirs(path)
        for i, stamp in enumerate(stamps):
            entry = os.path.join(path, f"entry{i}")
            with open(entry, "wb") as f:
                f.write(b"x")
            os.utime(entry, (stamp, stamp))
        os.utime(path, (old, old))
        return path

    sibling("0.4.1-0123456789ab", [old, old])             # stale: removed
    sibling("0.4.2-0123456789ab", [old, recent])          # one file read lately
    sibling("0.4.3-abcdef012345", [])                     # empty and stale
    sibling("notes", [old])                               # not a cache's name
    sibling("0.4.1-0123456789abc", [old])                 # 13 digits: not either
    with open(os.path.join(parent, "0.4.9-0123456789ab"), "w") as f:
        f.write("a file, not a folder")
    os.utime(os.path.join(parent, "0.4.9-0123456789ab"), (old, old))
    os.utime(folder, (old, old))                          # its own: never
    assert prune_siblings(folder, now=now) == ["0.4.1-0123456789ab", "0.4.3-abcdef012345"]
    assert sorted(os.listdir(parent)) == sorted([
        os.path.basename(folder), "0.4.1-0123456789abc", "0.4.2-0123456789ab",
        "0.4.9-0123456789ab", "notes"])
    assert prune_siblings(folder, now=now + 2 * 86400) == ["0.4.2-0123456789ab"]
    # As the quick tier starts (`quick_cache_line`, `open_quick_cache`):
    # its own folder marked used now, a sibling unused for 31 days gone.
    stale = time.time() - (STALE_SIBLING_DAYS + 1) * 86400
    os.utime(sibling("0.4.4-0123456789ab", [stale]), (stale, stale))
    assert quick_cache_line().startswith(
        f"JAX compile cache (kept between quick runs): {folder}, 0 files")
    assert "0.4.4-0123456789ab" not in os.listdir(parent)
    assert os.stat(folder).st_mtime > time.time() - 60

    # A folder given by the variable: its parent is the user's, untouched.
    given = tmp_path / "mine" / "cache"
    monkeypatch.setenv("KERATTN_QUICK_CACHE_DIR", str(given))
    sibling_of_given = tmp_path / "mine" / "0.4.1-0123456789ab"
    sibling_of_given.mkdir(parents=True)
    os.utime(sibling_of_given, (old, old))
    assert prune_siblings(str(given), now=now) == []
    assert quick_cache_line().startswith(f"JAX compile cache (kept between quick runs): {given}, 0 files")
    assert given.is_dir() and sibling_of_given.is_dir()
    # One that cannot be made: the runner says so (the run uses its own).
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder should be")
    monkeypatch.setenv("KERATTN_QUICK_CACHE_DIR", str(blocker / "cache"))
    assert open_quick_cache() == (None, (0, 0, 0))
    assert "cannot be made" in quick_cache_line()
