"""Pieces the recipes share."""

import json
import os


def write_results(directory, results, markdown):
    """Write `results.json` and `RESULTS.md` into `directory`; print the JSON."""
    with open(os.path.join(directory, "results.json"), "w") as handle:
        json.dump(results, handle, indent=1)
    with open(os.path.join(directory, "RESULTS.md"), "w") as handle:
        handle.write(markdown)
    print(json.dumps(results, indent=1))
