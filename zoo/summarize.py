"""Collect zoo/<model>/results.json into the table of zoo/README.md.

    python zoo/summarize.py
"""

import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ORDER = ["seq2seq", "cho_encoder_decoder", "bahdanau_nmt", "luong_nmt",
         "transformer_nmt", "convs2s_nmt"]
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def table():
    results = {}
    for path in glob.glob(os.path.join(HERE, "*", "results.json")):
        with open(path) as f:
            r = json.load(f)
        if "bleu_beam5" in r:  # the translation recipes; others have their own
            results[r["model"]] = r
    buckets = ["1-5", "6-10", "11-15", "16-20", "21-30", "31-50"]
    lines = ["| model | greedy BLEU | beam5 BLEU | " +
             " | ".join(f"beam5, {b} words" for b in buckets) +
             " | parameters | epochs | train minutes |",
             "|---" * (6 + len(buckets)) + "|"]
    for name in sorted(results, key=lambda n: ORDER.index(n) if n in ORDER else 99):
        r = results[name]
        by = r["bleu_beam5_by_source_length"]
        lines.append(
            f"| [{name}]({name}/RESULTS.md) | {r['bleu_greedy']} | "
            f"{r['bleu_beam5']} | " +
            " | ".join(str(by.get(b, {}).get("bleu", "n/a")) for b in buckets) +
            f" | {r['parameters']:,} | {r['epochs']} | {r['train_minutes']} |")
    missing = [n for n in ORDER if n not in results]
    if missing:
        lines.append("")
        lines.append("Not measured yet: " + ", ".join(missing) + ".")
    return "\n".join(lines)


def main():
    path = os.path.join(HERE, "README.md")
    with open(path) as f:
        text = f.read()
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n" + table() + "\n" + END + tail)
    print(table())


if __name__ == "__main__":
    main()
