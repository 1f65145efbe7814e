import os
import sys

# As tests/run_backends.py sets it (before JAX starts): tiny models, so
# compile time matters, not run time.
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 "
                      "--xla_llvm_disable_expensive_passes=true")

import keras  # noqa: E402
import pytest

sys.path.insert(0, os.path.dirname(__file__))


def pytest_report_header(config):
    return f"kerattn tests on backend={keras.backend.backend()}"


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(1234)
    yield
    keras.backend.clear_session()
