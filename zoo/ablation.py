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

A seed other than 0 is part of the row's name (`coverage@1 seed 1`;
zoo/translation.py's `row_key` writes a name, `row_seed` reads it back).

A *phase* variant (`PHASES`) switches an option on for the last steps of
training, as See et al. (2017) add coverage and its loss for their last
3,000 iterations: it starts from its converged variant's weights (a run
folder under `--runs`, `<model>/<variant>@<epochs>[-seed<N>]`, trained
and saved there the first time, loaded every time after), builds the
model with the option on (`kerattn.recipes.translation.with_options`:
every weight carried, the option's own weights as initialised) and trains
up to `--phase-steps` more batches, each training pair at most once (a
phase asked more than one pass over its pairs trains one pass; the row's
`phase` records the batches `asked` and the `steps` trained); its control
trains the same batches from the same weights without the option:

    python zoo/ablation.py bahdanau_nmt --epochs 6 --phase-steps 1000 coverage-phase plain-phase

A phase row is `<phase>@<epochs>+<phase-steps>`, the batches asked
(`coverage-phase@6+1000 seed 1`).
Every row also records how the greedy translations of the 16-20-word
source bucket attend to their source (`alignment_rates`): the share of
source words that get less than half a word's worth of attention over the
whole translation (`dropped`), and more than one and a half (`repeated`),
the failures that coverage (Tu et al., 2016; See et al., 2017) is meant
to cure; and the share of output words that repeat an earlier word of
their sentence more often than the reference has it (`repeated_output`).

The monotonic study asks why `bahdanau_nmt`'s hard monotonic attention
never decides on translation (no `p` reaches 0.5 past the first source
word): its variants change one thing at a time (`r`'s initial value, the
noise, the rate; `monotonic-from-soft` starts the attention from the
converged soft model's energy), and every row with that attention records
how it decides before training and at each epoch's end (`SelectionWatch`:
the `p` where the alignment's mass arrives, the steps that would decide,
the mass that stops), drawn in zoo/bahdanau_nmt/selection.png:

    python zoo/ablation.py bahdanau_nmt --epochs 6 --beam-width 5 hard-monotonic hard-monotonic-r-1

The Luong study asks what makes the stacked LSTMs learn at CPU size; the
others measure a paper's own choice where it differs from Keras' default
(the GRU's reset gate, the Transformer's tied embeddings).
"""

import argparse
import os
import runpy
import time

import keras
import numpy as np

import runner
import translation as translation_task   # zoo/translation.py: the recipes' records

HERE = os.path.dirname(os.path.abspath(__file__))
# The converged variants' run folders (outputs/ is not committed).
RUNS = os.path.join(os.path.dirname(HERE), "outputs", "ablation")

RECIPE = ("the recipe as it was: its preset and settings", {}, {})

# The study's hard monotonic rows start r at the layer's -4 (Raffel et
# al.'s advice); bahdanau_nmt's own -1 is what the study chose.
_R4 = {"attention_options": {"score_bias_init": -4.0}}

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
    "concat": ("the recipe now with the concat score (section 3.1; what "
               "coverage-phase starts from)", {"score": "concat"}, {}),
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
                       {"attention": "hard-monotonic", **_R4}, {}),
    "mocha": ("MoChA (Chiu and Raffel, 2018): a softmax over the 2 "
              "annotations ending where the monotonic attention stops",
              {"attention": "mocha"}, {}),
    # Why the hard decisions never come on translation: one variable at a
    # time from "hard-monotonic" (r starts at -4, noise sd 1, Adam 2e-3).
    "hard-monotonic-r-1": ("hard-monotonic with r initialised to -1",
                           {"attention": "hard-monotonic",
                            "attention_options": {"score_bias_init": -1.0}}, {}),
    "hard-monotonic-r0": ("hard-monotonic with r initialised to 0 (tfa's "
                          "default)", {"attention": "hard-monotonic",
                                       "attention_options": {"score_bias_init": 0.0}},
                          {}),
    "hard-monotonic-no-noise": ("hard-monotonic without the pre-sigmoid noise",
                                {"attention": "hard-monotonic",
                                 "attention_options": {"score_bias_init": -4.0,
                                                       "noise_std": 0.0}}, {}),
    "hard-monotonic-lr5e-4": ("hard-monotonic with Adam 5e-4",
                              {"attention": "hard-monotonic", **_R4},
                              {"learning_rate": 5e-4}),
}, "cho_encoder_decoder": {
    "recipe": RECIPE,
    "paper-gru": ("the paper's GRU (reset_after=False)", {"reset_after": False},
                  {}),
}, "transformer_nmt": {
    "recipe": RECIPE,
    "tied": ("target embedding tied to the pre-softmax weights (section 3.4)",
             {"tie_embeddings": "target"}, {}),
    # Shaw et al. (2018): relative position representations in every
    # self-attention, clipped at k; their table 1 has k = 16 without
    # absolute positions, and reports no gain from using both.
    "relative16": ("relative positions, k = 16, no absolute positions "
                   "(Shaw et al., 2018)",
                   {"max_relative_position": 16, "absolute_positions": False}, {}),
    "relative4": ("relative positions, k = 4, no absolute positions",
                  {"max_relative_position": 4, "absolute_positions": False}, {}),
    "relative16-and-absolute": ("relative positions, k = 16, and the sinusoids",
                            {"max_relative_position": 16}, {}),
}}


# model -> phase variant -> (what it switches on, the converged variant
# it starts from, builder options switched on for the phase[, the weights
# the option moves: `carry_weights`'s `moved`[, the name of a function of
# this module that finishes the start, `(converged, net)`]]). A phase
# trains at the rate the converged variant's schedule ended at.
PHASES = {"bahdanau_nmt": {
    "coverage-phase": ("+ coverage in the alignment model and its loss, "
                       "lambda 1 (See et al., 2017, eq. 11-13), for the phase",
                       "recipe", {"coverage": True}),
    "plain-phase": ("the same steps without coverage (the control)", "recipe", {}),
    "monotonic-from-soft": ("hard monotonic attention for the phase, its "
                            "energy the converged soft model's (W, U, v "
                            "carried, g = ||v||, b = 0) plus r = -4",
                            "recipe", {"attention": "hard-monotonic", **_R4},
                            {f"decoder/attention/{w}": f"decoder/attention/energy/{w}"
                             for w in ("W_a", "U_a", "v_a")},
                            "_keep_the_soft_energy"),
}, "luong_nmt": {
    "coverage-phase": ("+ coverage on the concat score and its loss, lambda 1 "
                       "(See et al., 2017, eq. 11-13), for the phase", "concat",
                       {"attention": "coverage", "coverage_loss_weight": 1.0}),
    "plain-phase": ("the same steps without coverage (the control)", "concat", {}),
}}


def _keep_the_soft_energy(converged, net):
    """The monotonic energy `g v / ||v|| . tanh(W s + U h + b)` with the soft
    model's `W`, `U`, `v` (carried) and `b = 0` (as initialised) is the
    soft energy `v . tanh(W s + U h)` when `g = ||v||`: set so, the phase
    starts from the soft model's energies plus `r`."""
    v = keras.ops.convert_to_numpy(converged.get_layer("decoder").attention.v_a)
    net.get_layer("decoder").attention.energy.g.assign(
        float(np.linalg.norm(v.astype("float64"))))


def alignment_rates(net, data, buckets=((16, 20),)):
    """How greedy translations attend to their sources, by source length.

    Returns `{"low-high": {"sentences", "dropped", "repeated",
    "repeated_output", "attended_nowhere"}}` for each `(low, high)` of
    `buckets` (source words; an empty bucket's rates are 0): the share of
    source words whose attention, summed over the output words, is below
    0.5 (dropped) or above 1.5 (repeated), the share of output words that
    repeat an earlier word of their sentence beyond the reference's count
    of it, and the share of output words whose attention sums below 0.5
    (a monotonic attention that stopped nowhere: a zero context). The
    sentences of every bucket are translated in one pass.
    """
    from collections import Counter

    from kerattn.decoding import Translator

    pairs = [(s, t, f"{low}-{high}") for s, t in data["test_long"]
             for low, high in buckets if low <= len(s.split()) <= high]
    translator = Translator(net, data["source_vocab"], data["target_vocab"])
    texts, alignments = translator([s for s, _, _ in pairs],
                                   return_alignments=True)
    counts = {}
    for (_, reference, bucket), text, a in zip(pairs, texts, alignments):
        c = counts.setdefault(bucket, Counter())
        c["sentences"] += 1
        if a["weights"] is not None:
            received = a["weights"].sum(axis=0)           # per source word
            c["words"] += len(received)
            c["dropped"] += int((received < 0.5).sum())
            c["repeated"] += int((received > 1.5).sum())
            c["steps"] += len(a["weights"])
            c["nowhere"] += int((a["weights"].sum(axis=1) < 0.5).sum())
        allowed, seen = Counter(reference.split()), Counter()
        for word in text.split():
            seen[word] += 1
            c["outputs"] += 1
            c["repeats"] += seen[word] > max(1, allowed[word])
    return {bucket: {"sentences": c["sentences"],
                     "dropped": round(c["dropped"] / max(c["words"], 1), 4),
                     "repeated": round(c["repeated"] / max(c["words"], 1), 4),
                     "repeated_output": round(c["repeats"] / max(c["outputs"], 1), 4),
                     "attended_nowhere": round(c["nowhere"] / max(c["steps"], 1), 4)}
            for bucket, c in ((f"{low}-{high}", counts.get(f"{low}-{high}", Counter()))
                              for low, high in buckets)}


def selection_probabilities(alignments, initial, floor=1e-3):
    """Raffel et al.'s stopping probabilities `p_ij`, recovered from the
    expected alignments they gave (NumPy, float64). With `q_ij`, the mass
    that reaches source position `j` at output step `i`,

        q_ij = (1 - p_{i,j-1}) q_{i,j-1} + a_{i-1,j},    a_ij = p_ij q_ij

    (`kerattn.layers.monotonic_alignment`'s recursion), so `p_ij = a_ij /
    q_ij`, reported where `q_ij > floor` and NaN where less mass reaches
    `j` (a `p` there decides nothing training sees).

    Args:
        alignments: `(B, T, S)`, `a_1 ... a_T` (the decoder's attention
            weights in "parallel" mode).
        initial: `(B, S)`, `a_0`.

    Returns:
        `(p, q)`, each `(B, T, S)`.
    """
    a = np.asarray(alignments, "float64")
    previous = np.asarray(initial, "float64")
    p = np.full(a.shape, np.nan)
    q = np.zeros(a.shape)
    for i in range(a.shape[1]):
        reach, p_before = np.zeros(a.shape[0]), np.zeros(a.shape[0])
        for j in range(a.shape[2]):
            reach = (1.0 - p_before) * reach + previous[:, j]
            q[:, i, j] = reach
            exact = np.clip(a[:, i, j] / np.maximum(reach, 1e-300), 0.0, 1.0)
            p_before = np.where(reach > 0, exact, 0.0)
            p[:, i, j] = np.where(reach > floor, exact, np.nan)
        previous = a[:, i]
    return p, q


def selection_statistics(net, inputs, floor=0.01):
    """How a `bahdanau_nmt` hard monotonic attention decides, teacher-forced
    over `inputs` (`{"source_ids", "target_in_ids"}`) in its training
    mode ("parallel", the expected alignment, without the noise).

    Returns `{"r", "p_quantiles", "p_at_least_half", "decides",
    "stops_somewhere"}`: the bias `r`; the 10/50/90/99th percentiles of
    `p_ij` over the real (step, position) pairs that at least `floor` of
    the mass reaches; the share of that mass arriving where `p_ij >= 0.5`
    (where a hard decision would stop); the share of real steps with some
    such position (steps that would decide at all, from the expected
    state); and the mean expected mass that stops somewhere a step
    (`sum_j a_ij`; the rest is a zero context).
    """
    from kerattn.zoo.bahdanau_nmt import encode_source

    get = net.get_layer
    source = np.asarray(inputs["source_ids"])
    target_in = np.asarray(inputs["target_in_ids"])
    h, s0, mask = encode_source(get, source)
    y = get("target_embedding")(target_in)
    _, alphas = get("decoder")(y, h, memory_mask=mask, initial_state=[s0],
                               return_attention_scores=True)
    attention = get("decoder").attention
    a0 = attention.initial_alignment(mask)
    alphas = np.asarray(keras.ops.convert_to_numpy(alphas), "float64")
    p, q = selection_probabilities(alphas, keras.ops.convert_to_numpy(a0))
    steps = target_in != 0
    reached = steps[:, :, None] & (source != 0)[:, None, :] & (q > floor)
    values, mass = p[reached], q[reached]
    half = np.where(reached, np.nan_to_num(p) >= 0.5, False)
    return {"r": round(float(keras.ops.convert_to_numpy(attention.score_bias)), 4),
            "p_quantiles": {str(k): round(float(np.percentile(values, k)), 4)
                            for k in (10, 50, 90, 99)},
            "p_at_least_half": round(float((mass * (values >= 0.5)).sum()
                                           / max(mass.sum(), 1e-12)), 4),
            "decides": round(float(half.any(-1)[steps].mean()), 4),
            "stops_somewhere": round(float(alphas.sum(-1)[steps].mean()), 4)}


class SelectionWatch(keras.callbacks.Callback):
    """`selection_statistics` on a fixed validation batch before training
    and at each epoch's end (where every backend has written the trained
    weights back into the model): `rows`, each with its `"epoch"`."""

    def __init__(self, inputs):
        super().__init__()
        self.inputs, self.rows = inputs, []

    def on_train_begin(self, logs=None):
        self.rows.append({"epoch": 0, **selection_statistics(self.model, self.inputs)})

    def on_epoch_end(self, epoch, logs=None):
        self.rows.append({"epoch": epoch + 1,
                          **selection_statistics(self.model, self.inputs)})


WATCHED = 256   # the validation pairs SelectionWatch reads


def _watch(net, data):
    """`[SelectionWatch]` for a bahdanau_nmt with a hard monotonic
    attention (the only one whose weights are its alignment), else []."""
    decoder = net.layers_by_name.get("decoder")
    attention = getattr(decoder, "attention", None)
    if (type(net).__name__ != "BahdanauNMT"
            or type(attention).__name__ != "HardMonotonicAttention"):
        return []
    x, _ = data["valid"]
    return [SelectionWatch({k: v[:WATCHED] for k, v in x.items()})]


def selection_figure(table, path):
    """The stopping probabilities over training of each row of `table`
    that recorded them (`"selection"`): the median and 90th percentile of
    `p` where the mass arrives, the share of steps that would decide, and
    the expected mass that stops somewhere, by epoch. Returns `path`, or
    None with no such row."""
    rows = {k: r["selection"] for k, r in table.items() if r.get("selection")}
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (("p (median, dashed: 90th percentile) where the mass arrives",
               lambda r: r["p_quantiles"]["50"], lambda r: r["p_quantiles"]["90"]),
              ("share of steps with a p >= 0.5 (would decide)",
               lambda r: r["decides"], None),
              ("expected mass that stops somewhere", lambda r: r["stops_somewhere"],
               None),
              ("r (the energy's bias)", lambda r: r["r"], None))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4))
    for ax, (title, solid, dashed) in zip(axes, panels):
        for i, (name, points) in enumerate(rows.items()):
            epochs = [r["epoch"] for r in points]
            line, = ax.plot(epochs, [solid(r) for r in points], marker="o",
                            markersize=3, label=name)
            if dashed:
                ax.plot(epochs, [dashed(r) for r in points], linestyle="--",
                        color=line.get_color())
        ax.set_title(title, fontsize=8)
        ax.set_xlabel("epoch")
    axes[0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


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


def run(model, names, epochs, seed=0, max_train=None, beam_width=None,
        phase_steps=None, runs=RUNS):
    """Train and score each variant `names` of `model` for `epochs` from
    `seed` (greedy, and beam search of `beam_width` when given), writing
    zoo/<model>/ablation.json after each; then the model's RESULTS.md
    again, with the new rows. A phase variant (`PHASES`) trains up to
    `phase_steps` batches (one pass over the training pairs at most) from
    its converged variant's run folder under `runs` (trained and saved
    there first where missing). Returns ablation.json's table."""
    from kerattn import checks
    from kerattn.recipes import translation

    for name in names:
        checks.one_of("variants", name, [*VARIANTS[model], *PHASES.get(model, {})])
    if any(name in PHASES.get(model, {}) for name in names):
        checks.positive_int("phase_steps", phase_steps)
    folder = os.path.join(HERE, model)
    os.makedirs(folder, exist_ok=True)
    table = runner.load(folder, "ablation.json") or {}
    data = translation.prepare(max_train=max_train)

    def base(name, seed=0):
        return translation_task.row_key(
            name, epochs, seed=seed,
            phase_steps=phase_steps if name in PHASES.get(model, {}) else None)

    for name in names:   # before anything trains (a phase's start too)
        phase = PHASES.get(model, {}).get(name)
        for row in (name, phase[1]) if phase else (name,):
            _refuse_other_data(table, base(row),
                               runner.data_sizes(translation_task.data_sizes, data), folder)
    for name in names:
        if name in PHASES.get(model, {}):
            net, row = _phase(model, name, data, epochs, seed, phase_steps, runs,
                              table, beam_width, folder)
        else:
            net, row = _variant(model, name, data, epochs, seed, beam_width)
            if runs:
                _save_run(net, data, _run_folder(runs, model, name, epochs, seed))
        key = base(name, seed)
        print(key, row, flush=True)
        table[key] = row
        runner.save(folder, table, "ablation.json")
        if row.get("selection"):
            try:
                selection_figure(table, os.path.join(folder, "selection.png"))
            except ImportError:   # no matplotlib
                pass
    if runner.load(folder) is not None:   # RESULTS.md, with the new rows
        recipe = runpy.run_path(os.path.join(folder, "recipe.py"))
        runner.report_only(recipe["TASK"], folder)
    return table


def _refuse_other_data(table, base, sizes, folder):
    """A ValueError if ablation.json (`table`) holds a seed of the row
    `base` (`base`, `base seed N`) that recorded other data than `sizes`:
    its seeds are averaged as one row, and a seed trained again would
    replace a row of other data. Only the figures both recorded are
    compared: rows from before rows recorded their data (or its
    fingerprint, `data_sha256`) say nothing of it, and pass."""
    for key, row in table.items():
        recorded = row.get("data", {})
        if translation_task.row_seed(key)[0] == base and any(
                recorded[k] != sizes[k] for k in recorded.keys() & sizes.keys()):
            raise ValueError(
                f"`variants`: {os.path.join(folder, 'ablation.json')} holds "
                f"{key!r} on other data ({row['data']} there, {sizes} now): "
                "seeds of one row must share their data. Move that "
                "ablation.json aside, or run on the machine that trained it.")


def _variant(model, name, data, epochs, seed, beam_width):
    """A variant trained from scratch: `(net, its ablation row)`."""
    import keras

    from kerattn.recipes import translation

    what, builder, training, *model_name = VARIANTS[model][name]
    model_name = model_name[0] if model_name else model
    keras.utils.set_random_seed(seed)
    net = translation.build(model_name, data, translation.settings(model_name)["preset"],
                            **builder)
    start = time.time()
    watch = _watch(net, data)
    summary = translation.train(net, data, epochs=epochs, seed=seed, verbose=2,
                                callbacks=watch, **_training(model_name, training))
    row = {"what": what, "builder": builder, "training": training,
           "epochs": summary["epochs"], "seed": seed,
           **_scores(net, data, summary, beam_width, start)}
    if watch:
        row["selection"] = watch[0].rows
    return net, row


def _phase(model, name, data, epochs, seed, steps, runs, table, beam_width, folder):
    """A phase from its converged variant's weights: `(net, its row)`."""
    import keras

    from kerattn.recipes import translation

    what, base, options, *start = PHASES[model][name]
    _, builder, training = VARIANTS[model][base][:3]
    converged = _converged(model, base, data, epochs, seed, runs, table,
                           beam_width, folder)
    keras.utils.set_random_seed(seed)
    net = translation.with_options(converged, model, data,
                                   translation.settings(model)["preset"],
                                   moved=start[0] if start else None,
                                   **builder, **options)
    if len(start) > 1:
        globals()[start[1]](converged, net)
    settings = _training(model, training)
    # Go on at the rate the converged variant's schedule ended at (a
    # cosine decay ends at a tenth of its peak).
    rate = settings["learning_rate"] * (0.1 if settings["warmup_steps"] else 1.0)
    settings.update(learning_rate=rate, warmup_steps=0)
    start = time.time()
    watch = _watch(net, data)
    summary = translation.train(net, data, steps=steps, seed=seed, verbose=2,
                                callbacks=watch, **settings)
    # A phase trains each of its pairs once (`common.phase_rows`): fewer
    # batches than asked when the training pairs run out.
    row = {"what": what,
           "phase": {"from": translation_task.row_key(base, epochs), "asked": steps,
                     "steps": summary["steps"], "learning_rate": rate},
           "builder": {**builder, **options}, "training": training,
           "epochs": epochs, "seed": seed,
           **_scores(net, data, summary, beam_width, start)}
    if watch:
        row["selection"] = watch[0].rows
    return net, row


def _converged(model, base, data, epochs, seed, runs, table, beam_width, folder):
    """The converged variant `base` a phase starts from: its run folder
    under `runs`, or trained now and saved there, its row recorded in
    `folder`'s ablation.json at once (a phase that fails after it loses
    nothing of it)."""
    import kerattn
    from kerattn import checks

    checks.require(runs, "runs", "a folder for the converged variants' run "
                   "folders (a phase starts from one)", runs)
    saved = _run_folder(runs, model, base, epochs, seed)
    if os.path.exists(os.path.join(saved, "run.json")):
        run = kerattn.load_run(saved)
        for side in ("source", "target"):
            checks.require(
                run.vocabularies[side].to_json() == data[f"{side}_vocab"].to_json(),
                "runs", f"a run folder trained on this data ({saved}: its "
                f"{side} vocabulary is another)", saved)
        return run.model
    net, row = _variant(model, base, data, epochs, seed, beam_width)
    _save_run(net, data, saved)
    table[translation_task.row_key(base, epochs, seed=seed)] = row
    runner.save(folder, table, "ablation.json")
    return net


def _run_folder(runs, model, name, epochs, seed):
    return os.path.join(runs, model, f"{name}@{epochs}" + (f"-seed{seed}" if seed else ""))


def _save_run(net, data, folder):
    from kerattn.runs import Run

    Run(net, "translation", {"source": data["source_vocab"],
                             "target": data["target_vocab"]}).save(folder)


def _training(model_name, overrides):
    """The recipe's training settings of `model_name`, with `overrides`."""
    from kerattn.recipes import translation

    config = translation.settings(model_name)
    settings = {k: config[k] for k in ("learning_rate", "label_smoothing",
                                       "warmup_steps")}
    settings.update(overrides)
    return settings


def _scores(net, data, summary, beam_width, start):
    """A trained row's losses, BLEU (overall and by source length), its
    alignment rates (the 16-20-word bucket, and every bucket) and minutes."""
    from kerattn.recipes import translation

    results = translation.evaluate(net, data, beam_width=beam_width)
    row = {"final_loss": summary["final_loss"],
           "final_val_loss": summary["final_val_loss"],
           "bleu_greedy": results["bleu_greedy"],
           "bleu_greedy_by_source_length": results["bleu_greedy_by_source_length"]}
    if beam_width:
        row["beam_width"] = beam_width
        row["bleu_beam"] = results[f"bleu_beam{beam_width}"]
        row["bleu_beam_by_source_length"] = results[
            f"bleu_beam{beam_width}_by_source_length"]
    rates = alignment_rates(net, data, translation.LENGTH_BUCKETS)
    row["alignment_rates"] = rates["16-20"]
    row["alignment_rates_by_source_length"] = rates
    if "decoder" in net.layers_by_name:
        expected = expected_alignment_bleu(net, data)
        if expected is not None:
            row["bleu_greedy_expected_alignment"] = expected
    row["minutes"] = round((time.time() - start) / 60, 2)
    from kerattn import environment

    row["machine"] = environment.machine()   # its backend and versions too
    # The data it saw: the gettext catalogs are the machine's, and change
    # with its packages.
    row["data"] = runner.data_sizes(translation_task.data_sizes, data)
    return row


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("model", choices=sorted(VARIANTS))
    p.add_argument("variants", nargs="*")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-train", type=int, default=None)
    p.add_argument("--beam-width", type=int, default=None,
                   help="also score beam search of this width (alpha 0.6)")
    p.add_argument("--phase-steps", type=int, default=None,
                   help="the batches a phase variant trains at most (PHASES): "
                   "each training pair once at most")
    p.add_argument("--runs", default=RUNS,
                   help="where the converged variants' run folders are kept "
                        "(a phase starts from one; every variant trained "
                        "is saved there)")
    p.add_argument("--list", action="store_true")
    args = p.parse_intermixed_args()
    if args.list or not args.variants:
        for name, (what, *_) in VARIANTS[args.model].items():
            print(f"{name:24s} {what}")
        for name, (what, base, *_) in PHASES.get(args.model, {}).items():
            print(f"{name:24s} from {base}: {what}")
    else:
        run(args.model, args.variants, args.epochs, args.seed, args.max_train,
            args.beam_width, args.phase_steps, args.runs)
