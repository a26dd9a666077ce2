#!/usr/bin/env python3
"""Reference values of ir_measures' Judged@k on the real MTRAG clapnq runs, for mtr-metrics'
golden test (crates/metrics/src/judged_golden_tests.rs).

The MTRAG qrels judge only relevant passages (grade 1), so Judged@k would equal P@k there; the
test and this script both widen them the same way: for every query, the passages at ranks 3 and
7 of the ELSER rewrite run are judged 0 and the one at rank 5 is judged -1 (unless the qrels
judge them already), so judged non-relevant and negative grades count too.

Ties: mtr ranks every measure as trec_eval does (score descending, then passage id
descending); ir_measures' Judged sorts ties by passage id ascending (its P@k, through
pytrec_eval, sorts them as trec_eval does). The runs are handed to ir_measures in trec_eval's
order with untied scores (position-based), so the reference is ir_measures' formula on mtr's
ranking; `mean_own_ties` records what ir_measures gives with its own tie order, for the docs.

usage: python3 -m venv /tmp/irm && /tmp/irm/bin/pip install ir-measures==0.4.3
       /tmp/irm/bin/python benchmarks/metrics/judged_golden.py ../shared/data/mtrag \
           > crates/metrics/src/testdata/judged_ir_measures.json
"""
import json, sys

import ir_measures
from ir_measures import Judged

CUTOFFS = [1, 3, 5, 10, 20]
PER_QUERY_RUNS = ["bm25__bm25_clapnq_rewrite", "elser__elser_clapnq_lastturn"]
EXTRA = {2: 0, 4: -1, 6: 0}  # 0-based rank in the ELSER rewrite run -> grade


def read_run(path):
    run = {}
    for line in open(path, encoding="utf-8"):
        rec = json.loads(line)
        docs = run.setdefault(rec["task_id"], {})
        for c in rec["contexts"]:
            docs.setdefault(c["document_id"], float(c["score"]))
    # a task with no passage (one run has some) is no query of the run: ir_measures divides
    # by its zero length, and mtr reads it as absent
    return {q: docs for q, docs in run.items() if docs}


def trec_eval_order(run):
    """The run with scores replaced by positions in trec_eval's order (no ties left)."""
    out = {}
    for q, docs in run.items():
        ranked = sorted(docs.items(), key=lambda x: x[0], reverse=True)
        ranked.sort(key=lambda x: -x[1])  # stable: ties keep passage id descending
        out[q] = {d: float(len(ranked) - i) for i, (d, _) in enumerate(ranked)}
    return out


def main(mtrag):
    qrels = {}
    with open(f"{mtrag}/tasks_clapnq/qrels/dev.tsv", encoding="utf-8") as f:
        next(f)
        for line in f:
            q, d, g = line.split("\t")
            qrels.setdefault(q, {})[d] = int(g)
    widen = read_run(f"{mtrag}/runs_clapnq/elser__elser_clapnq_rewrite.jsonl")
    for q, docs in widen.items():
        if q not in qrels:
            continue
        ranked = sorted(docs.items(), key=lambda x: (-x[1], x[0]))
        for i, g in EXTRA.items():
            if i < len(ranked):
                qrels[q].setdefault(ranked[i][0], g)
    import os
    runs = sorted(p[:-6] for p in os.listdir(f"{mtrag}/runs_clapnq") if p.endswith(".jsonl"))
    measures = [Judged @ k for k in CUTOFFS]
    out = {"ir_measures": ir_measures.__version__, "cutoffs": CUTOFFS, "extra_grades": EXTRA,
           "runs": {}}
    for name in runs:
        own = read_run(f"{mtrag}/runs_clapnq/{name}.jsonl")
        run = trec_eval_order(own)
        agg = ir_measures.calc_aggregate(measures, qrels, run)
        own_agg = ir_measures.calc_aggregate(measures, qrels, own)
        entry = {"mean": {str(m["cutoff"]): agg[m] for m in measures},
                 "mean_own_ties": {str(m["cutoff"]): own_agg[m] for m in measures}}
        if name in PER_QUERY_RUNS:
            per = {}
            for m in ir_measures.iter_calc(measures, qrels, run):
                per.setdefault(m.query_id, {})[str(m.measure["cutoff"])] = m.value
            entry["per_query"] = dict(sorted(per.items()))
        out["runs"][name] = entry
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main(sys.argv[1])
