#!/usr/bin/env python3
"""An audit of about 1,000,000 judgements through Batch files: plan, export, import, rerun.

Writes a seeded synthetic benchmark in mtr's native format (TURNS turns in dialogues of 5, one
gold passage and one reference answer per turn, a corpus of 2 passages per turn), big enough
that the default audit (3 judges, 4 dimensions, 7 hard negatives, 3 trials: 18 judgements a
turn) plans about a million chat calls. Then, each under /usr/bin/time -v (wall, peak RSS):

1. `mtr audit --dry-run`: the audit's own planning at that size, and the size of the same work
   as direct calls (calls, prompt and completion tokens, cost at the configured prices);
2. `mtr audit --export-batch FILE`: every call as an OpenAI Batch input line (file size);
3. an answers file as an engine returns it (`{id, custom_id, response: {status_code,
   request_id, body}, error}`; each answer the smallest JSON its request's schema accepts),
   written by this script, streamed line by line;
4. `mtr cache import` of it, twice (the second finds everything cached);
5. the audit rerun with its endpoints unreachable: zero calls, report written.

The judge endpoints point at a closed port: nothing here calls a model.
Usage: audit_1m.py [--turns 55600] [--mtr target/release/mtr] [--dir DIR] [--skip-rerun]
                   [--skip-dry-run] [--keep-bench]
"""
import argparse
import json
import os
import random
import re
import subprocess
import tempfile
import time


def timed(name, cmd, env, ok=(0,)):
    t = time.time()
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, env=env)
    wall = time.time() - t
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
    rss = int(m.group(1)) / 1024 if m else float("nan")
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", r.stderr))
    if r.returncode not in ok:
        raise SystemExit(f"{name} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    print(f"{name}: {wall:.1f} s wall, {cpu:.1f} s CPU (user + sys: what a shared machine's load "
          f"does not inflate), peak RSS {rss:.0f} MB (exit {r.returncode})", flush=True)
    return wall, rss, r


def mtr_lines(r):
    """What mtr printed (stdout, then stderr without /usr/bin/time's report)."""
    err = r.stderr.split("\tCommand being timed")[0]
    return [ln for ln in (r.stdout + err).splitlines() if ln.strip()]


def write_benchmark(root, turns, seed):
    rng = random.Random(seed)
    vocab = [f"w{i:x}" for i in range(3000)]
    n_passages = max(5000, 2 * turns)
    os.makedirs(root, exist_ok=True)

    def words(n):
        return " ".join(rng.choice(vocab) for _ in range(n))

    texts = []
    with open(os.path.join(root, "corpus.jsonl"), "w") as f:
        for i in range(n_passages):
            text = words(90)
            texts.append(text)
            f.write(json.dumps({"id": f"p{i}", "title": f"Title {i}", "text": text}) + "\n")
    qrels = []
    with open(os.path.join(root, "dialogues.jsonl"), "w") as f:
        per = 5
        for d in range((turns + per - 1) // per):
            ts = []
            for t in range(min(per, turns - d * per)):
                gold = rng.randrange(n_passages)
                q = " ".join(texts[gold].split(" ")[:8])
                tid = f"d{d}::{t + 1}"
                ts.append({"id": tid, "user": f"what about {q}?",
                           "rewrite": f"what about {q} in Title {gold}",
                           "answer": words(40), "gold": [{"passage_id": f"p{gold}", "grade": 1}]})
                qrels.append((tid, f"p{gold}"))
            f.write(json.dumps({"id": f"d{d}", "turns": ts}) + "\n")
    qrels.sort()
    with open(os.path.join(root, "qrels.tsv"), "w") as f:
        for q, p in qrels:
            f.write(f"{q}\t0\t{p}\t1\n")
    with open(os.path.join(root, "benchmark.toml"), "w") as f:
        f.write('name = "scale-1m"\nversion = "1"\nlanguage = "en"\nsource = "synthetic"\n')
    return n_passages


def instance(schema):
    """The smallest value a (strict, structured-output) JSON schema accepts."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return instance(schema[key][0])
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), t[0])
    if t == "object":
        props = schema.get("properties", {})
        return {k: instance(props[k]) for k in schema.get("required", list(props))}
    if t == "array":
        return [instance(schema.get("items", {}))] * schema.get("minItems", 0)
    if t == "integer":
        return int(schema.get("minimum", 1))
    if t == "number":
        return schema.get("minimum", 1.0)
    if t == "boolean":
        return True
    if t == "null":
        return None
    return "ok"


def write_answers(requests, answers):
    n = 0
    shapes = {}
    with open(requests) as fin, open(answers, "w") as fout:
        for line in fin:
            req = json.loads(line)
            body = req["body"]
            fmt = body.get("response_format") or {}
            schema = (fmt.get("json_schema") or {}).get("schema")
            key = json.dumps(schema, sort_keys=True) if schema else ""
            if key not in shapes:
                shapes[key] = json.dumps(instance(schema)) if schema else "ok"
            fout.write(json.dumps({"id": f"b{n}", "custom_id": req["custom_id"], "response": {
                "status_code": 200, "request_id": f"r{n}", "body": {
                    "object": "chat.completion", "model": body.get("model", ""),
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {
                        "role": "assistant", "content": shapes[key]}}],
                    "usage": {"prompt_tokens": 900, "completion_tokens": 30}}},
                "error": None}) + "\n")
            n += 1
    return n


def mb(path):
    return os.path.getsize(path) / 1e6 if os.path.exists(path) else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=55_600)
    ap.add_argument("--mtr", default="target/release/mtr")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--skip-rerun", action="store_true")
    ap.add_argument("--skip-dry-run", action="store_true",
                    help="time the export and import only (the export plans the calls again)")
    ap.add_argument("--keep-bench", action="store_true",
                    help="reuse DIR/bench when an earlier run wrote it (same --turns and --seed)")
    a = ap.parse_args()
    mtr = os.path.abspath(a.mtr)
    d = a.dir or tempfile.mkdtemp(prefix="mtr-scale-audit-")
    os.makedirs(d, exist_ok=True)
    bench = os.path.join(d, "bench")
    t = time.time()
    if a.keep_bench and os.path.exists(os.path.join(bench, "benchmark.toml")):
        print(f"benchmark: kept from an earlier run in {bench} "
              f"(corpus {mb(os.path.join(bench, 'corpus.jsonl')):.0f} MB)", flush=True)
    else:
        n_passages = write_benchmark(bench, a.turns, a.seed)
        print(f"benchmark: {a.turns} turns, {n_passages} passages, written in "
              f"{time.time() - t:.0f} s (corpus {mb(os.path.join(bench, 'corpus.jsonl')):.0f} MB)",
              flush=True)
    cache = os.path.join(d, "cache.sqlite")
    cfg = os.path.join(d, "mtr.toml")
    with open(cfg, "w") as f:
        f.write(f'[llm]\ncache = "{cache}"\n')
        for i in range(3):
            f.write(f'[[llm.endpoints]]\nname = "judge{i}"\nbase_url = "http://127.0.0.1:9/v1"\n'
                    f'model = "judge-model-{i}"\nprice_in_per_mtok = 0.15\n'
                    'price_out_per_mtok = 0.6\nbatch_discount = 0.5\n')
        f.write('[llm.roles]\njudges = ["judge0", "judge1", "judge2"]\n')
    env = dict(os.environ, MTR_HOME=d, NO_COLOR="1")
    base = [mtr, "--config", cfg, "audit", bench]
    if not a.skip_dry_run:
        _, _, r = timed("plan (--dry-run)", base + ["-o", os.path.join(d, "dry"), "--dry-run"],
                        env)
        print("  " + "\n  ".join(mtr_lines(r)[:40]))
    requests = os.path.join(d, "requests.jsonl")
    out = os.path.join(d, "audit")
    _, _, r = timed("export (--export-batch)", base + ["-o", out, "--export-batch", requests],
                    env, ok=(3,))
    print("  " + "\n  ".join(mtr_lines(r)[-8:]))
    n_req = sum(1 for _ in open(requests))
    print(f"  requests file: {n_req} lines, {mb(requests):.0f} MB; "
          f"cache after export {mb(cache) + mb(cache + '-wal'):.0f} MB", flush=True)
    answers = os.path.join(d, "answers.jsonl")
    t = time.time()
    n_ans = write_answers(requests, answers)
    print(f"answers file (written by this script): {n_ans} lines, {mb(answers):.0f} MB "
          f"in {time.time() - t:.0f} s", flush=True)
    for run in ("first", "again"):
        _, _, r = timed(f"import ({run})", [mtr, "--config", cfg, "cache", "import", answers], env)
        print("  " + (r.stdout.strip().splitlines() or [""])[0])
    print(f"  cache after import: {mb(cache) + mb(cache + '-wal'):.0f} MB", flush=True)
    if not a.skip_rerun:
        _, _, r = timed("audit rerun (endpoints unreachable)", base + ["-o", out], env)
        print("  " + "\n  ".join(mtr_lines(r)[-6:]))


if __name__ == "__main__":
    main()
