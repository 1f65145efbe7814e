"""HAN (Yang et al., 2016) on Debian package descriptions, topical-10.

    apt-get update -o Acquire::Languages=en     # once: the English descriptions
    python zoo/han_classifier/recipe.py

Writes RESULTS.md, results.json and highlight.png next to this file.
"""

import os

from kerattn.recipes import classification

if __name__ == "__main__":
    classification.main(out_dir=os.path.dirname(os.path.abspath(__file__)))
