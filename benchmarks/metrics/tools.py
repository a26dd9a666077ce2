#!/usr/bin/env python3
"""Evaluate one qrels/run pair with one Python tool and report CPU time of the file-to-numbers
work, after a warm-up on the first 5000 lines of the same files in the same process (this pays
numba's JIT for ranx and import-time costs for all tools, equally).

usage: tools.py {pytrec_eval,ranx,ir_measures} QRELS RUN
prints one JSON line: {"tool", "cpu_s", "wall_s", "values": {measure: mean}}
Measures: ndcg_cut.10, map, recall.100, recip_rank (trec_eval semantics where the tool allows).
"""

import json
import os
import resource
import sys
import tempfile
import time


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_pytrec_eval(qrels_path, run_path):
    import pytrec_eval

    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "recall.100", "recip_rank"})
    res = ev.evaluate(run)
    n = len(res)
    keys = {"ndcg_cut_10": "ndcg_cut.10", "map": "map", "recall_100": "recall.100", "recip_rank": "recip_rank"}
    return {v: sum(q[k] for q in res.values()) / n for k, v in keys.items()}


def run_ranx(qrels_path, run_path):
    from ranx import Qrels, Run, evaluate

    qrels = Qrels.from_file(qrels_path, kind="trec")
    run = Run.from_file(run_path, kind="trec")
    res = evaluate(qrels, run, ["ndcg@10", "map", "recall@100", "mrr"], make_comparable=True)
    return {"ndcg_cut.10": res["ndcg@10"], "map": res["map"], "recall.100": res["recall@100"], "recip_rank": res["mrr"]}


def run_ir_measures(qrels_path, run_path):
    import ir_measures
    from ir_measures import AP, RR, R, nDCG

    qrels = ir_measures.read_trec_qrels(qrels_path)
    run = ir_measures.read_trec_run(run_path)
    res = ir_measures.calc_aggregate([nDCG @ 10, AP, R @ 100, RR], qrels, run)
    return {"ndcg_cut.10": res[nDCG @ 10], "map": res[AP], "recall.100": res[R @ 100], "recip_rank": res[RR]}


TOOLS = {"pytrec_eval": run_pytrec_eval, "ranx": run_ranx, "ir_measures": run_ir_measures}


def warm_up(fn, qrels_path, run_path, lines=5000):
    """Runs the tool on the first lines of the real files (same id and value types, so numba
    compiles exactly what the timed run needs)."""
    with tempfile.TemporaryDirectory() as d:
        q = os.path.join(d, "q")
        r = os.path.join(d, "r")
        for src, dst in ((qrels_path, q), (run_path, r)):
            with open(src) as f, open(dst, "w") as g:
                for i, line in enumerate(f):
                    if i >= lines:
                        break
                    g.write(line)
        fn(q, r)


def main():
    tool, qrels_path, run_path = sys.argv[1:4]
    fn = TOOLS[tool]
    warm_up(fn, qrels_path, run_path)
    c0, w0 = cpu(), time.perf_counter()
    values = fn(qrels_path, run_path)
    c1, w1 = cpu(), time.perf_counter()
    print(json.dumps({"tool": tool, "cpu_s": c1 - c0, "wall_s": w1 - w0, "values": {k: float(v) for k, v in values.items()}}))


if __name__ == "__main__":
    main()
