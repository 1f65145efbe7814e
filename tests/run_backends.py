#!/usr/bin/env python3
"""Run the test suite once per Keras backend, as Keras' own CI does.

    python tests/run_backends.py                      # all three backends
    python tests/run_backends.py --quick              # the quick tier
    python tests/run_backends.py --backends jax       # one backend
    python tests/run_backends.py -- -k luong -x       # extra pytest arguments

Each backend gets its own pytest process (the backend is fixed before keras
is imported) and its own KERAS_HOME. It prints the machine's figures of the
day first (tests/machine.py), then each backend's log, counts, time and
costliest tests (CPU seconds), and exits non-zero if any backend fails,
errors, or runs no test.

`--quick` is the inner loop: the backend-dependent unit tests on all three
backends, without the heavy integration runs (tests/placement.py) and the
tests marked `slow`; the JAX and TensorFlow processes share their files
among two workers each (pytest-xdist, `QUICK_WORKERS`), and JAX keeps its
compile cache between quick runs (`quick_cache_dir`).
"""

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKENDS = ("tensorflow", "jax", "torch")
# XLA on the CPU: LLVM's optimisations off.
FAST_COMPILE = ("--xla_backend_optimization_level=0 "
                "--xla_llvm_disable_expensive_passes=true")
# JAX only: the loop emitters instead of the fusion emitters (about 40%
# less time per compile of one eager op; test_attention_rnn +
# test_legacy_files on JAX alone: 115 s with it, 170 s without).
# TensorFlow's compiled training steps take 5% longer with it
# (test_reliability: 172 s with it, 163 s without).
JAX_COMPILE = " --xla_cpu_use_fusion_emitters=false"


# The quick tier's pytest workers a backend. Its CPU is nearly all JAX's
# and TensorFlow's (compiling each eager op once per shape; tracing and
# compiling steps), torch's a sixth of TensorFlow's: one process each, JAX's and
# then TensorFlow's ran on alone long after torch's had ended. Two workers
# each, taking whole test files as they free up (`--dist loadfile`: a
# file's tests share their compiles), keep both cores busy to the end.
QUICK_WORKERS = {"jax": 2, "tensorflow": 2}


def worker_args(backend, quick):
    """pytest-xdist's arguments for `backend`'s process (none outside the
    quick tier, where tests/placement.py balances the three processes, nor
    without pytest-xdist)."""
    workers = QUICK_WORKERS.get(backend, 1) if quick else 1
    if workers == 1 or not have_xdist():
        return []
    return ["-n", str(workers), "--dist", "loadfile"]


def have_xdist():
    """True when pytest-xdist (the `dev` extra) is installed."""
    return importlib.util.find_spec("xdist") is not None


def xla_flags(backend):
    """XLA_FLAGS for `backend`'s pytest process and what it starts. The
    torch process compiles nothing with XLA itself; the XLA programs of its
    children are mostly JAX's (the JAX engine's stand-in hosts, `fit.py
    --backend jax`, the JAX benchmark), so it takes JAX's flags."""
    return FAST_COMPILE + (JAX_COMPILE if backend in ("jax", "torch") else "")


def _counts(junit_path):
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    try:
        root = ET.parse(junit_path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    for suite in suites:
        tests = int(suite.get("tests", 0))
        failed = int(suite.get("failures", 0))
        errors = int(suite.get("errors", 0))
        skipped = int(suite.get("skipped", 0))
        counts["failed"] += failed
        counts["errors"] += errors
        counts["skipped"] += skipped
        counts["passed"] += tests - failed - errors - skipped
    return counts


def _slowest(junit_path, count):
    """The `count` costliest test cases of a junit file, by CPU seconds
    (tests/conftest.py's `cpu_s` property; wall seconds where a case has
    none): [(CPU seconds or None, wall seconds, name)]."""
    try:
        root = ET.parse(junit_path).getroot()
    except (OSError, ET.ParseError):
        return []
    cases = []
    for case in root.iter("testcase"):
        cpu = next((float(p.get("value")) for p in case.iter("property")
                    if p.get("name") == "cpu_s"), None)
        cases.append((cpu, float(case.get("time", 0)),
                      f"{case.get('classname')}::{case.get('name')}"))
    return sorted(cases, key=lambda c: -(c[1] if c[0] is None else c[0]))[:count]


# The quick tier's JAX cache outlives its run (the full suite's does not):
# the inner loop runs the same tests again and again, and a warm cache
# gives back nearly every eager op's and step's executable instead of
# compiling it (tests/README.md, "The budget", measures both; a warm
# cache of the quick tier was about 100 MiB on 2026-12-06). Above this
# size its least recently used entries go, down to half.
QUICK_CACHE_BYTES = 4 << 30


def jax_cache_on():
    """False where `KERATTN_JAX_CACHE=0` turns JAX's compile cache off
    (for the full suite, the quick tier and a plain pytest alike)."""
    return os.environ.get("KERATTN_JAX_CACHE") != "0"


def quick_cache_dir():
    """The quick tier's JAX compile cache: `$KERATTN_QUICK_CACHE_DIR`, else
    `kerattn/quick-tier-jax/<jaxlib version>-<CPU>` in the user's cache
    folder (`$XDG_CACHE_HOME`, else `~/.cache`). JAX keys each entry by the
    program, its flags, devices and the jaxlib version, so an entry is only
    ever reused for the same program: a stale one costs disk, never a wrong
    result. The subfolder keeps apart the CPUs a home folder may be shared
    by: XLA's CPU loader refuses an executable built for another CPU's
    features, and JAX never rewrites an entry that exists, so a shared
    entry would be compiled again on every run of the other CPU."""
    if os.environ.get("KERATTN_QUICK_CACHE_DIR"):
        return os.environ["KERATTN_QUICK_CACHE_DIR"]
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(root, "kerattn", "quick-tier-jax", _cache_key())


# The name `_cache_key` gives a cache folder: `prune_siblings` removes no
# other.
CACHE_KEY = re.compile(r"[^-/]+-[0-9a-f]{12}")


def _cache_key():
    """`<jaxlib version>-<12 hex digits of the CPU's model and features>`
    (`CACHE_KEY`)."""
    import hashlib
    import importlib.metadata
    import platform

    try:
        jaxlib = importlib.metadata.version("jaxlib")
    except importlib.metadata.PackageNotFoundError:
        jaxlib = "none"
    cpu = platform.machine() + platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            lines = f.read().split("\n\n")[0].splitlines()
        cpu += "".join(line for line in lines
                       if line.startswith(("model name", "flags")))
    except OSError:
        pass
    return f"{jaxlib}-{hashlib.sha256(cpu.encode()).hexdigest()[:12]}"


def prune_cache(folder, limit=QUICK_CACHE_BYTES):
    """Removes `folder`'s empty files (a write cut short by a killed run:
    JAX would warn and compile that program on every run, as it never
    rewrites an entry that exists), then, once the folder holds more than
    `limit` bytes, its least recently used files (by access time, or
    modification where later) until it holds at most half of `limit`;
    returns (bytes removed by the limit's pruning, files kept, bytes kept)."""
    entries = []
    for entry in os.scandir(folder) if os.path.isdir(folder) else ():
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            stat = entry.stat(follow_symlinks=False)
            if stat.st_size == 0:
                os.remove(entry.path)
                continue
        except OSError:   # another run removed it meanwhile
            continue
        entries.append((max(stat.st_atime, stat.st_mtime), stat.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    removed = gone = files_removed = 0   # gone: another run removed it first
    for _, size, path in sorted(entries) if total > limit else ():
        if total - removed - gone <= limit // 2:
            break
        try:
            os.remove(path)
            removed += size
        except FileNotFoundError:
            gone += size
        except OSError:   # still there: kept
            continue
        files_removed += 1
    return removed, len(entries) - files_removed, total - removed - gone


# A sibling of the quick tier's cache folder (another jaxlib's or another
# CPU's: `quick_cache_dir`) that no run has used for this long is removed
# as the quick tier starts: after an upgrade of jaxlib nothing reads the
# old version's folder again (about 100 MiB each).
STALE_SIBLING_DAYS = 30


def _last_used(folder):
    """The newest access or modification time of `folder` and its files
    (`open_quick_cache` touches its folder: on a mount without access
    times, a cache only read from is still seen in use)."""
    times = [os.stat(folder).st_mtime]
    for entry in os.scandir(folder):
        try:
            stat = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        times.append(max(stat.st_atime, stat.st_mtime))
    return max(times)


def prune_siblings(folder, days=STALE_SIBLING_DAYS, now=None):
    """Removes the sibling folders of `folder` (the default quick-tier
    cache, `quick_cache_dir`) named as `_cache_key` names them and unused
    for `days`; returns their names. Nothing else in the parent folder is
    touched, nor anything beside a folder given by
    `KERATTN_QUICK_CACHE_DIR`, whose parent may hold anything."""
    if os.environ.get("KERATTN_QUICK_CACHE_DIR"):
        return []
    parent, own = os.path.split(os.path.normpath(folder))
    cutoff = (time.time() if now is None else now) - days * 86400
    try:
        entries = sorted(os.scandir(parent), key=lambda e: e.name)
    except OSError:
        return []
    removed = []
    for entry in entries:
        if entry.name == own or not CACHE_KEY.fullmatch(entry.name):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or _last_used(entry.path) >= cutoff:
                continue
            shutil.rmtree(entry.path)
        except OSError:   # in use or removed by another run meanwhile: left
            continue
        removed.append(entry.name)
    return removed


def open_quick_cache(tidy=True):
    """The quick tier's cache folder (`quick_cache_dir`), made and marked
    used now (its modification time, for `prune_siblings` elsewhere), or
    None where it cannot be made (the caller then uses a folder of its
    own). With `tidy`, its entries are pruned (`prune_cache`) and its
    stale siblings removed (`prune_siblings`), each as far as it can be: a
    prune that fails keeps the folder. Returns (folder or None,
    prune_cache's figures)."""
    folder = quick_cache_dir()
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None, (0, 0, 0)
    try:
        os.utime(folder)
    except OSError:   # read only: still read from
        pass
    pruned = (0, 0, 0)
    if tidy:
        try:
            pruned = prune_cache(folder)
        except OSError:   # its files unreadable: kept as they are
            pass
        prune_siblings(folder)   # leaves what it cannot remove
    return folder, pruned


def quick_cache_line():
    """Opens the quick tier's cache folder (`open_quick_cache`, pruned)
    and says what it holds as the run starts: an empty one (the first run
    on this CPU and jaxlib) compiles everything."""
    folder, (removed, files, size) = open_quick_cache()
    if folder is None:
        return (f"JAX compile cache: {quick_cache_dir()} cannot be made; "
                "each run compiles everything in a folder of its own")
    return (f"JAX compile cache (kept between quick runs): {folder}, "
            f"{files} files, {size / 2**20:.0f} MiB"
            + (f" ({removed / 2**20:.0f} MiB of its least recently used removed)"
               if removed else "")
            + ("" if files else ": cold, JAX compiles everything"))


def compile_cache_env(workdir, backend, quick=False):
    """JAX's persistent compile cache, given by environment to the JAX
    pytest process and every process it starts: keyed by the program, its
    flags and devices, so a program compiled by one process (or, in the
    quick tier, by an earlier run) is not compiled again. The full suite's
    folder is the run's own, in `workdir` (removed at exit); the quick
    tier's is `quick_cache_dir()`, kept between runs. The hits are counted
    too (tests/ci_site/sitecustomize.py writes one line per JAX process to
    compile_cache.jsonl in `workdir`). `KERATTN_JAX_CACHE=0` turns it off.

    Not for the JAX programs that the TensorFlow and torch processes start
    (each `fit.py --backend jax`, the JAX benchmark): measured on
    2026-11-28, they found few of their programs in the cache (0 of 122 for
    the two stand-in hosts of `fit.py show_attend_tell`, which compile the
    same programs at the same moment) and the torch process used about 26
    CPU seconds more with it than without; the JAX process used 61 fewer
    (tests/README.md, "What keeps it there")."""
    if not jax_cache_on() or backend != "jax":
        return {}
    kept = open_quick_cache(tidy=False)[0] if quick else None
    folder = kept or os.path.join(workdir, "jax_cache")   # the run's own
    os.makedirs(folder, exist_ok=True)
    return {"JAX_COMPILATION_CACHE_DIR": folder,
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
            "KERATTN_COMPILE_CACHE_LOG": os.path.join(workdir, "compile_cache.jsonl")}


def cache_summary(workdir):
    """Lines: the JAX processes' cache requests, hits and the seconds read
    for the hits, per kind of process."""
    path = os.path.join(workdir, "compile_cache.jsonl")
    if not os.path.exists(path):
        return []
    kinds = {}
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            argv = record["argv"]
            # The pytest process, and in the quick tier its xdist workers.
            if record.get("pytest"):
                kind = "the JAX pytest process(es)"
            elif argv[:1] == ["-c"]:
                kind = "python -c (a test's child process)"
            else:
                kind = " ".join(argv[:2])
            total = kinds.setdefault(kind, [0, 0, 0, 0.0])
            total[0] += 1
            total[1] += record["requests"]
            total[2] += record["hits"]
            total[3] += record["read_seconds"]
    lines = [f"{'JAX processes':<44}{'runs':>6}{'compiles':>10}{'hits':>8}"
             f"{'read s':>9}"]
    for kind, (runs, requests, hits, read) in sorted(
            kinds.items(), key=lambda item: -item[1][1]):
        lines.append(f"{kind[:44]:<44}{runs:>6}{requests:>10}{hits:>8}{read:>9.0f}")
    return lines


def run_backend(backend, pytest_args, workdir, quick=False):
    env = dict(os.environ)
    env["KERAS_BACKEND"] = backend
    env["KERAS_HOME"] = os.path.join(workdir, f"keras_home_{backend}")
    # .keras files saved under each backend, shared by the three processes.
    env["KERATTN_SHARED_TEST_DIR"] = os.path.join(workdir, "shared")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    cache = compile_cache_env(workdir, backend, quick)
    env.update(cache)
    if cache:   # sitecustomize counts the cache's hits in every process
        env["PYTHONPATH"] = os.path.join(REPO, "tests", "ci_site") + os.pathsep + env["PYTHONPATH"]
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # The tests' models are tiny: XLA's compile time, not their run time, is
    # most of the JAX suite. LLVM's optimisations off: a third less time.
    env.setdefault("XLA_FLAGS", xla_flags(backend))
    env.setdefault("PYTHONUNBUFFERED", "1")
    # One OpenMP thread a process: three processes share 2 cores, and
    # torch's spinning OpenMP pool made its training tests 5-10x slower
    # beside the other two (176 s instead of 20 for one overfitting run).
    env.setdefault("OMP_NUM_THREADS", "1")
    os.makedirs(env["KERAS_HOME"], exist_ok=True)
    junit = os.path.join(workdir, f"junit_{backend}.xml")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        "-o",
        f"junit_suite_name={backend}",
        *worker_args(backend, quick),
        *pytest_args,
    ]
    log_path = os.path.join(workdir, f"log_{backend}.txt")
    start = time.time()
    log = open(log_path, "w")
    process = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    return process, log, log_path, junit, start


def reap(process):
    """The CPU seconds (user + system) of `process` and of every process it
    waited for (wait4's resource usage), once it has ended; else None."""
    pid, status, usage = os.wait4(process.pid, os.WNOHANG)
    if pid == 0:
        return None
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def finish(backend, job, cpu):
    """Print an ended backend's log; (code, counts, seconds, CPU seconds)."""
    process, log, log_path, junit, start = job
    code = process.returncode
    seconds = time.time() - start
    log.close()
    print(f"\n===== backend: {backend} ({seconds:.0f} s) =====", flush=True)
    with open(log_path) as f:
        sys.stdout.write(f.read())
    sys.stdout.flush()
    return code, _counts(junit), seconds, cpu


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--backends",
        default=",".join(BACKENDS),
        help="comma-separated subset of " + ",".join(BACKENDS),
    )
    parser.add_argument("--jobs", type=int, default=3,
                        help="backends tested at the same time (default 3: all)")
    parser.add_argument("--junit-dir", default=None,
                        help="keep each backend's junit XML here "
                             "(per-test durations)")
    parser.add_argument("--quick", action="store_true",
                        help="the quick tier: -m 'not heavy and not slow'")
    parser.add_argument("--slowest", type=int, default=10,
                        help="costliest tests listed per backend (default 10)")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest")
    args, extra = parser.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown:
        parser.error(f"unknown backend(s) {unknown}; choose from {BACKENDS}")
    pytest_args = args.pytest_args + extra or ["-q", "tests"]
    if args.quick:
        pytest_args = ["-m", "not heavy and not slow", *pytest_args]
        if not have_xdist() and any(b in QUICK_WORKERS for b in backends):
            print("pytest-xdist is not installed (the `dev` extra): the JAX "
                  "and TensorFlow quick tests run in one process each", flush=True)

    start = time.time()
    machine = subprocess.run([sys.executable, os.path.join(REPO, "tests", "machine.py")],
                             capture_output=True, text=True,
                             env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    print(machine.stdout.strip() or f"machine: figures failed: {machine.stderr[-300:]}",
          flush=True)

    if args.quick and "jax" in backends and jax_cache_on():
        print(quick_cache_line(), flush=True)

    results, slowest, cache_lines = {}, {}, []
    with tempfile.TemporaryDirectory(prefix="kerattn_tests_") as workdir:
        # All three pytest processes at once by default: on 2 cores the
        # total is the same work as two lanes, and three side by side end
        # together when their loads are equal (tests/placement.py balances
        # them), where two lanes need one process to weigh the other two.
        pending, running = list(backends), {}
        while pending or running:
            while pending and len(running) < args.jobs:
                backend = pending.pop(0)
                running[backend] = run_backend(backend, pytest_args, workdir, args.quick)
                print(f"started: {backend}", flush=True)
            done = None
            while done is None:
                for backend, job in running.items():
                    cpu = reap(job[0])
                    if cpu is not None:
                        done = backend
                        break
                if done is None:
                    time.sleep(1)
            job = running.pop(done)
            results[done] = finish(done, job, cpu)
            if not running and not pending:
                cache_lines = cache_summary(workdir)
            junit = job[3]
            slowest[done] = _slowest(junit, args.slowest)
            if args.junit_dir:
                os.makedirs(args.junit_dir, exist_ok=True)
                shutil.copy(junit, args.junit_dir)
        results = {b: results[b] for b in backends}

    for backend in results:
        if slowest.get(backend):
            print(f"\ncostliest on {backend} (CPU s, with what it started; wall s):")
            for cpu, seconds, name in slowest[backend]:
                cpu = "?" if cpu is None else f"{cpu:.1f}"
                print(f"  {cpu:>7} {seconds:7.1f}  {name}")
    if cache_lines:
        print("\nJAX's compile cache (the JAX process and the processes it started):")
        for line in cache_lines:
            print("  " + line)
    print("\n===== summary =====")
    print(f"{'backend':<12}{'passed':>8}{'failed':>8}{'errors':>8}"
          f"{'skipped':>9}{'seconds':>9}{'CPU s':>8}  result")
    ok = True
    total = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    cpu_total = 0.0
    for backend, (code, counts, seconds, cpu) in results.items():
        cpu_total += cpu
        counts = counts or {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
        good = code == 0 and counts["passed"] > 0
        ok = ok and good
        for key in total:
            total[key] += counts[key]
        print(
            f"{backend:<12}{counts['passed']:>8}{counts['failed']:>8}"
            f"{counts['errors']:>8}{counts['skipped']:>9}{seconds:>9.0f}"
            f"{cpu:>8.0f}  {'ok' if good else f'FAILED (pytest exit {code})'}"
        )
    print(f"CPU time of the backend processes and all they started: "
          f"{cpu_total:.0f} s (getrusage of the children)")
    print(f"wall time: {time.time() - start:.0f} s"
          f"{' (quick tier)' if args.quick else ''}")
    print(
        f"total: {total['passed']} passed, "
        f"{total['failed'] + total['errors']} failed, "
        f"{total['skipped']} skipped"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
