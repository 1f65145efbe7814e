"""Grapheme-to-phoneme on phrases: the long-form test of the attentions.

Battenberg et al. (2020, "Location-Relative Attention Mechanisms for Robust
Long-Form Speech Synthesis") train on utterances of ordinary length and
test on far longer ones: the content-based attentions skip, repeat or
stall as the input grows, and the location-relative ones (GMM v2b, DCA)
hold. This recipe asks the same of kerattn's attentions on text we have:
CMUdict words strung into phrases, a word-boundary symbol between words
on both sides (`BOUNDARY`: the letter `_` and the phoneme `_`):

    "red_wine"  ->  "R EH D _ W AY N"

- `prepare`: training phrases of 1-2 words of the training split (each
  word's pronunciation drawn from its listed ones), validation phrases of
  the validation words, and test phrases of 2, 4 and 8 words of the test
  split (up to 4x the longest training phrase), built only from test
  words with one listed pronunciation, so that each phrase has one
  reference. Every phrase is drawn by a fixed data seed: every attention
  and seed sees the same phrases.
- `build` / `train`: `kerattn.recipes.g2p`'s (`luong_nmt` at the "g2p"
  preset, the attention its variant).
- `evaluate`: greedy decoding of every test phrase (a monotonic attention
  decodes hard), by phrase length: word error rate (the edit distance
  between the output's words, split at the boundary phoneme, and the
  reference's, over the reference's words), phoneme error rate (the edit
  distance of the phonemes, boundaries left out, over the reference's),
  and the alignment failures read from the attention itself (`failures`).
- `draw`: the alignment of one 8-word phrase.

Seeds, results.json and RESULTS.md are zoo/runner.py's
(zoo/g2p_phrases/recipe.py).
"""

import numpy as np

from kerattn import checks
from kerattn.recipes import g2p

BOUNDARY = "_"
# The longest word (letters or phonemes) a phrase is built from.
MAX_WORD = g2p.MAX_TOKENS
# An attention that keeps its peak on one letter for more phonemes than
# this has stalled (no CMUdict letter is read as more than 3 phonemes).
STALL = 3


def phrases(words, count, lengths, rng):
    """`count` phrases of `words` (`(word, pronunciations)`), each of a
    number of words drawn uniformly from `lengths`, each word drawn
    uniformly and each pronunciation uniformly from its word's.

    Returns:
        `(source, target, words)` triples: the letters with `BOUNDARY`
        between words, the phonemes with `BOUNDARY` between words, and the
        phrase's words.

    >>> rng = np.random.default_rng(0)
    >>> phrases([("red", ("R EH D",)), ("wine", ("W AY N",))], 1, [2], rng)
    [('wine_red', 'W AY N _ R EH D', ('wine', 'red'))]
    """
    checks.some("words", words, "one word with a pronunciation")
    out = []
    for n in rng.choice(np.asarray(lengths), size=count):
        picked = [words[i] for i in rng.integers(0, len(words), size=int(n))]
        prons = [p[rng.integers(0, len(p))] for _, p in picked]
        out.append((BOUNDARY.join(w for w, _ in picked),
                    f" {BOUNDARY} ".join(prons), tuple(w for w, _ in picked)))
    return out


def prepare(splits=None, train_phrases=60000, train_lengths=(1, 2),
            test_phrases=200, test_lengths=(2, 4, 8), data_seed=0):
    """The phrases, vocabularies and training arrays.

    Args:
        splits: `cmudict_g2p`'s `{"train", "valid", "test"}` (None reads
            CMUdict, stress stripped).
        train_phrases: the training phrases (`train_lengths` words each,
            drawn uniformly); a tenth as many validation phrases.
        test_phrases: the test phrases of each of `test_lengths`.
        data_seed: the seed every phrase is drawn with.

    Returns:
        `kerattn.recipes.g2p.prepare`'s dict (`source_vocab`, `train`,
        `valid`, ..., `data_sha256` of the words read; no `valid_split`),
        with `test` a dict `{words: [(letters, phonemes)]}`.
    """
    from kerattn.datasets import (SymbolVocabulary, cmudict_g2p, data_fingerprint,
                                  translation_arrays)

    checks.positive_int("train_phrases", train_phrases)
    checks.positive_int("test_phrases", test_phrases)
    for name, lengths in (("train_lengths", train_lengths),
                          ("test_lengths", test_lengths)):
        checks.some(name, lengths, "one phrase length")
        for n in lengths:
            checks.positive_int(name, n)
    splits = splits or cmudict_g2p()

    def fits(word, prons):
        return len(word) <= MAX_WORD and all(len(p.split()) <= MAX_WORD for p in prons)

    train = [(w, p) for w, p in splits["train"] if fits(w, p)]
    valid = [(w, p) for w, p in splits["valid"] if fits(w, p)] or train
    single = [(w, p) for w, p in splits["test"] if len(p) == 1 and fits(w, p)]
    checks.some("splits['test']", single, "one test word with one pronunciation")
    rng = np.random.default_rng(data_seed)
    train_pairs = [(s, t) for s, t, _ in phrases(train, train_phrases, train_lengths, rng)]
    valid_pairs = [(s, t) for s, t, _ in phrases(
        valid, max(1, train_phrases // 10), train_lengths, rng)]
    test = {n: [(s, t) for s, t, _ in phrases(single, test_phrases, [n], rng)]
            for n in test_lengths}
    source_vocab = SymbolVocabulary.build([s for s, _ in train_pairs], separator="")
    target_vocab = SymbolVocabulary.build([t for _, t in train_pairs])
    longest = max(train_lengths) * (MAX_WORD + 1)
    x, y, kept = translation_arrays(train_pairs, source_vocab, target_vocab, longest)
    vx, vy, _ = translation_arrays(valid_pairs, source_vocab, target_vocab, longest)
    return {"source_vocab": source_vocab, "target_vocab": target_vocab,
            "train": (x, y), "valid": (vx, vy), "train_kept": kept,
            "train_pairs": len(kept), "train_words": len(train),
            "valid_words": len(valid), "valid_pairs": len(valid_pairs),
            "test": test, "max_tokens": longest,
            "data_sha256": data_fingerprint(
                {k: splits[k] for k in ("train", "valid", "test")}),
            "train_lengths": list(train_lengths)}


# --- scoring -----------------------------------------------------------------


def error_rates(hypotheses, references):
    """Word and phoneme error rates of phrases (one reference each).

    The words of an output are its phonemes between `BOUNDARY` tokens; the
    word error rate is their edit distance to the reference's words over
    the reference's word count, the phoneme error rate the edit distance
    of the phonemes (boundaries left out) over the reference's phonemes.

    >>> rates = error_rates(["R EH D _ W AY N"], ["R EH D _ W AY N _ K AE T"])
    >>> round(rates["wer"], 4), round(rates["per"], 4)   # a word left out
    (0.3333, 0.3333)
    """
    checks.require(len(hypotheses) == len(references), "hypotheses",
                   f"one output for each of the {len(references)} phrases",
                   len(hypotheses))
    checks.some("references", references, "one phrase")
    word_edits = words = phone_edits = phones = 0
    for hyp, ref in zip(hypotheses, references):
        hyp_words, ref_words = _words(hyp), _words(ref)
        word_edits += g2p.edit_distance(hyp_words, ref_words)
        words += len(ref_words)
        hyp_phones = [p for p in hyp.split() if p != BOUNDARY]
        ref_phones = [p for p in ref.split() if p != BOUNDARY]
        phone_edits += g2p.edit_distance(hyp_phones, ref_phones)
        phones += len(ref_phones)
    return {"wer": word_edits / max(words, 1), "per": phone_edits / max(phones, 1)}


def _words(phonemes):
    return [w.strip() for w in f" {phonemes} ".split(f" {BOUNDARY} ")
            if w.strip()]


def failures(weights, letters, ended):
    """The alignment failures of one decoded phrase, read from its attention.

    Each written phoneme's peak is the letter its weights are largest on
    (none where they sum to less than 0.5: a hard monotonic attention that
    stopped nowhere). Over the phrase's words:

    - skipped: words no phoneme's peak fell on (the attention jumped over
      them, or stopped before them);
    - repeated: words the peak came back to after it had moved on to a
      later word (read twice);
    - stalled: the peak stayed on one letter for more than `STALL`
      phonemes in a row, or the output ran to the length limit without
      ending (`ended` False): the attention stopped moving.

    Args:
        weights: `(phonemes, letters)`, the phonemes written (EOS not
            included).
        letters: the phrase's source letters, `BOUNDARY` between words.
        ended: whether the decoder wrote EOS.

    Returns:
        `{"words", "skipped", "repeated", "stalled"}`: counts of words, and
        `stalled` 0 or 1.

    >>> w = np.eye(7)[[0, 1, 2, 4, 5, 6]]           # "red_wine", in order
    >>> failures(w, "red_win", True)
    {'words': 2, 'skipped': 0, 'repeated': 0, 'stalled': 0}
    >>> failures(np.eye(7)[[0, 1, 1, 1, 1]], "red_win", True)
    {'words': 2, 'skipped': 1, 'repeated': 0, 'stalled': 1}
    """
    word_of, k = [], 0
    for letter in letters:
        word_of.append(-1 if letter == BOUNDARY else k)
        k += letter == BOUNDARY
    count = k + 1
    weights = np.asarray(weights, dtype="float64").reshape(-1, len(letters))
    peaks = [int(np.argmax(w)) if w.sum() >= 0.5 else None for w in weights]
    runs = []   # the words the peak visits, a repeated visit twice
    for p in peaks:
        w = None if p is None else word_of[p]
        if w is not None and w >= 0 and (not runs or runs[-1] != w):
            runs.append(w)
    repeated = {w for i, w in enumerate(runs) if w in runs[:i]}
    longest, current = 0, 0
    for i, p in enumerate(peaks):
        current = current + 1 if p is not None and i and p == peaks[i - 1] else 1
        longest = max(longest, current if p is not None else 0)
    return {"words": count, "skipped": count - len(set(runs)),
            "repeated": len(repeated),
            "stalled": int(longest > STALL or not ended)}


def decode(model, data, sources, max_length, batch_size=128):
    """Greedy outputs of `sources` and their alignment failures (summed)."""
    from kerattn.decoding import Translator

    translator = Translator(model, data["source_vocab"], data["target_vocab"],
                            max_length=max_length, max_batch=batch_size)
    eos = data["target_vocab"].itos[data["target_vocab"].eos_id]
    order = np.argsort([len(s) for s in sources], kind="stable")
    out = [None] * len(sources)
    totals = {"phrases": len(sources), "words": 0, "skipped": 0, "repeated": 0,
              "stalled": 0}
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        texts, alignments = translator([sources[i] for i in rows],
                                       return_alignments=True)
        for i, text, a in zip(rows, texts, alignments):
            out[i] = text
            tokens = list(a["target_tokens"])
            ended = bool(tokens) and tokens[-1] == eos
            weights = np.asarray(a["weights"])[:len(tokens) - ended]
            for key, value in failures(weights, sources[i], ended).items():
                totals[key] += value
    return out, totals


def evaluate(model, data, examples=2):
    """By phrase length: WER, PER and the alignment failures (in percent:
    of the words for skipped and repeated, of the phrases for stalled)."""
    by_length = {}
    for n, pairs in data["test"].items():
        sources = [s for s, _ in pairs]
        references = [t for _, t in pairs]
        longest = max(len(t.split()) for t in references)
        hyps, totals = decode(model, data, sources, max_length=2 * longest + 8)
        rates = error_rates(hyps, references)
        by_length[str(n)] = {
            "wer": round(100 * rates["wer"], 2), "per": round(100 * rates["per"], 2),
            "skipped": round(100 * totals["skipped"] / totals["words"], 2),
            "repeated": round(100 * totals["repeated"] / totals["words"], 2),
            "stalled": round(100 * totals["stalled"] / totals["phrases"], 2),
            "phrases": len(pairs),
            "examples": [{"letters": s, "reference": r, "output": h}
                         for s, r, h in list(zip(sources, references, hyps))[:examples]]}
    return {"by_length": by_length}


def draw(model, data, path, words=8):
    """The alignment of the first test phrase of `words` words, to `path`."""
    import kerattn.plot
    from kerattn.decoding import Translator

    source, reference = data["test"][words][0]
    translator = Translator(model, data["source_vocab"], data["target_vocab"],
                            max_length=2 * len(reference.split()) + 8)
    _, alignments = translator([source], return_alignments=True)
    return kerattn.plot.save_attention_heatmaps(
        [(a["weights"], a["source_tokens"], a["target_tokens"]) for a in alignments],
        path)
