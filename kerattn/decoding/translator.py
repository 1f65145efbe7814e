"""Strings in, strings out: a zoo translation model with its vocabularies."""

import numpy as np
from keras import ops

from kerattn.decoding.search import beam_search, greedy_search


class Translator:
    """Translate strings with a `kerattn.zoo` translation model.

    Args:
        model: a zoo translation model (e.g. `kerattn.zoo.bahdanau_nmt()`),
            trained or loaded from a `.keras` file.
        source_vocab, target_vocab: the `WordVocabulary` objects the model
            was trained with; the special ids come from them.
        max_length: the default maximum output length in tokens.

    Call arguments:
        texts: a list of strings.
        beam_width: int; 1 is greedy decoding.
        max_length: optional int overriding the default.
        return_alignments: bool; if True also return, per sentence, the
            `(target tokens, source tokens)` attention matrix of the chosen
            hypothesis with both token lists.
        **search_kwargs: `length_penalty`, `coverage_penalty`,
            `no_repeat_ngram_size`, `min_length` of `beam_search`.

    Returns:
        A list of translations (and the list of alignment dicts).

    Example:

    >>> # translator = Translator(model, src_vocab, tgt_vocab)
    >>> # translator(["Permission denied"], beam_width=5)
    """

    def __init__(self, model, source_vocab, target_vocab, max_length=40):
        from kerattn import zoo

        self.model = model
        self.source_vocab = source_vocab
        self.target_vocab = target_vocab
        self.max_length = max_length
        self.incremental = zoo.incremental(model, pad_id=source_vocab.pad_id)

    def _encode_texts(self, texts):
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise ValueError("`texts` must be a list of strings; got "
                             f"{type(texts).__name__}.")
        ids = [self.source_vocab.encode(t) or [self.source_vocab.unk_id]
               for t in texts]
        batch = np.full((len(ids), max(len(i) for i in ids)),
                        self.source_vocab.pad_id, "int32")
        for row, i in enumerate(ids):
            batch[row, : len(i)] = i
        return batch

    def __call__(self, texts, beam_width=1, max_length=None,
                 return_alignments=False, **search_kwargs):
        if not texts:
            return ([], []) if return_alignments else []
        max_length = max_length or self.max_length
        source = self._encode_texts(texts)
        if hasattr(self.incremental, "init_cache") or "max_length" in (
                self.incremental.encode.__code__.co_varnames):
            # Key/value caches are sized for the output length.
            state = self.incremental.encode(source, max_length=max_length)
        else:
            state = self.incremental.encode(source)
        v = self.target_vocab
        common = dict(step_fn=self.incremental.step, state=state,
                      batch_size=len(texts), bos_id=v.bos_id, eos_id=v.eos_id,
                      pad_id=v.pad_id, max_length=max_length)
        if beam_width == 1 and not search_kwargs:
            result = greedy_search(**common)
            tokens = ops.convert_to_numpy(result["tokens"])
            attention = result.get("attention")
        else:
            result = beam_search(beam_width=beam_width,
                                 source_mask=source != self.source_vocab.pad_id,
                                 **common, **search_kwargs)
            tokens = ops.convert_to_numpy(result["tokens"])[:, 0]
            attention = result.get("attention")
            attention = None if attention is None else attention[:, 0]
        translations = [v.decode(row) for row in tokens]
        if not return_alignments:
            return translations
        attention = None if attention is None else ops.convert_to_numpy(attention)
        alignments = []
        for row, text in enumerate(texts):
            src = self.source_vocab.tokenize(text, self.source_vocab.lowercase)
            out = list(tokens[row])
            n = out.index(v.eos_id) + 1 if v.eos_id in out else len(out)
            alignments.append({
                "source_tokens": src,
                "target_tokens": v.tokens(out[:n]),
                "weights": None if attention is None
                else attention[row, :n, : len(src)],
            })
        return translations, alignments
