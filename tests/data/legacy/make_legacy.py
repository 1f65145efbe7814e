"""How the files in this folder were written (the data's provenance).

They are `.keras` files saved by kerattn at commit 0d3b9ef, whose zoo
models were plain `ZooModel`s decoded through step adapters found by
layer names. `tests/test_legacy_files.py` loads them and checks that they
decode as recorded. This script ran at that commit, under JAX:

    KERAS_BACKEND=jax python tests/data/legacy/make_legacy.py tests/data/legacy

It uses that commit's API (`kerattn.zoo.incremental`,
`kerattn.decoding.search_incremental`) and does not run on the current
package.
"""

import os
import sys
import types

import keras
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import zoo_cases  # noqa: E402

from kerattn import decoding, zoo  # noqa: E402

NAMES = ["bahdanau_nmt", "luong_nmt", "luong_nmt_local_p", "seq2seq",
         "cho_encoder_decoder", "transformer_nmt", "convs2s_nmt",
         "show_attend_tell_soft", "show_attend_tell_hard"]
VOCAB = types.SimpleNamespace(bos_id=2, eos_id=3, pad_id=0, decode=None)


def main(directory):
    for name in NAMES:
        model, x, y = zoo_cases.build(name)
        model.fit(x, y, batch_size=zoo_cases.B, epochs=1, verbose=0)
        model.save(os.path.join(directory, f"{name}.keras"))
        logits = zoo_cases.predict(model, x)
        if name.startswith("show_attend_tell"):
            inc = zoo.ShowAttendTellIncremental(model)
            inputs, pad = x["images"], None
        else:
            inc = zoo.incremental(model)
            inputs, pad = x["source_ids"], 0
        kwargs = {"max_length": 7} if name == "transformer_nmt" else {}
        greedy = decoding.search_incremental(inc, inputs, VOCAB, 1, 7,
                                             source_pad_id=pad,
                                             encode_kwargs=kwargs)
        beam = decoding.search_incremental(inc, inputs, VOCAB, 3, 7,
                                           source_pad_id=pad,
                                           encode_kwargs=kwargs,
                                           never_worse_than_greedy=False)
        np.savez(os.path.join(directory, f"{name}.npz"),
                 logits=logits,
                 greedy_tokens=keras.ops.convert_to_numpy(greedy["tokens"]),
                 greedy_scores=keras.ops.convert_to_numpy(greedy["scores"]),
                 beam_tokens=keras.ops.convert_to_numpy(beam["tokens"])[:, 0],
                 beam_scores=keras.ops.convert_to_numpy(beam["scores"])[:, 0],
                 **{f"x_{k}": v for k, v in x.items()})
        print(name, os.path.getsize(os.path.join(directory, f"{name}.keras")))


if __name__ == "__main__":
    main(sys.argv[1])
