"""Global attention with input feeding (Luong et al., 2015): stacked LSTMs,
general score.

    python zoo/luong_nmt/recipe.py               # the budget of RESULTS.md
    python zoo/luong_nmt/recipe.py --epochs 30   # longer; --help for more
"""

import os

from kerattn.recipes import translation

if __name__ == "__main__":
    translation.main("luong_nmt", __doc__, os.path.dirname(os.path.abspath(__file__)))
