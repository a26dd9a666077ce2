"""overlap@K of two runs: mean over shared queries of |topK(A) & topK(B)| / K.
Reads TREC runs (qid Q0 docid rank score tag) or MTRAG JSONL runs (task_id, contexts).
Ranking = score descending, ties by docid descending (trec_eval's order)."""

import json
import sys
from collections import defaultdict


def read(path):
    run = defaultdict(list)
    with open(path, encoding="utf-8") as f:
        first = f.read(1)
        f.seek(0)
        if first == "{":
            for line in f:
                d = json.loads(line)
                for c in d["contexts"]:
                    run[d["task_id"]].append((float(c["score"]), c["document_id"]))
        else:
            for line in f:
                q, _, d, _, s, *_ = line.split()
                run[q].append((float(s), d))
    return {q: [d for _, d in sorted(v, key=lambda x: (-x[0], tuple(-ord(c) for c in x[1])))] for q, v in run.items()}


def main(a, b, k):
    ra, rb = read(a), read(b)
    shared = sorted(set(ra) & set(rb))
    vals = [len(set(ra[q][:k]) & set(rb[q][:k])) / k for q in shared]
    print(json.dumps({"overlap_at": k, "queries": len(shared), "overlap": round(sum(vals) / max(1, len(vals)), 4),
                      "a": a, "b": b}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10)
