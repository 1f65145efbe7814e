"""The RNN Encoder-Decoder (Cho et al., 2014): one summary vector conditions
every decoder step.

    python zoo/cho_encoder_decoder/recipe.py               # the budget of RESULTS.md
    python zoo/cho_encoder_decoder/recipe.py --epochs 30   # longer; --help for more
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import runner  # noqa: E402  (zoo/runner.py)
import translation  # noqa: E402  (zoo/translation.py)

TASK = translation.task("cho_encoder_decoder", __doc__)

if __name__ == "__main__":
    runner.main(TASK, __file__)
