"""ConvS2S (Gehring et al., 2017): gated convolutions with multi-step
attention, at a CPU-sized configuration.

    python zoo/convs2s_nmt/recipe.py               # the budget of RESULTS.md
    python zoo/convs2s_nmt/recipe.py --epochs 30   # longer; --help for more
"""

import os

from kerattn.recipes import translation

if __name__ == "__main__":
    translation.main("convs2s_nmt", __doc__, os.path.dirname(os.path.abspath(__file__)))
