"""What makes the stacked-LSTM Luong model learn at CPU size: an ablation.

Each variant is the recipe (`kerattn.recipes.translation`, the "base"
preset) with one or more changes to the builder or the training settings,
trained for `--epochs` on the same data and seed and scored by greedy
sacreBLEU on the test split. Results go to `ablation.json` beside this
file, which the recipe's report prints as a table in RESULTS.md.

    python zoo/luong_nmt/ablation.py --epochs 1 recipe lr5e-3
    python zoo/luong_nmt/ablation.py --list
"""

import argparse
import json
import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (what it changes, builder overrides, training overrides)
VARIANTS = {
    "recipe": ("the recipe before this study: Adam 2e-3, dropout 0.2 on "
               "embeddings and h~", {}, {}),
    "lr5e-3": ("Adam 5e-3", {}, {"learning_rate": 5e-3}),
    "lr1e-2": ("Adam 1e-2", {}, {"learning_rate": 1e-2}),
    "no-dropout": ("no dropout", {"dropout": 0.0}, {}),
    "no-feeding": ("no input feeding", {"input_feeding": False}, {}),
    "uniform0.1": ("uniform(-0.1, 0.1) initialisation (section 4.1)",
                   {"initializer_range": 0.1}, {}),
    "reversed": ("reversed source (section 4.1)", {"reverse_source": True}, {}),
    "layer-dropout": ("dropout also between the encoder's LSTM layers",
                      {"layer_dropout": True}, {}),
}


def run(names, epochs, seed=0, max_train=None):
    import keras

    from kerattn.recipes import translation

    path = os.path.join(HERE, "ablation.json")
    table = {}
    if os.path.exists(path):
        with open(path) as f:
            table = json.load(f)
    data = translation.prepare(max_train=max_train)
    config = translation.settings("luong_nmt")
    for name in names:
        what, builder, training = VARIANTS[name]
        keras.utils.set_random_seed(seed)
        model = translation.build("luong_nmt", data, config["preset"], **builder)
        settings = {k: config[k] for k in ("learning_rate", "label_smoothing",
                                           "warmup_steps")}
        settings.update(training)
        start = time.time()
        summary = translation.train(model, data, epochs=epochs, seed=seed,
                                    verbose=2, **settings)
        results = translation.evaluate(model, data, beam_width=None)
        row = {"what": what, "builder": builder, "training": training,
               "epochs": summary["epochs"], "seed": seed,
               "final_loss": summary["final_loss"],
               "final_val_loss": summary["final_val_loss"],
               "bleu_greedy": results["bleu_greedy"],
               "minutes": round((time.time() - start) / 60, 2)}
        print(name, row, flush=True)
        table[f"{name}@{epochs}"] = row
        with open(path, "w") as f:
            json.dump(table, f, indent=1)
    return table


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("variants", nargs="*")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-train", type=int, default=None)
    p.add_argument("--list", action="store_true")
    args = p.parse_args()
    if args.list or not args.variants:
        for name, (what, _, _) in VARIANTS.items():
            print(f"{name:14s} {what}")
    else:
        run(args.variants, args.epochs, args.seed, args.max_train)
