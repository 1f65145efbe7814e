"""Train and evaluate any kerattn.zoo model with `model.fit`, on this machine's real data.

    python examples/fit.py bahdanau_nmt                      # translation, 5 epochs
    python examples/fit.py transformer_nmt --backend jax --epochs 10 --size base
    python examples/fit.py show_attend_tell --attention hard --batch-size 32
    python examples/fit.py han_classifier --output-dir outputs/han
    python examples/fit.py aoa_reader --max-train 20000 --size small

On several devices (kerattn.distribute, each backend's own engine):

    python examples/fit.py transformer_nmt --backend jax --distribute data
    python examples/fit.py transformer_nmt --backend jax --distribute model
    python examples/fit.py han_classifier --backend tensorflow --distribute data
    torchrun --nproc_per_node=2 examples/fit.py bahdanau_nmt --backend torch \
        --distribute data
    # no accelerator: --virtual-devices 4 splits the CPU (JAX, TensorFlow)

Models and data (../shared/DATA.md):

- translation (`seq2seq`, `cho_encoder_decoder`, `bahdanau_nmt`, `luong_nmt`,
  `transformer_nmt`, `convs2s_nmt`): the gettext English -> French messages;
  sacreBLEU on the test split, greedy and beam search;
- captioning (`show_attend_tell`): digit strips from scikit-learn's digits;
  exact-caption accuracy and attention on each word's own digit;
- document classification (`han_classifier`): Debian package descriptions
  (topical-10; needs `apt-get update -o Acquire::Languages=en`); accuracy;
- reading comprehension (`aoa_reader`): King James Bible cloze questions
  (fetched with `apt-get download`); accuracy.

`--size` picks the model size: `tiny` (a smoke test), `small` (a few CPU
minutes, the default), `base` (the sizes of the recipes in zoo/, whose
numbers are in zoo/README.md) or `paper` (the builder's defaults, the
paper's sizes). The output directory gets `model.keras`, `results.json` and
`attention.png`.
"""

import argparse
import json
import os
import sys
import time

TRANSLATION = ("seq2seq", "cho_encoder_decoder", "bahdanau_nmt", "luong_nmt",
               "transformer_nmt", "convs2s_nmt")
MODELS = TRANSLATION + ("show_attend_tell", "han_classifier", "aoa_reader")

# The builders' size keywords; "paper" is the builders' own defaults.
SIZES = {
    "seq2seq": {"tiny": dict(num_layers=1, units=16, embedding_dim=8),
                "small": dict(num_layers=2, units=128, embedding_dim=128),
                "base": dict(num_layers=4, units=256, embedding_dim=128, dropout=0.2)},
    "cho_encoder_decoder": {
        "tiny": dict(embedding_dim=8, units=16, maxout_units=8),
        "small": dict(embedding_dim=128, units=128, maxout_units=128),
        "base": dict(embedding_dim=128, units=256, maxout_units=256, dropout=0.2)},
    "bahdanau_nmt": {
        "tiny": dict(embedding_dim=8, units=16, alignment_units=8, maxout_units=8),
        "small": dict(embedding_dim=128, units=128, alignment_units=128,
                      maxout_units=128, dropout=0.2),
        "base": dict(embedding_dim=128, units=256, alignment_units=256,
                     maxout_units=256, dropout=0.2)},
    "luong_nmt": {
        "tiny": dict(num_layers=1, units=16, embedding_dim=8),
        "small": dict(num_layers=2, units=128, embedding_dim=128, dropout=0.2),
        "base": dict(num_layers=2, units=256, embedding_dim=128, dropout=0.2)},
    "transformer_nmt": {
        "tiny": dict(num_layers=1, d_model=16, num_heads=2, ff_dim=32),
        "small": dict(num_layers=2, d_model=128, num_heads=4, ff_dim=256, dropout=0.1),
        "base": dict(num_layers=3, d_model=256, num_heads=4, ff_dim=512, dropout=0.1)},
    "convs2s_nmt": {
        "tiny": dict(embedding_dim=16, hidden_dim=16, encoder_layers=1,
                     decoder_layers=1),
        "small": dict(embedding_dim=128, hidden_dim=128, encoder_layers=3,
                      decoder_layers=3, dropout=0.1),
        "base": dict(embedding_dim=256, hidden_dim=256, encoder_layers=6,
                     decoder_layers=6, dropout=0.1)},
    "show_attend_tell": {
        "tiny": dict(encoder_filters=(8,), encoder_pool_sizes=((2, 2),),
                     embedding_dim=8, units=16, attention_units=8),
        "small": dict(encoder_filters=(32, 64), encoder_pool_sizes=((2, 2), (4, 1)),
                      embedding_dim=64, units=128, attention_units=128, dropout=0.2,
                      doubly_stochastic=0.01),
        "base": dict(encoder_filters=(32, 64), encoder_pool_sizes=((2, 2), (4, 1)),
                     embedding_dim=64, units=256, attention_units=128, dropout=0.2,
                     doubly_stochastic=0.01, lambda_e=0.002)},
    "han_classifier": {
        "tiny": dict(embedding_dim=8, word_units=4, sentence_units=4, attention_units=4),
        "small": dict(embedding_dim=100, word_units=50, sentence_units=50,
                      attention_units=100, dropout=0.5),
        "base": dict(embedding_dim=200, word_units=50, sentence_units=50,
                     attention_units=100, dropout=0.5)},
    "aoa_reader": {
        "tiny": dict(embedding_dim=8, units=8),
        "small": dict(embedding_dim=128, units=128, dropout=0.1),
        "base": dict(embedding_dim=128, units=128, dropout=0.1)},
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("model", choices=MODELS, help="the kerattn.zoo builder")
    p.add_argument("--backend", choices=("tensorflow", "jax", "torch"), default=None,
                   help="Keras backend (default: KERAS_BACKEND or Keras' config)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--size", choices=("tiny", "small", "base", "paper"), default="small",
                   help="model size (see above)")
    p.add_argument("--output-dir", default=None,
                   help="where model.keras, results.json, attention.png go "
                        "(default: outputs/fit/MODEL)")
    p.add_argument("--data", default=None,
                   help="your own data instead of this machine's: a TSV of pairs "
                        "(translation), a JSONL of text/label (han_classifier) or a "
                        "CBT file (aoa_reader); the last 10%% is the test split, "
                        "the 10%% before it the validation split")
    p.add_argument("--max-train", type=int, default=None,
                   help="train on at most this many examples")
    p.add_argument("--max-test", type=int, default=None,
                   help="evaluate on at most this many examples")
    p.add_argument("--learning-rate", type=float, default=None,
                   help="Adam's rate (default: the task's)")
    p.add_argument("--attention", choices=("soft", "hard"), default="soft",
                   help="show_attend_tell only")
    p.add_argument("--beam-width", type=int, default=5, help="translation only")
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
    if args.virtual_devices is not None and args.virtual_devices < 1:
        p.error(f"--virtual-devices must be a positive integer; got {args.virtual_devices}")
    for name in ("epochs", "batch_size", "max_train", "max_test", "beam_width"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} must be a positive integer; got {value}")
    return args


def select_backend(backend):
    """Set KERAS_BACKEND before Keras is imported (it is fixed at import)."""
    if backend is None:
        return
    if "keras" in sys.modules:
        import keras

        if keras.backend.backend() != backend:
            raise ValueError(f"`--backend {backend}`: Keras was already imported with "
                             f"the {keras.backend.backend()} backend in this process; "
                             "run the script in a fresh process.")
        return
    os.environ["KERAS_BACKEND"] = backend


def split(examples):
    """A file's examples -> train / valid / test (the last 10% is the test)."""
    n = len(examples)
    if n < 3:
        raise ValueError(f"`--data` must hold at least 3 examples; got {n}.")
    a, b = n - 2 * max(n // 10, 1), n - max(n // 10, 1)
    return {"train": examples[:a], "valid": examples[a:b], "test": examples[b:]}


def sizes(args):
    return {} if args.size == "paper" else SIZES[args.model][args.size]


# === Translation ============================================================


def fit_translation(args):
    import keras
    import sacrebleu

    import kerattn.plot
    from kerattn.datasets import (LengthBucketedBatches, WordVocabulary, gettext_pairs,
                                  translation_arrays, translation_dataset, tsv_pairs)
    from kerattn.losses import MaskedSparseCrossentropy

    max_tokens = 6 if args.size == "tiny" else 14
    pairs = split(tsv_pairs(args.data)) if args.data else gettext_pairs("fr")
    train_pairs = pairs["train"][:args.max_train]
    src = WordVocabulary.build([s for s, _ in train_pairs], 8000)
    tgt = WordVocabulary.build([t for _, t in train_pairs], 8000)
    x, y, kept = translation_arrays(train_pairs, src, tgt, max_tokens)
    vx, vy, _ = translation_arrays(pairs["valid"][:args.max_test or 1000], src, tgt,
                                   max_tokens)
    _, _, test = translation_arrays(pairs["test"][:args.max_test], src, tgt, max_tokens)
    print(f"{len(kept):,} training pairs, {len(test):,} test pairs")

    strategy = args.strategy
    with strategy.scope():
        model = getattr(kerattn.zoo, args.model)(len(src), len(tgt), **sizes(args))
        rate = args.learning_rate or (1e-3 if args.model in ("transformer_nmt",
                                                             "convs2s_nmt") else 2e-3)
        model.compile(keras.optimizers.Adam(rate, clipnorm=1.0),
                      MaskedSparseCrossentropy(pad_id=tgt.pad_id),
                      metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
        strategy.prepare(model)
        if args.pipeline == "tf.data":   # tokenised in the graph, prefetched
            train_data = translation_dataset(kept, src, tgt, args.batch_size,
                                             max_tokens, seed=args.seed)
        else:
            train_data = LengthBucketedBatches(x, y, args.batch_size, seed=args.seed)
        history = model.fit(
            strategy.shard(train_data),
            validation_data=strategy.shard(
                LengthBucketedBatches(vx, vy, 256, shuffle=False)),
            epochs=args.epochs, verbose=2)
    if not strategy.is_chief:
        return model, history, None, None

    translator = kerattn.decoding.Translator(model, src, tgt, max_length=max_tokens + 2)
    sources, references = [s for s, _ in test], [t for _, t in test]
    results = {}
    for name, search in (("greedy", {}), (f"beam{args.beam_width}",
                                          {"beam_width": args.beam_width,
                                           "length_penalty": 0.6})):
        hypotheses = []
        for start in range(0, len(sources), 256):
            hypotheses += translator(sources[start:start + 256], **search)
        results[f"bleu_{name}"] = round(
            sacrebleu.corpus_bleu(hypotheses, [references]).score, 2)
    examples = sources[:4]
    _, alignments = translator(examples, return_alignments=True)
    pictures = [(a["weights"], a["source_tokens"], a["target_tokens"])
                for a in alignments]

    def draw(path):
        kerattn.plot.save_attention_heatmaps(pictures, path)

    return model, history, results, draw


# === Captioning ==============================================================


def fit_captioning(args):
    import keras
    import numpy as np

    import kerattn.plot
    from kerattn.datasets import WordVocabulary, attention_on_own_digit, digit_strips
    from kerattn.distribute import ArrayBatches
    from kerattn.losses import MaskedSparseCrossentropy
    from kerattn.recipes.captioning import caption_arrays

    train, test = digit_strips(train_count=args.max_train or 8000,
                               test_count=args.max_test or 1000, seed=args.seed)
    vocab = WordVocabulary.build(train["captions"])
    caption_in, caption_out = caption_arrays(train["captions"], vocab)

    x = {"images": train["images"], "caption_in_ids": caption_in}
    if args.attention == "hard":  # REINFORCE needs the targets inside the graph
        x["caption_out_ids"] = caption_out
    strategy = args.strategy
    with strategy.scope():
        model = kerattn.zoo.show_attend_tell(
            len(vocab), attention=args.attention, image_shape=train["images"].shape[1:],
            seed=args.seed, **sizes(args))
        model.compile(keras.optimizers.Adam(args.learning_rate or 2e-3, clipnorm=5.0),
                      MaskedSparseCrossentropy(pad_id=vocab.pad_id))
        strategy.prepare(model)
        history = model.fit(strategy.shard(ArrayBatches(x, caption_out, args.batch_size,
                                                        seed=args.seed)),
                            epochs=args.epochs, verbose=2)
    if not strategy.is_chief:
        return model, history, None, None

    captioner = kerattn.decoding.Captioner(model, vocab, max_length=8)
    captions, attention = captioner(test["images"], return_attention=True)
    columns = test["images"].shape[2] // captioner.model.grid[1]
    results = {
        "exact_caption_accuracy": round(float(np.mean(
            [c == t for c, t in zip(captions, test["captions"])])), 4),
        "attention_on_own_digit": round(attention_on_own_digit(
            [a["maps"] for a in attention], test["spans"], columns), 4)}

    def draw(path):
        kerattn.plot.attention_overlay(test["images"][0, :, :, 0], attention[0]["maps"],
                                       attention[0]["words"], path)

    return model, history, results, draw


# === Document classification =================================================


def fit_classification(args):
    import keras
    import numpy as np

    import kerattn.plot
    from kerattn.datasets import (build_word_vocabulary, debian_topical10,
                                  encode_documents, read_jsonl, tokenize_document)
    from kerattn.distribute import ArrayBatches

    if args.data:
        texts, labels = read_jsonl(args.data)
        data = split([{"text": t, "label": l} for t, l in zip(texts, labels)])
        data["labels"] = sorted(set(labels))
    else:
        data = debian_topical10()  # FileNotFoundError names the apt-get command
    classes = data["labels"]
    splits = {"train": data["train"][:args.max_train], "valid": data["valid"],
              "test": data["test"][:args.max_test]}
    documents = {k: [tokenize_document(e["text"]) for e in v] for k, v in splits.items()}
    vocab = build_word_vocabulary(documents["train"], min_count=1 if args.data else 2)
    x = {k: {"document_ids": encode_documents(v, vocab, 10, 40)}
         for k, v in documents.items()}
    y = {k: np.array([classes.index(e["label"]) for e in v], "int32")
         for k, v in splits.items()}

    strategy = args.strategy
    with strategy.scope():
        model = kerattn.zoo.han_classifier(len(vocab), len(classes), **sizes(args))
        model.compile(keras.optimizers.Adam(args.learning_rate or 1e-3, clipnorm=5.0),
                      "sparse_categorical_crossentropy", metrics=["accuracy"])
        strategy.prepare(model)
        stop = keras.callbacks.EarlyStopping("val_accuracy", patience=2,
                                             restore_best_weights=True)
        history = model.fit(
            strategy.shard(ArrayBatches(x["train"], y["train"], args.batch_size,
                                        seed=args.seed)),
            validation_data=strategy.shard(ArrayBatches(x["valid"], y["valid"], 256,
                                                        shuffle=False)),
            epochs=args.epochs, callbacks=[stop], verbose=2)
    if not strategy.is_chief:
        return model, history, None, None
    probabilities = model.predict(x["test"], batch_size=256, verbose=0)
    results = {"accuracy": round(float(np.mean(np.argmax(probabilities, -1)
                                               == y["test"])), 4)}

    def draw(path):
        weights = kerattn.zoo.han_attention(model).predict(
            {"document_ids": x["test"]["document_ids"][:1]}, verbose=0)
        kerattn.plot.document_highlight(documents["test"][0][:10],
                                        weights["word_weights"][0],
                                        weights["sentence_weights"][0], path,
                                        title=f"true: {splits['test'][0]['label']}")

    return model, history, results, draw


# === Reading comprehension ===================================================


def fit_reading(args):
    import keras
    import numpy as np

    import kerattn.plot
    from kerattn.datasets import (cloze_vocabulary, download_kjv, encode_cloze, kjv_cloze,
                                  read_cbt)
    from kerattn.losses import MaskedSparseCrossentropy
    from kerattn.recipes.reading import ClozeBatches

    if args.data:
        splits = split(read_cbt(args.data))
    else:
        directory = os.path.expanduser("~/.kerattn/kjv")
        root = os.path.join(directory, "root")
        if not os.path.exists(os.path.join(root, "usr", "bin", "bible")):
            root = download_kjv(directory)
        splits = kjv_cloze(root)
    splits = {"train": splits["train"][:args.max_train or 20000],
              "valid": splits["valid"][:500], "test": splits["test"][:args.max_test]}
    vocab = cloze_vocabulary(splits["train"], min_count=1 if args.data else 2)
    arrays = {k: encode_cloze(v, vocab) for k, v in splits.items()}

    strategy = args.strategy
    with strategy.scope():
        model = kerattn.zoo.aoa_reader(len(vocab), **sizes(args))
        model.compile(keras.optimizers.Adam(args.learning_rate or 1e-3, clipnorm=5.0),
                      MaskedSparseCrossentropy(pad_id=-1, from_logits=False),
                      metrics=["sparse_categorical_accuracy"])
        strategy.prepare(model)
        history = model.fit(
            strategy.shard(ClozeBatches(arrays["train"], args.batch_size, seed=args.seed)),
            validation_data=strategy.shard(ClozeBatches(arrays["valid"], 128,
                                                        shuffle=False)),
            epochs=args.epochs, verbose=2)
    if not strategy.is_chief:
        return model, history, None, None
    test = ClozeBatches(arrays["test"], 128, shuffle=False)
    predicted = np.empty(len(splits["test"]), "int64")
    predicted[np.concatenate(test.batches)] = np.argmax(model.predict(test, verbose=0), -1)
    results = {"accuracy": round(float(np.mean(
        predicted == arrays["test"]["answer_index"])), 4)}

    def draw(path):
        one = {k: v[:1] for k, v in arrays["test"].items() if k != "answer_index"}
        s = kerattn.zoo.aoa_attention(model).predict(one, verbose=0)["s"][0]
        words = [w.lower() for verse in splits["test"][0]["context"]
                 for w in verse.split(" ")]
        kerattn.plot.attention_heatmap(s[None, :len(words)], words, ["s"])
        import matplotlib.pyplot as plt

        plt.gcf().set_size_inches(max(8, len(words) * 0.12), 2)
        plt.savefig(path, dpi=80)
        plt.close("all")

    return model, history, results, draw


TASKS = {**{name: fit_translation for name in TRANSLATION},
         "show_attend_tell": fit_captioning, "han_classifier": fit_classification,
         "aoa_reader": fit_reading}


def main(argv=None):
    args = parse_args(argv)   # selects the backend
    import keras

    from kerattn import distribute

    # Before anything starts the backend (the virtual devices are fixed then).
    args.strategy = distribute.from_arguments(args, args.model)
    keras.utils.set_random_seed(args.seed)
    out = args.output_dir or os.path.join("outputs", "fit", args.model)
    os.makedirs(out, exist_ok=True)
    print(f"{args.model} ({args.size}) on {keras.backend.backend()}, "
          f"{args.strategy.num_replicas} replica(s) -> {out}")
    start = time.time()
    model, history, results, draw = TASKS[args.model](args)
    if not args.strategy.is_chief:   # torch DDP: rank 0 evaluates and writes
        return None
    model.save(os.path.join(out, "model.keras"))
    try:
        draw(os.path.join(out, "attention.png"))
    except ImportError:
        print("install kerattn[plot] (matplotlib) for attention.png")
    results = {"model": args.model, "size": args.size, "backend": keras.backend.backend(),
               "epochs": len(history.history["loss"]), "batch_size": args.batch_size,
               "distribute": args.distribute, "replicas": args.strategy.num_replicas,
               "parameters": int(model.count_params()),
               "final_loss": round(float(history.history["loss"][-1]), 4),
               "minutes": round((time.time() - start) / 60, 2), **results}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
