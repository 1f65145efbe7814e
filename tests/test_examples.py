"""`examples/fit.py`, the model.fit script, runs from the command line.

Each run is the script in a fresh subprocess with `--backend` set, at
`--size tiny`, on real data: the gettext messages and the digit strips of
this machine, and the real samples in tests/data for the tasks whose full
data needs Debian's archive (`--data`). The runs are heavy: each case
runs once, in the pytest process tests/placement.py puts it in (its
`--backend` is the one in its id, whichever process starts it), so that
all four tasks and all three `--backend` values are covered without
running every task three times (the models themselves are tested on every
backend elsewhere).
One run per backend trains distributed on two processes standing in for
two hosts, started by the commands of docs/distribution.md (tests/hosts.py:
keras.distribution.initialize's variables on JAX, with 2 virtual devices a
host; a 2-worker TF_CONFIG on TensorFlow; two `torchrun --nnodes 2`
launchers on torch), each host in its own directory: only the chief's has
the output. One more trains on one host's 2 virtual devices on TensorFlow
(MirroredStrategy).
"""

import json
import os
import subprocess
import sys

import pytest

import hosts
import kerattn
from kerattn.datasets import cmudict_g2p, tsv_pairs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "tests", "data")
SCRIPT = os.path.join(REPO, "examples", "fit.py")

DATA_PARALLEL = ["--distribute", "data", "--virtual-devices", "2"]
TWO_HOSTS = ["--distribute", "data"]   # run by tests/hosts.py
TSV = os.path.join(DATA, "gettext_fr_sample.tsv")  # 240 gettext pairs, a user's file
# 80 Debian descriptions and their synopses (64 train, 8 valid, 8 test)
SUMMARIES = os.path.join(DATA, "summaries_sample.tsv")
# A user's own test file: those 8 test pairs, in another order (given with
# --data SUMMARIES, they are left out of training, with a warning).
SUMMARIES_TEST = os.path.join(DATA, "summaries_sample_test.tsv")
CMUDICT = os.path.join(DATA, "cmudict_sample.dict")   # 414 words, a user's list
RUNS = {  # --backend -> [(model, flags)]: every model, each recipe's method
    "tensorflow": [("bahdanau_nmt", ["--max-train", "300", "--max-test", "20",
                                     "--pipeline", "tf.data", *TWO_HOSTS]),
                   ("seq2seq", ["--data", TSV]),
                   ("cho_encoder_decoder", ["--max-train", "200", "--max-test", "10",
                                            *DATA_PARALLEL])],
    "jax": [("show_attend_tell", ["--max-train", "64", "--max-test", "8",
                                  "--virtual-devices", "2", *TWO_HOSTS]),
            ("aoa_reader", ["--data", os.path.join(DATA, "kjv_cloze_sample.txt")]),
            ("convs2s_nmt", ["--data", TSV])],
    # pointer_generator on torch: 12 s there, 52 s on TensorFlow (2026-12-05).
    "torch": [("han_classifier", ["--data", os.path.join(DATA, "topical10_sample.jsonl")]),
              ("self_attentive_classifier",
               ["--data", os.path.join(DATA, "topical10_sample.jsonl")]),
              ("pointer_generator", ["--data", SUMMARIES, "--test-data",
                                     SUMMARIES_TEST]),
              ("transformer_nmt", ["--max-train", "200", "--max-test", "10",
                                   *TWO_HOSTS]),
              ("luong_nmt", ["--data", TSV]),
              # A soft attention that streams on a wait-k schedule, the
              # end of each word marked (the run folder keeps the marker),
              # its early stopping on the validation words' WER.
              ("g2p", ["--data", CMUDICT, "--size", "g2p-streaming",
                       "--wait-k", "2", "--wait-rate", "1.2", "--end-marker",
                       "--monitor", "val_wer"])],
}
# The runs whose folder a fresh process loads and uses (tests/use_run.py).
USED = ("seq2seq", "pointer_generator", "g2p", "han_classifier",
        "self_attentive_classifier")


def run_script(args, tmp_path, launcher=(sys.executable,)):
    env = dict(os.environ)
    env.pop("KERAS_BACKEND", None)  # the flag chooses it
    return subprocess.run([*launcher, SCRIPT, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


CASES = [(backend, model, extra) for backend, runs in RUNS.items()
         for model, extra in runs]


@pytest.mark.parametrize("backend,model,extra", CASES,
                         ids=[f"{b}-{m}" for b, m, _ in CASES])
def test_fit_script_trains_evaluates_and_writes(backend, model, extra, tmp_path):
    args = [model, "--backend", backend, "--size", "tiny", "--epochs", "1",
            "--batch-size", "16", *extra]
    hosts_run = extra[-len(TWO_HOSTS):] == TWO_HOSTS
    if hosts_run:   # the same command on both hosts, "out" under each's own
        env = dict(os.environ)
        env.pop("KERAS_BACKEND", None)
        (_, stdout, _), _ = hosts.run(backend, [SCRIPT, *args, "--output-dir", "out"],
                                      str(tmp_path), env=env, timeout=600)
        result = subprocess.CompletedProcess(args, 0, stdout, "")
        out = tmp_path / "host0" / "out"
        assert os.listdir(tmp_path / "host1") == []   # only the chief writes
        vocabularies = json.loads((out / "run.json").read_text())["vocabularies"]
        assert sorted(os.listdir(out)) == sorted(
            ["model.keras", "results.json", "attention.png", "run.json",
             *vocabularies.values()])
    else:
        out = tmp_path / "out"
        result = run_script([*args, "--output-dir", str(out)], tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["backend"] == backend
    size = [a for i, a in enumerate(args) if i and args[i - 1] == "--size"][-1]
    assert results["model"] == model and results["size"] == size
    # The run names its seed and the machine it trained on.
    assert results["seed"] == 0 and results["machine"]["backend"] == backend
    # The classifiers' recipe trains in two stages (embeddings fixed, then
    # fine-tuned).
    assert results["epochs"] == (2 if model.endswith("classifier") else 1)
    assert results["batch_size"] == 16
    devices = 2 if "--virtual-devices" in extra else 1
    assert results["processes"] == (2 if hosts_run else 1)
    assert results["replicas"] == (results["processes"] * devices
                                   if "--distribute" in extra else 1)
    assert model.endswith(("nmt", "seq2seq", "decoder")) == ("bleu_greedy" in results)
    if model == "pointer_generator":   # ROUGE beside the lead baselines
        scores = results["rouge"]
        assert all(0 <= scores[k] <= 100 for k in ("rouge1", "rouge2", "rougeL"))
        assert f"ROUGE-1 / 2 / L F1: {scores['rouge1']:.2f} / " in result.stdout
        assert "| lead sentence " in result.stdout
        # the user's test file, whole; its pairs were not trained on
        assert results["test_pairs"] == len(tsv_pairs(SUMMARIES_TEST)) == 8
        assert results["test_data"] == SUMMARIES_TEST
        assert "8 examples of the training data are also in the test data" in (
            result.stderr)
    elif model == "g2p":   # error rates on 5% of the words, by their hash
        assert results["per"] >= 0 and 0 <= results["wer"] <= 100   # PER: edits
        # --monitor val_wer: the validation words decoded after each epoch
        assert [0 <= w <= 100 for w in results["val_wers"]] == [True] * results["epochs"]
        assert results["test_words"] == len(cmudict_g2p(path=CMUDICT)["test"])
        assert (f"g2p word error rate {results['wer']:.2f}%, phoneme error rate "
                f"{results['per']:.2f}%") in result.stdout
        streamed = results["streaming"]   # a model that streams says how
        assert streamed["words"] == results["test_words"]
        assert 0 <= streamed["early"] <= 1 and 0 <= streamed["same_as_offline"] <= 1
        assert f"{streamed['early']:.1%} of the phonemes committed" in result.stdout
    else:
        metric = ("bleu_beam5" if model.endswith(("nmt", "seq2seq", "decoder")) else
                  {"show_attend_tell": "exact_caption_accuracy"}.get(model, "accuracy"))
        assert 0 <= results[metric] <= (100 if "bleu" in metric else 1)
    # seq2seq and Cho's encoder-decoder have no attention to draw.
    drawn = model not in ("seq2seq", "cho_encoder_decoder")
    assert (out / "attention.png").exists() == drawn
    if drawn:
        assert (out / "attention.png").stat().st_size > 1000
    assert results["data"] == next(iter(
        extra[i + 1] for i, flag in enumerate(extra) if flag == "--data"), None)
    loaded = kerattn.load_model(str(out / "model.keras"))
    assert loaded.count_params() == results["parameters"]
    if model == "self_attentive_classifier":   # its recipe's coefficient
        from kerattn.recipes.classification import SELF_ATTENTIVE_PENALTY

        assert loaded.get_layer("attention").penalty == SELF_ATTENTIVE_PENALTY
    if model in USED:
        _use_the_run(model, backend, str(out), tmp_path)
    if model.endswith("classifier") or model == "aoa_reader":   # the baselines beside it
        assert f"{model} all: {results['accuracy']:.3f} ± " in result.stdout
        assert "baselines on the same split:" in result.stdout


def _use_the_run(model, backend, folder, tmp_path):
    """In a fresh process, `kerattn.load_run(folder)` and use it as a user
    would (`tests/use_run.py`), on the backend that trained it."""
    env = dict(os.environ, KERAS_BACKEND=backend)
    export = [str(tmp_path / "exported")] if model == "seq2seq" else []
    used = subprocess.run([sys.executable, os.path.join(REPO, "tests", "use_run.py"),
                           folder, *export], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert used.returncode == 0, used.stderr[-3000:]
    got = json.loads(used.stdout.strip().splitlines()[-1])
    if model == "seq2seq":
        assert got["task"] == "translation"
        assert got["vocabularies"] == ["source", "target"]
        assert len(got["outputs"]) == 2 and all(isinstance(t, str) for t in got["outputs"])
        assert got["served"] == got["outputs"]   # the SavedModel, from the folder
    elif model == "pointer_generator":   # copied back from its extended id
        assert got["task"] == "summarisation" and not got["known"]
        assert got["outputs"][0].split()[0] == got["oov"], got
    elif model == "g2p":   # streams as offline decoding does, before the end
        assert got["can_stream"] == [True, ""] and got["end_marker"]
        chunks = got["chunks"]
        assert " ".join(sum(chunks, [])) == got["offline"]
        assert any(chunks[:len("phoneme") - 1]), chunks
    elif model.endswith("classifier"):   # a label name, from the saved names
        assert got["task"] == "classification"
        assert got["label"] in got["labels"] and len(got["labels"]) >= 2


BAD_FLAGS = [(["no_such_model"], "invalid choice"),
             (["han_classifier", "--epochs", "0"], "--epochs must be a positive"),
             (["han_classifier", "--backend", "numpy"], "invalid choice"),
             (["han_classifier", "--distribute", "model"],
              "only transformer_nmt and seq2seq"),
             (["han_classifier", "--virtual-devices", "0"],
              "--virtual-devices must be a positive"),
             (["han_classifier", "--wait-k", "2"], "--wait-k: g2p only"),
             (["han_classifier", "--end-marker"], "--end-marker: g2p only"),
             (["han_classifier", "--monitor", "val_wer"], "--monitor: g2p only"),
             (["g2p", "--monitor", "wer"], "invalid choice"),
             (["g2p", "--wait-k", "0"], "--wait-k must be a positive"),
             (["g2p", "--wait-rate", "1.2"], "--wait-rate: a positive rate"),
             (["han_classifier", "--lookahead", "2"], "--lookahead: g2p only"),
             (["g2p", "--lookahead", "-1"], "--lookahead must be a non-negative"),
             (["g2p", "--latency-weight", "0.01"],
              "--latency-weight: a non-negative weight"),
             (["g2p", "--attention", "hard-monotonic", "--latency-weight", "-1"],
              "--latency-weight: a non-negative weight"),
             (["han_classifier", "--beam-width", "3"],
              "--beam-width: the test beam of the translation models, g2p and "
              "pointer_generator; han_classifier takes none"),
             (["show_attend_tell", "--beam-width", "2"],
              "show_attend_tell takes none (it decodes with beams 1 and 3)"),
             (["pointer_generator", "--test-data", "test.tsv"],
              "--test-data: the test split of your own data; give the "
              "training file with --data too")]


def _script():
    """examples/fit.py as a module (its `main` runs only as a command)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fit_script", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


# The flags are parsed in this process, by the script's own `parse_args`
# (what `main` calls first): argparse's `error` exits with status 2 and the
# message on stderr, as the command does. Without `--backend` the script
# selects none, so this process' Keras serves; the runs above start the
# command itself.
@pytest.mark.parametrize("args,message", BAD_FLAGS, ids=[
    "model", "epochs", "backend", "distribute", "virtual-devices", "wait-k-elsewhere",
    "end-marker-elsewhere", "monitor-elsewhere", "monitor-unknown",
    "wait-k-zero", "wait-rate-alone", "lookahead-elsewhere",
    "lookahead-negative", "latency-soft-attention", "latency-negative",
    "beam-width-elsewhere", "beam-width-captions", "test-data-alone"])
def test_fit_script_rejects_bad_flags(capsys, args, message):
    script = _script()
    with pytest.raises(SystemExit) as exit_:
        script.parse_args(args)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_fit_script_passes_the_streaming_flags_to_the_recipe(monkeypatch):
    """`--lookahead` and `--latency-weight` reach `g2p.fit` (and from there
    `luong_nmt`'s `lookahead` and `latency_loss_weight`), and `--monitor`
    its early stopping's (`train`'s `monitor`)."""
    from kerattn.recipes import g2p

    script = _script()
    seen = {}
    monkeypatch.setattr(g2p, "fit", lambda data, **kwargs: (seen.clear(),
                                                            seen.update(kwargs)))
    for flags in (["--size", "g2p-streaming", "--attention", "hard-monotonic",
                   "--lookahead", "3", "--latency-weight", "0.005",
                   "--monitor", "val_wer"], []):
        args = script.parse_args(["g2p", *flags])
        args.strategy = None   # main's, from the distribution flags
        script.fit(args)
        if flags:
            assert (seen["attention"], seen["lookahead"], seen["latency_weight"],
                    seen["monitor"]) == ("hard-monotonic", 3, 0.005, "val_wer")
    assert (seen["lookahead"], seen["latency_weight"]) == (0, 0.0)
    assert "monitor" not in seen   # g2p.fit's own default


@pytest.mark.parametrize("model,recipe", [
    ("luong_nmt", "translation"), ("pointer_generator", "summarisation"),
    ("g2p", "g2p"), ("self_attentive_classifier", "classification"),
    ("aoa_reader", "reading")])
def test_fit_script_passes_the_test_file_to_every_recipe(monkeypatch, model, recipe):
    """`--test-data` reaches each recipe's `fit` beside `--data`; without
    it the recipe's own default (no keyword) stands."""
    import importlib

    module = importlib.import_module(f"kerattn.recipes.{recipe}")
    script = _script()
    seen = []
    monkeypatch.setattr(module, "fit", lambda *args, **kwargs: seen.append(
        (args, kwargs)))
    for flags in (["--data", "train.txt", "--test-data", "test.txt"], []):
        args = script.parse_args([model, *flags])
        args.strategy = None   # main's, from the distribution flags
        script.fit(args)
    (given, with_test), (_, without) = seen
    assert "train.txt" in given and with_test["test_data"] == "test.txt"
    assert "test_data" not in without


@pytest.mark.parametrize("model,recipe", [
    ("luong_nmt", "translation"), ("pointer_generator", "summarisation"),
    ("g2p", "g2p")])
def test_fit_script_passes_the_beam_width_to_every_decoding_recipe(
        monkeypatch, model, recipe):
    """`--beam-width` reaches each decoding recipe's `fit`; without it the
    recipe's own beam stands (5 for translation and g2p, See et al.'s 4
    for pointer_generator), not one default for all."""
    import importlib

    module = importlib.import_module(f"kerattn.recipes.{recipe}")
    script = _script()
    seen = []
    monkeypatch.setattr(module, "fit", lambda *args, **kwargs: seen.append(kwargs))
    for flags in (["--beam-width", "3"], []):
        args = script.parse_args([model, *flags])
        args.strategy = None   # main's, from the distribution flags
        script.fit(args)
    with_flag, without = seen
    assert with_flag["beam_width"] == 3
    assert "beam_width" not in without


@pytest.mark.parametrize("results, expected", [
    ({"model": "han_classifier", "accuracy": 0.7, "test_documents": 100,
      "baselines": {"tfidf_logistic_regression": 0.65, "majority_class": 0.2}},
     ["han_classifier all: 0.700 ± 0.090 (95%, 100 test examples) | baselines on "
      "the same split: tfidf logistic regression 0.650, majority class 0.200"]),
    ({"model": "aoa_reader", "accuracy": 0.6,
      "accuracy_by_kind": {"verbs": 0.5, "all": 0.6},
      "test_per_kind": {"verbs": 400, "all": 1000},
      "baselines": {"bigram": {"verbs": 0.4, "all": 0.45}}},
     ["aoa_reader verbs: 0.500 ± 0.049 (95%, 400 test examples) | baselines on "
      "the same split: bigram 0.400",
      "aoa_reader all: 0.600 ± 0.030 (95%, 1000 test examples) | baselines on "
      "the same split: bigram 0.450"]),
    ({"model": "aoa_reader", "accuracy": 0.6,
      "accuracy_by_kind": {"verbs": 0.5, "all": 0.6},
      "test_per_kind": {"verbs": 400, "all": 1000},
      "paired_vs_bigram": {"verbs": [0.1, 0.041], "all": [0.15, 0.0213]},
      "baselines": {"bigram": {"verbs": 0.4, "all": 0.45}}},
     ["aoa_reader verbs: 0.500 ± 0.049 (95%, 400 test examples) | baselines on "
      "the same split: bigram 0.400 | minus bigram: +0.100 ± 0.041 (paired 95%)",
      "aoa_reader all: 0.600 ± 0.030 (95%, 1000 test examples) | baselines on "
      "the same split: bigram 0.450 | minus bigram: +0.150 ± 0.021 (paired 95%)"]),
    ({"model": "bahdanau_nmt", "bleu_greedy": 1.0}, []),
    ({"model": "g2p", "wer": 40.0, "per": 120.5, "test_words": 20,
      "attended_nowhere": 0.25},
     ["g2p word error rate 40.00%, phoneme error rate 120.50% on 20 test words "
      "(the phoneme rate counts edits to the closest pronunciation over its "
      "length, so it can pass 100%)",
      "attended nowhere: 0.2500 (the share of phonemes a hard monotonic "
      "attention wrote from no letter; 0 for a soft attention)"]),
    ({"model": "g2p", "wer": 40.0, "per": 10.0, "test_words": 20,
      "attended_nowhere": 0.0, "streaming": {
          "words": 20, "early": 0.6631, "lagging": 2.6385, "same_as_offline": 1.0}},
     ["g2p word error rate 40.00%, phoneme error rate 10.00% on 20 test words "
      "(the phoneme rate counts edits to the closest pronunciation over its "
      "length, so it can pass 100%)",
      "attended nowhere: 0.0000 (the share of phonemes a hard monotonic "
      "attention wrote from no letter; 0 for a soft attention)",
      "streamed a letter at a time: 66.3% of the phonemes committed before the "
      "word's last letter, 2.64 letters behind on average (average lagging), "
      "100.0% of the words as offline"]),
])
def test_fit_script_prints_the_baselines_beside_the_result(results, expected):
    """The interval is the normal approximation, 1.96 sqrt(p (1 - p) / n)."""
    assert _script().beside_baselines(results) == expected
