"""Local llama.cpp server throughput: generated tokens/s for 1 slot vs N slots, side by side.

Starts mtr's own launcher (crates/local/assets/xllamacpp_server.py) once per configuration,
sends the same set of distinct judge-sized requests (about 250 prompt tokens, up to MAX_TOKENS
generated, temperature 0) from CONCURRENCY client threads, and reports aggregate generated
tokens per second over the wall time, requests per second and mean latency. Configurations
alternate (1, N, 1, N, ...) so that a change in machine load hits both; the load average
(`/proc/loadavg`) is printed with every number, because on a shared 2-core machine it matters
more than anything else. A second table measures prompt-prefix reuse (`cache_prompt`): the
same long system prompt and passage with a different short question each time, as a judge
sees it.

Usage (from the repository root; see run.sh):
  python bench.py --model PATH.gguf --slots 1,4 --threads 1 --requests 8 --repeats 2
Uses only the standard library and the venv's xllamacpp (through the launcher).
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(HERE, "..", "..", "crates", "llm", "assets", "xllamacpp_server.py")

PASSAGE = (
    "The MTRAG benchmark contains multi-turn conversations between a user and an assistant about "
    "documents from four domains: government web pages, cloud documentation, financial question "
    "answering and Wikipedia-style articles. Each turn has a question, a rewritten standalone "
    "question, reference passages marked as relevant by annotators, and a reference answer. "
    "Retrieval systems are scored on every turn with nDCG and recall, and the conversations "
    "include follow-up questions, clarifications, unanswerable questions and topic switches."
)
TOPICS = ["annotators", "domains", "recall", "topic switches", "reference answers",
          "clarifications", "nDCG", "standalone questions", "unanswerable questions",
          "government pages", "cloud documentation", "financial questions"]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def post(url, body, timeout=900):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def start(python, model, threads, slots, n_ctx):
    port = free_port()
    log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"mtr-local-bench-{port}.log"), "w")
    proc = subprocess.Popen(
        [python, LAUNCHER, model, str(port), str(threads), str(n_ctx), "bench", str(slots)],
        stdout=log, stderr=subprocess.STDOUT,
        env=dict(os.environ, OMP_NUM_THREADS=str(threads)),
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server exited during start; see {log.name}")
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=3) as r:
                if r.status == 200:
                    return proc, url
        except Exception:
            time.sleep(0.3)
    proc.kill()
    sys.exit("server did not become healthy in 300 s")


def stop(proc):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def run_batch(url, bodies, concurrency):
    """Sends every body from `concurrency` threads; returns (wall_s, completion_tokens,
    prompt_tokens, latencies)."""
    lock = threading.Lock()
    todo = list(enumerate(bodies))
    out = {}

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                i, b = todo.pop(0)
            t0 = time.time()
            r = post(url + "/v1/chat/completions", b)
            dt = time.time() - t0
            with lock:
                out[i] = (r, dt)

    t0 = time.time()
    ths = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    wall = time.time() - t0
    comp = sum(r["usage"]["completion_tokens"] for r, _ in out.values())
    prompt = sum(r["usage"]["prompt_tokens"] for r, _ in out.values())
    return wall, comp, prompt, [dt for _, dt in out.values()]


def gen_bodies(n, max_tokens, salt, shared_prefix):
    bodies = []
    for i in range(n):
        topic = TOPICS[(i + salt) % len(TOPICS)]
        system = "You are a careful assistant who grades and explains." if shared_prefix else \
            f"Request {salt}-{i}. You are a careful assistant who grades and explains."
        bodies.append({
            "model": "bench",
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": f"{PASSAGE}\n\nIn about 60 words, what does the text say about {topic}? (request {salt}-{i})"},
            ],
            "temperature": 0.0, "seed": i, "max_tokens": max_tokens, "cache_prompt": True,
        })
    return bodies


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--model", required=True)
    ap.add_argument("--slots", default="1,4", help="comma-separated slot counts to compare")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=0, help="client threads (default: the largest slot count)")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--n-ctx", type=int, default=2048)
    a = ap.parse_args()
    slots = [int(s) for s in a.slots.split(",")]
    conc = a.concurrency or max(slots)
    print(f"model {os.path.basename(a.model)}, {a.threads} thread(s) per server, {a.requests} requests x "
          f"<= {a.max_tokens} generated tokens, {conc} client threads, {os.cpu_count()} CPUs")
    rows = {s: [] for s in slots}
    for rep in range(a.repeats):
        for s in slots:
            proc, url = start(a.python, a.model, a.threads, s, a.n_ctx)
            try:
                post(url + "/v1/chat/completions", gen_bodies(1, 8, 999 + rep, False)[0])  # warm-up
                load = loadavg()
                wall, comp, prompt, lat = run_batch(url, gen_bodies(a.requests, a.max_tokens, rep * 100, False), conc)
                rows[s].append((comp / wall, a.requests / wall, sum(lat) / len(lat), load, comp, prompt, wall))
                print(f"  repeat {rep + 1} slots {s}: {comp / wall:6.1f} generated tok/s aggregate, "
                      f"{a.requests / wall:5.2f} req/s, {wall:6.1f} s wall, load {load}", flush=True)
            finally:
                stop(proc)
    print()
    print("| slots | generated tok/s (each repeat) | median | req/s (median) | mean latency s | load avg at start |")
    print("|---|---|---|---|---|---|")
    for s in slots:
        r = rows[s]
        tps = sorted(x[0] for x in r)
        med = tps[len(tps) // 2] if len(tps) % 2 else (tps[len(tps) // 2 - 1] + tps[len(tps) // 2]) / 2
        rps = sorted(x[1] for x in r)[len(r) // 2]
        lat = sum(x[2] for x in r) / len(r)
        print(f"| {s} | {', '.join(f'{x[0]:.1f}' for x in r)} | {med:.1f} | {rps:.2f} | {lat:.1f} | {'; '.join(x[3] for x in r)} |")

    # prompt-prefix reuse: one slot, the same long prefix with different questions
    print()
    proc, url = start(a.python, a.model, a.threads, 1, a.n_ctx)
    try:
        print("| cache_prompt | prompt tok/s (server timings) | prompt tokens evaluated per request | wall s | load avg |")
        print("|---|---|---|---|---|")
        for cache in (False, True):
            bodies = gen_bodies(a.requests, 4, 500, True)
            for b in bodies:
                b["cache_prompt"] = cache
            load = loadavg()
            t0 = time.time()
            n_eval, ms = 0, 0.0
            for b in bodies:
                r = post(url + "/v1/chat/completions", b)
                n_eval += r.get("timings", {}).get("prompt_n", 0)
                ms += r.get("timings", {}).get("prompt_ms", 0.0)
            wall = time.time() - t0
            print(f"| {str(cache).lower()} | {n_eval / (ms / 1000) if ms else 0:.1f} | {n_eval / len(bodies):.0f} | {wall:.1f} | {load} |")
    finally:
        stop(proc)


if __name__ == "__main__":
    main()
