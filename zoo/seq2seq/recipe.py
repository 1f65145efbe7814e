"""Sequence to sequence (Sutskever et al., 2014), the no-attention baseline:
a deep LSTM, source reversed.

    python zoo/seq2seq/recipe.py               # the budget of RESULTS.md
    python zoo/seq2seq/recipe.py --epochs 30   # longer; --help for more
"""

import os

from kerattn.recipes import translation

if __name__ == "__main__":
    translation.main("seq2seq", __doc__, os.path.dirname(os.path.abspath(__file__)))
