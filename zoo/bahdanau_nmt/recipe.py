"""RNNsearch (Bahdanau et al., 2014): BiGRU encoder, GRU decoder with additive
attention, maxout deep output.

    python zoo/bahdanau_nmt/recipe.py               # the budget of RESULTS.md
    python zoo/bahdanau_nmt/recipe.py --epochs 30   # longer; --help for more
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import runner  # noqa: E402  (zoo/runner.py)
import translation  # noqa: E402  (zoo/translation.py)

TASK = translation.task("bahdanau_nmt", __doc__)

if __name__ == "__main__":
    runner.main(TASK, __file__)
