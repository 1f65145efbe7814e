"""The grapheme-to-phoneme recipe: what zoo/g2p trains and measures.

prepare -> build -> train -> evaluate, on the CMU Pronouncing Dictionary
(`kerattn.datasets.cmudict_g2p`) or a user's word list (`fit`,
`examples/fit.py g2p --data`):

- `prepare`: the split by word, character and phoneme vocabularies
  (`SymbolVocabulary`) learned on the training words, and one training
  pair per (word, pronunciation): a word with two pronunciations is two
  pairs.
- `build`: `kerattn.zoo.luong_nmt` at a G2P preset with the attention as a
  variant: any name of `kerattn.zoo.attentions.ATTENTIONS` ("global",
  "location-sensitive", "hard-monotonic", "mocha", "gmm", "dca", ...).
- `train`: the translation recipe's (`kerattn.recipes.translation.train`):
  `model.fit` on length-bucketed batches, Adam, clipping, a masked
  cross-entropy; optionally to convergence as the papers train (early
  stopping on the validation words, a learning-rate decay) and resumable
  from a backup folder.
- `evaluate`: greedy or beam-search decoding of every test word (a
  monotonic attention decodes hard), word error rate (a word is right if the output is any of
  its pronunciations) and phoneme error rate (edit distance to the closest
  pronunciation over the reference's length), as the G2P papers score.
- `draw`: the alignments of a few words.

Seeds, results.json and RESULTS.md are zoo/runner.py's (zoo/g2p/recipe.py).
"""

import keras
import numpy as np

from kerattn import checks, distribute
from kerattn.zoo import attentions as _attentions

# Every attention of the zoo's table (`kerattn.zoo.attentions`): zoo/g2p
# compares the first four; zoo/g2p_phrases the long-input families too.
ATTENTIONS = tuple(_attentions.ATTENTIONS)
# The longest word (in letters) and pronunciation (in phonemes) trained on.
MAX_TOKENS = 24
# The most phonemes written for a word, EOS included (every search of the
# recipe, offline and streaming, stops there).
MAX_LENGTH = MAX_TOKENS + 8


def prepare(splits=None, stress=False, max_train=None, max_test=None,
            end_marker=False):
    """The data of the recipe: vocabularies, training arrays, test words.

    Args:
        splits: `{"train", "valid", "test"}` lists of `(word,
            pronunciations)` (a user's word list); None reads CMUdict
            (`cmudict_g2p(stress)`).
        stress: keep the stress digits (CMUdict only).
        max_train, max_test: keep the first words of a split (a user's
            file: by the hash of its split).
        end_marker: every word's letters end in EOS (the letter
            vocabulary's `end_marker`), so that a wait-k decoder knows when
            a word has ended (Ma et al. 2019's source `</s>`).

    Returns:
        A dict with `source_vocab` (letters), `target_vocab` (phonemes),
        `train` / `valid` (`translation_arrays`' inputs and labels),
        `train_pairs`, `train_words`, `valid_split` and `test` (`(word,
        pronunciations)`) and `data_sha256` (the splits' `data_fingerprint`).
    """
    from kerattn.datasets import (SymbolVocabulary, cmudict_g2p, data_fingerprint,
                                  translation_arrays)

    splits = splits or cmudict_g2p(stress=stress)
    splits = {"train": splits["train"][:max_train],
              "valid": splits["valid"][:max_test],
              "test": splits["test"][:max_test]}

    def pairs(words):
        return [(w, p) for w, prons in words for p in prons]

    train = pairs(splits["train"])
    checks.some("splits['train']", train, "one word with a pronunciation")
    source_vocab = SymbolVocabulary.build([w for w, _ in train], separator="",
                                          end_marker=end_marker)
    target_vocab = SymbolVocabulary.build([p for _, p in train])
    # The marker is one more source position: the same words are kept.
    longest = MAX_TOKENS + end_marker
    x, y, kept = translation_arrays(train, source_vocab, target_vocab, longest)
    vx, vy, _ = translation_arrays(pairs(splits["valid"]) or train[:1],
                                   source_vocab, target_vocab, longest)
    return {"source_vocab": source_vocab, "target_vocab": target_vocab,
            "train": (x, y), "valid": (vx, vy), "train_kept": kept,
            "train_pairs": len(kept), "train_words": len(splits["train"]),
            "valid_words": len(splits["valid"]), "valid_split": splits["valid"],
            "test": splits["test"], "max_tokens": MAX_TOKENS,
            "data_sha256": data_fingerprint(splits)}


def build(data, attention="global", preset="g2p", **overrides):
    """`kerattn.zoo.luong_nmt` for the data's vocabularies, `attention` a
    variant (`ATTENTIONS`), at `preset` ("g2p", "g2p-streaming", ...)."""
    from kerattn import zoo

    checks.one_of("attention", attention, ATTENTIONS)
    return zoo.luong_nmt(len(data["source_vocab"]), len(data["target_vocab"]),
                         attention=attention, preset=preset, **overrides)


def train(model, data, patience=None, decay=None, backup=None,
          pause_after=None, callbacks=(), monitor="val_loss", **kwargs):
    """`kerattn.recipes.translation.train` (its arguments), as the G2P papers
    train: to convergence on the validation words; a summary.

    Args:
        patience: None, or stop once `monitor` has not improved for this
            many epochs and keep the best epoch's weights (Keras'
            `EarlyStopping`; Toshniwal and Livescu 2016 keep the checkpoint
            of the best validation error).
        decay: None, or multiply Adam's rate by this factor after each epoch
            whose `monitor` did not improve (Keras' `ReduceLROnPlateau`,
            patience 1; Toshniwal and Livescu's code multiplies it by 0.8
            when the training loss passes its last three epochs').
        monitor: what `patience` and `decay` watch: "val_loss" (the
            validation words' cross-entropy, teacher-forced) or "val_wer"
            (their greedy word error rate, decoded at each epoch's end by
            `ValidationErrorRates`, one process only: Toshniwal and
            Livescu's code keeps the checkpoint of the best, averaged over
            three epochs; the loss can rise from over-confidence while
            fewer words are wrong). A backup resumes only under the
            monitor it was written with.
        backup: None, or a folder where every epoch ends in a backup
            (`kerattn.callbacks.BackupAndRestore`): the same call resumes
            there, in another process or session, where the training was:
            early stopping's count, best loss and best weights, the decay's
            count, the time spent under `minutes` and the learning curve
            are backed up with the weights, and the learning rate is the
            optimizer's.
        pause_after: with `backup`, minutes of this call's training after
            which it stops at an epoch's end and keeps the backup
            (`summary["paused"]`): a training longer than a session, in
            whole epochs.
        callbacks: more Keras callbacks.
        **kwargs: `translation.train`'s (`epochs`, `batch_size`,
            `learning_rate`, ...).

    Returns:
        `translation.train`'s summary (`val_losses`: the validation loss
        after each epoch, the learning curve: with `backup`, the whole
        training's, earlier calls' included; `val_wers` too with
        `monitor="val_wer"`).
    """
    from kerattn.recipes import translation

    checks.positive_int("patience", patience, allow_none=True)
    checks.number("decay", decay, 0.0, 1.0, low_open=True, high_open=True,
                  allow_none=True)
    check_monitor(monitor, kwargs.get("strategy"))
    # In this order at each epoch's end: Keras hands the callbacks one logs
    # dict, so the decoded rates are there for those that watch them.
    extra = [ValidationErrorRates(data)] if monitor == "val_wer" else []
    if decay is not None:
        extra.append(keras.callbacks.ReduceLROnPlateau(
            monitor, factor=decay, patience=1, mode="min", verbose=0))
    if patience is not None:
        extra.append(keras.callbacks.EarlyStopping(
            monitor, patience=patience, mode="min", restore_best_weights=True))
    extra += list(callbacks)
    return translation.train(model, data, callbacks=extra, backup=backup,
                             pause_after=pause_after, **kwargs)


# What `train` can stop early and decay the learning rate on.
MONITORS = ("val_loss", "val_wer")


def check_monitor(monitor, strategy=None):
    """A ValueError naming `monitor` unless `train` can watch it under
    `strategy` (a `kerattn.distribute` strategy or None): one of
    `MONITORS`, and "val_wer" in one process only."""
    checks.one_of("monitor", monitor, MONITORS)
    checks.require(monitor != "val_wer" or strategy is None or strategy.processes == 1,
                   "monitor", "'val_loss' on several processes (each would decode "
                   "the validation words itself, and one word decoded apart "
                   "would stop one process and not the others)", monitor)


class ValidationErrorRates(keras.callbacks.Callback):
    """The validation words' greedy WER and PER, in percent, written into
    each epoch's logs (`val_wer`, `val_per`) as the epoch ends.

    Toshniwal and Livescu's code keeps the checkpoint of the best
    validation WER, decoded after every epoch (g2p.py of
    github.com/shtoshni/g2p; it averages the last three epochs' and never
    stops early); `train(monitor="val_wer")` stops early and decays the
    learning rate on it. Keras hands one logs dict to the callbacks in
    their order: list this one before those that read it
    (`EarlyStopping`, `ReduceLROnPlateau`, the `History` fit adds, a
    backup). One `Translator` is built at the first epoch's end and
    decodes with the model's weights of each epoch; the time it takes is
    the epoch's.

    Args:
        data: `prepare`'s dict: `valid_split` (the `(word,
            pronunciations)` decoded) and the vocabularies.
        batch_size: words decoded at once.
    """

    def __init__(self, data, batch_size=256):
        super().__init__()
        checks.some("data['valid_split']", data.get("valid_split") or [],
                    "one validation word with its pronunciations")
        checks.positive_int("batch_size", batch_size)
        checks.require(batch_size & (batch_size - 1) == 0, "batch_size",
                       "a power of two (the `Translator`'s batches)", batch_size)
        self.data, self.batch_size, self._translator = data, batch_size, None

    def on_epoch_end(self, epoch, logs=None):
        from kerattn.decoding import Translator

        if logs is None:
            return
        if self._translator is None:
            self._translator = Translator(
                self.model, self.data["source_vocab"], self.data["target_vocab"],
                max_length=MAX_LENGTH, max_batch=self.batch_size)
        split = self.data["valid_split"]
        hypotheses, _ = pronounce(self.model, self.data, [w for w, _ in split],
                                  self.batch_size, translator=self._translator)
        rates = error_rates(hypotheses, [p for _, p in split])
        # Unrounded: one word of 10,000 is under 0.01 points, and a tie is
        # no improvement for the callbacks that read it.
        logs["val_wer"] = 100 * rates["wer"]
        logs["val_per"] = 100 * rates["per"]


# --- scoring -----------------------------------------------------------------


def edit_distance(a, b):
    """The Levenshtein distance between two sequences (unit costs)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def error_rates(hypotheses, references):
    """Word and phoneme error rates of G2P output, as the papers score them.

    Args:
        hypotheses: one pronunciation a word (space-separated phonemes).
        references: each word's pronunciations (a tuple of strings).

    Returns:
        `{"wer", "per"}`: the share of words whose output is none of their
        pronunciations, and the summed edit distance to each word's
        closest pronunciation over those pronunciations' summed lengths.

    Example:

    >>> rates = error_rates(["R IY D", "L AY V"], [("R EH D", "R IY D"), ("L IH V",)])
    >>> rates["wer"], round(rates["per"], 4)    # 1 wrong word; 1 edit in 6
    (0.5, 0.1667)
    """
    checks.require(len(hypotheses) == len(references), "hypotheses",
                   f"one pronunciation for each of the {len(references)} words",
                   len(hypotheses))
    checks.some("references", references, "one word")
    wrong = edits = length = 0
    for hyp, prons in zip(hypotheses, references):
        hyp = hyp.split()
        wrong += hyp not in [p.split() for p in prons]
        # The closest pronunciation (the first listed among equally close).
        distance, _, ref = min((edit_distance(hyp, p.split()), k, len(p.split()))
                               for k, p in enumerate(prons))
        edits += distance
        length += ref
    return {"wer": wrong / len(references), "per": edits / max(length, 1)}


def pronounce(model, data, words, batch_size=256, beam_width=1, translator=None):
    """Pronunciations of `words` (a monotonic attention decodes hard),
    through the `Translator` a user calls (sorted by length, in batches of
    `batch_size`, a power of two): greedy, or beam search with
    `beam_width` > 1 (the highest log-probability, no length penalty).
    `translator`: one of `model` to decode with (its compiled searches
    kept), else a new one.

    Returns:
        `(pronunciations, attended_nowhere)`: one string a word (at most
        `MAX_LENGTH` tokens, EOS included), and the
        share of written phonemes (EOS not counted) whose attention weights
        are all zero (a hard monotonic attention that found no letter to
        stop at: the phoneme was written from a zero context).
    """
    from kerattn.decoding import Translator

    if translator is None:
        translator = Translator(model, data["source_vocab"], data["target_vocab"],
                                max_length=MAX_LENGTH, max_batch=batch_size)
    eos = data["target_vocab"].eos_id
    order = np.argsort([len(w) for w in words], kind="stable")
    out, nowhere, written = [None] * len(words), 0, 0
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        texts, alignments = translator([words[i] for i in rows],
                                       beam_width=beam_width,
                                       return_alignments=True)
        for i, text, alignment in zip(rows, texts, alignments):
            out[i] = text
            weights, tokens = alignment["weights"], alignment["target_tokens"]
            phonemes = np.arange(len(tokens)) < len(tokens) - (
                tokens[-1:] == [data["target_vocab"].itos[eos]])
            written += int(phonemes.sum())
            if weights is not None:
                mass = np.asarray(weights).sum(-1)
                nowhere += int(((mass < 0.5) & phonemes).sum())
    return out, nowhere / max(written, 1)


def evaluate(model, data, examples=5, beam_width=1):
    """WER / PER on every test word (greedy, or beam search of
    `beam_width`), and examples."""
    checks.positive_int("beam_width", beam_width)
    words = [w for w, _ in data["test"]]
    references = [p for _, p in data["test"]]
    hyps, nowhere = pronounce(model, data, words, beam_width=beam_width)
    rates = error_rates(hyps, references)
    return {"wer": round(100 * rates["wer"], 2), "per": round(100 * rates["per"], 2),
            "attended_nowhere": round(nowhere, 4), "test_words": len(words),
            "examples": [{"word": w, "references": list(r), "output": h}
                         for w, r, h in list(zip(words, references, hyps))[:examples]]}


def streaming(model, data, count=100, examples=("phoneme", "thoughtful", "xylophone")):
    """How early a left-to-right model commits: `StreamingDecoder` on the
    first `count` test words, one letter at a time.

    Returns:
        None for a model that cannot stream; else `{"words", "early",
        "lagging", "same_as_offline", "examples"}`: the share of written
        phonemes committed before the word's last letter was read, the
        mean average lagging in letters (`average_lagging`), the share of
        words whose streamed output equals the offline greedy output
        (`pronounce`; the same up to floating-point near-ties, as the
        prefix and the whole word are encoded apart), and for each of `examples`
        the phonemes committed after each letter (the last entry after
        `finish`).
    """
    from kerattn.decoding import StreamingDecoder

    if not model.can_stream()[0]:   # it reads the whole word first
        return None
    decoder = StreamingDecoder(model, data["source_vocab"], data["target_vocab"],
                               max_length=MAX_LENGTH)
    words = [w for w, _ in data["test"][:count]]
    offline, _ = pronounce(model, data, words)
    early = written = same = 0
    lags, shown = [], []
    for word, expected in zip(list(words) + list(examples),
                              offline + [None] * len(examples)):
        decoder.reset()
        chunks = [decoder.feed(c) for c in word] + [decoder.finish()]
        if expected is None:
            shown.append({"word": word, "chunks": chunks})
            continue
        same += " ".join(sum(chunks, [])) == expected
        written += sum(map(len, chunks))
        early += sum(map(len, chunks[:len(word) - 1]))
        if any(chunks):
            lags.append(average_lagging(chunks))
    return {"words": len(words), "early": round(early / max(written, 1), 4),
            "lagging": round(float(np.mean(lags)), 4) if lags else None,
            "same_as_offline": round(same / len(words), 4), "examples": shown}


def average_lagging(chunks):
    """Ma et al. (2019)'s average lagging, in letters, of one streamed word.

    `chunks`: what a streaming decoder committed after each letter (one
    list per letter), then after the end of the word (the last list). With
    `g(t)` the letters read when output `t` (from 1) was committed, `|x|`
    letters, `|y|` outputs and `tau` the first output committed after the
    whole word was read (the last output if none was):

        AL = (1 / tau) sum_{t=1}^{tau} [g(t) - (t - 1) |x| / |y|]

    how many letters, on average, the outputs up to `tau` are written
    behind an ideal writer that keeps pace with the input: a wait-k
    schedule's is about `k`, one output as each letter is read gives 1, and
    a model that writes everything at the end `|x|`.

    >>> average_lagging([["R"], ["IY"], ["D"], []])               # "red"
    1.0
    >>> average_lagging([["F"], [], ["OW"], ["N", "IY", "M"]])    # 3 letters
    1.7
    """
    letters = len(chunks) - 1
    reads = [min(k + 1, letters) for k, chunk in enumerate(chunks)
             for _ in chunk]                       # g(t) for each output
    checks.require(bool(reads), "chunks", "at least one committed output",
                   chunks)
    tau = next((t for t, g in enumerate(reads, 1) if g == letters),
               len(reads))   # every output before the word ended
    rate = letters / len(reads)
    return float(np.mean([reads[t] - t * rate for t in range(tau)]))


def draw(model, data, path, words=("phoneme", "thoughtful", "xylophone")):
    """The alignments (attention over the letters of each output phoneme)
    of `words`, to `path`."""
    import kerattn.plot
    from kerattn.decoding import Translator

    translator = Translator(model, data["source_vocab"], data["target_vocab"])
    _, alignments = translator(list(words), return_alignments=True)
    return kerattn.plot.save_attention_heatmaps(
        [(a["weights"], a["source_tokens"], a["target_tokens"]) for a in alignments],
        path)


def fit(data=None, attention="global", preset="small", epochs=40, batch_size=64,
        learning_rate=None, max_train=None, max_test=None, seed=0, strategy=None,
        verbose=2, stress=False, patience=3, decay=0.5, beam_width=5,
        wait_k=None, wait_rate=1.0, end_marker=False, lookahead=0,
        latency_weight=0.0, test_data=None, monitor="val_loss"):
    """`examples/fit.py g2p`: the recipe's method on any word list.

    Args:
        data: a word list in CMUdict's format (`word PH1 PH2 ...`, a line a
            pronunciation, `word(2)` for another; `read_cmudict`), split
            as `cmudict_g2p` splits CMUdict: 5% of the words test and 5%
            validation, by a hash of the word. None trains on CMUdict.
        attention: one of `ATTENTIONS`.
        preset: "small" trains the "g2p" sizes; any `luong_nmt` preset.
        epochs, batch_size, learning_rate (None: 2e-3), seed: training's;
            `epochs` is at most that many with `patience`.
        max_train, max_test: keep the first words of a split (a user's
            file: by the hash of its split).
        strategy: a `kerattn.distribute` strategy.
        verbose: `fit`'s verbosity.
        stress: keep ARPAbet's stress digits (`read_cmudict`).
        patience, decay: `train`'s: trained to convergence on the
            validation words by default, as the papers (and zoo/g2p's
            rows with `patience`) train; None and None train `epochs` epochs at
            one rate.
        beam_width: the test words' beam (1: greedy).
        wait_k, wait_rate: `luong_nmt`'s wait-k schedule (None: none), a
            decoder that streams with a soft attention (the
            "g2p-streaming" preset).
        end_marker: every word's letters end in EOS (`prepare`'s).
        lookahead: `luong_nmt`'s lookahead (letters each encoder state
            also reads; a streaming decoder waits for them).
        latency_weight: `luong_nmt`'s `latency_loss_weight` (MILk's
            latency loss, for `attention="hard-monotonic"`; 0: none).
        test_data: your own test words, a word list like `data` (with
            `data`): every word of it is tested on, `data` gives training
            and 5% validation (`kerattn.recipes.common.split_with_test`:
            a word of both files is not trained on).
        monitor: what `patience` and `decay` watch (`train`'s): "val_loss"
            or "val_wer" (the validation words decoded after each epoch;
            the summary's `val_wers` holds them).

    Returns:
        `(model, summary, results, draw)`: `results` holds `wer` and `per`
        (percent) on the test words, and for a model that can stream
        `streaming` (`streaming`'s figures on the first 100 test words);
        `draw(path)` writes alignments.
    """
    from kerattn.datasets import read_cmudict
    from kerattn.recipes.common import fitted, require_training_file, split

    require_training_file(data, test_data)
    strategy = strategy or distribute.no_distribution()
    check_monitor(monitor, strategy)   # before the data are read
    # cmudict_g2p's rule: by a hash of the word, 5% test and 5% validation.
    splits = split(list(read_cmudict(data, stress).items()),
                   key=lambda item: item[0], valid_share=0.05, test_share=0.05,
                   test=list(read_cmudict(test_data, stress).items())
                   if test_data else None) if data else None
    prepared = prepare(splits, stress=stress, max_train=max_train, max_test=max_test,
                       end_marker=end_marker)
    schedule = {} if wait_k is None else {"wait_k": wait_k, "wait_rate": wait_rate}
    if lookahead:
        schedule["lookahead"] = lookahead
    if latency_weight:
        schedule["latency_loss_weight"] = latency_weight
    with strategy.scope():
        model = build(prepared, attention, "g2p" if preset == "small" else preset,
                      **schedule)
        summary = train(model, prepared, patience=patience, decay=decay,
                        epochs=epochs, batch_size=batch_size,
                        learning_rate=learning_rate or 2e-3, strategy=strategy,
                        seed=seed, verbose=verbose, monitor=monitor)
    vocabularies = {"source": prepared["source_vocab"],
                    "target": prepared["target_vocab"]}
    if not strategy.is_chief:
        return fitted(model, summary, None, None, "g2p", vocabularies)
    results = evaluate(model, prepared, beam_width=beam_width)
    streamed = streaming(model, prepared, examples=())
    if streamed is not None:   # how early, how far behind, the same as offline
        results["streaming"] = {k: v for k, v in streamed.items() if k != "examples"}
    words = [w for w, _ in prepared["test"][:3]]
    return fitted(model, summary, results,
                  lambda path: draw(model, prepared, path, words), "g2p",
                  vocabularies, search={"beam_width": beam_width,
                                        "max_length": MAX_LENGTH})
