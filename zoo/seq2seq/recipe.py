"""Sequence to sequence (Sutskever et al., 2014), the no-attention baseline: a deep LSTM, source reversed.

    python zoo/seq2seq/recipe.py                # the budget of RESULTS.md
    python zoo/seq2seq/recipe.py --epochs 30    # longer

Prepares the gettext English -> French data, trains with `model.fit`,
evaluates sacreBLEU (greedy and beam search, and by source length) and
writes RESULTS.md beside this file.
"""

import os

import kerattn
from kerattn.recipes import translation

BUILDER = ("kerattn.zoo.seq2seq(V_x, V_y, num_layers=4, units=256, "
           "embedding_dim=128, dropout=0.2)")


def build(source_vocab_size, target_vocab_size):
    return kerattn.zoo.seq2seq(
        source_vocab_size, target_vocab_size,
        num_layers=4, units=256, embedding_dim=128, dropout=0.2)


if __name__ == "__main__":
    translation.main("seq2seq", build, __doc__.splitlines()[0],
                     os.path.dirname(os.path.abspath(__file__)), BUILDER,
                     epochs=6)
