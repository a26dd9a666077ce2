"""mtr's launcher for a local llama.cpp OpenAI-compatible server (xllamacpp).

Run with the venv's python: python xllamacpp_server.py MODEL.gguf PORT THREADS N_CTX ALIAS [SLOTS]
N_CTX is the context per slot; SLOTS (default 1) sequences are decoded together in one batch
(llama.cpp continuous batching), which on a memory-bound CPU multiplies generated tokens per
second; the server keeps each slot's prompt prefix for reuse (`cache_prompt`). Serves
GET /health, GET /v1/models, POST /v1/chat/completions on 127.0.0.1:PORT until SIGTERM/SIGINT. Embedded in the mtr binary (include_str!) and written next to the logs.
"""
import signal
import sys
import threading

import xllamacpp


def main():
    model, port, threads, n_ctx, alias = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    slots = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    p = xllamacpp.CommonParams()
    p.model.path = model
    p.model_alias = alias
    p.hostnames = ["127.0.0.1"]
    p.port = port
    # the KV cache is split across slots: give every slot the full per-slot context
    p.n_ctx = n_ctx * slots
    p.n_parallel = slots
    p.cont_batching = True
    p.cache_prompt = True
    # No RAM-backed prompt cache (llama.cpp's --cache-ram, 8192 MiB by default, and
    # --cache-idle-slots): with it, concurrent requests pinned to slots (`id_slot`) got answers
    # written for another request's prompt, 2-8 of 40 per run on this server; without it 0 of
    # 120 (benchmarks/local/cache_mixup.py; llama.cpp issue 27148). Each slot still reuses its
    # own prompt prefix (cache_prompt).
    p.cache_ram_mib = 0
    p.cache_idle_slots = False
    p.cpuparams.n_threads = threads
    p.cpuparams_batch.n_threads = threads
    p.use_jinja = True
    srv = xllamacpp.Server(p)
    print(f"mtr-local: serving {model} as {alias} on 127.0.0.1:{port} with {threads} thread(s), {slots} slot(s)", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.wait(3600):
        pass
    del srv


if __name__ == "__main__":
    main()
