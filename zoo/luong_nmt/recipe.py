"""Global attention with input feeding (Luong et al., 2015): stacked LSTMs,
general score.

    python zoo/luong_nmt/recipe.py               # the budget of RESULTS.md
    python zoo/luong_nmt/recipe.py --epochs 30   # longer; --help for more
"""

import os

from kerattn.recipes import translation

SIZES = dict(
    attention="global", score="general", input_feeding=True, num_layers=2,
    units=256, embedding_dim=128, dropout=0.2,
)

if __name__ == "__main__":
    translation.main("luong_nmt", SIZES, __doc__,
                     os.path.dirname(os.path.abspath(__file__)))
