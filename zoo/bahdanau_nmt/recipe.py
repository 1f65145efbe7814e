"""RNNsearch (Bahdanau et al., 2014): BiGRU encoder, GRU decoder with additive
attention, maxout deep output.

    python zoo/bahdanau_nmt/recipe.py               # the budget of RESULTS.md
    python zoo/bahdanau_nmt/recipe.py --epochs 30   # longer; --help for more
"""

import os

from kerattn.recipes import translation

if __name__ == "__main__":
    translation.main("bahdanau_nmt", __doc__, os.path.dirname(os.path.abspath(__file__)))
