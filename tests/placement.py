"""Where each heavy test runs: one fixed backend each.

Every test whose result can depend on the backend (layers, masks, numerics,
decoding loops, serialization, the cross-backend `.keras` files) runs on all
three backends. The heavy integration runs below (training to an accuracy
target, recipes, notebooks, the `model.fit` script, export round trips,
distributed runs, the benchmark runner) run in **one fixed backend's pytest
process each**, chosen so that CI's three processes balance:
`tests/conftest.py` deselects a heavy test in the other two processes. A
test that starts its own interpreter for a backend (the `model.fit`
script's `--backend`, the benchmark runner's `--backends`) names that
backend in its case id; the process that launches it is the one in the
table. The placement is this table, nothing else: the same commit always
runs the same tests. `tests/README.md` prints the table
(`tests/test_placement.py` keeps the two equal), and
`tests/run_backends.py --quick` leaves every heavy test out.

Keys are pytest node ids under `tests/`: a whole file, one test function
(every case of it), or one parametrized case. The longest key that matches
a test wins.
"""

import fnmatch

BACKENDS = ("tensorflow", "jax", "torch")

# node id -> (backend, what it runs). Chosen by per-test junit durations
# (tests/README.md, "The budget") so that the three processes end close
# together. Each process keeps at most one core busy and three share two
# cores, so CI's tests take at least half the three processes' CPU time,
# and a move gains only while one process would run on alone at the end.
# The JAX process has the most backend-dependent work of its own and the
# least heavy work (only what is cheapest on JAX); TensorFlow's keeps the
# heavy runs that run on TensorFlow in-process (notebooks, the AoA
# overfit, the hostile requests' export) and TensorFlow's distributed
# engine, up to about the JAX process' CPU time; everything else is in the
# torch process: the runs that start their own interpreter for a named
# backend (the model.fit script, the benchmark runner, JAX's distributed
# engine: they cost the same from any process) and those cheapest on
# torch.
_OVERFIT = "test_zoo_translation.py::test_overfits_a_real_slice"
_NOTEBOOK = "test_notebooks.py::test_notebook_runs_and_draws_attention"
_FIT = "test_examples.py::test_fit_script_trains_evaluates_and_writes"
HEAVY = {
    # Training to an accuracy target (then decoding and a .keras round trip).
    f"{_OVERFIT}[bahdanau]": ("torch", "RNNsearch overfits 64 gettext pairs, decodes, round-trips"),
    f"{_OVERFIT}[luong]": ("torch", "Luong NMT overfits 64 gettext pairs, decodes, round-trips"),
    f"{_OVERFIT}[transformer]": ("torch", "Transformer overfits 64 gettext pairs, decodes, round-trips"),
    f"{_OVERFIT}[convs2s]": ("torch", "ConvS2S overfits 64 gettext pairs, decodes, round-trips"),
    f"{_OVERFIT}[seq2seq]": ("torch", "seq2seq overfits 64 gettext pairs, decodes, round-trips"),
    f"{_OVERFIT}[cho]": ("torch", "Cho encoder-decoder overfits 64 gettext pairs, decodes, round-trips"),
    "test_zoo_captioning.py::test_overfits_a_tiny_real_slice[soft]": (
        "torch", "show_attend_tell (soft) overfits 24 digit strips"),
    # It passes on every backend; on JAX for CI time (17 s against 62 s on
    # TensorFlow and 189 s on torch); see the test.
    "test_zoo_captioning.py::test_overfits_a_tiny_real_slice[hard]": (
        "jax", "show_attend_tell (hard) overfits 24 digit strips"),
    "test_zoo_han.py::test_overfits_a_tiny_real_slice_and_round_trip": (
        "torch", "HAN overfits the topical-10 sample, round-trips"),
    "test_zoo_self_attentive.py::test_overfits_a_tiny_real_slice_and_round_trip": (
        "torch", "self_attentive_classifier overfits the topical-10 sample, round-trips"),
    "test_zoo_aoa.py::test_overfits_a_tiny_real_slice_and_round_trip": (
        "tensorflow", "AoA reader overfits 12 KJV cloze questions, round-trips"),
    "test_pointer_generator.py::test_toy_copy_task_only_the_copying_model_solves": (
        "torch", "pointer_generator learns a toy copy task (OOV words included); copy=False cannot"),
    # Recipes, notebooks, the model.fit script, the benchmark runner.
    "test_zoo_runner.py::test_captioning_recipe_tiny_run": (
        "torch", "zoo/show_attend_tell/recipe.py --preset tiny, then --report-only"),
    "test_zoo_runner.py::test_classification_recipe_tiny_run": (
        "torch", "zoo/han_classifier/recipe.py --preset tiny on the topical-10 sample"),
    "test_zoo_runner.py::test_self_attentive_recipe_tiny_run": (
        "torch", "zoo/self_attentive_classifier/recipe.py --preset tiny on the topical-10 sample, with and without the penalty"),
    "test_zoo_runner.py::test_reading_recipe_tiny_run": (
        "jax", "zoo/aoa_reader/recipe.py --preset tiny on the KJV cloze sample"),
    "test_site.py": ("torch", "the documentation site: mkdocs build --strict, its validation, the API entries"),
    "test_zoo_runner.py::test_g2p_phrases_recipe_tiny_run": (
        "torch", "zoo/g2p_phrases/recipe.py --preset tiny on the CMUdict sample: two seeds of GMM attention, one of DCA, then --report-only"),
    "test_zoo_runner.py::test_g2p_recipe_tiny_run": (
        "torch", "zoo/g2p/recipe.py --preset tiny on the CMUdict sample, two attentions (one trained the papers' way: early stopping, a decay, a backup, beam search; paused after an epoch and resumed), then --report-only"),
    "test_zoo_runner.py::test_summarisation_recipe_tiny_run": (
        "torch", "zoo/pointer_generator/recipe.py --preset tiny on the Debian lists sample, then --report-only"),
    "test_zoo_runner.py::test_an_ablation_phase_starts_from_its_saved_converged_variant": (
        "torch", "zoo/ablation.py's coverage phase and its control from a saved converged run folder, tiny"),
    f"{_NOTEBOOK}[captioning.ipynb]": ("tensorflow", "the captioning notebook, small size"),
    f"{_NOTEBOOK}[document_classification.ipynb]": (
        "tensorflow", "the document classification notebook, small size"),
    f"{_NOTEBOOK}[reading_comprehension.ipynb]": (
        "tensorflow", "the reading comprehension notebook, small size"),
    f"{_NOTEBOOK}[translation.ipynb]": ("tensorflow", "the translation notebook, small size"),
    f"{_NOTEBOOK}[summarisation.ipynb]": ("torch", "the summarisation notebook, small size"),
    f"{_FIT}[tensorflow-bahdanau_nmt]": (
        "torch", "examples/fit.py --backend tensorflow, tf.data, on 2 stand-in hosts (TF_CONFIG)"),
    f"{_FIT}[jax-show_attend_tell]": ("torch", "examples/fit.py --backend jax on 2 stand-in hosts of 2 devices"),
    f"{_FIT}[jax-aoa_reader]": ("torch", "examples/fit.py --backend jax"),
    f"{_FIT}[torch-han_classifier]": ("torch", "examples/fit.py --backend torch"),
    f"{_FIT}[torch-self_attentive_classifier]": ("torch", "examples/fit.py --backend torch"),
    f"{_FIT}[torch-transformer_nmt]": ("torch", "examples/fit.py --backend torch on 2 stand-in hosts (torchrun --nnodes 2)"),
    f"{_FIT}[tensorflow-seq2seq]": ("torch", "examples/fit.py --backend tensorflow --data a TSV"),
    f"{_FIT}[torch-pointer_generator]": (
        "torch", "examples/fit.py pointer_generator --backend torch --data a TSV of summaries"),
    f"{_FIT}[tensorflow-cho_encoder_decoder]": ("torch", "examples/fit.py --backend tensorflow, MirroredStrategy on 2 devices"),
    f"{_FIT}[jax-convs2s_nmt]": ("torch", "examples/fit.py --backend jax --data a TSV"),
    f"{_FIT}[torch-luong_nmt]": ("torch", "examples/fit.py --backend torch --data a TSV"),
    f"{_FIT}[torch-g2p]": ("torch", "examples/fit.py g2p --backend torch --attention mocha --size g2p-streaming --data a CMUdict word list, then streams from the run folder"),
    # Two fresh processes of this process' backend: cheapest on torch.
    "test_zoo_runner.py::test_translation_recipe_tiny_run": (
        "torch", "zoo/bahdanau_nmt/recipe.py --preset tiny --distribute data on 2 stand-in hosts, then --report-only"),
    "test_benchmarks.py::test_runner_quick[tensorflow]": (
        "torch", "benchmarks/run.py --quick, figures 1, 10 on TensorFlow"),
    "test_benchmarks.py::test_runner_quick[jax]": (
        "torch", "benchmarks/run.py --quick, figures 2, 4, 5, 6 on JAX"),
    "test_benchmarks.py::test_runner_quick[torch]": (
        "torch", "benchmarks/run.py --quick, figures 3, 7, 8, 9 on torch"),
    # Export round trips served in TensorFlow.
    "test_export.py::test_translator_savedmodel_serves_strings_in_a_fresh_process": (
        "torch", "translator SavedModels (greedy + words, beam + WordPiece, the pointer-generator baseline, G2P letters -> phonemes with beam) served in a fresh interpreter"),
    "test_export.py::test_captioner_savedmodel_captions_images": (
        "torch", "the captioner SavedModel (greedy and beam) against Captioner"),
    "test_hostile_requests.py": (
        "tensorflow", "hostile requests to an exported translator in a fresh interpreter"),
    # Its interpreter is `python -m kerattn.export` under TensorFlow from
    # every process; the archive it loads is this process' (loading across
    # backends is test_export.py's).
    "test_hostile_files.py::test_the_export_command_line_refuses_a_hostile_vocabulary": (
        "tensorflow", "python -m kerattn.export (TensorFlow) refuses a hostile vocabulary JSON"),
    # tf.data and Python alone, whatever the backend (the WordPiece case,
    # whose Python reference is a backend's keras-hub output, and `fit`
    # reading the dataset run on every backend).
    "test_pipeline.py::test_same_ids_as_python_tokenisation[words]": (
        "tensorflow", "translation_dataset's word ids equal Python's, 1,500 gettext pairs"),
    "test_pipeline.py::test_buckets_pad_little_and_few_shapes": (
        "tensorflow", "translation_dataset's length buckets"),
    "test_pipeline.py::test_drop_remainder_and_shuffle_seed": (
        "tensorflow", "translation_dataset's drop_remainder and shuffle seed"),
    # Distributed, on two stand-in hosts: one class per engine, each
    # started from one process whatever that process' backend (every model
    # on one engine, the class' MODELS: most on torch's DDP, where a model
    # costs a few CPU-s against about 25 on the JAX and TensorFlow engines;
    # hard attention, a lost worker and the barrier on every engine). JAX's
    # engine from the torch process: the JAX process has the most
    # backend-dependent work of its own.
    "test_distributed.py::TestJaxEngine": (
        "torch", "JAX's engine, 2 hosts of 2 devices: hard attention against one device, model parallelism and its backup, a lost worker, the barrier"),
    "test_distributed.py::TestTensorflowEngine": (
        "tensorflow", "MultiWorkerMirroredStrategy over 2 workers: HAN against one device, hard attention, keras#20585, a lost worker, the barrier; one-host MirroredStrategy"),
    "test_distributed.py::TestTorchEngine": (
        "torch", "DDP over 2 hosts' processes: 8 zoo models against one device, hard attention, a lost worker (and a torn backup), the barrier"),
}


# Not heavy (they run on all three backends in every full run) but left out
# of the quick tier, `tests/run_backends.py --quick`: keys as in HEAVY (a
# file, a test function or one case) -> what it runs. Integration files
# (fresh interpreters, export and load across backends, training loops
# with callbacks, the data pipeline, every docstring Example), and the
# unit files' tests of the same kind: long use, files of earlier releases,
# training runs (with callbacks, in mixed precision, jit-compiled), a
# recipe's training and evaluation, fresh interpreters, the cross-backend
# `.keras` files.
# conftest marks them `slow` (this table and QUICK_CASES below are the only
# places that do: `tests/test_placement.py`); `tests/README.md` prints both
# (`full_only_table`).
FULL_ONLY = {
    "test_benchmarks.py": "benchmarks/run.py --quick on each backend",
    "test_distributed.py": "each engine on two processes standing in for two hosts",
    "test_docstrings.py": "every public docstring and its Example, run",
    "test_examples.py": "examples/fit.py in fresh interpreters",
    "test_export.py": "string SavedModels, forward passes, ONNX, .keras across backends",
    "test_notebooks.py": "the example notebooks, end to end at a small size",
    "test_pipeline.py": "translation_dataset (tf.data) against Python's tokenisation",
    "test_recipes.py": "the translation recipe's pieces: batches, training, evaluation",
    "test_recipes_tasks.py": "the captioning and reading recipes' pieces",
    "test_reliability.py": "mixed precision, resume, determinism and long inputs",
    "test_zoo_runner.py": "zoo/runner.py and every recipe's command line",
    "test_zoo_table.py": "zoo/README.md's table against each model's results.json",
    "test_long_use.py::test_a_translator_serves_many_requests_with_bounded_compiles": (
        "long use: a translator serves many requests of every shape"),
    "test_long_use.py::test_a_50_epoch_fit_traces_no_more_than_its_shapes": (
        "long use: a 50-epoch fit traces its two shapes only"),
    "test_legacy_files.py": "the .keras files of earlier releases load and decode as recorded",
    "test_serialization.py::test_keras_file_loads_under_every_other_backend": (
        "a fresh interpreter of each other backend loads this backend's .keras files"),
    "test_wordpiece.py::test_translator_round_trip_with_wordpiece": (
        "a model trained 60 epochs on WordPiece ids translates strings"),
    "test_g2p.py::test_training_to_convergence_resumes_from_its_backup": (
        "g2p.train with early stopping and a backup, stopped, resumed, paused, resumed"),
    "test_monotonic_study.py::test_the_watch_records_before_training_and_at_each_epoch_end": (
        "the monotonic watch over two epochs of training"),
    "test_hostile_files.py::test_every_zoo_config_is_clean_and_loads_in_safe_mode": (
        "the zoo cases' .keras files (written once per full run) hold no code, load in safe mode"),
    "test_hostile_files.py::test_the_export_command_line_refuses_a_hostile_vocabulary": (
        "python -m kerattn.export, a fresh interpreter, refuses a hostile vocabulary"),
    "test_zoo_translation.py::test_compiled_translator_serves_many_batch_shapes": (
        "a compiled translator against eager decoding over several batch shapes"),
    "test_phase.py::test_two_phases_start_from_one_converged_model": (
        "the translation recipe's phases: two trained from one converged model"),
    "test_phase.py::test_a_phase_trains_exactly_its_steps": (
        "the translation recipe's phases: one trains exactly its steps"),
    "test_g2p_phrases.py::test_evaluate_decodes_every_length_and_reads_the_alignments": (
        "the phrase G2P recipe's evaluation: every length decoded, alignments read"),
    "test_zoo_captioning.py::test_fresh_compositions_every_epoch_from_the_training_digits": (
        "the captioning recipe's training: fresh compositions every epoch"),
    "test_zoo_translation.py::test_coverage_loss_trains_with_the_model": (
        "a compiled fit step with the coverage loss"),
    "test_rnn_equations.py::test_mixed_bfloat16_fit": (
        "mixed precision training of three decoders (as test_reliability.py)"),
    "test_attention_rnn.py::test_trains_with_fit[bahdanau_gru-True]": (
        "jit_compile=True training: JAX's default, TensorFlow's on a GPU or TPU"),
    "test_attention_rnn.py::test_trains_with_fit[luong_feeding_lstm-True]": (
        "jit_compile=True training: JAX's default, TensorFlow's on a GPU or TPU"),
    "test_attention_rnn.py::test_trains_with_fit[luong_parallel-True]": (
        "jit_compile=True training: JAX's default, TensorFlow's on a GPU or TPU"),
    "test_g2p.py::test_validation_error_rates_decode_each_epochs_weights_for_the_callbacks_after": (
        "g2p training with the validation WER callback, epoch by epoch"),
    "test_paper_options.py::test_tied_transformer_trains_with_its_target_mask": (
        "two epochs of fit of the tied transformer"),
    "test_phase.py::test_a_stack_is_carried_layer_by_layer_from_a_run_folder": (
        "the translation recipe's phases: a stacked model carried from a saved run folder"),
}


# Parametrised tests of which the quick tier runs a few cases, the full
# suite all: a key as in FULL_ONLY (a file or a test function) -> (the
# cases it keeps, what the others add). A kept entry is a case id or a
# shell-style pattern of one ("*-float32" keeps every float32 case of a
# two-parameter test); a test without cases is kept.
# Chosen from the quick tier's costliest JAX families (per-test junit
# durations, tests/README.md "The budget") so that each keeps every code
# path once: each attention kind, each cell, each streaming attention
# with a lookahead. Every parametrised test a key names keeps a case, and
# no key names a test another key names (`tests/test_placement.py`).
# conftest marks the others `slow`, as FULL_ONLY's.
QUICK_CASES = {
    "test_properties.py": (
        ("float32", "*-float32"), "each property in float16 and bfloat16 (test_masking's low-precision cases stay)"),
    "test_families_numerics.py::test_empty_rows_are_zero_and_finite": (
        ("*-float32",), "fully padded rows in float16 and bfloat16"),
    "test_attention_rnn.py::test_each_row_decodes_as_if_alone": (
        ("*-True", "bahdanau-bahdanau-False"),
        "every attention kind in each decoder order and feeding rule"),
    "test_attention_rnn.py::test_trains_with_fit": (
        ("luong_parallel-False",), "fit of the Bahdanau GRU and the input-feeding LSTM decoders"),
    "test_recurrent.py::test_equals_keras_layer": (
        ("gru-False-True", "gru_v1-True-False", "lstm-True-True"),
        "every cell with every go_backwards and zero_output_for_mask"),
    "test_g2p.py::test_streaming_equals_offline_and_emits_before_the_last_letter": (
        ("hard-monotonic-2", "mocha-1"), "streaming without a lookahead"),
    "test_g2p.py::test_a_wait_k_model_streams_on_its_schedule_and_equals_offline": (
        ("global-0-True", "location-sensitive-1-False"), "each attention with and without the end marker"),
    "test_zoo_translation.py::test_compiled_translator_equals_eager": (
        ("bahdanau",), "the other translation models compiled against eager decoding"),
    "test_zoo_translation.py::test_incremental_equals_full_prefix": (
        ("bahdanau", "transformer", "convs2s", "cho", "luong_global_general"),
        "the other variants' decoding steps against full prefixes"),
    "test_beam_attention_state.py::test_beam_search_carries_each_hypothesis_attention_state": (
        ("forward", "gmm", "stepwise-monotonic"), "the other stateful attentions' beam reorders"),
    "test_monotonic_attention.py::test_zoo_models": (
        ("luong_nmt_mocha",), "bahdanau_nmt with monotonic attention"),
    "test_pointer_generator.py::test_incremental_step_equals_the_full_pass": (
        ("pointer_generator",), "the baseline's and coverage's steps against the full pass"),
    "test_decoding.py::test_no_attention_history_decodes_the_same": (
        ("greedy", "beam_coverage"),
        "plain beam search, the coverage penalty's beam with the greedy fallback, and sampling without attention history"),
    "test_decoding.py::test_loops_stop_once_every_hypothesis_has_finished": (
        ("greedy",), "beam search and sampling stop once every hypothesis has finished"),
}


# The node ids (relative to `tests/`) this pytest process collected, before
# any deselection: `tests/conftest.py` fills it, `tests/test_placement.py`
# checks each key against it.
COLLECTED = set()


def _relative(nodeid):
    return nodeid.split("tests/", 1)[-1] if nodeid.startswith("tests/") else nodeid


def file_of(key):
    """The test file (under `tests/`) of a key or node id."""
    return _relative(key).split("::", 1)[0]


def case_of(nodeid):
    """The parametrised case id of a node id (`None` without one)."""
    name = _relative(nodeid).rsplit("::", 1)[-1]
    return name[name.index("[") + 1:-1] if name.endswith("]") and "[" in name else None


def kept_in_quick(kept, case):
    """True when `case` is an entry of `kept` or matches one as a pattern."""
    return any(fnmatch.fnmatchcase(case, entry) for entry in kept)


def full_only(nodeid):
    """True for a test left out of the quick tier (marked `slow`): what
    FULL_ONLY names, and the cases of QUICK_CASES' tests it does not keep."""
    if any(matches(key, nodeid) for key in FULL_ONLY):
        return True
    case = case_of(nodeid)
    return case is not None and any(
        matches(key, nodeid) and not kept_in_quick(kept, case)
        for key, (kept, _) in QUICK_CASES.items())


def matches(key, nodeid):
    """True when `key` (a file, a test function or one case) names `nodeid`."""
    nodeid = _relative(nodeid)
    return nodeid == key or nodeid.startswith(key + "[") or nodeid.startswith(key + "::")


def placement(nodeid):
    """The backend a test is placed on, or None when it runs on all three."""
    best = None
    for key, (backend, _) in HEAVY.items():
        if matches(key, nodeid):
            if best is None or len(key) > len(best[0]):
                best = (key, backend)
    return None if best is None else best[1]


def table():
    """tests/README.md's table of heavy tests (markdown), in the order above."""
    rows = ["| heavy test (under `tests/`) | process | what it runs |",
            "|---|---|---|"]
    rows += [f"| `{key}` | {backend} | {what} |"
             for key, (backend, what) in HEAVY.items()]
    return "\n".join(rows)


def full_only_table():
    """tests/README.md's table of what the quick tier leaves out (markdown)."""
    rows = ["| left out of the quick tier (under `tests/`) | what it runs |", "|---|---|"]
    rows += [f"| `{key}` | {what} |" for key, what in FULL_ONLY.items()]
    rows += [f"| `{key}`, but for {', '.join(f'`{k}`' for k in kept)} | {what} |"
             for key, (kept, what) in QUICK_CASES.items()]
    return "\n".join(rows)
