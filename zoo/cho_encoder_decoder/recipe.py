"""The RNN Encoder-Decoder (Cho et al., 2014): one summary vector conditions
every decoder step.

    python zoo/cho_encoder_decoder/recipe.py               # the budget of RESULTS.md
    python zoo/cho_encoder_decoder/recipe.py --epochs 30   # longer; --help for more
"""

import os

from kerattn.recipes import translation

if __name__ == "__main__":
    translation.main("cho_encoder_decoder", __doc__, os.path.dirname(os.path.abspath(__file__)))
