"""The Transformer (Vaswani et al., 2017) at a CPU-sized configuration.

    python zoo/transformer_nmt/recipe.py               # the budget of RESULTS.md
    python zoo/transformer_nmt/recipe.py --epochs 30   # longer; --help for more
"""

import os

from kerattn.recipes import translation

SIZES = dict(
    num_layers=3, d_model=256, num_heads=4, ff_dim=512, dropout=0.1,
)

if __name__ == "__main__":
    translation.main("transformer_nmt", SIZES, __doc__,
                     os.path.dirname(os.path.abspath(__file__)),
                     learning_rate=1e-3, label_smoothing=0.1,
                     warmup_steps=600)
