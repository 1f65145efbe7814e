"""Decoding: greedy, beam search and sampling over any step function."""

from kerattn.decoding.captioner import Captioner
from kerattn.decoding.compiled import compile_decoder
from kerattn.decoding.search import (
    beam_search,
    gnmt_coverage_penalty,
    gnmt_length_penalty,
    greedy_search,
    sample,
    search_incremental,
)
from kerattn.decoding.translator import Translator

__all__ = [
    "greedy_search",
    "beam_search",
    "sample",
    "search_incremental",
    "gnmt_length_penalty",
    "gnmt_coverage_penalty",
    "Translator",
    "Captioner",
    "compile_decoder",
]
