#!/usr/bin/env python3
"""A stand-in for `vllm run-batch` (standard library only): reads OpenAI Batch input lines,
posts each body to an OpenAI-compatible server, writes one output line per request in the
format vLLM and OpenAI use: {id, custom_id, response: {status_code, request_id, body}, error}.

Usage: vllm_run_batch_standin.py -i INPUT -o OUTPUT --base-url http://127.0.0.1:PORT/v1
                                 [--workers N]
"""
import argparse
import concurrent.futures
import json
import urllib.error
import urllib.request


def post(base_url, line):
    req = json.loads(line)
    url = base_url.rstrip("/") + req["url"].removeprefix("/v1")
    data = json.dumps(req["body"]).encode()
    http = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    rid = "req-" + req["custom_id"][:16]
    try:
        with urllib.request.urlopen(http, timeout=60) as r:
            body = json.loads(r.read())
            return {"id": "vllm-" + rid, "custom_id": req["custom_id"],
                    "response": {"status_code": r.status, "request_id": rid, "body": body},
                    "error": None}
    except urllib.error.HTTPError as e:
        return {"id": "vllm-" + rid, "custom_id": req["custom_id"],
                "response": {"status_code": e.code, "request_id": rid, "body": None},
                "error": {"message": str(e)}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-i", required=True)
    ap.add_argument("-o", required=True)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--workers", type=int, default=8)
    a = ap.parse_args()
    with open(a.i) as f:
        lines = [l for l in f if l.strip()]
    with concurrent.futures.ThreadPoolExecutor(a.workers) as pool:
        out = list(pool.map(lambda l: post(a.base_url, l), lines))
    with open(a.o, "w") as f:
        for o in out:
            f.write(json.dumps(o) + "\n")


if __name__ == "__main__":
    main()
