"""AoA Reader (Cui et al., 2017) on King James Bible cloze questions.

    python zoo/aoa_reader/recipe.py --minutes 25

Fetches bible-kjv, bible-kjv-text and wordnet-base with apt-get download
(into ~/.kerattn/kjv), writes the questions in the CBT format there, and
RESULTS.md / results.json next to this file.
"""

import os

from kerattn.recipes import reading

if __name__ == "__main__":
    reading.main(out_dir=os.path.dirname(os.path.abspath(__file__)))
