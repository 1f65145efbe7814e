"""ConvS2S (Gehring et al., 2017): gated convolutions with multi-step attention, at a CPU-sized configuration.

    python zoo/convs2s_nmt/recipe.py                # the budget of RESULTS.md
    python zoo/convs2s_nmt/recipe.py --epochs 30    # longer

Prepares the gettext English -> French data, trains with `model.fit`,
evaluates sacreBLEU (greedy and beam search, and by source length) and
writes RESULTS.md beside this file.
"""

import os

import kerattn
from kerattn.recipes import translation

BUILDER = ("kerattn.zoo.convs2s_nmt(V_x, V_y, embedding_dim=256, hidden_dim=256, "
           "encoder_layers=6, decoder_layers=6, kernel_size=3, dropout=0.1)")


def build(source_vocab_size, target_vocab_size):
    return kerattn.zoo.convs2s_nmt(
        source_vocab_size, target_vocab_size, embedding_dim=256,
        hidden_dim=256, encoder_layers=6, decoder_layers=6, kernel_size=3,
        dropout=0.1)


if __name__ == "__main__":
    translation.main("convs2s_nmt", build, __doc__.splitlines()[0],
                     os.path.dirname(os.path.abspath(__file__)), BUILDER,
                     epochs=6, learning_rate=1e-3)
