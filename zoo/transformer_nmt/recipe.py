"""The Transformer (Vaswani et al., 2017) at a CPU-sized configuration.

    python zoo/transformer_nmt/recipe.py               # the budget of RESULTS.md
    python zoo/transformer_nmt/recipe.py --epochs 30   # longer; --help for more
"""

import os

from kerattn.recipes import translation

if __name__ == "__main__":
    translation.main("transformer_nmt", __doc__, os.path.dirname(os.path.abspath(__file__)))
