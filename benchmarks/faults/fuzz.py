#!/usr/bin/env python3
"""Seeded bad inputs for the fault campaign (benchmarks/faults/run.sh).

usage: fuzz.py BENCH OUT N SEED

Builds a small valid native benchmark from BENCH (its first dialogues, their gold passages and
some other passages, the matching qrels, a TREC run over them), then writes N case folders
under OUT, each the small benchmark with 1-3 seeded mutations: cut, dropped, doubled or
overlong lines, flipped bytes, invalid UTF-8, a BOM, CRLF, wrong JSON types, ids holding tabs
or newlines, deep nesting, empty or missing files, bad qrels and run columns, garbage in
benchmark.toml. The same seed writes the same cases.
"""

import json
import os
import random
import shutil
import sys

FILES = ["corpus.jsonl", "dialogues.jsonl", "qrels.tsv", "benchmark.toml", "run.txt"]


def small_benchmark(bench, out, rng):
    os.makedirs(out, exist_ok=True)
    dialogues = []
    with open(os.path.join(bench, "dialogues.jsonl"), encoding="utf-8") as f:
        for line in f:
            dialogues.append(line)
            if len(dialogues) >= 6:
                break
    gold = set()
    turns = []
    for line in dialogues:
        d = json.loads(line)
        for t in d.get("turns", []):
            turns.append(t["id"])
            for g in t.get("gold", []):
                gold.add(g["passage_id"])
    corpus = []
    others = []
    with open(os.path.join(bench, "corpus.jsonl"), encoding="utf-8") as f:
        for line in f:
            p = json.loads(line)
            if p["id"] in gold:
                corpus.append(line)
            elif len(others) < 60:
                others.append(line)
            if len(corpus) >= len(gold) and len(others) >= 60:
                break
    corpus += others
    with open(os.path.join(out, "corpus.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(corpus)
    with open(os.path.join(out, "dialogues.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(dialogues)
    qrels = []
    for line in dialogues:
        d = json.loads(line)
        for t in d.get("turns", []):
            for g in t.get("gold", []):
                qrels.append(f"{t['id']}\t0\t{g['passage_id']}\t{g['grade']}\n")
    with open(os.path.join(out, "qrels.tsv"), "w", encoding="utf-8") as f:
        f.writelines(qrels)
    shutil.copy(os.path.join(bench, "benchmark.toml"), os.path.join(out, "benchmark.toml"))
    ids = [json.loads(l)["id"] for l in corpus]
    run = []
    for q in turns:
        docs = rng.sample(ids, min(20, len(ids)))
        for r, d in enumerate(docs):
            run.append(f"{q} Q0 {d} {r + 1} {20 - r}.5 fuzz\n")
    with open(os.path.join(out, "run.txt"), "w", encoding="utf-8") as f:
        f.writelines(run)


def lines_of(data):
    return data.split(b"\n")


def mutate(data, name, rng):
    """One mutation of one file's bytes."""
    kinds = [
        "cut", "drop_line", "double_line", "flip", "utf8", "bom", "crlf", "long_line",
        "empty", "blank_lines", "type", "tab_id", "deep", "columns", "numbers",
    ]
    kind = rng.choice(kinds)
    ls = lines_of(data)
    pick = rng.randrange(max(1, len(ls)))
    if kind == "cut" and data:
        return kind, data[: rng.randrange(len(data))]
    if kind == "drop_line" and ls:
        del ls[pick]
        return kind, b"\n".join(ls)
    if kind == "double_line" and ls:
        ls.insert(pick, ls[pick])
        return kind, b"\n".join(ls)
    if kind == "flip" and data:
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] = rng.randrange(256)
        return kind, bytes(b)
    if kind == "utf8":
        ls.insert(pick, b'{"id": "\xff\xfe\xc3", "text": "\xed\xa0\x80"}')
        return kind, b"\n".join(ls)
    if kind == "bom":
        return kind, b"\xef\xbb\xbf" + data
    if kind == "crlf":
        return kind, data.replace(b"\n", b"\r\n")
    if kind == "long_line":
        ls.insert(pick, b'{"id": "long", "text": "' + b"x" * 1_000_000 + b'"}')
        return kind, b"\n".join(ls)
    if kind == "empty":
        return kind, b""
    if kind == "blank_lines":
        ls.insert(pick, b"   \t ")
        ls.insert(pick, b"")
        return kind, b"\n".join(ls)
    if kind == "deep":
        ls.insert(pick, b"[" * 100_000 + b"]" * 100_000)
        return kind, b"\n".join(ls)
    if name.endswith(".jsonl") and kind in ("type", "tab_id"):
        try:
            v = json.loads(ls[pick])
        except (ValueError, IndexError):
            return "cut", data[: len(data) // 2]
        if kind == "tab_id":
            v["id"] = str(v.get("id", "x")) + rng.choice(["\t1", "\n2", " 3", "\r"])
        else:
            key = rng.choice(list(v.keys()) or ["id"])
            v[key] = rng.choice([None, 123, -1.5e308, "", [], {}, True, "x" * 3])
        ls[pick] = json.dumps(v, ensure_ascii=rng.random() < 0.5).encode()
        return kind, b"\n".join(ls)
    if kind in ("columns", "numbers") and name in ("qrels.tsv", "run.txt") and ls and ls[pick]:
        cols = ls[pick].split()
        if kind == "columns":
            cols = cols[: rng.randrange(len(cols))] if rng.random() < 0.5 else cols + [b"extra"]
        elif cols:
            i = rng.randrange(len(cols))
            cols[i] = rng.choice([b"NaN", b"inf", b"-inf", b"99999999999999999999", b"-7", b"1e400", b"0x10"])
        ls[pick] = b"\t".join(cols)
        return kind, b"\n".join(ls)
    if name == "benchmark.toml":
        return "toml", data + rng.choice([b"\n[[[", b"\nversion = 3\n", b"\nname = \n", b"\x00\x01"])
    return "flip", bytes(data[:-1]) + b"\x00" if data else b"\x00"


def main():
    bench, out, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    base = os.path.join(out, "base")
    small_benchmark(bench, base, rng)
    kinds = {}
    for i in range(n):
        case = os.path.join(out, f"case-{i:04d}")
        shutil.copytree(base, case)
        for _ in range(rng.randint(1, 3)):
            name = rng.choice(FILES)
            path = os.path.join(case, name)
            if rng.random() < 0.05:
                if os.path.exists(path):
                    os.remove(path)
                kinds["missing_file"] = kinds.get("missing_file", 0) + 1
                continue
            data = open(path, "rb").read() if os.path.exists(path) else b""
            kind, data = mutate(data, name, rng)
            kinds[kind] = kinds.get(kind, 0) + 1
            with open(path, "wb") as f:
                f.write(data)
    print(f"   {n} cases; mutations: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())), file=sys.stderr)


if __name__ == "__main__":
    main()
