#!/usr/bin/env python3
"""Seeded generator of TREC qrels and runs for benchmarking `mtr eval` against other tools.

Writes QUERIES x DOCS run lines (about 10M for both standard sets) with conversational query
ids (`<dialogue-hash><::><turn>`, as MTRAG uses), scores rounded to 2 decimals so that many
documents tie, rank order in the file (as retrievers write it) but tied documents in arbitrary
docno order, plus graded qrels (grades 0..3) with some judged documents the run never retrieves.

Same seed => byte-identical files (Python's `random.Random(seed)` is stable across 3.x).

usage: gen_trec.py OUT_DIR [--queries N] [--docs N] [--seed S] [--name NAME]
       gen_trec.py OUT_DIR --standard   # both standard sets: 10k x 1000 and 100k x 100
"""

import argparse
import os
import random


def generate(out_dir, name, n_queries, n_docs, seed, corpus=5_000_000):
    rng = random.Random(seed)
    os.makedirs(out_dir, exist_ok=True)
    run_path = os.path.join(out_dir, f"{name}.run")
    qrels_path = os.path.join(out_dir, f"{name}.qrels")
    turns_per_dialogue = 8
    with open(run_path, "w", buffering=1 << 20) as run, open(qrels_path, "w", buffering=1 << 20) as qrels:
        for q in range(n_queries):
            dialogue = rng.getrandbits(64)
            qid = f"{dialogue:016x}<::>{q % turns_per_dialogue + 1}"
            docs = rng.sample(range(corpus), n_docs)
            # Scores: descending with plateaus (ties).
            score = 50.0 + rng.random() * 10
            lines = []
            rank = 0
            i = 0
            while i < n_docs:
                tie = 1 if rng.random() < 0.7 else rng.randint(2, 6)
                group = docs[i : i + tie]
                # Tied documents come in arbitrary docno order.
                rng.shuffle(group)
                for d in group:
                    rank += 1
                    lines.append(f"{qid} Q0 doc{d:07d} {rank} {score:.2f} bench\n")
                i += tie
                score -= 0.01 + rng.random() * 0.05
            run.write("".join(lines))
            # Qrels: some retrieved docs judged (graded), some never-retrieved relevant docs.
            judged = {}
            for d in rng.sample(docs[: min(n_docs, 200)], min(n_docs, 8)):
                judged[d] = rng.choice((0, 0, 1, 1, 2, 3))
            for _ in range(rng.randint(0, 4)):
                judged[rng.randrange(corpus)] = rng.choice((1, 2, 3))
            qrels.write("".join(f"{qid} 0 doc{d:07d} {g}\n" for d, g in judged.items()))
    return run_path, qrels_path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--name", default=None)
    ap.add_argument("--standard", action="store_true", help="write both standard sets")
    a = ap.parse_args()
    if a.standard:
        sets = [("q10k_d1000", 10_000, 1000, a.seed), ("q100k_d100", 100_000, 100, a.seed + 1)]
    else:
        sets = [(a.name or f"q{a.queries}_d{a.docs}", a.queries, a.docs, a.seed)]
    for name, nq, nd, seed in sets:
        run, qrels = generate(a.out_dir, name, nq, nd, seed)
        print(f"{name}: {run} ({os.path.getsize(run) / 1e6:.0f} MB), {qrels}")


if __name__ == "__main__":
    main()
