#!/usr/bin/env python3
"""Answers an mtr export (`mtr audit ... --export-batch requests.jsonl`) with Ray Data and
writes the OpenAI Batch output file `mtr cache import` reads.

    python run_batch.py -i requests.jsonl -o answers.jsonl --base-url http://HOST:8000/v1 \
        [--base-url http://HOST2:8000/v1 ...] [--concurrency 2] [--address auto]

Here the requests go to OpenAI-compatible endpoints (vLLM/SGLang servers, the embedded
llama.cpp server, mtr-fake-llm) over HTTP, from Ray workers: one Ray task per block of lines,
`--concurrency` actors at a time, each posting its requests in turn. The `body` of every line
is sent as it is (model, messages, response_format, sampling, max_tokens: what mtr would send),
and `custom_id` (the call's cache key) is carried through, so the output order does not matter.

On a GPU cluster, let Ray run the model instead of reaching for servers (needs `ray[llm]`,
which brings vLLM; one replica per GPU group):

    from ray.data.llm import vLLMEngineProcessorConfig, build_llm_processor
    config = vLLMEngineProcessorConfig(
        model_source="Qwen/Qwen2.5-7B-Instruct",   # the `model` of the exported lines
        engine_kwargs={"max_model_len": 8192, "enable_chunked_prefill": True,
                       "guided_decoding_backend": "xgrammar"},
        concurrency=8,          # replicas (one per GPU with tensor_parallel_size=1)
        batch_size=64,
    )
    processor = build_llm_processor(
        config,
        preprocess=lambda row: dict(
            messages=row["body"]["messages"],
            sampling_params=dict(
                temperature=row["body"].get("temperature", 0.0),
                max_tokens=row["body"].get("max_tokens", 1024),
                # structured output: mtr's response_format json_schema
                guided_decoding=dict(json=row["body"]["response_format"]["json_schema"]["schema"])
                if "response_format" in row["body"] else None),
            custom_id=row["custom_id"]),
        postprocess=lambda row: dict(custom_id=row["custom_id"], text=row["generated_text"],
                                     prompt_tokens=row.get("num_input_tokens"),
                                     completion_tokens=row.get("num_generated_tokens")),
    )
    ds = processor(ray.data.read_text("requests.jsonl").map(lambda r: json.loads(r["text"])))
    # then write lines as `to_output_line` below does, with the text as the message content

Ray Data's own HTTP processor (`HttpRequestProcessorConfig`, in `ray[llm]`) does what
`post_batch` does here; this script keeps to `ray[data]` so that its test installs less.
"""
import argparse
import json
import time
import urllib.error
import urllib.request

import ray


def post_one(base_url, row):
    """One request: the output line in the OpenAI/vLLM Batch format."""
    url = base_url.rstrip("/") + row["url"].removeprefix("/v1")
    req = urllib.request.Request(url, data=json.dumps(row["body"]).encode(),
                                 headers={"Content-Type": "application/json"})
    rid = "ray-" + row["custom_id"][:16]
    for attempt in range(5):
        try:
            with urllib.request.urlopen(req, timeout=300) as r:
                body = json.loads(r.read())
                return {"id": rid, "custom_id": row["custom_id"],
                        "response": {"status_code": r.status, "request_id": rid, "body": body},
                        "error": None}
        except urllib.error.HTTPError as e:
            if e.code in (429, 500, 502, 503) and attempt < 4:
                time.sleep(0.2 * 2 ** attempt)
                continue
            return {"id": rid, "custom_id": row["custom_id"],
                    "response": {"status_code": e.code, "request_id": rid, "body": None},
                    "error": {"message": str(e)}}
        except OSError as e:
            if attempt < 4:
                time.sleep(0.2 * 2 ** attempt)
                continue
            return {"id": rid, "custom_id": row["custom_id"], "response": None,
                    "error": {"message": str(e)}}


class PostBatch:
    """A Ray actor: posts its blocks' requests to one of the endpoints (round robin)."""

    def __init__(self, base_urls):
        self.base_urls = base_urls
        self.n = 0

    def __call__(self, batch):
        out = []
        for text in batch["text"]:
            if not text.strip():
                continue
            row = json.loads(text)
            self.n += 1
            out.append(json.dumps(post_one(self.base_urls[self.n % len(self.base_urls)], row)))
        return {"line": out}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-i", required=True, help="the export file (OpenAI Batch input lines)")
    ap.add_argument("-o", required=True, help="the Batch output file to write")
    ap.add_argument("--base-url", action="append", required=True)
    ap.add_argument("--concurrency", type=int, default=2, help="actors posting at once")
    ap.add_argument("--num-cpus", type=int, default=2, help="a local Ray instance's workers")
    ap.add_argument("--address", default=None, help="an existing cluster (`auto`)")
    a = ap.parse_args()
    if a.address:
        ray.init(address=a.address)
    else:
        ray.init(num_cpus=a.num_cpus, include_dashboard=False, log_to_driver=False)
    # Each line is read as text and parsed in the worker: `ray.data.read_json` infers one Arrow
    # schema for all lines, which merges the different JSON schemas of `response_format` and
    # fills the keys a line lacks with nulls, so the bodies sent would not be mtr's.
    ds = ray.data.read_text(a.i)
    # the actors wait on HTTP, not on a CPU: half a CPU each leaves room for the read tasks
    out = ds.map_batches(PostBatch, fn_constructor_args=(a.base_url,), batch_size=64,
                         concurrency=a.concurrency, num_cpus=0.5, batch_format="numpy")
    n = 0
    with open(a.o + ".partial", "w") as f:
        for row in out.iter_rows():
            f.write(row["line"] + "\n")
            n += 1
    import os
    os.replace(a.o + ".partial", a.o)
    print(f"{n} answers written to {a.o}")


if __name__ == "__main__":
    main()
