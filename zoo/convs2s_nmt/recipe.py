"""ConvS2S (Gehring et al., 2017): gated convolutions with multi-step
attention, at a CPU-sized configuration.

    python zoo/convs2s_nmt/recipe.py               # the budget of RESULTS.md
    python zoo/convs2s_nmt/recipe.py --epochs 30   # longer; --help for more
"""

import os

from kerattn.recipes import translation

SIZES = dict(
    embedding_dim=256, hidden_dim=256, encoder_layers=6, decoder_layers=6,
    kernel_size=3, dropout=0.1,
)

if __name__ == "__main__":
    translation.main("convs2s_nmt", SIZES, __doc__,
                     os.path.dirname(os.path.abspath(__file__)), learning_rate=1e-3)
