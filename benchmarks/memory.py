"""Figure 10: peak host memory of figures 2 and 3's training steps.

For each model, in a fresh process of the backend (so that its peak is
its own): the model and its batch are built, then the high-water mark of
the process' resident memory (`VmHWM`) is read; then the model is compiled
as figures 2 and 3 compile it (`common.jit_for_backend`) and trained on the
batch for `STEPS` steps, the first tracing and compiling it; the figure is
how far the high-water mark rose, in MiB: activations kept for the
backward pass, gradients, Adam's slots, the compiled program and the
backend's allocator caches, the same for both sides.

- figure 3's `bahdanau_nmt` at T=50 against the Keras tutorial-loop peer
  (and, on torch, the PyTorch tutorial model);
- figure 2's `transformer_nmt` against the keras-hub peer.

On a GPU the host figure says little; this runs on the CPU the other
figures ran on.
"""

import json
import os
import subprocess
import sys

from benchmarks import common

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
STEPS = 4


def high_water_mib():
    """The process' peak resident memory so far (`VmHWM`), MiB. Not
    `ru_maxrss`: on Linux it keeps the parent's peak across fork+exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    raise OSError("no VmHWM in /proc/self/status")


def child(which, side, quick):
    """In a fresh process: `{"base_mib", "peak_mib", "growth_mib"}`."""
    import keras

    keras.utils.set_random_seed(0)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if which == "bahdanau_nmt":
        from benchmarks import bahdanau

        s = bahdanau.QUICK_SIZE if quick else bahdanau.SIZE
        length = 5 if quick else 50
        x, y = bahdanau._data(s, length)
        if side == "torch_tutorial":
            return _torch_peer(s, length, x, y)
        ours, peer = bahdanau._keras_models(s, length)
    else:
        from benchmarks import transformer

        s = transformer.QUICK_SIZE if quick else transformer.SIZE
        x, y = transformer.batch(s)
        ours = peer = None
        if side == "ours":
            ours = transformer.kerattn_model(s)
        else:
            peer = transformer.keras_hub_model(s)
    model = ours if side == "ours" else peer
    del ours, peer
    base = high_water_mib()
    model.compile(optimizer="adam", loss=loss, jit_compile=common.jit_for_backend())
    for _ in range(STEPS):
        model.train_on_batch(x, y)
    peak = high_water_mib()
    return {"base_mib": base, "peak_mib": peak, "growth_mib": peak - base}


def _torch_peer(s, length, x, y):
    import torch

    from benchmarks.peers.torch_tutorial_nmt import TutorialNMT, train_step_fn

    torch.manual_seed(0)
    model = TutorialNMT(s["vocab"], s["embedding_dim"], s["units"],
                        s["alignment_units"], s["maxout_units"])
    step = train_step_fn(model)
    args = [torch.from_numpy(x["source_ids"]).long(),
            torch.from_numpy(x["target_in_ids"]).long(), torch.from_numpy(y).long()]
    base = high_water_mib()
    for _ in range(STEPS):
        step(*args).item()
    peak = high_water_mib()
    return {"base_mib": base, "peak_mib": peak, "growth_mib": peak - base}


def _measure(which, side, quick):
    code = ("import json, sys; sys.path.insert(0, %r); "
            "from benchmarks import memory; "
            "print('RESULT ' + json.dumps(memory.child(%r, %r, %r)))"
            % (REPO, which, side, quick))
    env = dict(os.environ, KERAS_BACKEND=common.backend(), TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", code], env=env, text=True,
                          capture_output=True, timeout=1800)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError((proc.stderr.strip().splitlines() or ["no output"])[-1][:300])


def run(quick=False):
    rows = []
    peers = {"bahdanau_nmt": [("keras_tutorial", "Keras, TF-tutorial loop + AdditiveAttention")],
             "transformer_nmt": [("keras_hub", "keras-hub TransformerEncoder/Decoder")]}
    if common.backend() == "torch":
        peers["bahdanau_nmt"].append(("torch_tutorial", "PyTorch tutorial AttnDecoderRNN (eager)"))
    for which, sides in peers.items():
        ours = _measure(which, "ours", quick)
        for side, peer_name in sides:
            peer = _measure(which, side, quick)
            rows.append(common.row(
                10, f"{which} training step, peak host memory growth",
                ours["growth_mib"], peer["growth_mib"], peer_name, "MiB",
                target=1.0, ours_peak_mib=ours["peak_mib"],
                peer_peak_mib=peer["peak_mib"], steps=STEPS,
                jit_compile=common.jit_for_backend()))
    return rows
