"""Does the synthesis verifier's answerability check tell a question's own passage from another?

For every turn of one or more synthesized benchmarks (`mtr synth` output: dialogues.jsonl,
corpus.jsonl) that can be read on its own (a first turn's question, a later turn's standalone
rewrite), the question is judged twice by a local model with mtr's answerability prompt
(`prompts/synth/answerability.j2`, rendered here from the template file itself): once with its
gold passage (a positive: the pipeline accepted it) and once with a seeded random passage of
another document (a negative: it should fail). Three readings per pair:

- generated: the score written under mtr's schema (verdict first, strings limited to
  `--max-string-length` characters, as the embedded endpoints ask), and the quote check
  (`quote_supported` in crates/pipeline/src/agents.rs, same rule): the verifier *passes* a
  question when the score is >= 4 and the quote is found in the passage;
- probability: the probability-weighted mean over the grade tokens after a prefilled
  `{"score": ` (one generated token; crates/llm/src/logprob.rs reads ratings this way).

Prints AUC (own passage above random) for each score and the pass rates on positives and
negatives: a verifier with no signal passes both at the same rate. The questions are the ones
the pipeline kept, so they are biased towards ones its verifier passed with their own passage.
Standard library only; starts mtr's launcher (bench.py) with one thread per server.

Usage: python verifier_signal.py BENCH_DIR [BENCH_DIR ...] --model PATH.gguf [--label qwen0.5b] [--seed 7]
       [--servers 2] [--out results.json]
"""
import argparse
import json
import math
import os
import random
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import post, start, stop  # noqa: E402

TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "prompts",
                        "synth", "answerability.j2")
PREFILL = '{"score": '


def blocks(path):
    """The system and user blocks of a template, as (text, has_history_loop)."""
    src = re.sub(r"\{#.*?#\}", "", open(path, encoding="utf-8").read(), flags=re.S)
    got = {m.group(1): m.group(2).strip("\n") for m in
           re.finditer(r"\{% block (\w+) %\}(.*?)\{% endblock %\}", src, flags=re.S)}
    return without_justification(got["system"]), without_justification(got["user"])


def without_justification(tpl):
    """The template as the local default renders it: `justify` is false for a verdict-first
    judge (`{% if justify %}...{% endif %}` dropped, `{{ 'a' if justify else 'b' }}` -> b)."""
    tpl = re.sub(r"\{% if justify %\}.*?\{% endif %\}", "", tpl, flags=re.S)
    return re.sub(r"\{\{ '((?:[^'\\]|\\.)*)' if justify else '((?:[^'\\]|\\.)*)' \}\}",
                  lambda m: m.group(2), tpl)


def render_user(tpl, question, passage):
    """Renders the user block for a first turn (no history): the template's only constructs are
    the history loop, `{{ question }}` and the passage fields; anything else is an error, so a
    changed template cannot be judged with a stale rendering."""
    loop = re.search(r"\{% for u in history %\}.*?\{% else %\}\n(.*?)\n\{% endfor %\}", tpl, flags=re.S)
    if not loop:
        sys.exit("answerability.j2 changed: its history loop is not where this script expects it")
    out = tpl[:loop.start()] + loop.group(1) + tpl[loop.end():]
    section = passage.get("section")
    out = re.sub(r"\{\{ passage\.title \}\}\{% if passage\.section %\} / \{\{ passage\.section \}\}\{% endif %\}",
                 lambda _: passage["title"] + (f" / {section}" if section else ""), out)
    out = out.replace("{{ passage.text }}", passage["text"]).replace("{{ question }}", question)
    if "{{" in out or "{%" in out:
        sys.exit("answerability.j2 holds constructs this script does not render: " +
                 re.findall(r"\{[{%].*?[}%]\}", out)[0])
    return out.strip()


def letters(s):
    return [c.lower() for c in s if c.isalnum()]


def quote_supported(quote, passage):
    q, p = "".join(letters(quote)), "".join(letters(passage))
    if len(q) < 8:
        return False
    if q in p:
        return True
    w = 24
    return len(q) > w and any(q[i:i + w] in p for i in range(0, len(q) - w + 1, 8))


def schema(max_len):
    s = {"type": "string"}
    if max_len:
        s["maxLength"] = max_len
    # answerability_schema(justify = false) as adapted for a local endpoint: verdict first
    return {"type": "object", "properties": {
        "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}, "quote": dict(s)},
        "required": ["score", "quote"], "additionalProperties": False}


def judge(url, system, user, max_len, max_tokens):
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    gen = post(url + "/v1/chat/completions", {
        "model": "bench", "messages": msgs, "temperature": 0.0, "max_tokens": max_tokens,
        "cache_prompt": True, "response_format": {"type": "json_schema", "json_schema": {
            "name": "answerability", "schema": schema(max_len), "strict": True}}})
    try:
        v = json.loads(gen["choices"][0]["message"]["content"])
        score, quote = int(v["score"]), str(v.get("quote", ""))
    except (ValueError, KeyError, TypeError):
        score, quote = None, ""
    pr = post(url + "/v1/chat/completions", {
        "model": "bench", "messages": msgs + [{"role": "assistant", "content": PREFILL}],
        "temperature": 0.0, "max_tokens": 1, "logprobs": True, "top_logprobs": 10,
        "cache_prompt": True})
    top = (((pr.get("choices") or [{}])[0].get("logprobs") or {}).get("content") or [{}])[0]
    mass = {g: 0.0 for g in range(1, 6)}
    for alt in top.get("top_logprobs", []):
        t = alt.get("token", "").strip().strip('"')
        if t.isdigit() and 1 <= int(t) <= 5:
            mass[int(t)] += math.exp(alt["logprob"])
    z = sum(mass.values())
    prob = sum(g * p for g, p in mass.items()) / z if z > 0 else None
    return score, quote, prob


def auc(pos, neg):
    pos, neg = [p for p in pos if p is not None], [q for q in neg if q is not None]
    if not pos or not neg:
        return None
    return sum((p > q) + 0.5 * (p == q) for p in pos for q in neg) / (len(pos) * len(neg))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench", nargs="+")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--model", required=True)
    ap.add_argument("--label", default=None)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--servers", type=int, default=2, help="servers of one thread each")
    ap.add_argument("--max-string-length", type=int, default=160)
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    pairs = []
    for bench in a.bench:
        corpus = [json.loads(l) for l in open(os.path.join(bench, "corpus.jsonl"), encoding="utf-8")]
        by_id = {p["id"]: p for p in corpus}
        for line in open(os.path.join(bench, "dialogues.jsonl"), encoding="utf-8"):
            d = json.loads(line)
            for k, t in enumerate(d["turns"]):
                # a question that stands on its own: the first, or a later one's rewrite
                q = t["user"] if k == 0 else (t.get("rewrite") or "")
                if not q:
                    continue
                gold = by_id[t["gold"][0]["passage_id"]]
                others = [p for p in corpus if p.get("doc_id") != gold.get("doc_id") and p["text"].strip()]
                pairs.append((t["id"], q, gold, rng.choice(others)))
    system, tpl = blocks(TEMPLATE)
    # rendered here, not in the workers: a template this script cannot render stops it at once
    jobs = [(i, lab, render_user(tpl, q, p), p) for i, (_, q, g, n) in enumerate(pairs)
            for lab, p in ((1, g), (0, n))]
    servers = [start(a.python, a.model, 1, 1, 4096) for _ in range(max(1, a.servers))]
    results, lock, t0 = [], threading.Lock(), time.time()

    def worker(url):
        while True:
            with lock:
                if not jobs:
                    return
                i, lab, user, p = jobs.pop(0)
            score, quote, prob = judge(url, system, user, a.max_string_length, a.max_tokens)
            passed = score is not None and score >= 4 and quote_supported(quote, p["text"])
            with lock:
                results.append({"pair": i, "own_passage": bool(lab), "score": score, "probability": prob,
                                "quote_supported": quote_supported(quote, p["text"]), "passed": passed})
    try:
        threads = [threading.Thread(target=worker, args=(url,)) for _, url in servers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for proc, _ in servers:
            stop(proc)
    pos = [r for r in results if r["own_passage"]]
    neg = [r for r in results if not r["own_passage"]]
    rate = lambda rs, k: sum(bool(r[k]) for r in rs) / len(rs) if rs else float("nan")
    summary = {
        "label": a.label or os.path.basename(a.model), "pairs": len(pairs), "seconds": round(time.time() - t0, 1),
        "auc_generated": auc([r["score"] for r in pos], [r["score"] for r in neg]),
        "auc_probability": auc([r["probability"] for r in pos], [r["probability"] for r in neg]),
        "passed_own": rate(pos, "passed"), "passed_random": rate(neg, "passed"),
        "quote_found_own": rate(pos, "quote_supported"), "quote_found_random": rate(neg, "quote_supported"),
        "score_ge4_own": sum(1 for r in pos if (r["score"] or 0) >= 4) / max(1, len(pos)),
        "score_ge4_random": sum(1 for r in neg if (r["score"] or 0) >= 4) / max(1, len(neg)),
    }
    f = lambda v: "n/a" if v is None else f"{v:.2f}"
    print(f"{summary['label']}: {len(pairs)} questions, own passage vs a random passage of another document, "
          f"{summary['seconds']} s")
    print("| reading | own passage | random passage | AUC |")
    print("|---|---|---|---|")
    print(f"| score >= 4 (generated) | {f(summary['score_ge4_own'])} | {f(summary['score_ge4_random'])} | "
          f"{f(summary['auc_generated'])} |")
    print(f"| quote found in the passage | {f(summary['quote_found_own'])} | {f(summary['quote_found_random'])} | |")
    print(f"| verifier passes (both) | {f(summary['passed_own'])} | {f(summary['passed_random'])} | |")
    print(f"| probability-weighted score, mean | "
          f"{f(sum(r['probability'] or 0 for r in pos) / max(1, len(pos)))} | "
          f"{f(sum(r['probability'] or 0 for r in neg) / max(1, len(neg)))} | {f(summary['auc_probability'])} |")
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            json.dump({"summary": summary, "results": sorted(results, key=lambda r: (r["pair"], not r["own_passage"]))},
                      fh, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
