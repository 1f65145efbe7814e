"""The RNN Encoder-Decoder (Cho et al., 2014): one summary vector conditions every decoder step.

    python zoo/cho_encoder_decoder/recipe.py                # the budget of RESULTS.md
    python zoo/cho_encoder_decoder/recipe.py --epochs 30    # longer

Prepares the gettext English -> French data, trains with `model.fit`,
evaluates sacreBLEU (greedy and beam search, and by source length) and
writes RESULTS.md beside this file.
"""

import os

import kerattn
from kerattn.recipes import translation

BUILDER = ("kerattn.zoo.cho_encoder_decoder(V_x, V_y, embedding_dim=128, "
           "units=256, maxout_units=256, dropout=0.2)")


def build(source_vocab_size, target_vocab_size):
    return kerattn.zoo.cho_encoder_decoder(
        source_vocab_size, target_vocab_size,
        embedding_dim=128, units=256, maxout_units=256, dropout=0.2)


if __name__ == "__main__":
    translation.main("cho_encoder_decoder", build, __doc__.splitlines()[0],
                     os.path.dirname(os.path.abspath(__file__)), BUILDER,
                     epochs=6)
