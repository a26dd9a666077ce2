#!/usr/bin/env python3
"""Import of N Batch answers (default 1,000,000) into an mtr cache: time, peak memory, file size.

Builds, in a scratch folder, a cache file whose export job holds N requests (the rows
`--export-batch` records: batch_job, batch_export, batch_export_spec and one batch_export_item
per request; with `--old-rows`, one batch_item row per request as mtr recorded exports before
2026-12-03) and the Batch output file an
engine would return for them (one chat completion per line, about the size of a judge's
answer), then runs `mtr cache import` under /usr/bin/time -v, twice (the second import finds
every answer cached). Usage: import_1m.py [--n N] [--mtr target/release/mtr] [--dir DIR] [--old-rows]
"""
import argparse
import json
import os
import re
import sqlite3
import subprocess
import tempfile
import time

SCHEMA = {"type": "object", "properties": {"justification": {"type": "string"},
          "rating": {"type": "integer", "minimum": 1, "maximum": 5}},
          "required": ["justification", "rating"], "additionalProperties": False}


def timed(cmd, env):
    t = time.time()
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, env=env)
    wall = time.time() - t
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", r.stderr))
    if r.returncode != 0:
        raise SystemExit(r.stdout + r.stderr)
    return wall, cpu, rss / 1024, r.stdout.strip().splitlines()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--mtr", default="target/release/mtr")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--old-rows", action="store_true",
                    help="record the export as mtr did before 2026-12-03 (a batch_item row each)")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="mtr-scale-")
    os.makedirs(d, exist_ok=True)
    cache = os.path.join(d, "cache.sqlite")
    cfg = os.path.join(d, "mtr.toml")
    with open(cfg, "w") as f:
        f.write(f'[llm]\ncache = "{cache}"\n[[llm.endpoints]]\nname = "judge"\n'
                'base_url = "http://127.0.0.1:9/v1"\nmodel = "judge-model"\n'
                'price_in_per_mtok = 0.15\nprice_out_per_mtok = 0.6\nbatch_discount = 0.5\n'
                '[llm.roles]\njudges = ["judge"]\n')
    env = dict(os.environ, MTR_HOME=d)
    # the cache's tables, made by mtr itself
    subprocess.run([a.mtr, "--config", cfg, "--quiet", "cache", "stats"], check=True,
                   capture_output=True, env=env)
    job = "mtr-export:scale:judge"
    output = json.dumps({"kind": "schema", "name": "rating", "schema": SCHEMA})
    t = time.time()
    db = sqlite3.connect(cache)
    db.execute("CREATE TABLE IF NOT EXISTS batch_export (batch_id TEXT PRIMARY KEY, job TEXT) WITHOUT ROWID")
    db.execute("INSERT OR REPLACE INTO batch_job VALUES (?, 'judge', 'judge-model', 0, 'exported', ?)", (job, a.n))
    db.execute("INSERT OR REPLACE INTO batch_export VALUES (?, 'audit:scale')", (job,))
    if a.old_rows:
        db.executemany("INSERT OR REPLACE INTO batch_item VALUES (?, ?, 'audit/alignment@1', ?, 0)",
                       ((f"{i:064x}", job, output) for i in range(a.n)))
    else:
        db.execute("CREATE TABLE IF NOT EXISTS batch_export_spec (id INTEGER PRIMARY KEY, "
                   "batch_id TEXT NOT NULL, prompt_id TEXT, output TEXT NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS batch_export_item (key BLOB PRIMARY KEY, "
                   "spec INTEGER NOT NULL, sample INTEGER NOT NULL) WITHOUT ROWID")
        spec = db.execute("INSERT INTO batch_export_spec (batch_id, prompt_id, output) "
                          "VALUES (?, 'audit/alignment@1', ?)", (job, output)).lastrowid
        db.executemany("INSERT OR REPLACE INTO batch_export_item VALUES (?, ?, 0)",
                       ((bytes.fromhex(f"{i:064x}"), spec) for i in range(a.n)))
    db.commit()
    db.close()
    answers = os.path.join(d, "answers.jsonl")
    with open(answers, "w") as f:
        for i in range(a.n):
            content = json.dumps({"justification": f"The passage answers the question {i}.", "rating": 1 + i % 5})
            f.write(json.dumps({"id": f"b{i}", "custom_id": f"{i:064x}", "response": {
                "status_code": 200, "request_id": f"r{i}", "body": {
                    "object": "chat.completion", "model": "judge-model", "choices": [{
                        "index": 0, "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 900, "completion_tokens": 30}}}, "error": None}) + "\n")
    print(f"setup: {a.n} recorded requests and their answers in {time.time() - t:.0f} s")
    print(f"answers file: {os.path.getsize(answers) / 1e6:.0f} MB")
    for run in ("first", "again"):
        wall, cpu, rss, line = timed([a.mtr, "--config", cfg, "--quiet", "cache", "import", answers], env)
        print(f"import ({run}): {wall:.1f} s wall, {cpu:.1f} s CPU (user + sys), peak RSS {rss:.0f} MB: {line}",
              flush=True)
    print(f"cache file: {(os.path.getsize(cache) + (os.path.getsize(cache + '-wal') if os.path.exists(cache + '-wal') else 0)) / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
