"""The Transformer (Vaswani et al., 2017) at a CPU-sized configuration.

    python zoo/transformer_nmt/recipe.py                # the budget of RESULTS.md
    python zoo/transformer_nmt/recipe.py --epochs 30    # longer

Prepares the gettext English -> French data, trains with `model.fit`,
evaluates sacreBLEU (greedy and beam search, and by source length) and
writes RESULTS.md beside this file.
"""

import os

import kerattn
from kerattn.recipes import translation

BUILDER = ("kerattn.zoo.transformer_nmt(V_x, V_y, num_layers=3, d_model=256, "
           "num_heads=4, ff_dim=512, dropout=0.1)")


def build(source_vocab_size, target_vocab_size):
    return kerattn.zoo.transformer_nmt(
        source_vocab_size, target_vocab_size,
        num_layers=3, d_model=256, num_heads=4, ff_dim=512,
        dropout=0.1)


if __name__ == "__main__":
    translation.main("transformer_nmt", build, __doc__.splitlines()[0],
                     os.path.dirname(os.path.abspath(__file__)), BUILDER,
                     epochs=6, learning_rate=7e-4, label_smoothing=0.1)
