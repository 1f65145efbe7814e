"""CI only (tests/run_backends.py puts this folder first on PYTHONPATH):
counts, in every Python process of a test run that imports JAX, the
compilations JAX's persistent cache was asked for, the hits and the
seconds spent reading them, and appends one JSON line per process to
`$KERATTN_COMPILE_CACHE_LOG` at exit, `pytest` true for a pytest process
itself (its pid is `$KERATTN_PYTEST_PID`, which tests/conftest.py sets;
the processes a test starts inherit the variable, not the pid).

Not the compile time a hit saved: JAX records it
(`/jax/compilation_cache/compile_time_saved_sec`) as the cached program's
compile time, stored in whole seconds, less the read, so every hit on a
program compiled in under a second counts as a loss.

Nothing is imported until the program imports `jax` itself: a finder on
`sys.meta_path` wraps the loading of `jax` and registers JAX's monitoring
listeners (`jax.monitoring`) once it has loaded. Processes that never
import JAX write nothing.
"""

import atexit
import importlib.abc
import importlib.util
import json
import os
import sys

_LOG = os.environ.get("KERATTN_COMPILE_CACHE_LOG")
_COUNTS = {"requests": 0, "hits": 0, "read_seconds": 0.0}


def _on_event(event, **kwargs):
    if event == "/jax/compilation_cache/compile_requests_use_cache":
        _COUNTS["requests"] += 1
    elif event == "/jax/compilation_cache/cache_hits":
        _COUNTS["hits"] += 1


def _on_duration(event, duration, **kwargs):
    if event == "/jax/compilation_cache/cache_retrieval_time_sec":
        _COUNTS["read_seconds"] += duration


def _write():
    if not _COUNTS["requests"]:
        return
    argv = [os.path.basename(a) if os.sep in a else a for a in sys.argv[:6]]
    line = json.dumps({"pid": os.getpid(), "argv": argv,
                       "backend": os.environ.get("KERAS_BACKEND"),
                       "pytest": os.environ.get("KERATTN_PYTEST_PID") == str(os.getpid()),
                       **_COUNTS})
    with open(_LOG, "a") as f:   # one short line: appends do not interleave
        f.write(line + "\n")


def _listen():
    import jax.monitoring

    jax.monitoring.register_event_listener(_on_event)
    jax.monitoring.register_event_duration_secs_listener(_on_duration)
    atexit.register(_write)


class _AfterJax(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "jax":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def load_then_listen(module):
            load(module)
            try:
                _listen()
            except Exception:   # counting must never break a test
                pass

        spec.loader.exec_module = load_then_listen
        return spec


if _LOG:
    sys.meta_path.insert(0, _AfterJax())
