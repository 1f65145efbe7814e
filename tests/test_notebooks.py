"""The example notebooks run end to end (at a small size) and draw their
attention pictures inline.

Each notebook reads `KERATTN_NOTEBOOK_SIZE=small`: the same cells, on a few
hundred examples of the same real data (or the real samples in
`tests/data`), for one epoch. They execute in a fresh Jupyter kernel
(nbclient + ipykernel), each on one backend: the one tests/placement.py
places its case on, which is also its kernel's `KERAS_BACKEND`. The
notebooks call only the library's public API, whose layers and models are
tested on all three backends by the other test files, and executing each
three times would cost CI minutes for no new check.
"""

import glob
import os

import keras
import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples")
NOTEBOOKS = sorted(glob.glob(os.path.join(EXAMPLES, "*.ipynb")))
TASKS = ["captioning", "document_classification", "reading_comprehension",
         "summarisation", "translation"]


def test_one_notebook_per_task():
    assert [os.path.basename(p)[:-len(".ipynb")] for p in NOTEBOOKS] == TASKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs_and_draws_attention(path, monkeypatch):
    # The kernel runs on the backend whose process runs this case.
    NOTEBOOK_BACKEND = keras.backend.backend()
    nbformat = pytest.importorskip(
        "nbformat", reason="running notebooks needs the [dev] extra's nbclient")
    nbclient = pytest.importorskip(
        "nbclient", reason="running notebooks needs the [dev] extra's nbclient")
    monkeypatch.setenv("KERATTN_NOTEBOOK_SIZE", "small")
    monkeypatch.setenv("KERAS_BACKEND", NOTEBOOK_BACKEND)
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": EXAMPLES}})
    client.execute()  # raises CellExecutionError, with the cell's traceback

    outputs = [o for cell in notebook.cells if cell.cell_type == "code"
               for o in cell.outputs]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"backend: {NOTEBOOK_BACKEND}" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    # The attention pictures (and any other figure) are inline PNGs.
    assert len(images) >= 1, "no inline picture"
    last = [cell for cell in notebook.cells if cell.cell_type == "code"][-1]
    assert any("image/png" in o.get("data", {}) for o in last.outputs), (
        "the last code cell draws the attention")
