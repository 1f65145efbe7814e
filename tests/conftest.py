import os
import sys

import keras
import pytest

sys.path.insert(0, os.path.dirname(__file__))


def pytest_report_header(config):
    return f"kerattn tests on backend={keras.backend.backend()}"


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(1234)
    yield
    keras.backend.clear_session()
