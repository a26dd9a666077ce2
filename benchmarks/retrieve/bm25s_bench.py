"""The bm25s side of benchmarks/retrieve/run.sh (run in a throwaway venv: bm25s, PyStemmer).

Modes (each prints one JSON line):
  index CORPUS INDEX_DIR          tokenize (English stop words + Snowball stemmer, like mtr's
                                  `en` analyzer) and index; passages/s, peak RSS; saves the index
  query INDEX_DIR QUERIES K       load the index, per-query latency p50/p99 (one query at a time,
                                  tokenize + retrieve), peak RSS of a query-only process
  run CORPUS QUERIES_JSONL K OUT  BM25 run (TREC) for MTRAG-style `{_id, text}` queries, to compare
                                  rankings with mtr's (overlap@10) on a real corpus
k1 = 1.2, b = 0.75, method "lucene" (the same BM25 variant as tantivy/Lucene).
"""

import json
import resource
import sys
import time

import bm25s
import numpy as np
import Stemmer

STEMMER = Stemmer.Stemmer("english")


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def load_corpus(path):
    ids, texts = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            d = json.loads(line)
            ids.append(str(d.get("id", d.get("_id"))))
            title, text = d.get("title") or "", d["text"]
            # Same indexed text as mtr: title unless the text already starts with it.
            texts.append(text if not title or text.lstrip().startswith(title.strip()) else title + "\n" + text)
    return ids, texts


def tokenize(texts):
    return bm25s.tokenize(texts, stopwords="en", stemmer=STEMMER, show_progress=False)


def index(corpus, out):
    t0 = time.perf_counter()
    ids, texts = load_corpus(corpus)
    t1 = time.perf_counter()
    tokens = tokenize(texts)
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    retriever.index(tokens, show_progress=False)
    t2 = time.perf_counter()
    retriever.save(out, corpus=None)
    with open(out + "/ids.json", "w") as f:
        json.dump(ids, f)
    print(json.dumps({"mode": "index", "tool": "bm25s", "passages": len(ids), "load_seconds": round(t1 - t0, 2),
                      "seconds": round(t2 - t1, 2), "passages_per_s": round(len(ids) / (t2 - t1)),
                      "peak_rss_mb": round(peak_rss_mb())}))


def query(index_dir, queries, k):
    t0 = time.perf_counter()
    retriever = bm25s.BM25.load(index_dir, mmap=True)
    open_ms = (time.perf_counter() - t0) * 1e3
    qs = [line.rstrip("\n").split("\t", 1)[1] for line in open(queries, encoding="utf-8")]
    for q in qs[:50]:
        retriever.retrieve(bm25s.tokenize([q], stopwords="en", stemmer=STEMMER, show_progress=False), k=k,
                           show_progress=False, n_threads=1)
    lat = []
    for q in qs:
        t = time.perf_counter()
        toks = bm25s.tokenize([q], stopwords="en", stemmer=STEMMER, show_progress=False)
        retriever.retrieve(toks, k=k, show_progress=False, n_threads=1)
        lat.append((time.perf_counter() - t) * 1e3)
    lat = np.sort(np.array(lat))
    t = time.perf_counter()
    retriever.retrieve(tokenize(qs), k=k, show_progress=False, n_threads=2)
    qps = len(qs) / (time.perf_counter() - t)
    pct = lambda p: float(lat[min(len(lat) - 1, int(round((len(lat) - 1) * p)))])
    print(json.dumps({"mode": "query", "tool": "bm25s", "queries": len(qs), "k": k, "open_ms": round(open_ms, 1),
                      "p50_ms": round(pct(0.5), 3), "p99_ms": round(pct(0.99), 3),
                      "mean_ms": round(float(lat.mean()), 3), "batch_qps": round(qps),
                      "peak_rss_mb": round(peak_rss_mb())}))


def run(corpus, queries_jsonl, k, out):
    ids, texts = load_corpus(corpus)
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    retriever.index(tokenize(texts), show_progress=False)
    qids, qtexts = [], []
    for line in open(queries_jsonl, encoding="utf-8"):
        d = json.loads(line)
        qids.append(d["_id"])
        qtexts.append(d["text"].replace("|user|: ", "").replace("|user|:", ""))
    docs, scores = retriever.retrieve(tokenize(qtexts), k=k, show_progress=False)
    with open(out, "w") as f:
        for qi, qid in enumerate(qids):
            for rank in range(docs.shape[1]):
                if scores[qi, rank] <= 0:
                    continue
                f.write(f"{qid} Q0 {ids[docs[qi, rank]]} {rank + 1} {float(scores[qi, rank]):.6f} bm25s\n")
    print(json.dumps({"mode": "run", "tool": "bm25s", "queries": len(qids), "out": out}))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "index":
        index(sys.argv[2], sys.argv[3])
    elif mode == "query":
        query(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif mode == "run":
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    else:
        sys.exit(__doc__)
