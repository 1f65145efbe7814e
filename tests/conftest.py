import gc
import os
import resource
import sys

# As tests/run_backends.py sets it (before JAX starts): tiny models, so
# compile time matters, not run time.
sys.path.insert(0, os.path.dirname(__file__))
from run_backends import xla_flags  # noqa: E402

os.environ.setdefault("XLA_FLAGS", xla_flags(os.environ.get("KERAS_BACKEND")))
# This pytest process (or xdist worker) itself, for the compile cache's
# counts (tests/ci_site/sitecustomize.py): what it starts inherits the
# variable but has its own pid.
os.environ["KERATTN_PYTEST_PID"] = str(os.getpid())

import keras  # noqa: E402
import pytest


def _full_float32_matmuls():
    """Float32 products in float32, also on a GPU.

    The tests compare against the papers' equations in float64 NumPy at
    float32 tolerances. On Ampere and newer GPUs JAX and TensorFlow multiply
    float32 matrices in TF32 by default (10-bit mantissas: relative errors
    near 1e-3; on an H100 73 of 321 layer and zoo tests failed so), as does
    cuDNN under torch. Training keeps each backend's fast default; the test
    process asks for full precision. A no-op on CPU.
    """
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        jax.config.update("jax_default_matmul_precision", "highest")
    elif backend == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(False)
    elif backend == "torch":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


_full_float32_matmuls()


def _jax_compilation_cache():
    """JAX: compiled programs cached on disk, keyed by the program.

    Tests build the same tiny models again and again; each new model's
    `jax.jit` functions trace to the same program, which JAX compiles
    again (its in-memory cache is keyed by the Python function). The
    persistent cache is keyed by the program, so the second build reuses
    the first's executable. Off with `KERATTN_JAX_CACHE=0`. Under
    tests/run_backends.py the folder comes by environment
    (`JAX_COMPILATION_CACHE_DIR`: the full suite's own, the quick tier's
    kept between runs); a plain pytest uses the quick tier's
    (`run_backends.open_quick_cache`, pruned as the quick tier prunes it),
    as it is an inner loop too, or a folder of its own where that one
    cannot be written.
    """
    from run_backends import jax_cache_on, open_quick_cache

    if keras.backend.backend() != "jax" or not jax_cache_on():
        return
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return
    import jax

    # Pruned once, not once per xdist worker.
    folder, _ = open_quick_cache(tidy=not os.environ.get("PYTEST_XDIST_WORKER"))
    if folder is None:
        import atexit
        import shutil
        import tempfile

        folder = tempfile.mkdtemp(prefix="kerattn_jax_cache_")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


_jax_compilation_cache()


import placement as _placement  # noqa: E402
from placement import full_only, placement  # noqa: E402


def pytest_report_header(config):
    return f"kerattn tests on backend={keras.backend.backend()}"


@pytest.hookimpl(tryfirst=True)  # before `-m` reads the markers
def pytest_collection_modifyitems(config, items):
    """Heavy tests (tests/placement.py) run on their one backend only.

    Each is marked `heavy` (so `-m "not heavy"` leaves them all out) and is
    deselected in the other backends' processes. What `placement.FULL_ONLY`
    names (files, test functions, cases), and the cases of
    `placement.QUICK_CASES`' tests it does not keep, are marked `slow`: the
    quick tier (`tests/run_backends.py --quick`) leaves both out.
    """
    backend = keras.backend.backend()
    _placement.COLLECTED.update(_placement._relative(item.nodeid) for item in items)
    keep, elsewhere = [], []
    for item in items:
        placed = placement(item.nodeid)
        if full_only(item.nodeid):
            item.add_marker(pytest.mark.slow)
        if placed is not None:
            item.add_marker(pytest.mark.heavy)
        (elsewhere if placed not in (None, backend) else keep).append(item)
    if elsewhere:
        config.hook.pytest_deselected(items=elsewhere)
        items[:] = keep


def pytest_collection_finish(session):
    """This backend's cross-backend `.keras` files first, when the run
    shares them (tests/run_backends.py) and a selected test reads them
    (test_export's `keras_files`). Then everything imported so far lives to
    the end: out of the collector's way (a full collection of the JAX
    process' heap took up to 1.4 s)."""
    shared = os.environ.get("KERATTN_SHARED_TEST_DIR")
    if shared and any("keras_files" in getattr(item, "fixturenames", ())
                      for item in session.items):
        import zoo_cases

        keras.utils.set_random_seed(1234)
        zoo_cases.ensure_saved(shared, keras.backend.backend())
        keras.backend.clear_session()
    gc.collect()
    gc.freeze()


def _cpu_seconds():
    """User + system CPU seconds of this process and of every child it has
    waited for (a subprocess the test ran to its end)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    item._cpu_start = _cpu_seconds()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Each test's CPU seconds (setup, call and teardown, its subprocesses
    included) as the junit property `cpu_s`: with three pytest processes
    on two cores a test's wall time measures its neighbours as much as
    itself, and only CPU taken out shortens CI (tests/README.md, "The
    budget"). A class- or module-scoped fixture's setup lands on the first
    test that uses it and its teardown on the last (the JAX module
    fixture's `jax.clear_caches()` included); a child process counts
    once waited for, on the test running then. `tests/run_backends.py`
    lists the costliest."""
    yield
    start = getattr(item, "_cpu_start", None)
    if start is not None:
        item.user_properties.append(("cpu_s", f"{_cpu_seconds() - start:.2f}"))


GETTEXT_CATALOGS = "/usr/share/locale/fr/LC_MESSAGES"


@pytest.fixture(scope="session")
def gettext_catalogs():
    """The French gettext catalogs that the translation tests read (real
    English-French pairs that Debian's packages install). Missing: a skip
    with its reason on a developer's machine, a failure in CI (`CI=true`),
    where a skip would drop the translation overfit tests unseen."""
    if os.path.isdir(GETTEXT_CATALOGS):
        return GETTEXT_CATALOGS
    message = (f"no gettext catalogs in {GETTEXT_CATALOGS}: they come with "
               "Debian's packages (the translation tests' data)")
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(message + "; CI must run the tests that read them",
                    pytrace=False)
    pytest.skip(message)


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(1234)
    yield
    # Keras' global state (names, TF graph, torch dynamo caches) is reset
    # after each test; the full gc.collect() of `free_memory=True` is left
    # to Python's own collector: it took up to 1.4 s a test on JAX.
    keras.backend.clear_session(free_memory=False)


@pytest.fixture(autouse=True, scope="module")
def _jax_release_compiled_programs():
    """JAX: a test module's compiled programs released after it.

    JAX keeps every executable it compiled (its jit caches) for the life
    of the process, and XLA:CPU maps each one's code and constants into
    memory apart: about three memory maps a program. CI's JAX process
    compiles a few thousand programs; at about 1,600 tests it reached
    Linux's limit of 65,530 maps a process (`vm.max_map_count`), and the
    next compilation crashed the process (a segmentation fault in XLA's
    compiler or in the compilation cache's write, 2026-11-28). Programs
    a later module needs again come back from the persistent compilation
    cache (`_jax_compilation_cache`), but not for free (about 180 CPU
    seconds over CI's JAX process when cleared after every module), so
    they are released only once the process holds over 25,000 maps.
    """
    yield
    if keras.backend.backend() == "jax" and _memory_maps() > 25_000:
        import jax

        gc.collect()   # the module's models, and the jitted functions they hold
        jax.clear_caches()


def _memory_maps():
    """The memory maps this process holds (Linux), else 0."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


@pytest.fixture
def mixed_bfloat16():
    """The test runs under the `mixed_bfloat16` dtype policy."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    yield
    keras.config.set_dtype_policy(previous)
