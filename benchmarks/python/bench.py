"""mtr.evaluate against pytrec_eval, ir_measures and ranx on one synthetic run of 10,000
queries x 1,000 documents (100 judgements a query), conversion from the caller's form
included. Each (tool, form) runs in a child process of its own, so that its peak memory is its
own: the peak resident size above the data's, sampled every 2 ms while it runs. Run through
run.sh, which makes the venv and builds the wheel; see README.md.

    python bench.py [--queries N] [--docs N] [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

MEASURES = {
    # mtr / pytrec_eval (trec_eval names), ir_measures, ranx: the same five values
    "trec": ["map", "ndcg_cut.10", "P.10", "recip_rank", "recall.100"],
    "ir_measures": ["AP", "nDCG@10", "P@10", "RR", "R@100"],
    "ranx": ["map", "ndcg@10", "precision@10", "mrr", "recall@100"],
}


def make_data(n_queries: int, n_docs: int, path: Path, seed: int) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    pool = 1_000_000
    q = np.repeat(np.arange(n_queries), n_docs)
    j = np.tile(np.arange(n_docs), n_queries)
    # distinct documents within a query (104729 is coprime with the pool size), shared across
    doc = (q * 7919 + j * 104729) % pool
    qids = np.array([f"q{i}" for i in range(n_queries)], dtype=object)
    docnos = np.array([f"d{i}" for i in range(pool)], dtype=object)
    # distinct scores in each query (no ties: every tool breaks ties its own way)
    score = (n_docs - j) + rng.random(n_queries * n_docs) * 0.5
    run = pd.DataFrame({"qid": qids[q], "docno": docnos[doc], "score": score})
    # 100 judgements a query: 30 ranked documents with grades 0-3, 70 unranked ones
    judged_pos = np.stack([rng.choice(n_docs, 30, replace=False) for _ in range(n_queries)])
    jq = np.repeat(np.arange(n_queries), 30)
    jdoc = (jq * 7919 + judged_pos.ravel() * 104729) % pool
    uq = np.repeat(np.arange(n_queries), 70)
    udoc = (uq * 7919 + (n_docs + np.tile(np.arange(70), n_queries)) * 104729) % pool
    qrels = pd.DataFrame(
        {
            "qid": qids[np.concatenate([jq, uq])],
            "docno": docnos[np.concatenate([jdoc, udoc])],
            "label": np.concatenate([rng.integers(0, 4, jq.size), rng.integers(0, 2, uq.size)]),
        }
    )
    with open(path, "wb") as f:
        pickle.dump((qrels, run), f, protocol=5)


def to_dicts(qrels, run):
    """pytrec_eval's dicts from the frames (what a pytrec_eval user writes)."""
    qd: dict = {}
    for q, d, g in zip(qrels["qid"].tolist(), qrels["docno"].tolist(), qrels["label"].tolist()):
        qd.setdefault(q, {})[d] = int(g)
    rd: dict = {}
    for q, d, s in zip(run["qid"].tolist(), run["docno"].tolist(), run["score"].tolist()):
        rd.setdefault(q, {})[d] = float(s)
    return qd, rd


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Peak:
    """The peak resident size while the block runs, sampled every 2 ms."""

    def __enter__(self):
        self.peak = self.start = rss()
        self.done = False
        self.t = threading.Thread(target=self._sample, daemon=True)
        self.t.start()
        return self

    def _sample(self):
        while not self.done:
            self.peak = max(self.peak, rss())
            time.sleep(0.002)

    def __exit__(self, *exc):
        self.done = True
        self.t.join()
        self.peak = max(self.peak, rss())


def task(tool: str, form: str, qrels, run):
    """The work timed: from the caller's form (frames or dicts) to the five mean values."""
    if tool == "mtr":
        import mtr

        return mtr.evaluate(qrels, run, MEASURES["trec"], complete=True)
    if tool == "pytrec_eval":
        import pytrec_eval

        if form == "frame":
            qrels, run = to_dicts(qrels, run)
        ev = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES["trec"]))
        per_query = ev.evaluate(run)
        keys = ["map", "ndcg_cut_10", "P_10", "recip_rank", "recall_100"]
        return {k: sum(v[k] for v in per_query.values()) / len(per_query) for k in keys}
    if tool == "ir_measures":
        import ir_measures

        ms = [ir_measures.parse_measure(m) for m in MEASURES["ir_measures"]]
        if form == "frame":
            qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
            run = run.rename(columns={"qid": "query_id", "docno": "doc_id"})
        return {str(k): v for k, v in ir_measures.calc_aggregate(ms, qrels, run).items()}
    if tool == "ranx":
        from ranx import Qrels, Run, evaluate

        if form == "frame":
            # ranx wants object (not pandas' str) id columns
            qrels = qrels.astype({"qid": object, "docno": object})
            run = run.astype({"qid": object, "docno": object})
            q = Qrels.from_df(qrels, q_id_col="qid", doc_id_col="docno", score_col="label")
            r = Run.from_df(run, q_id_col="qid", doc_id_col="docno", score_col="score")
        else:
            q, r = Qrels(qrels), Run(run)
        return evaluate(q, r, MEASURES["ranx"])
    raise ValueError(tool)


def cpu_seconds() -> float:
    """CPU time of this process, all its threads (user + system)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(tool: str, form: str, data: Path, repeat: int) -> None:
    with open(data, "rb") as f:
        qrels, run = pickle.load(f)
    if form == "dict":
        qrels, run = to_dicts(qrels, run)
    if form == "arrow":
        # pandas' pyarrow-backed strings (pandas 3's default where pyarrow is installed),
        # converted before the timing: it is how the frame is held, not a conversion
        qrels = qrels.astype({"qid": "string[pyarrow]", "docno": "string[pyarrow]"})
        run = run.astype({"qid": "string[pyarrow]", "docno": "string[pyarrow]"})
    if tool == "ranx":
        # pay numba's JIT once, on a small input, before timing
        small = {"q": {"a": 1}}, {"q": {"a": 1.0, "b": 0.5}}
        task("ranx", "dict", *small)
    if tool == "mtr":
        task("mtr", "dict", {"q": {"a": 1}}, {"q": {"a": 1.0}})
    gc.collect()
    walls, cpus, peaks = [], [], []
    for _ in range(repeat):
        with Peak() as p:
            c0, t0 = cpu_seconds(), time.perf_counter()
            values = task(tool, "frame" if form == "arrow" else form, qrels, run)
            walls.append(time.perf_counter() - t0)
            cpus.append(cpu_seconds() - c0)
        peaks.append((p.peak - p.start) / 2**20)
        gc.collect()
    print(json.dumps({"tool": tool, "form": form, "walls": walls, "cpus": cpus, "peak_mb": max(peaks),
                      "values": {k: float(v) for k, v in values.items()}}))


def machine() -> str:
    """The CPU, its cores and the load, as the run saw them."""
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}"


def run_child(tool: str, form: str, data: Path, args) -> dict | None:
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", tool, form, str(data), "--repeat", str(args.repeat)],
            capture_output=True, text=True, timeout=args.limit,
        )
    except subprocess.TimeoutExpired:
        print(f"{tool:12s} {form:6s} > {args.limit} s (stopped)", flush=True)
        return None
    if out.returncode != 0:
        print(f"{tool}/{form}: failed\n{out.stderr[-2000:]}", flush=True)
        return None
    r = json.loads(out.stdout.strip().splitlines()[-1])
    w = sorted(r["walls"])
    r["seconds"], r["cpu"] = w[0], min(r["cpus"])
    print(f"{tool:12s} {form:6s} {w[0]:7.2f} s (median {w[len(w) // 2]:.2f}, max {w[-1]:.2f})  "
          f"cpu {r['cpu']:6.2f} s (max {max(r['cpus']):.2f})  "
          f"peak +{r['peak_mb']:6.0f} MiB  load {os.getloadavg()[0]:4.1f}  "
          + " ".join(f"{k}={v:.6f}" for k, v in r["values"].items()), flush=True)
    return r


def forms(tool: str, arrow: bool) -> list:
    extra = ["arrow"] if arrow else []
    if tool == "ir_measures":
        return ["frame"] + extra  # ir_measures on dicts is pytrec_eval on dicts
    return ["frame", "dict"] + extra


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--docs", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261207)
    ap.add_argument("--child", nargs=3, metavar=("TOOL", "FORM", "DATA"))
    ap.add_argument("--only", nargs="*", default=None, help="tools to run (default: all)")
    ap.add_argument("--limit", type=int, default=900, help="seconds one tool and form may take")
    ap.add_argument("--arrow", action="store_true",
                    help="also every tool on the frames with pyarrow-backed id columns (needs pyarrow)")
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], Path(args.child[2]), args.repeat)
        return
    data = Path(os.environ.get("TMPDIR", "/tmp")) / f"mtr-bench-{args.queries}x{args.docs}-{args.seed}.pkl"
    if not data.exists():
        t0 = time.perf_counter()
        make_data(args.queries, args.docs, data, args.seed)
        print(f"data: {args.queries} queries x {args.docs} documents written in {time.perf_counter() - t0:.1f} s", flush=True)
    import mtr

    arrow = args.arrow
    print(f"mtr {mtr.__version__}; python {sys.version.split()[0]}; {machine()}", flush=True)
    print(f"repeat {args.repeat}: best wall time (median, max), best CPU time (all threads), "
          f"peak resident memory above the data's", flush=True)
    results = {}
    for tool in args.only or ["mtr", "pytrec_eval", "ir_measures", "ranx"]:
        for form in forms(tool, arrow):
            r = run_child(tool, form, data, args)
            if r:
                results[(tool, form)] = r
    print("ratios (their time / mtr's time, same input form; their peak memory / mtr's):")
    for form in ["frame", "dict", "arrow"]:
        mine = results.get(("mtr", form))
        for tool in ["pytrec_eval", "ir_measures", "ranx"]:
            theirs = results.get((tool, form))
            if mine and theirs:
                print(f"  {form:6s} {tool:12s} wall {theirs['seconds'] / mine['seconds']:6.1f}x   "
                      f"cpu {theirs['cpu'] / mine['cpu']:6.1f}x   "
                      f"memory {theirs['peak_mb'] / max(mine['peak_mb'], 1):5.1f}x")


if __name__ == "__main__":
    main()
