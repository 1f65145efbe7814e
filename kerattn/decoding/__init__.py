"""Decoding: greedy, beam search and sampling.

`generate(model, inputs)` (also `model.generate(inputs)`) is the front door
for a zoo model; the loops below it (`greedy_search`, `beam_search`,
`sample`) take any step function; `Translator` and `Captioner` are text and
image codecs over `Generator`; `StreamingDecoder` writes a hard monotonic
attention's output while its input is still coming in.
"""

from kerattn.decoding.captioner import Captioner
from kerattn.decoding.compiled import compile_decoder
from kerattn.decoding.generate import Generator, decode_function, generate
from kerattn.decoding.search import (
    beam_search,
    gather_tree,
    gnmt_coverage_penalty,
    gnmt_length_penalty,
    greedy_search,
    sample,
)
from kerattn.decoding.streaming import StreamingDecoder
from kerattn.decoding.translator import Translator

__all__ = [
    "greedy_search",
    "beam_search",
    "gather_tree",
    "sample",
    "generate",
    "Generator",
    "decode_function",
    "gnmt_length_penalty",
    "gnmt_coverage_penalty",
    "Translator",
    "Captioner",
    "compile_decoder",
    "StreamingDecoder",
]
