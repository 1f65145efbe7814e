"""Loaders of the canonical formats and builders of local real data."""

from kerattn.datasets.gettext import gettext_pairs
from kerattn.datasets.translation import LengthBucketedBatches, translation_arrays
from kerattn.datasets.tsv import tsv_pairs
from kerattn.datasets.vocabulary import WordVocabulary
from kerattn.datasets.wordpiece import WordPieceVocabulary

__all__ = ["gettext_pairs", "tsv_pairs", "WordVocabulary", "translation_arrays",
           "LengthBucketedBatches", "WordPieceVocabulary"]
