"""Streaming: emit a hard monotonic attention's output as the input comes in.

A hard monotonic attention (`HardMonotonicAttention`, MoChA) reads its
source left to right and stops at the first position where it chooses to
attend. If the encoder reads left to right too (no backward layer, no
reversed source) and the decoder does not start from the encoder's last
state, then an output whose attention stopped inside the part of the input
already read is exactly the output that the whole input would give: the
decoder can commit to it without waiting. `StreamingDecoder` does that,
greedily: each `feed` re-encodes the prefix read so far (a one-way
encoder's states of a prefix never change), writes every token whose
attention stops inside it, and holds the first one whose attention would
need more input; `finish` writes the rest as offline decoding does.

A model whose encoder looks `k` inputs ahead (`model.lookahead()`: a
`LookaheadConvolution` over a one-way encoder, `luong_nmt(lookahead=k)`)
has final states only for the positions `k` or more before the end of the
prefix: an output is committed only when its attention stopped there, so
that the streamed output stays exactly the offline one, `k` inputs later.

    decoder = StreamingDecoder(model, letters, phonemes)
    decoder.feed("pho")      # ['F']        committed while reading
    decoder.feed("neme")     # ['OW', 'N', 'IY']
    decoder.finish()         # ['M']        the rest, at the end of the word

A model with a wait-k decoder (`model.reads(i)`: `luong_nmt(wait_k=k)`,
Ma et al. 2019) attends at step `i` only to the first `reads(i)` inputs,
whatever its attention: its output `i` is committed once `reads(i) +
lookahead()` inputs are read, and equals the offline one. Trained on
sources that end in EOS (a `SymbolVocabulary(end_marker=True)`), it
knows when the word has ended; the decoder reads that EOS at `finish`,
so an output whose prefix holds it waits for the end, as offline.

Which models can stream, each says itself (`GenerativeModel.can_stream`),
and how its state grows when more input arrives (`extend_source`): this
module knows no model class. Today: `kerattn.zoo.luong_nmt(...,
attention="hard-monotonic" or "mocha", preset="g2p-streaming")` (one-way
encoder, decoder started from zeros), and a soft attention with `wait_k=k`
(same preset).
"""

import numpy as np
from keras import ops

from kerattn import checks
from kerattn.decoding.search import _log_probs


class StreamingDecoder:
    """Greedy decoding that emits tokens before the input is complete.

    For a model that can stream (`model.can_stream()`: a hard monotonic
    attention or a wait-k schedule, and an encoder that reads left to
    right): after each `feed`, the tokens whose attention stopped inside the
    input read so far (or whose schedule's prefix is read); after `finish`,
    the rest. Together they are exactly the greedy offline output of the
    whole input (`model.generate(..., strategy="greedy")`, hard
    attention), EOS left out.

    Args:
        model: a generative zoo model (e.g. `luong_nmt(...,
            attention="hard-monotonic", preset="g2p-streaming")`).
        source_vocab, target_vocab: the vocabularies (`SymbolVocabulary`
            for letters and phonemes).
        max_length: the most tokens written, EOS included.

    Example:

    >>> from kerattn.datasets import SymbolVocabulary
    >>> letters = SymbolVocabulary.build(["read", "live"], separator="")
    >>> phonemes = SymbolVocabulary.build(["R IY D", "L IH V"])
    >>> model = kerattn.zoo.luong_nmt(len(letters), len(phonemes),
    ...                               attention="hard-monotonic",
    ...                               preset="tiny", decoder_init="zeros")
    >>> decoder = StreamingDecoder(model, letters, phonemes, max_length=4)
    >>> out = decoder.feed("re") + decoder.feed("ad") + decoder.finish()
    >>> len(out) <= 4
    True
    """

    def __init__(self, model, source_vocab, target_vocab, max_length=50):
        checks.require(hasattr(model, "can_stream"), "model",
                       "a generative zoo model (kerattn.zoo.GenerativeModel)",
                       type(model).__name__)
        ok, why = model.can_stream()
        checks.require(ok, "model", "a model whose output at each step depends "
                       "on the input read so far", type(model).__name__,
                       note=f"It cannot stream: {why}.")
        self.lookahead = model.lookahead()   # inputs past a position its state reads
        checks.vocabulary("source_vocab", source_vocab, ("encode",))
        checks.vocabulary("target_vocab", target_vocab, ("tokens",))
        checks.positive_int("max_length", max_length)
        self.model, self.max_length = model, max_length
        self.source_vocab, self.target_vocab = source_vocab, target_vocab
        self.reset()

    def reset(self):
        """Start a new input."""
        self.source = []         # the ids read so far
        self.tokens = []         # the ids written so far
        self.state = None        # the decoding state after the last token
        self.done = False

    def feed(self, text):
        """Read `text` (the next characters); returns the tokens (strings)
        committed now. A symbol outside the source vocabulary (an upper-case
        letter where the model read lower case, a digit) is a ValueError
        naming it: read as UNK it would change the output unseen."""
        checks.instance("text", text, str, "a string")
        checks.require(not self.done, "text", "input before `finish()` "
                       "(call `reset()` to start another word)")
        ids = self.source_vocab.encode(text, add_eos=False)   # a piece
        unk = getattr(self.source_vocab, "unk_id", None)
        if unk is not None and unk in ids:
            unknown = sorted({s for s in (text if getattr(
                self.source_vocab, "separator", " ") == "" else text.split())
                if unk in self.source_vocab.encode(s, add_eos=False)})
            checks.fail("text", "symbols of the source vocabulary", text,
                        note=f"Unknown: {unknown}.")
        self.source += ids
        return self._emit(final=False)

    def finish(self):
        """The input is complete: returns the remaining tokens (strings).
        A source vocabulary that marks the end (`end_marker`: the model
        was trained on sources ending in EOS) has its EOS read first."""
        checks.require(not self.done, "finish", "one call per input (call "
                       "`reset()` to start another word)")
        checks.require(bool(self.source), "feed", "at least one known "
                       "character before `finish()`")
        if getattr(self.source_vocab, "end_marker", False):
            self.source.append(self.source_vocab.eos_id)
        emitted = self._emit(final=True)
        self.done = True
        return emitted

    # --- one decoding pass over the prefix ------------------------------------

    def _emit(self, final):
        if not self.source or self._ended():
            return []
        source = np.asarray([self.source], "int32")             # (1, J)
        state = self.model.encode(source, max_length=self.max_length)
        if self.state is not None:    # carried over to the J letters read
            state = self.model.extend_source(self.state, state)
        emitted = []
        while not self._ended():
            # The inputs this output reads: a schedule's prefix (wait-k),
            # known before the step; else up to where its hard attention
            # stopped (the one position; MoChA: its chunk's end), known
            # after it. A position's state is final `lookahead` inputs on.
            reads = self.model.reads(len(self.tokens))
            if reads is not None and not final and (
                    reads + self.lookahead > len(self.source)):
                break    # its schedule reads letters not read yet
            previous = self.tokens[-1] if self.tokens else self.target_vocab.bos_id
            logits, new_state, weights = self.model.step(
                np.asarray([previous], "int32"), state, len(self.tokens))
            if reads is None and not final:
                weights = ops.convert_to_numpy(weights)[0]      # (J,)
                if not (float(weights.sum()) > 0.5 and int(np.flatnonzero(
                        weights > 0)[-1]) + 1 + self.lookahead <= len(self.source)):
                    break    # its attention needs letters not read yet
            logp = _log_probs(logits, self.target_vocab.pad_id,
                              self.target_vocab.bos_id)   # greedy_search's
            token = int(ops.convert_to_numpy(ops.argmax(logp, axis=-1))[0])
            self.tokens.append(token)
            self.state = state = new_state
            if token != self.target_vocab.eos_id:
                emitted.append(self.target_vocab.tokens([token])[0])
        return emitted

    def _ended(self):
        return len(self.tokens) >= self.max_length or (
            bool(self.tokens) and self.tokens[-1] == self.target_vocab.eos_id)
