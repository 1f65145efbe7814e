"""Train and evaluate any kerattn.zoo model with `model.fit`, on this machine's real data.

    python examples/fit.py bahdanau_nmt                      # translation, 6 epochs
    python examples/fit.py transformer_nmt --backend jax --epochs 10 --size base
    python examples/fit.py show_attend_tell --attention hard --batch-size 32
    python examples/fit.py han_classifier --output-dir outputs/han
    python examples/fit.py self_attentive_classifier --size base
    python examples/fit.py aoa_reader --max-train 20000 --size small
    python examples/fit.py pointer_generator --data pairs.tsv   # text<TAB>summary
    python examples/fit.py pointer_generator --data train.tsv --test-data test.tsv
    python examples/fit.py g2p --attention mocha --data words.dict   # word PH1 PH2 ...

On several devices (kerattn.distribute, each backend's own engine):

    python examples/fit.py transformer_nmt --backend jax --distribute data
    python examples/fit.py transformer_nmt --backend jax --distribute model
    python examples/fit.py han_classifier --backend tensorflow --distribute data
    torchrun --nproc_per_node=2 examples/fit.py bahdanau_nmt --backend torch \
        --distribute data
    # no accelerator: --virtual-devices 4 splits the CPU (JAX, TensorFlow)

Models and data (docs/data.md):

- translation (`seq2seq`, `cho_encoder_decoder`, `bahdanau_nmt`, `luong_nmt`,
  `transformer_nmt`, `convs2s_nmt`): the gettext English -> French messages;
  sacreBLEU on the test split, greedy and beam search;
- captioning (`show_attend_tell`): digit strips from scikit-learn's digits;
  exact-caption accuracy and attention on each word's own digit;
- document classification (`han_classifier`, `self_attentive_classifier`):
  Debian package descriptions (topical-10; needs `apt-get update -o
  Acquire::Languages=en`); accuracy;
- reading comprehension (`aoa_reader`): King James Bible cloze questions
  (fetched with `apt-get download`); accuracy;
- summarisation (`pointer_generator`): Debian long package descriptions ->
  their synopses (needs `apt-get update -o Acquire::Languages=en`), or your
  TSV of `text<TAB>summary` pairs; ROUGE beside the lead baselines;
- grapheme-to-phoneme (`g2p`: `luong_nmt` at the "g2p" preset with the
  `--attention` variant): the CMU Pronouncing Dictionary (`pip install
  'kerattn[g2p]'`), or your word list in its format (`word PH1 PH2 ...`,
  `word(2)` for another pronunciation); word and phoneme error rates.

This is a command line over the recipes (`kerattn.recipes`): each model
trains with its recipe's method (`translation.fit`, `captioning.fit`,
`classification.fit`, `reading.fit`, `summarisation.fit`, `g2p.fit`: the recipe's optimiser settings,
schedule, batches and evaluation, through the one `compile_and_fit`), on
this machine's data or on yours with `--data`.

`--size` picks the model's named sizes (`kerattn.zoo.presets(MODEL)`):
`tiny` (a smoke test), `small` (a few CPU minutes, the default), `base` (the
sizes of the recipes in zoo/, whose numbers are in zoo/README.md) or
`paper` (the paper's sizes); g2p also `g2p-streaming`, a model that
streams, and `g2p-paper`, the G2P papers' sizes (a GPU's). The output directory is a run folder: `model.keras` with its
vocabularies (and a classifier's label names) and `run.json`, which
`kerattn.load_run(folder)` loads back ready to use, beside `results.json`
and `attention.png`:

    python examples/fit.py g2p --attention mocha --size g2p-streaming \
        --output-dir outputs/g2p
    python -c "import kerattn; d = kerattn.load_run('outputs/g2p')\
        .streaming_decoder(); print(d.feed('pho'), d.feed('ne'), d.finish())"
    # a soft attention that streams on a wait-k schedule (Ma et al. 2019),
    # each word's letters ended by EOS
    python examples/fit.py g2p --size g2p-streaming --wait-k 3 \
        --wait-rate 1.2 --end-marker --output-dir outputs/g2p-wait3
    # a hard monotonic attention that reads three letters ahead and learns
    # to stop early (MILk's latency loss, Arivazhagan et al. 2019)
    python examples/fit.py g2p --size g2p-streaming --attention hard-monotonic \
        --lookahead 3 --latency-weight 0.005 --output-dir outputs/g2p-milk
    # early stopping on the validation words' word error rate, decoded
    # after each epoch (Toshniwal and Livescu keep the best WER's weights)
    python examples/fit.py g2p --monitor val_wer --output-dir outputs/g2p-wer
"""

import argparse
import json
import os
import sys
import time

TRANSLATION = ("seq2seq", "cho_encoder_decoder", "bahdanau_nmt", "luong_nmt",
               "transformer_nmt", "convs2s_nmt")
# The models whose test beam `--beam-width` sets.
BEAM_MODELS = TRANSLATION + ("g2p", "pointer_generator")
CLASSIFIERS = ("han_classifier", "self_attentive_classifier")
MODELS = TRANSLATION + ("show_attend_tell",) + CLASSIFIERS + (
    "aoa_reader", "pointer_generator", "g2p")
# --attention: show_attend_tell's (the first its default), g2p's (likewise).
ATTENTION = {"show_attend_tell": ("soft", "hard"),
             "g2p": ("global", "location-sensitive", "hard-monotonic", "mocha")}
# --size: every model's four, and a model's own presets beyond them.
SIZES = ("tiny", "small", "base", "paper")
MORE_SIZES = {"g2p": ("g2p-streaming", "g2p-paper")}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("model", choices=MODELS, help="the kerattn.zoo builder")
    p.add_argument("--backend", choices=("tensorflow", "jax", "torch"), default=None,
                   help="Keras backend (default: KERAS_BACKEND or Keras' config)")
    p.add_argument("--epochs", type=int, default=None,
                   help="default: the recipe's (translation 6, show_attend_tell "
                        "8, the classifiers up to 30 a stage with early "
                        "stopping, aoa_reader 3, pointer_generator 2, g2p up "
                        "to 40 with early stopping)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--size", default="small",
                   help="the model's preset: tiny, small, base or paper (see "
                        "below); g2p also g2p-streaming, the left-to-right "
                        "model kerattn.decoding.StreamingDecoder can stream "
                        "(with --attention hard-monotonic or mocha), and "
                        "g2p-paper, the G2P papers' sizes")
    p.add_argument("--output-dir", default=None,
                   help="the run folder: model.keras and its vocabularies "
                        "(kerattn.load_run loads them back ready to use), "
                        "results.json, attention.png (default: outputs/fit/MODEL)")
    p.add_argument("--data", default=None,
                   help="your own data instead of this machine's: a TSV of pairs "
                        "(translation; text<TAB>summary for pointer_generator), a JSONL of text/label (the classifiers), a "
                        "CBT file (aoa_reader) or a word list in CMUdict's "
                        "format (g2p); 10%% is the test split and 10%% the "
                        "validation split, by a hash of each example (its "
                        "source text, document or word; g2p 5%% and 5%%, as "
                        "cmudict_g2p), so the file's order does not matter; "
                        "a CBT file (its questions share passages) by "
                        "position, the last 10%% the test split")
    p.add_argument("--test-data", default=None,
                   help="with --data: your own test split, a file in --data's "
                        "format; every example of it is tested on, --data "
                        "gives training and validation (10%%, g2p 5%%; a CBT "
                        "file's last 10%%), and an example of --data whose "
                        "key (source text, document, word) is also in this "
                        "file is left out of training, with a warning")
    p.add_argument("--max-train", type=int, default=None,
                   help="train on at most this many examples (with --data: "
                        "drawn by the split's hash)")
    p.add_argument("--max-test", type=int, default=None,
                   help="evaluate on at most this many examples (likewise)")
    p.add_argument("--learning-rate", type=float, default=None,
                   help="Adam's rate (default: the recipe's)")
    p.add_argument("--attention", default=None,
                   help="show_attend_tell: soft (default) or hard; g2p: global "
                        "(default), location-sensitive, hard-monotonic or mocha")
    p.add_argument("--beam-width", type=int, default=None,
                   help="translation, g2p (default 5) and pointer_generator "
                        "(default 4, See et al.'s): the test split's beam (1: greedy)")
    p.add_argument("--wait-k", type=int, default=None,
                   help="g2p only: a wait-k decoder (Ma et al. 2019): phoneme i "
                        "attends to the first k + floor(rate * i) letters, so "
                        "that a soft attention streams (with --size "
                        "g2p-streaming)")
    p.add_argument("--wait-rate", type=float, default=None,
                   help="g2p only: the letters read per phoneme under --wait-k "
                        "(default 1)")
    p.add_argument("--end-marker", action="store_true",
                   help="g2p only: end every word's letters with EOS, so that "
                        "a wait-k decoder knows when the word has ended")
    p.add_argument("--lookahead", type=int, default=None,
                   help="g2p only: a lookahead convolution of this many letters "
                        "over the encoder (a streaming decoder waits for them)")
    p.add_argument("--latency-weight", type=float, default=None,
                   help="g2p only: MILk's latency loss with this weight (with "
                        "--attention hard-monotonic), so that the attention "
                        "learns to stop before the word ends")
    p.add_argument("--monitor", choices=("val_loss", "val_wer"), default=None,
                   help="g2p only: what early stopping and the rate's decay "
                        "watch: the validation loss (default) or the validation "
                        "words' word error rate, decoded after each epoch")
    p.add_argument("--pipeline", choices=("python", "tf.data"), default="python",
                   help="translation only: batches tokenised in Python "
                        "(LengthBucketedBatches) or in a tf.data graph with "
                        "prefetch (translation_dataset)")
    p.add_argument("--seed", type=int, default=0)
    # kerattn.distribute's flags; importing it imports Keras, so the backend
    # is chosen first.
    backend = argparse.ArgumentParser(add_help=False)
    backend.add_argument("--backend", choices=("tensorflow", "jax", "torch"))
    select_backend(backend.parse_known_args(argv)[0].backend)
    from kerattn import distribute

    distribute.add_arguments(p)
    args = p.parse_args(argv)
    if args.distribute == "model" and args.model not in ("transformer_nmt", "seq2seq"):
        p.error("--distribute model: only transformer_nmt and seq2seq have a "
                f"layout; got {args.model}")
    sizes = SIZES + MORE_SIZES.get(args.model, ())
    if args.size not in sizes:
        p.error(f"--size {args.size}: {args.model} takes one of {', '.join(sizes)}")
    if args.virtual_devices is not None and args.virtual_devices < 1:
        p.error(f"--virtual-devices must be a positive integer; got {args.virtual_devices}")
    for name in ("epochs", "batch_size", "max_train", "max_test", "beam_width"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} must be a positive integer; got {value}")
    if args.attention is not None:
        choices = ATTENTION.get(args.model, ())
        if args.attention not in choices:
            p.error(f"--attention {args.attention}: " + (
                f"{args.model} takes one of {', '.join(choices)}" if choices
                else f"{args.model} has no attention variants (show_attend_tell "
                     "and g2p do)"))
    if args.beam_width is not None and args.model not in BEAM_MODELS:
        p.error("--beam-width: the test beam of the translation models, g2p "
                f"and pointer_generator; {args.model} takes none"
                + (" (it decodes with beams 1 and 3)"
                   if args.model == "show_attend_tell" else ""))
    for name in ("wait_k", "wait_rate", "end_marker", "lookahead", "latency_weight",
                 "monitor"):
        if getattr(args, name) not in (None, False) and args.model != "g2p":
            p.error(f"--{name.replace('_', '-')}: g2p only (its streaming "
                    f"decoders and its early stopping); got {args.model}")
    if args.lookahead is not None and args.lookahead < 0:
        p.error(f"--lookahead must be a non-negative integer; got {args.lookahead}")
    if args.latency_weight is not None and (not args.latency_weight >= 0 or (
            args.latency_weight and args.attention != "hard-monotonic")):
        p.error("--latency-weight: a non-negative weight of the latency loss on "
                "a hard monotonic attention's stops (with --attention "
                f"hard-monotonic); got {args.latency_weight} with --attention "
                f"{args.attention or 'global'}")
    if args.wait_k is not None and args.wait_k < 1:
        p.error(f"--wait-k must be a positive integer; got {args.wait_k}")
    if args.wait_rate is not None and (args.wait_k is None or not args.wait_rate > 0):
        p.error(f"--wait-rate: a positive rate of a wait-k schedule (with "
                f"--wait-k); got {args.wait_rate}")
    if args.data and args.model == "show_attend_tell":
        p.error("--data: show_attend_tell trains on the digit strips only")
    if args.test_data and not args.data:
        p.error("--test-data: the test split of your own data; give the "
                "training file with --data too")
    return args


def select_backend(backend):
    """Set KERAS_BACKEND before Keras is imported (it is fixed at import)."""
    if backend is None:
        return
    if "keras" in sys.modules:
        import keras

        if keras.backend.backend() != backend:
            sys.exit(f"--backend {backend}: Keras was already imported with the "
                     f"{keras.backend.backend()} backend in this process; run the "
                     "script in a fresh process.")
        return
    os.environ["KERAS_BACKEND"] = backend


def fit(args):
    """The recipe's `fit` for `args.model`: `(model, summary, results, draw)`."""
    from kerattn.recipes import (captioning, classification, g2p, reading,
                                 summarisation, translation)

    common = dict(preset=args.size, batch_size=args.batch_size,
                  learning_rate=args.learning_rate, max_train=args.max_train,
                  max_test=args.max_test, seed=args.seed, strategy=args.strategy)
    if args.epochs is not None:   # else the recipe's own
        common["epochs"] = args.epochs
    if args.beam_width is not None:   # else the recipe's own
        common["beam_width"] = args.beam_width
    if args.test_data:   # every recipe with --data takes it
        common["test_data"] = args.test_data
    if args.model in TRANSLATION:
        return translation.fit(args.model, args.data, pipeline=args.pipeline,
                               **common)
    attention = args.attention or ATTENTION.get(args.model, (None,))[0]
    if args.model == "show_attend_tell":
        return captioning.fit(attention, **common)
    if args.model == "g2p":
        if args.monitor is not None:   # else the recipe's own
            common["monitor"] = args.monitor
        return g2p.fit(args.data, attention=attention, wait_k=args.wait_k,
                       wait_rate=args.wait_rate or 1.0, end_marker=args.end_marker,
                       lookahead=args.lookahead or 0,
                       latency_weight=args.latency_weight or 0.0, **common)
    if args.model == "pointer_generator":
        return summarisation.fit(args.data, **common)
    if args.model in CLASSIFIERS:
        return classification.fit(args.data, model=args.model, **common)
    return reading.fit(args.data, **common)


def main(argv=None):
    args = parse_args(argv)   # selects the backend
    import keras

    from kerattn import distribute

    # Before anything starts the backend (the virtual devices are fixed then).
    args.strategy = distribute.from_arguments(args, args.model)
    keras.utils.set_random_seed(args.seed)
    out = args.output_dir or os.path.join("outputs", "fit", args.model)
    print(f"{args.model} ({args.size}) on {keras.backend.backend()}, "
          f"{args.strategy.num_replicas} replica(s) in "
          f"{args.strategy.processes} process(es) -> {out}")
    start = time.time()
    try:
        fitted = fit(args)
    except ValueError as error:
        if any(path and str(error).startswith(path)
               for path in (args.data, args.test_data)):
            sys.exit(f"{args.model}: {error}")   # the data file's path:line
        raise
    model, summary, results, draw = fitted
    if not args.strategy.is_chief:   # only the chief (process 0) writes
        # ...and the others wait for it here, not at exit, where JAX's
        # processes wait for each other under the engine's timeout.
        args.strategy.barrier("results written")
        return None
    try:
        return _write(args, out, fitted.run, summary, results, draw, start)
    finally:
        args.strategy.barrier("results written")


def _write(args, out, run, summary, results, draw, start):
    """The chief's files: the run (model.keras, its vocabularies, run.json),
    attention.png, results.json."""
    import keras

    from kerattn import atomic_path, environment

    run.save(out)   # each file written whole, or not at all
    try:
        if draw(os.path.join(out, "attention.png")) is None:
            print(f"{args.model} has no attention: no attention.png")
    except ImportError:
        print("install kerattn[plot] (matplotlib) for attention.png")
    results = {"model": args.model, "size": args.size, "backend": keras.backend.backend(),
               "seed": args.seed, "machine": environment.machine(),
               "batch_size": args.batch_size, "data": args.data,
               "test_data": args.test_data,
               "distribute": args.distribute, "replicas": args.strategy.num_replicas,
               "processes": args.strategy.processes,
               **summary, "minutes": round((time.time() - start) / 60, 2), **results}
    with atomic_path(os.path.join(out, "results.json")) as path, open(path, "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results, indent=1))
    for line in beside_baselines(results):
        print(line)
    return results


def beside_baselines(results):
    """Readable lines: the model's accuracy (with its 95% interval) beside
    the baselines the recipe computed on the same test split, overall and
    per word kind where the data has kinds; a summariser's ROUGE beside
    the lead baselines'."""
    if "wer" in results:
        lines = [f"{results['model']} word error rate {results['wer']:.2f}%, phoneme "
                f"error rate {results['per']:.2f}% on {results['test_words']} "
                "test words (the phoneme rate counts edits to the closest "
                "pronunciation over its length, so it can pass 100%)",
                f"attended nowhere: {results['attended_nowhere']:.4f} (the share "
                "of phonemes a hard monotonic attention wrote from no letter; 0 "
                "for a soft attention)"]
        streamed = results.get("streaming")
        if streamed:   # a model that streams
            lag = streamed["lagging"]   # None: no phoneme written at all
            lines.append(
                f"streamed a letter at a time: {streamed['early']:.1%} of the "
                "phonemes committed before the word's last letter, " + (
                    "none written" if lag is None else f"{lag:.2f} letters "
                    "behind on average (average lagging)")
                + f", {streamed['same_as_offline']:.1%} of the words as offline")
        return lines
    if "baselines" not in results:
        return []
    if "rouge" in results:
        def scores(r):
            return " / ".join(f"{r[k]:.2f}" for k in ("rouge1", "rouge2", "rougeL"))

        lead = results["baselines"]
        return [f"{results['model']} ROUGE-1 / 2 / L F1: {scores(results['rouge'])} "
                f"| lead sentence {scores(lead['lead_sentence'])} | first "
                f"{lead['lead_words']['k']} words {scores(lead['lead_words'])}"]
    from kerattn.recipes.common import interval95

    accuracy = results.get("accuracy_by_kind", results["accuracy"])
    if not isinstance(accuracy, dict):   # one figure (the classifiers)
        accuracy = {"all": accuracy}
        baselines = {name: {"all": value}
                     for name, value in results["baselines"].items()}
        counts = {"all": results.get("test_documents")}
    else:                                # per word kind (aoa_reader)
        baselines = results["baselines"]
        counts = results.get("test_per_kind", {})
    lines = []
    for kind, value in accuracy.items():
        n = counts.get(kind)
        interval = (f" ± {interval95(value, n):.3f} (95%, "
                    f"{n} test examples)" if n else "")
        others = ", ".join(f"{name.replace('_', ' ')} {b[kind]:.3f}"
                           for name, b in baselines.items() if kind in b)
        paired = results.get("paired_vs_bigram", {}).get(kind)
        minus = (f" | minus bigram: {paired[0]:+.3f} ± {paired[1]:.3f} (paired "
                 f"95%)" if paired else "")
        lines.append(f"{results['model']} {kind}: {value:.3f}{interval} | "
                     f"baselines on the same split: {others}{minus}")
    return lines


if __name__ == "__main__":
    main()
