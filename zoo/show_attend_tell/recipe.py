"""Show, Attend and Tell (soft and hard) on digit-strip captions.

    python zoo/show_attend_tell/recipe.py                 # both, 8 epochs
    python zoo/show_attend_tell/recipe.py --attention soft --minutes 5

Writes RESULTS.md, results.json and attention overlays next to this file.
"""

import os

from kerattn.recipes import captioning

if __name__ == "__main__":
    captioning.main(out_dir=os.path.dirname(os.path.abspath(__file__)))
