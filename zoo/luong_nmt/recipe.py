"""Global attention with input feeding (Luong et al., 2015): stacked LSTMs, general score.

    python zoo/luong_nmt/recipe.py                # the budget of RESULTS.md
    python zoo/luong_nmt/recipe.py --epochs 30    # longer

Prepares the gettext English -> French data, trains with `model.fit`,
evaluates sacreBLEU (greedy and beam search, and by source length) and
writes RESULTS.md beside this file.
"""

import os

import kerattn
from kerattn.recipes import translation

BUILDER = ("kerattn.zoo.luong_nmt(V_x, V_y, attention='global', score='general', "
           "input_feeding=True, num_layers=2, units=256, embedding_dim=128, "
           "dropout=0.2)")


def build(source_vocab_size, target_vocab_size):
    return kerattn.zoo.luong_nmt(
        source_vocab_size, target_vocab_size, attention="global",
        score="general", input_feeding=True, num_layers=2, units=256,
        embedding_dim=128, dropout=0.2)


if __name__ == "__main__":
    translation.main("luong_nmt", build, __doc__.splitlines()[0],
                     os.path.dirname(os.path.abspath(__file__)), BUILDER,
                     epochs=6)
