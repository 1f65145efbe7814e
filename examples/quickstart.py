"""Quickstart: train an attention translator on this machine's gettext pairs.

    python examples/quickstart.py                 # ~3 minutes of training
    python examples/quickstart.py --minutes 15    # longer
    KERAS_BACKEND=jax python examples/quickstart.py

English -> French software messages (the gettext catalogs every Debian
machine has, see `kerattn.datasets.gettext_pairs`), a BiGRU encoder, a GRU
decoder and Luong et al.'s (2015) global "general" attention in its
parallel form (the decoder runs over the whole target, then attends once),
trained with `model.fit`. Prints token accuracy and BLEU on the held-out
test split, a few greedy translations with their alignments, and writes an
attention heatmap PNG.
"""

import argparse
import os
import time

import keras
import numpy as np

import kerattn
from kerattn.datasets import WordVocabulary, gettext_pairs


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lang", default="fr")
    p.add_argument("--minutes", type=float, default=3.0,
                   help="training time budget")
    p.add_argument("--max-tokens", type=int, default=14,
                   help="keep pairs of at most this many tokens a side")
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--units", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--eval-sentences", type=int, default=500)
    p.add_argument("--output", default="outputs/quickstart")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def encode(pairs, src_vocab, tgt_vocab, length):
    """Pad to fixed lengths: static shapes compile once on every backend."""
    n = len(pairs)
    src = np.zeros((n, length), "int32")
    tgt_in = np.zeros((n, length + 1), "int32")
    tgt_out = np.zeros((n, length + 1), "int32")
    for i, (s, t) in enumerate(pairs):
        s_ids = src_vocab.encode(s)
        t_ids = tgt_vocab.encode(t)
        src[i, : len(s_ids)] = s_ids
        tgt_in[i, : len(t_ids) + 1] = [tgt_vocab.bos_id] + t_ids
        tgt_out[i, : len(t_ids) + 1] = t_ids + [tgt_vocab.eos_id]
    return src, tgt_in, tgt_out


def build_model(src_vocab_size, tgt_vocab_size, units):
    # === Inputs ===
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")

    # === Encoder: BiGRU over the source ===
    x = keras.layers.Embedding(src_vocab_size, units, mask_zero=True,
                               name="source_embedding")(source_ids)
    h_s = keras.layers.Bidirectional(
        keras.layers.GRU(units, return_sequences=True), name="encoder"
    )(x)  # (batch, S, 2 * units)

    # === Decoder: GRU over the shifted target ===
    y = keras.layers.Embedding(tgt_vocab_size, units, mask_zero=True,
                               name="target_embedding")(target_in_ids)
    h_t = keras.layers.GRU(2 * units, return_sequences=True,
                           name="decoder")(y)  # (batch, T, 2 * units)

    # === Attention (Luong et al. 2015, eq. 5 and "general" score) ===
    c_t, a_t = kerattn.layers.LuongAttention("general", name="attention")(
        h_t, h_s, return_attention_scores=True
    )  # (batch, T, 2 * units), (batch, T, S)
    h_tilde = keras.layers.Dense(units, activation="tanh", name="attentional")(
        keras.layers.Concatenate()([c_t, h_t])
    )  # h~_t = tanh(W_c [c_t; h_t])
    logits = keras.layers.Dense(tgt_vocab_size, name="output_projection")(h_tilde)
    inputs = {"source_ids": source_ids, "target_in_ids": target_in_ids}
    # The training graph returns logits; a second model over the same
    # layers (shared weights) also returns the alignments.
    model = keras.Model(inputs, logits, name="quickstart_translator")
    viewer = keras.Model(inputs, {"logits": logits, "attention": a_t})
    return model, viewer


class TimeBudget(keras.callbacks.Callback):
    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds
        self.start = None

    def on_train_begin(self, logs=None):
        self.start = time.time()

    def on_train_batch_end(self, batch, logs=None):
        if time.time() - self.start > self.seconds:
            self.model.stop_training = True


def greedy_translate(model, src, tgt_vocab, length):
    """Greedy decoding by re-running the parallel model on the prefix."""
    n = src.shape[0]
    tgt_in = np.zeros((n, length + 1), "int32")
    tgt_in[:, 0] = tgt_vocab.bos_id
    out = np.zeros((n, length + 1), "int32")
    done = np.zeros(n, bool)
    attention = None
    for t in range(length + 1):
        pred = model.predict(
            {"source_ids": src, "target_in_ids": tgt_in}, verbose=0,
            batch_size=256,
        )
        next_ids = np.argmax(pred["logits"][:, t], axis=-1)
        next_ids = np.where(done, tgt_vocab.pad_id, next_ids)
        out[:, t] = next_ids
        done |= next_ids == tgt_vocab.eos_id
        attention = pred["attention"]
        if t < length:
            tgt_in[:, t + 1] = np.where(done, tgt_vocab.pad_id, next_ids)
        if done.all():
            break
    return out, attention


def main():
    args = parse_args()
    keras.utils.set_random_seed(args.seed)
    os.makedirs(args.output, exist_ok=True)
    print(f"backend: {keras.backend.backend()}, kerattn {kerattn.__version__}")

    # === Data: real English -> X software messages ===
    splits = gettext_pairs(args.lang)
    tok = WordVocabulary.tokenize

    def short(pairs):
        return [
            (s, t) for s, t in pairs
            if len(tok(s)) <= args.max_tokens and len(tok(t)) <= args.max_tokens
        ]

    train, test = short(splits["train"]), short(splits["test"])
    src_vocab = WordVocabulary.build([s for s, _ in train], args.vocab_size)
    tgt_vocab = WordVocabulary.build([t for _, t in train], args.vocab_size)
    print(f"pairs: {len(train)} train, {len(test)} test (<= {args.max_tokens} "
          f"tokens); vocab {len(src_vocab)} en / {len(tgt_vocab)} {args.lang}")
    x_src, x_tgt, y_tgt = encode(train, src_vocab, tgt_vocab, args.max_tokens)
    t_src, t_tgt, t_out = encode(test, src_vocab, tgt_vocab, args.max_tokens)

    # === Model and training ===
    model, viewer = build_model(len(src_vocab), len(tgt_vocab), args.units)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3, clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=["sparse_categorical_accuracy"],
    )
    model.summary()
    weights = (y_tgt != tgt_vocab.pad_id).astype("float32")
    model.fit(
        {"source_ids": x_src, "target_in_ids": x_tgt},
        y_tgt,
        sample_weight=weights,
        batch_size=args.batch_size,
        epochs=1000,
        callbacks=[TimeBudget(60 * args.minutes)],
        verbose=2 if os.environ.get("CI") else 1,
    )

    # === Evaluation on the held-out test split ===
    result = model.evaluate(
        {"source_ids": t_src, "target_in_ids": t_tgt}, t_out,
        sample_weight=(t_out != tgt_vocab.pad_id).astype("float32"),
        verbose=0, return_dict=True,
    )
    acc = [v for k, v in result.items() if "accuracy" in k][0]
    print(f"test token accuracy (teacher forced): {acc:.3f}")

    n = min(args.eval_sentences, len(test))
    hyp_ids, attention = greedy_translate(
        viewer, t_src[:n], tgt_vocab, args.max_tokens
    )
    hyps = [tgt_vocab.decode(ids) for ids in hyp_ids]
    refs = [t for _, t in test[:n]]
    try:
        import sacrebleu

        bleu = sacrebleu.corpus_bleu(hyps, [refs])
        print(f"test BLEU (greedy, {n} sentences): {bleu.score:.1f}")
    except ImportError:
        print("install kerattn[eval] (sacrebleu) for BLEU")

    # === Translations and their alignments ===
    examples = []
    for i in range(min(4, n)):
        src_tokens = src_vocab.tokens(t_src[i][t_src[i] > 0])
        hyp = hyp_ids[i]
        length = int(np.argmax(hyp == tgt_vocab.eos_id)) if (
            hyp == tgt_vocab.eos_id).any() else len(hyp)
        tgt_tokens = tgt_vocab.tokens(hyp[: length + 1])
        print(f"\n  en:  {test[i][0]}\n  ref: {refs[i]}\n  hyp: {hyps[i]}")
        w = attention[i][: len(tgt_tokens), : len(src_tokens)]
        for token, row in zip(tgt_tokens, w):
            print(f"    {token:>14} <- {src_tokens[int(np.argmax(row))]:<14}"
                  f" ({row.max():.2f})")
        examples.append((w, src_tokens, tgt_tokens))
    try:
        from kerattn.plot import save_attention_heatmaps

        path = save_attention_heatmaps(
            examples, os.path.join(args.output, "attention.png")
        )
        print(f"\nattention heatmaps: {path}")
    except ImportError:
        print("install kerattn[plot] (matplotlib) for the heatmap PNG")


if __name__ == "__main__":
    main()
