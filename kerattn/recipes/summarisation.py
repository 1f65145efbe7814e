"""The summarisation recipe: See et al.'s Table 1 on Debian package descriptions.

prepare -> build -> train -> evaluate, on apt's long descriptions and their
synopses (`kerattn.datasets.debian_summaries`) or a user's `(text,
summary)` pairs (`fit`, `examples/fit.py pointer_generator --data`):

- `prepare`: one word vocabulary for both sides, learned on the training
  split (See et al. share it); sources cut to their first `max_source`
  tokens (the paper cuts articles to 400), training pairs with summaries of
  at most `max_summary` tokens.
- `train`: `model.fit` on length-bucketed batches with Adam, gradient
  clipping and a masked cross-entropy over the model's log-probabilities.
- `with_coverage`: the pointer-generator's weights in a model with coverage,
  for the paper's short final training phase with the coverage loss.
- `tune_length`: the decoder's minimum length and length normalisation
  (GNMT's alpha, or See et al.'s average log-probability per token),
  chosen by ROUGE-L on the validation split, as See et al.'s decoder has
  both.
- `evaluate`: ROUGE-1/2/L F1 (Google's `rouge-score`, Porter stemmer on) of
  beam-search summaries, beside the figures of the paper's section 7: the
  share of summary words found in the source, the words written from
  outside the vocabulary (only a copying model can), the unknown-word
  tokens written, and the share of repeated trigrams (Figure 4).
- `lead`: the lead baselines (the first sentence; the first k words, k
  chosen on the validation split).
- `draw`: attention and p_gen over test descriptions.

Seeds, results.json and RESULTS.md are zoo/runner.py's.
"""


import keras
import numpy as np

from kerattn import checks, distribute
from kerattn.datasets import (LengthBucketedBatches, WordVocabulary, copy_arrays,
                              data_fingerprint)
from kerattn.datasets.documents import split_sentences
from kerattn.decoding import Translator
from kerattn.losses import MaskedSparseCrossentropy
from kerattn.recipes.common import carry_weights, compile_and_fit, phase_rows

ROUGE = ("rouge1", "rouge2", "rougeL")
STEMMER = True   # rouge-score's Porter stemmer, as pyrouge's -m in the paper
LEAD_WORDS = tuple(range(2, 21))   # the k of the first-k-words baseline
# What `tune_length` tries, on the first TUNE_PAIRS validation pairs: the
# fewest tokens before the end (beam search's `min_length`; See et al.'s
# decoder has 35 for 56-token summaries, the references here have about 8)
# and the ranking (GNMT's alpha, 0 the raw log-probability, or "average").
LENGTH_GRID = {"min_length": (0, 2, 4, 6),
               "length_penalty": (0.0, 0.6, 1.2, "average")}
TUNE_PAIRS = 500
# The descriptions the recipe keeps (`debian_summaries`' min_words, max_words).
DESCRIPTION_WORDS = (20, 200)
SPACE = WordVocabulary.SPACE   # "a space came before"; also a copied OOV's mark


def prepare(splits=None, vocab_size=10000, max_source=72, max_summary=20,
            max_train=None, max_test=None, lists_dir=None):
    """The data of the recipe: the vocabulary, training arrays, test pairs.

    Args:
        splits: `{"train", "valid", "test"}` lists of `(text, summary)`
            pairs; None reads Debian's descriptions (`debian_summaries`,
            20 to 200 words).
        vocab_size: the shared vocabulary's size, specials included.
        max_source: sources keep their first tokens, this many.
        max_summary: training pairs keep summaries of at most this many
            tokens (every test pair is scored).
        max_train, max_test: keep the first pairs of a split (a user's
            file: by the hash of its split).
        lists_dir: apt's list directory (None: the system's).
    """
    checks.positive_int("vocab_size", vocab_size)
    checks.positive_int("max_source", max_source)
    checks.positive_int("max_summary", max_summary)
    report = None
    if splits is None:
        from kerattn.datasets import debian_summaries

        kwargs = {} if lists_dir is None else {"lists_dir": lists_dir}
        found = debian_summaries(min_words=DESCRIPTION_WORDS[0],
                                 max_words=DESCRIPTION_WORDS[1], **kwargs)
        report = found["report"]
        splits = {k: [(e["text"], e["summary"]) for e in found[k]]
                  for k in ("train", "valid", "test")}
    splits = {"train": splits["train"][:max_train],
              "valid": splits["valid"][:max_test],
              "test": splits["test"][:max_test]}
    vocab = WordVocabulary.build(
        [t for pair in splits["train"] for t in pair], vocab_size, lowercase=True)

    def cut(text):   # the first max_source tokens, as the model reads them
        tokens = vocab.tokenize(text, True)[:max_source]
        return "".join(tokens).replace(SPACE, " ").strip() or text

    def kept(pairs):
        return [(cut(s), t) for s, t in pairs
                if 0 < len(vocab.tokenize(t, True)) <= max_summary]

    train_pairs = kept(splits["train"])
    checks.require(train_pairs, "data", "training pairs with a summary of at "
                   f"most max_summary={max_summary} tokens")
    return {
        "vocab": vocab,
        "train_pairs": train_pairs,
        "valid_pairs": kept(splits["valid"]),
        "test": [(s, cut(s), t) for s, t in splits["test"]],   # full, cut, summary
        "valid": splits["valid"],
        "valid_cut": [(cut(s), t) for s, t in splits["valid"][:TUNE_PAIRS]],
        "max_source": max_source,
        "max_summary": max_summary,
        "report": report,
        "data_sha256": data_fingerprint(splits),   # the pairs read, before `cut`
    }


def build(data, preset="small", copy=True, coverage=False):
    """`kerattn.zoo.pointer_generator` for the data's vocabulary."""
    from kerattn import zoo

    return zoo.pointer_generator(len(data["vocab"]), copy=copy, coverage=coverage,
                                 unk_id=data["vocab"].unk_id, preset=preset)


def train(model, data, epochs=2, minutes=None, batch_size=64, learning_rate=2e-3,
          steps=None, strategy=None, seed=0, verbose="auto"):
    """Fit `model` (`compile_and_fit`); returns a summary.

    `steps` trains that many batches in one epoch instead of `epochs`
    (the coverage phase), on a random part of the training pairs (all of
    them, once, when they are fewer).
    """
    pad = data["vocab"].pad_id
    copy = bool(getattr(model, "copies", False))
    x, y, _ = copy_arrays(data["train_pairs"], data["vocab"], copy=copy)
    if steps is not None:   # a random part of the training pairs, once
        rows = phase_rows(len(y), steps, batch_size, seed)
        x, y = {k: v[rows] for k, v in x.items()}, y[rows]
        epochs = 1
    # Two shapes (each compiles once): every source padded to max_source
    # tokens, summaries to 12 or 24.
    widths = dict(bucket_width=data["max_source"], target_bucket_width=12,
                  pad_id=pad)
    batches = LengthBucketedBatches(x, y, batch_size=batch_size, seed=seed, **widths)
    valid = None   # a user's few validation pairs may all be too long
    if data["valid_pairs"]:
        vx, vy, _ = copy_arrays(data["valid_pairs"], data["vocab"], copy=copy)
        valid = LengthBucketedBatches(vx, vy, batch_size=256, shuffle=False,
                                      **widths)
    _, summary = compile_and_fit(
        model, batches, valid,
        loss=MaskedSparseCrossentropy(pad_id=pad, from_log_probs=True),
        learning_rate=learning_rate, epochs=epochs, minutes=minutes,
        clipnorm=2.0, strategy=strategy, verbose=verbose)
    return summary


def with_coverage(model, data, preset, coverage=True):
    """A coverage model (`coverage=True`) holding all of `model`'s weights
    (`common.carry_weights`): the paper's short final phase. Its new
    weights, the attention's `w_c` and `b_attn` (eq. 11), start as the layer
    initialises them. `coverage=False` gives a copy of `model` instead: the
    same phase without coverage, its control."""
    covered = build(data, preset, copy=model.copies, coverage=coverage)
    carry_weights(model, covered)
    return covered


# -----------------------------------------------------------------------------
# Scores


def rouge(hypotheses, references):
    """Mean ROUGE-1/2/L F1 (x 100) of `hypotheses` against `references`."""
    from rouge_score import rouge_scorer   # kerattn[eval]

    scorer = rouge_scorer.RougeScorer(list(ROUGE), use_stemmer=STEMMER)
    totals = dict.fromkeys(ROUGE, 0.0)
    for hyp, ref in zip(hypotheses, references):
        scores = scorer.score(ref, hyp)
        for key in ROUGE:
            totals[key] += scores[key].fmeasure
    n = max(len(references), 1)
    return {key: round(100 * totals[key] / n, 2) for key in ROUGE}


def first_sentence(text):
    """The lead-1 baseline: the description's first sentence."""
    sentences = split_sentences(text)
    return sentences[0] if sentences else ""


def first_words(text, k):
    return " ".join(text.split()[:k])


def lead(data):
    """ROUGE of the lead baselines on the test split: the first sentence,
    and the first k words with k chosen by ROUGE-L on the validation split
    (its first 1,000 pairs)."""
    valid = data["valid"][:1000]
    by_k = {k: rouge([first_words(s, k) for s, _ in valid],
                     [t for _, t in valid])["rougeL"] for k in LEAD_WORDS}
    k = max(by_k, key=lambda key: (by_k[key], -key))
    texts = [full for full, _, _ in data["test"]]
    references = [t for _, _, t in data["test"]]
    return {"lead_sentence": rouge([first_sentence(s) for s in texts], references),
            "lead_words": dict(rouge([first_words(s, k) for s in texts],
                                     references), k=k),
            "lead_words_k_rougeL_valid": {str(k): v for k, v in by_k.items()}}


def words_of(tokens, join=None):
    """Tokens without the mark of a space before them (`WordVocabulary`
    keeps "▁open" and "open" apart); joined by `join` if given."""
    words = [t.lstrip(SPACE) or t for t in tokens]
    return words if join is None else join.join(words)


def figures(vocab, sources, outputs):
    """The section 7 figures of `outputs` (token lists) for their sources.

    `copied`: share of output tokens that are in the source; `oov`: share
    written from outside the vocabulary (a token `vocab` does not hold: an
    OOV of the source, copied);
    `unk`: share of UNK tokens; `repeated_trigrams`: share of trigrams
    that repeat an earlier trigram of the same output.
    """
    tokens = copied = oov = unk = trigrams = repeated = 0
    for source, raw in zip(sources, outputs):
        oov += sum(t not in vocab.stoi for t in raw)
        words, out = set(words_of(vocab.tokenize(source, True))), words_of(raw)
        tokens += len(out)
        copied += sum(w in words for w in out)
        unk += sum(w == vocab.itos[vocab.unk_id] for w in out)
        grams = [tuple(out[i:i + 3]) for i in range(len(out) - 2)]
        trigrams += len(grams)
        repeated += len(grams) - len(set(grams))
    share = lambda a, b: round(a / b, 4) if b else 0.0   # noqa: E731
    return {"copied": share(copied, tokens), "oov": share(oov, tokens),
            "unk": share(unk, tokens), "repeated_trigrams": share(repeated, trigrams),
            "tokens_per_summary": round(tokens / max(len(outputs), 1), 2)}


def summarise(model, data, texts, beam_width=4, batch_size=256, min_length=0,
              length_penalty=0.0):
    """Beam-search summaries of `texts` (already cut), in order, as token
    lists (`Translator`'s: a copied word outside the vocabulary is "▁" and
    the word). `min_length` and `length_penalty` go to the search
    (`kerattn.decoding.beam_search`; greedy search, `beam_width=1`, takes
    `min_length` only)."""
    vocab = data["vocab"]
    translator = Translator(model, vocab, vocab, max_length=data["max_summary"] + 4)
    order = np.argsort([len(t.split()) for t in texts], kind="stable")
    out = [None] * len(texts)
    kwargs = {"min_length": min_length} if min_length else {}
    if beam_width > 1:
        kwargs.update(beam_width=beam_width, never_worse_than_greedy=False,
                      length_penalty=length_penalty)
    else:
        checks.require(length_penalty == 0.0, "length_penalty",
                       "0 with beam_width=1 (greedy search ranks nothing)",
                       length_penalty)
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        _, alignments = translator([texts[i] for i in rows],
                                   return_alignments=True, **kwargs)
        for i, a in zip(rows, alignments):
            out[i] = [t for t in a["target_tokens"] if t != vocab.itos[vocab.eos_id]]
    return out


def tune_length(model, data, beam_width=4, grid=None):
    """The search's `min_length` and `length_penalty` that give the best
    ROUGE-L on the validation split (`data["valid_cut"]`, its first
    `TUNE_PAIRS` pairs), over `grid` (`LENGTH_GRID`; greedy search,
    `beam_width=1`, tries the minimum lengths only). Ties go to the
    earlier setting of the grid (the shorter minimum, then the plainer
    ranking).

    Returns:
        `{"min_length", "length_penalty"}` chosen, `"valid_rougeL"` of
        each setting tried (keyed "min_length/length_penalty") and
        `"valid_pairs"`; with no validation pairs, the plain search
        (0, 0.0) and `valid_pairs` 0.
    """
    grid = dict(LENGTH_GRID, **(grid or {}))
    penalties = grid["length_penalty"] if beam_width > 1 else (0.0,)
    pairs = data.get("valid_cut", [])
    if not pairs:
        return {"min_length": 0, "length_penalty": 0.0, "valid_rougeL": {},
                "valid_pairs": 0}
    texts, references = [c for c, _ in pairs], [t for _, t in pairs]
    scores, best = {}, None
    for min_length in grid["min_length"]:
        for penalty in penalties:
            outputs = summarise(model, data, texts, beam_width,
                                min_length=min_length, length_penalty=penalty)
            score = rouge([words_of(o, " ") for o in outputs],
                          references)["rougeL"]
            scores[f"{min_length}/{penalty}"] = score
            if best is None or score > best[0]:
                best = (score, min_length, penalty)
    return {"min_length": best[1], "length_penalty": best[2],
            "valid_rougeL": scores, "valid_pairs": len(pairs)}


def evaluate(model, data, beam_width=4, min_length=0, length_penalty=0.0):
    """ROUGE of beam-search summaries of the test split (decoded with
    `min_length` and `length_penalty`, as `summarise`), and the section 7
    figures of the summaries (and of the references, for comparison)."""
    vocab = data["vocab"]
    cut = [c for _, c, _ in data["test"]]
    references = [t for _, _, t in data["test"]]
    outputs = summarise(model, data, cut, beam_width, min_length=min_length,
                        length_penalty=length_penalty)
    hypotheses = [words_of(o, " ") for o in outputs]
    return {"rouge": rouge(hypotheses, references),
            "figures": figures(vocab, cut, outputs),
            "reference_figures": figures(
                vocab, cut, [vocab.tokenize(t, True) for t in references]),
            "test_pairs": len(references), "beam_width": beam_width,
            "min_length": min_length, "length_penalty": length_penalty,
            "examples": [{"text": data["test"][i][0], "reference": references[i],
                          "summary": hypotheses[i]}
                         for i in range(min(3, len(references)))]}


# -----------------------------------------------------------------------------
# Pictures


def switch_and_attention(model, data, text, summary_tokens):
    """Teacher-forced over a written summary: its attention `(T, S)` and
    p_gen `(T,)` (None without copying), as the model computed them."""
    from kerattn.datasets import extend_source, extend_target
    from kerattn.zoo.pointer_generator import encode_source

    vocab = data["vocab"]
    size = int(model.get_layer("output_projection").units)
    source, oovs = extend_source(vocab, vocab.tokenize(text, True), size)
    target = [vocab.bos_id] + extend_target(vocab, summary_tokens, oovs, size)
    source_ids = np.array([source], "int32")
    y_ids = np.array([target], "int32")
    h, initial, mask = encode_source(model.get_layer, source_ids)
    y = model.get_layer("embedding")(y_ids)
    out, alphas = model.get_layer("decoder")(y, h, memory_mask=mask,
                                             initial_state=initial,
                                             return_attention_scores=True)
    p_gen = None
    if model.copies:
        logits = model.get_layer("output_projection")(
            model.get_layer("output_hidden")(out))
        _, p_gen = model.get_layer("pointer")(logits, alphas, source_ids, [out, y],
                                               return_p_gen=True)
        p_gen = keras.ops.convert_to_numpy(p_gen)[0]
    return keras.ops.convert_to_numpy(alphas)[0], p_gen


def attention_examples(model, data, count=3, max_words=30):
    """`(weights (T, S), source words, output words)` for the first `count`
    short test descriptions (at most `max_words` words; else the
    shortest), each output word labelled with its p_gen: the heatmaps of
    `kerattn.plot.attention_heatmap`."""
    vocab = data["vocab"]
    cut = [c for _, c, _ in data["test"]]
    picked = [c for c in cut if len(c.split()) <= max_words][:count] or \
        sorted(cut, key=lambda c: len(c.split()))[:count]
    examples = []
    for text, tokens in zip(picked, summarise(model, data, picked)):
        weights, p_gen = switch_and_attention(model, data, text, tokens)
        labels = words_of(tokens) + ["</s>"]
        if p_gen is not None:
            labels = [f"{w} ({p:.2f})" for w, p in zip(labels, p_gen)]
        examples.append((weights[: len(labels)],
                         words_of(vocab.tokenize(text, True)), labels))
    return examples


def draw(model, data, path, count=3, max_words=30):
    """`attention_examples` as one picture, to `path`."""
    import kerattn.plot

    return kerattn.plot.save_attention_heatmaps(
        attention_examples(model, data, count, max_words), path, columns=1)


# -----------------------------------------------------------------------------
# examples/fit.py


def fit(data=None, preset="small", epochs=2, batch_size=64, learning_rate=None,
        max_train=None, max_test=None, seed=0, strategy=None, verbose=2,
        beam_width=4, max_source=72, max_summary=20, test_data=None):
    """`examples/fit.py pointer_generator`: the recipe's method on any pairs.

    Args:
        data: a TSV file of `text<TAB>summary` pairs (10% the test split
            and 10% the validation split, by a hash of each text:
            `kerattn.recipes.common.split`); None uses
            Debian's package descriptions and synopses.
        preset, epochs, batch_size: the model's sizes and `train`'s.
        learning_rate: Adam's rate (None: the recipe's, 2e-3).
        max_train, max_test: keep the first pairs of a split (a user's
            file: by the hash of its split).
        seed: the shuffling seed.
        strategy: a `kerattn.distribute` strategy.
        verbose: `fit`'s verbosity.
        beam_width: the beam of the test summaries.
        max_source, max_summary: as `prepare` (summaries are written up to
            `max_summary + 4` tokens).
        test_data: your own test split, a TSV file like `data` (with
            `data`): every pair of it is tested on, `data` gives training
            and 10% validation (`kerattn.recipes.common.split_with_test`:
            a text of both files is not trained on).

    Returns:
        `(model, summary, results, draw)`: `results` holds the model's
        `rouge` beside the lead baselines' (`baselines`), the test
        summaries decoded with the minimum length and length normalisation
        `tune_length` chose on the validation split (`length`); `draw(path)`
        writes the attention and p_gen picture. On a worker other than
        rank 0, `results` and `draw` are None.
    """
    from kerattn.datasets import tsv_pairs
    from kerattn.recipes.common import fitted, require_training_file, split

    require_training_file(data, test_data)
    strategy = strategy or distribute.no_distribution()
    prepared = prepare(splits=split(tsv_pairs(data), test=tsv_pairs(test_data)
                                    if test_data else None) if data else None,
                       max_train=max_train, max_test=max_test,
                       max_source=max_source, max_summary=max_summary)
    with strategy.scope():
        model = build(prepared, preset)
        summary = train(model, prepared, epochs=epochs, batch_size=batch_size,
                        learning_rate=learning_rate or 2e-3, strategy=strategy,
                        seed=seed, verbose=verbose)
    vocabularies = {"vocab": prepared["vocab"]}
    if not strategy.is_chief:
        return fitted(model, summary, None, None, "summarisation", vocabularies)
    length = tune_length(model, prepared, beam_width)
    results = evaluate(model, prepared, beam_width=beam_width,
                       min_length=length["min_length"],
                       length_penalty=length["length_penalty"])
    results["length"] = length
    baselines = lead(prepared)
    results["baselines"] = {"lead_sentence": baselines["lead_sentence"],
                            "lead_words": baselines["lead_words"]}
    search = {"beam_width": beam_width, "min_length": length["min_length"],
              "max_length": prepared["max_summary"] + 4}   # as `summarise`
    if beam_width > 1:
        search["length_penalty"] = length["length_penalty"]
    return fitted(model, summary, results,
                  lambda path: draw(model, prepared, path), "summarisation",
                  vocabularies, search=search)
