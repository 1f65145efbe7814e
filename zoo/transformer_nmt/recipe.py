"""The Transformer (Vaswani et al., 2017) at a CPU-sized configuration.

    python zoo/transformer_nmt/recipe.py               # the budget of RESULTS.md
    python zoo/transformer_nmt/recipe.py --epochs 30   # longer; --help for more
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import runner  # noqa: E402  (zoo/runner.py)
import translation  # noqa: E402  (zoo/translation.py)

TASK = translation.task("transformer_nmt", __doc__)

if __name__ == "__main__":
    runner.main(TASK, __file__)
