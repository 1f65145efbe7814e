"""Global attention with input feeding (Luong et al., 2015): stacked LSTMs,
general score.

    python zoo/luong_nmt/recipe.py               # the budget of RESULTS.md
    python zoo/luong_nmt/recipe.py --epochs 30   # longer; --help for more
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import runner  # noqa: E402  (zoo/runner.py)
import translation  # noqa: E402  (zoo/translation.py)

TASK = translation.task("luong_nmt", __doc__)

if __name__ == "__main__":
    runner.main(TASK, __file__)
