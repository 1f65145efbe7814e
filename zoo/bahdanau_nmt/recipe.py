"""RNNsearch (Bahdanau et al., 2014): BiGRU encoder, GRU decoder with additive attention, maxout deep output.

    python zoo/bahdanau_nmt/recipe.py                # the budget of RESULTS.md
    python zoo/bahdanau_nmt/recipe.py --epochs 30    # longer

Prepares the gettext English -> French data, trains with `model.fit`,
evaluates sacreBLEU (greedy and beam search, and by source length) and
writes RESULTS.md beside this file.
"""

import os

import kerattn
from kerattn.recipes import translation

BUILDER = ("kerattn.zoo.bahdanau_nmt(V_x, V_y, embedding_dim=128, units=256, "
           "alignment_units=256, maxout_units=256, dropout=0.2)")


def build(source_vocab_size, target_vocab_size):
    return kerattn.zoo.bahdanau_nmt(
        source_vocab_size, target_vocab_size,
        embedding_dim=128, units=256, alignment_units=256,
        maxout_units=256, dropout=0.2)


if __name__ == "__main__":
    translation.main("bahdanau_nmt", build, __doc__.splitlines()[0],
                     os.path.dirname(os.path.abspath(__file__)), BUILDER,
                     epochs=6)
