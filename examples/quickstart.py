"""The main job: train RNNsearch (bahdanau_nmt) on this machine's gettext pairs.

    python examples/quickstart.py                  # 12 epochs, the README's numbers
    python examples/quickstart.py --epochs 30      # longer
    python examples/quickstart.py --minutes 5      # at most 5 minutes of training
    KERAS_BACKEND=jax python examples/quickstart.py
    python examples/quickstart.py --dtype-policy mixed_bfloat16

English -> French software messages (the gettext catalogs every Debian
machine has, `kerattn.datasets.gettext_pairs`), `kerattn.zoo.bahdanau_nmt`
at a small size, trained with `model.fit` for a fixed number of epochs (so
a slow machine takes longer but reaches the same model), printing the time
left after each epoch. Reports sacreBLEU of greedy and (pure) beam-search
translations of the held-out test split, writes attention heatmaps
(`kerattn.plot`) and translates a few strings. It first times a float32
matmul, so that a run's minutes can be compared with the README's.
"""

import argparse
import json
import os
import time

import keras
import numpy as np

import kerattn
from kerattn.datasets import (
    LengthBucketedBatches,
    WordVocabulary,
    gettext_pairs,
    translation_arrays,
)
from kerattn.decoding import Translator
from kerattn.losses import MaskedSparseCrossentropy
from kerattn.recipes.common import compile_and_fit
from kerattn.recipes.translation import translate_all


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lang", default="fr")
    p.add_argument("--epochs", type=int, default=12,
                   help="training epochs (the README's numbers are for 12)")
    p.add_argument("--minutes", type=float, default=None,
                   help="optional cap on training time (fewer epochs if hit)")
    p.add_argument("--max-tokens", type=int, default=14,
                   help="keep pairs of at most this many tokens a side")
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--size", choices=("tiny", "small", "base", "paper"),
                   default="small", help="bahdanau_nmt's preset")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--beam-width", type=int, default=5)
    p.add_argument("--eval-sentences", type=int, default=0,
                   help="test sentences to translate (0 = the whole split)")
    p.add_argument("--output", default="outputs/quickstart")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype-policy", default="float32",
                   choices=("float32", "mixed_bfloat16", "mixed_float16"),
                   help="Keras' dtype policy: mixed_* computes in 16 bits, "
                        "keeps the weights in float32")
    return p.parse_args()


def matmul_gflops(n=1024, repeats=20):
    """This machine's speed today: float32 `n x n` matmuls in NumPy, GFLOP/s
    (the best of `repeats`). Shared machines vary up to 3x between days."""
    a = np.random.default_rng(0).standard_normal((n, n)).astype("float32")
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - start)
    return 2 * n ** 3 / best / 1e9


def main():
    args = parse_args()
    keras.utils.set_random_seed(args.seed)
    keras.config.set_dtype_policy(args.dtype_policy)
    os.makedirs(args.output, exist_ok=True)
    gflops = matmul_gflops()
    print(f"backend: {keras.backend.backend()}, kerattn {kerattn.__version__}; "
          f"this machine now: {gflops:.0f} GFLOP/s (float32 1024x1024 matmul)")

    # === Data: real English -> X software messages, fixed split ===
    splits = gettext_pairs(args.lang)
    src_vocab = WordVocabulary.build([s for s, _ in splits["train"]],
                                     args.vocab_size)
    tgt_vocab = WordVocabulary.build([t for _, t in splits["train"]],
                                     args.vocab_size)
    x, y, train = translation_arrays(splits["train"], src_vocab, tgt_vocab,
                                     args.max_tokens)
    vx, vy, _ = translation_arrays(splits["valid"], src_vocab, tgt_vocab,
                                   args.max_tokens)
    _, _, test = translation_arrays(splits["test"], src_vocab, tgt_vocab,
                                    args.max_tokens)
    print(f"pairs: {len(train)} train, {len(test)} test (<= {args.max_tokens} "
          f"tokens a side); vocab {len(src_vocab)} en / {len(tgt_vocab)} "
          f"{args.lang}")

    # === Model: RNNsearch (Bahdanau et al. 2014) at a small size ===
    model = kerattn.zoo.bahdanau_nmt(len(src_vocab), len(tgt_vocab),
                                     preset=args.size)
    model.summary()
    # Batches of similar lengths: few RNN steps wasted on padding. Trained by
    # the recipes' one path: Adam 2e-3, clipnorm 1.0, for a fixed number of
    # epochs (or until --minutes is up).
    _, summary = compile_and_fit(
        model, LengthBucketedBatches(x, y, args.batch_size, seed=args.seed),
        LengthBucketedBatches(vx, vy, 256, shuffle=False),
        loss=MaskedSparseCrossentropy(pad_id=tgt_vocab.pad_id),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        learning_rate=2e-3, epochs=args.epochs, minutes=args.minutes, eta=True,
        verbose=2 if os.environ.get("CI") else 1)
    train_minutes = summary["train_minutes"]
    print(f"trained {summary['epochs']} epochs in {train_minutes} minutes")

    # === Evaluation: sacreBLEU on the held-out test split ===
    n = args.eval_sentences or len(test)
    sources, refs = [s for s, _ in test[:n]], [t for _, t in test[:n]]
    translator = Translator(model, src_vocab, tgt_vocab,
                            max_length=args.max_tokens + 2)
    results = {"backend": keras.backend.backend(), "epochs": summary["epochs"],
               "dtype_policy": args.dtype_policy,
               "train_minutes": train_minutes, "matmul_gflops": round(gflops),
               "test_sentences": n}
    try:
        import sacrebleu
    except ImportError:
        sacrebleu = None
        print("install kerattn[eval] (sacrebleu) for BLEU")
    for name, kwargs in (("greedy", {}),
                         (f"beam{args.beam_width}",
                          {"beam_width": args.beam_width, "length_penalty": 0.6,
                           "never_worse_than_greedy": False})):
        t = time.time()
        hyps = translate_all(translator, sources, **kwargs)
        seconds = time.time() - t
        if sacrebleu is not None:
            bleu = sacrebleu.corpus_bleu(hyps, [refs]).score
            results[f"bleu_{name}"] = round(bleu, 2)
            print(f"test BLEU ({name}, {n} sentences): {bleu:.1f}  "
                  f"[{n / seconds:.0f} sentences/s]")

    # === Translations and their alignments ===
    examples = [s for s, _ in test[:4]] + ["Permission denied",
                                          "Cannot open file %s"]
    hyps, alignments = translator(examples, beam_width=args.beam_width,
                                  length_penalty=0.6, return_alignments=True)
    for text, hyp in zip(examples, hyps):
        print(f"  en: {text}\n  {args.lang}: {hyp}")
    try:
        from kerattn.plot import save_attention_heatmaps

        path = save_attention_heatmaps(
            [(a["weights"], a["source_tokens"], a["target_tokens"])
             for a in alignments[:4]],
            os.path.join(args.output, "attention.png"))
        print(f"attention heatmaps: {path}")
    except ImportError:
        print("install kerattn[plot] (matplotlib) for the heatmap PNG")
    with open(os.path.join(args.output, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
