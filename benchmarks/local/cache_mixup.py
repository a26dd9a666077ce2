"""Does a local llama.cpp server answer a request with what was written for another one?

Starts mtr's launcher (crates/local/assets/xllamacpp_server.py) twice on a free port, once as it
is and once with llama.cpp's RAM prompt cache turned back on (--cache-ram 8192 MiB and
--cache-idle-slots, xllamacpp's defaults), and sends each the same rounds of concurrent
requests pinned to slots (`id_slot`, as `[llm.local] slot_affinity` pins a dialogue's calls):
a long system prompt shared by all, then a request of its own ending "The code word is ZXnnnnn.
Reply with the code word only." An answer naming another request's code word (one of this
round's or an earlier one's) was written for another prompt. A wrong copy of its own code word
is the model's error, not counted.

    eval "$(mtr local paths)"
    $mtr_data_dir/venv/bin/python benchmarks/local/cache_mixup.py --runs 2 --rounds 10

Seeded: the same prompts every run; what varies is how the server interleaves them.
"""
import argparse
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# run with the venv's python: mtr's data folder is the venv's parent (`mtr local paths`)
DATA = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(sys.executable))))
LAUNCHER = ROOT / "crates/local/assets/xllamacpp_server.py"
WORDS = "policy leave expense travel laptop password holiday manager approval receipt budget office remote".split()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launcher(ram_cache):
    text = LAUNCHER.read_text()
    if ram_cache:
        text = text.replace("p.cache_ram_mib = 0", "p.cache_ram_mib = 8192")
        text = text.replace("p.cache_idle_slots = False", "p.cache_idle_slots = True")
    f = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
    f.write(text)
    f.close()
    return f.name


def start(model, ram_cache, threads):
    port = free_port()
    log = open(tempfile.mktemp(suffix=".log"), "w")
    proc = subprocess.Popen([sys.executable, launcher(ram_cache), model, str(port), str(threads), "4096", "m", "2"],
                            stdout=log, stderr=subprocess.STDOUT)
    for _ in range(240):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc, port
        except Exception:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("server did not start")


def ask(port, system, text, slot):
    body = {"model": "m", "temperature": 0, "max_tokens": 12, "cache_prompt": True, "id_slot": slot,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": text}]}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=900) as r:
        return json.load(r)["choices"][0]["message"]["content"] or ""


def probe(port, rounds, batch_size, seed):
    rng = random.Random(seed)
    system = " ".join(random.Random(seed + 1).choice(WORDS) for _ in range(400))
    asked, wrong, total = [], 0, 0
    for _ in range(rounds):
        batch = []
        for _ in range(batch_size):
            code = "ZX" + "".join(rng.choice("0123456789") for _ in range(5))
            filler = " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 150)))
            batch.append((code, f"{filler}\n\nThe code word is {code}. Reply with the code word only."))
        out = [None] * len(batch)

        def run(i):
            out[i] = ask(port, system, batch[i][1], i % 2)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(batch))]
        [t.start() for t in threads]
        [t.join() for t in threads]
        asked += [c for c, _ in batch]
        for (code, _), answer in zip(batch, out):
            total += 1
            others = set(re.findall(r"ZX\d{5}", answer)) & (set(asked) - {code})
            if others:
                wrong += 1
                print(f"    asked {code}, answered {answer!r}: another request's {sorted(others)}", flush=True)
    return wrong, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(DATA, "models", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--batch", type=int, default=4, help="concurrent requests per round (2 per slot)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    for ram_cache in (True, False):
        proc, port = start(a.model, ram_cache, a.threads)
        try:
            label = "RAM prompt cache on (xllamacpp default)" if ram_cache else "RAM prompt cache off (mtr's launcher)"
            for run in range(a.runs):
                wrong, total = probe(port, a.rounds, a.batch, a.seed)
                print(f"{label}, run {run + 1}: {wrong} of {total} answers name another request's code word", flush=True)
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
