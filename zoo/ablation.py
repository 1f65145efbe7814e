"""One change at a time from a translation recipe: an ablation.

Each variant is the model's recipe (`kerattn.recipes.translation`, its
"base" preset and `settings`) with changes to the builder or the training
settings, trained for `--epochs` on the same data and seed and scored by
greedy sacreBLEU on the test split (and beam search with `--beam-width`).
Results go to
`zoo/<model>/ablation.json` (`runner.save`), and the model's RESULTS.md is
rendered again with its table (zoo/translation.py, `ablation_section`).

    python zoo/ablation.py luong_nmt --epochs 1 recipe uniform0.1
    python zoo/ablation.py bahdanau_nmt --seed 1 recipe coverage
    python zoo/ablation.py bahdanau_nmt --epochs 6 --beam-width 5 mocha
    python zoo/ablation.py luong_nmt --list

A seed other than 0 is part of the row's name (`coverage@1 seed 1`).
Every row also records how the greedy translations of the 16-20-word
source bucket attend to their source (`alignment_rates`): the share of
source words that get less than half a word's worth of attention over the
whole translation (`dropped`), and more than one and a half (`repeated`),
the failures that coverage (Tu et al., 2016; See et al., 2017) is meant
to cure; and the share of output words that repeat an earlier word of
their sentence more often than the reference has it (`repeated_output`).

The Luong study asks what makes the stacked LSTMs learn at CPU size; the
others measure a paper's own choice where it differs from Keras' default
(the GRU's reset gate, the Transformer's tied embeddings).
"""

import argparse
import os
import runpy
import time

import runner

HERE = os.path.dirname(os.path.abspath(__file__))

RECIPE = ("the recipe as it was: its preset and settings", {}, {})

# The Luong recipe before the study: Keras' initialisers, the source as
# given, Adam 2e-3 without warm-up. Its study variants start from here
# (`_before`), so that they measure the same thing after the "base" preset
# took the study's answer; "local-p" starts from the preset as it is now.
_BEFORE_BUILDER = dict(reverse_source=False, initializer_range=None,
                       embeddings_initializer=None, units=256,
                       bidirectional_encoder=False)
_BEFORE_TRAINING = dict(learning_rate=2e-3, warmup_steps=0)


def _before(table):
    return {name: (what, dict(_BEFORE_BUILDER, **builder),
                   dict(_BEFORE_TRAINING, **training))
            for name, (what, builder, training) in table.items()}


# model -> variant -> (what it changes, builder overrides, training
# overrides[, another model, a reference])
VARIANTS = {"luong_nmt": {**_before({
    "recipe": ("the recipe before this study: Adam 2e-3, dropout 0.2 on "
               "embeddings and h~, Keras' initialisers", {}, {}),
    "lr5e-3": ("Adam 5e-3", {}, {"learning_rate": 5e-3}),
    "lr1e-2": ("Adam 1e-2", {}, {"learning_rate": 1e-2}),
    "no-dropout": ("no dropout", {"dropout": 0.0}, {}),
    "no-feeding": ("no input feeding", {"input_feeding": False}, {}),
    "uniform0.1": ("uniform(-0.1, 0.1) initialisation (section 4.1)",
                   {"initializer_range": 0.1}, {}),
    "reversed": ("reversed source (section 4.1)", {"reverse_source": True}, {}),
    "layer-dropout": ("dropout also between the encoder's LSTM layers",
                      {"layer_dropout": True}, {}),
    "one-layer": ("one LSTM layer a side", {"num_layers": 1}, {}),
    "uniform+lr5e-3": ("uniform(-0.1, 0.1) and Adam 5e-3",
                       {"initializer_range": 0.1}, {"learning_rate": 5e-3}),
    "uniform+lr5e-3+reversed": (
        "uniform(-0.1, 0.1), Adam 5e-3, reversed source",
        {"initializer_range": 0.1, "reverse_source": True},
        {"learning_rate": 5e-3}),
    "uniform+warmup1e-2": (
        "uniform(-0.1, 0.1), Adam 1e-2 after a 300-step warm-up, cosine decay",
        {"initializer_range": 0.1}, {"learning_rate": 1e-2, "warmup_steps": 300}),
    "uniform+warmup1e-2+normal-emb": (
        "uniform(-0.1, 0.1) weights, N(0, 1) embeddings, Adam 1e-2 after a "
        "300-step warm-up, cosine decay",
        {"initializer_range": 0.1, "embeddings_initializer": "normal"},
        {"learning_rate": 1e-2, "warmup_steps": 300}),
    "uniform+warmup1e-2+reversed": (
        "uniform(-0.1, 0.1), Adam 1e-2 after a 300-step warm-up, cosine "
        "decay, reversed source",
        {"initializer_range": 0.1, "reverse_source": True},
        {"learning_rate": 1e-2, "warmup_steps": 300}),
    "uniform+warmup1e-2+normal-emb+reversed": (
        "uniform(-0.1, 0.1) weights, N(0, 1) embeddings, Adam 1e-2 after a "
        "300-step warm-up, cosine decay, reversed source",
        {"initializer_range": 0.1, "embeddings_initializer": "normal",
         "reverse_source": True},
        {"learning_rate": 1e-2, "warmup_steps": 300}),
}), "global": ("the recipe now (the preset the study chose): global "
               "attention, general score, input feeding", {}, {}),
    "no-feeding-now": ("the recipe now without input feeding",
                       {"input_feeding": False}, {"learning_rate": 5e-3}),
    # Measured at Adam 1e-2 (the recipe then): pinned, so a re-run
    # reproduces the row.
    "local-p": ("the recipe then (one-way encoder, 256 cells, Adam 1e-2) with "
                "local-p attention (D = 10, section 3.2)",
                {"attention": "local-p", "bidirectional_encoder": False,
                 "units": 256}, {"learning_rate": 1e-2}),
    "bi-encoder": ("the recipe then (256 cells, Adam 1e-2) with a "
                   "bidirectional first encoder layer (128 cells a direction; "
                   "OpenNMT's brnn, not the paper)",
                   {"bidirectional_encoder": True, "units": 256},
                   {"learning_rate": 1e-2}),
    "label-smoothing": ("bi-encoder with label smoothing 0.1 (its losses "
                        "are the smoothed ones, not comparable)",
                        {"units": 256}, {"label_smoothing": 0.1,
                                         "learning_rate": 1e-2}),
    "wide": ("bi-encoder with 384 cells a layer (192 a direction in the "
             "bidirectional layer)", {"units": 384}, {"learning_rate": 1e-2}),
    "local-p+bi-encoder": ("wide with local-p attention (D = 10, section 3.2)",
                           {"attention": "local-p"}, {"learning_rate": 1e-2}),
    "peak5e-3": ("wide with Adam's peak at 5e-3 (the same warm-up and cosine "
                 "decay): the recipe now", {}, {"learning_rate": 5e-3}),
    "local-p-now": ("the recipe now with local-p attention (D = 10, "
                    "section 3.2)", {"attention": "local-p"},
                    {"learning_rate": 5e-3}),
    "forget-bias0": ("the recipe now with every LSTM's forget-gate bias "
                     "starting at 0 (the paper's initialisation) instead of "
                     "Keras' 1", {"forget_bias": 0.0}, {"learning_rate": 5e-3}),
    "location-sensitive": ("the recipe now with location-sensitive attention "
                           "(Chorowski et al., 2015; 32 filters of width 31)",
                           {"attention": "location-sensitive"}, {}),
    "coverage": ("the recipe now with coverage on the concat score (See et "
                 "al., 2017, eq. 11; no coverage loss)",
                 {"attention": "coverage"}, {}),
}, "bahdanau_nmt": {
    "recipe": RECIPE,
    "coverage": ("coverage in the alignment model and the coverage loss, "
                 "lambda 1 (See et al., 2017, eq. 11-13)",
                 {"coverage": True}, {}),
    "paper-gru": ("the paper's GRU (reset_after=False) in encoder and decoder",
                  {"reset_after": False}, {}),
    "hard-monotonic": ("hard monotonic attention (Raffel et al., 2017) on the "
                       "same additive energy: the expected alignment in "
                       "training, the hard one when decoding",
                       {"attention": "hard-monotonic"}, {}),
    "mocha": ("MoChA (Chiu and Raffel, 2018): a softmax over the 2 "
              "annotations ending where the monotonic attention stops",
              {"attention": "mocha"}, {}),
}, "cho_encoder_decoder": {
    "recipe": RECIPE,
    "paper-gru": ("the paper's GRU (reset_after=False)", {"reset_after": False},
                  {}),
}, "transformer_nmt": {
    "recipe": RECIPE,
    "tied": ("target embedding tied to the pre-softmax weights (section 3.4)",
             {"tie_embeddings": "target"}, {}),
}}


def alignment_rates(net, data, low=16, high=20):
    """How greedy translations of `low`-`high`-word sources attend to them.

    Returns `{"sentences", "dropped", "repeated", "repeated_output",
    "attended_nowhere"}`: the share of source words whose attention, summed
    over the output words, is below 0.5 (dropped) or above 1.5 (repeated),
    the share of output words that repeat an earlier word of their sentence
    beyond the reference's count of it, and the share of output words whose
    attention sums below 0.5 (a monotonic attention that stopped nowhere:
    a zero context).
    """
    from collections import Counter

    from kerattn.decoding import Translator

    pairs = [(s, t) for s, t in data["test_long"]
             if low <= len(s.split()) <= high]
    translator = Translator(net, data["source_vocab"], data["target_vocab"])
    texts, alignments = translator([s for s, _ in pairs],
                                   return_alignments=True)
    words = dropped = repeated = outputs = repeats = steps = nowhere = 0
    for (_, reference), text, a in zip(pairs, texts, alignments):
        if a["weights"] is not None:
            received = a["weights"].sum(axis=0)           # per source word
            words += len(received)
            dropped += int((received < 0.5).sum())
            repeated += int((received > 1.5).sum())
            steps += len(a["weights"])
            nowhere += int((a["weights"].sum(axis=1) < 0.5).sum())
        allowed, seen = Counter(reference.split()), Counter()
        for word in text.split():
            seen[word] += 1
            outputs += 1
            repeats += seen[word] > max(1, allowed[word])
    return {"sentences": len(pairs),
            "dropped": round(dropped / max(words, 1), 4),
            "repeated": round(repeated / max(words, 1), 4),
            "repeated_output": round(repeats / max(outputs, 1), 4),
            "attended_nowhere": round(nowhere / max(steps, 1), 4)}


def expected_alignment_bleu(net, data):
    """Greedy BLEU decoding with the attention's training mode: for a
    monotonic attention, the expected alignment instead of the hard one
    (`step(attention_mode=...)`, the full pass's mode), to tell what the
    hard decisions cost. None for an attention without modes."""
    import functools

    from kerattn.recipes import translation

    attention = getattr(net.get_layer("decoder"), "attention", None)
    training_mode = None if attention is None else attention.mode_for(
        None, decoding=False)
    if training_mode is None or training_mode == attention.mode_for(
            None, decoding=True):
        return None
    net.step = functools.partial(type(net).step, net,
                                 attention_mode=training_mode)
    try:
        return translation.evaluate(net, data, beam_width=None)["bleu_greedy"]
    finally:
        del net.step


def run(model, names, epochs, seed=0, max_train=None, beam_width=None):
    """Train and score each variant `names` of `model` for `epochs` from
    `seed` (greedy, and beam search of `beam_width` when given), writing
    zoo/<model>/ablation.json after each; then the model's RESULTS.md
    again, with the new rows. Returns ablation.json's table."""
    import keras

    from kerattn.recipes import translation

    folder = os.path.join(HERE, model)
    table = runner.load(folder, "ablation.json") or {}
    data = translation.prepare(max_train=max_train)
    for name in names:
        what, builder, training, *model_name = VARIANTS[model][name]
        model_name = model_name[0] if model_name else model
        config = translation.settings(model_name)
        keras.utils.set_random_seed(seed)
        net = translation.build(model_name, data, config["preset"], **builder)
        settings = {k: config[k] for k in ("learning_rate", "label_smoothing",
                                           "warmup_steps")}
        settings.update(training)
        start = time.time()
        summary = translation.train(net, data, epochs=epochs, seed=seed,
                                    verbose=2, **settings)
        results = translation.evaluate(net, data, beam_width=beam_width)
        row = {"what": what, "builder": builder, "training": training,
               "epochs": summary["epochs"], "seed": seed,
               "final_loss": summary["final_loss"],
               "final_val_loss": summary["final_val_loss"],
               "bleu_greedy": results["bleu_greedy"],
               "bleu_greedy_by_source_length":
                   results["bleu_greedy_by_source_length"],
               "minutes": round((time.time() - start) / 60, 2)}
        if beam_width:
            row["beam_width"] = beam_width
            row["bleu_beam"] = results[f"bleu_beam{beam_width}"]
        row["alignment_rates"] = alignment_rates(net, data)
        if "decoder" in net.layers_by_name:
            expected = expected_alignment_bleu(net, data)
            if expected is not None:
                row["bleu_greedy_expected_alignment"] = expected
        print(name, row, flush=True)
        table[f"{name}@{epochs}" + (f" seed {seed}" if seed else "")] = row
        runner.save(folder, table, "ablation.json")
    if runner.load(folder) is not None:   # RESULTS.md, with the new rows
        recipe = runpy.run_path(os.path.join(folder, "recipe.py"))
        runner.report_only(recipe["TASK"], folder)
    return table


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("model", choices=sorted(VARIANTS))
    p.add_argument("variants", nargs="*")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-train", type=int, default=None)
    p.add_argument("--beam-width", type=int, default=None,
                   help="also score beam search of this width (alpha 0.6)")
    p.add_argument("--list", action="store_true")
    args = p.parse_intermixed_args()
    if args.list or not args.variants:
        for name, (what, *_) in VARIANTS[args.model].items():
            print(f"{name:24s} {what}")
    else:
        run(args.model, args.variants, args.epochs, args.seed, args.max_train,
            args.beam_width)
