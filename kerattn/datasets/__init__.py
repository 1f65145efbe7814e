"""Loaders of the canonical formats and builders of local real data."""

from kerattn.datasets.cloze import (
    baseline_accuracy,
    bigram_baseline,
    cloze_vocabulary,
    download_kjv,
    encode_cloze,
    kjv_cloze,
    most_frequent_baseline,
    read_cbt,
    write_cbt,
)
from kerattn.datasets.cmudict import cmudict_g2p, read_cmudict
from kerattn.datasets.copying import (
    copy_arrays,
    decode_extended,
    extend_source,
    extend_target,
    extended_tokens,
)
from kerattn.datasets.digits import attention_on_own_digit, digit_strips
from kerattn.datasets.documents import (
    build_word_vocabulary,
    debian_descriptions,
    debian_topical10,
    encode_documents,
    read_jsonl,
    tokenize_document,
    write_jsonl,
)
from kerattn.datasets.fingerprint import data_fingerprint
from kerattn.datasets.gettext import gettext_pairs
from kerattn.datasets.summaries import debian_summaries, near_duplicates
from kerattn.datasets.padding import pad_ids
from kerattn.datasets.pipeline import translation_dataset
from kerattn.datasets.text_codec import TextCodec, vocabulary_from_json
from kerattn.datasets.translation import LengthBucketedBatches, translation_arrays
from kerattn.datasets.tsv import tsv_pairs
from kerattn.datasets.vocabulary import SymbolVocabulary, WordVocabulary
from kerattn.datasets.wordpiece import WordPieceVocabulary

__all__ = ["gettext_pairs", "tsv_pairs", "WordVocabulary", "translation_arrays",
           "LengthBucketedBatches", "translation_dataset", "WordPieceVocabulary", "digit_strips",
           "attention_on_own_digit", "debian_topical10", "debian_descriptions", "read_jsonl",
           "write_jsonl", "tokenize_document", "build_word_vocabulary",
           "encode_documents", "read_cbt", "write_cbt", "kjv_cloze",
           "download_kjv", "encode_cloze", "cloze_vocabulary",
           "most_frequent_baseline", "bigram_baseline", "baseline_accuracy",
           "TextCodec", "vocabulary_from_json", "extend_source", "extend_target",
           "extended_tokens", "decode_extended", "copy_arrays",
           "debian_summaries", "near_duplicates", "cmudict_g2p", "read_cmudict",
           "SymbolVocabulary", "pad_ids", "data_fingerprint"]
