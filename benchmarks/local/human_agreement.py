"""Agreement of a local judge with people on MTRAG's human evaluations, in two modes at once.

For a seeded sample of human-rated answers (`human_evaluations_clapnq_govt.json`: 234
answers, two or three annotators each), the local llama.cpp server rates each answer with
mtr's audit quality prompt (`prompts/audit/quality.j2`, same wording) with the answer
prefilled as `{"rating": ` (the verdict first, as mtr's local endpoints ask for it), so one
generated token is the grade. One call gives both modes: the grade the model writes at
temperature 0 ("generated") and the probability-weighted mean over the grade tokens at that
position ("probability", G-Eval style, from `logprobs`/`top_logprobs`; the reading of
crates/llm/src/logprob.rs). (With a JSON-schema grammar instead of the prefill, llama.cpp's
reported logprobs are those of the unconstrained model, not of the grammar's tokens.) Each is compared with the human median of
`appropriateness` and `naturalness` (1-4): Spearman, and quadratic-weighted kappa after
mapping the 1-5 judge scale linearly onto 1-4 and rounding, with 95% cluster-bootstrap
intervals (clusters = conversations); next to the annotators' own ceiling (each annotator
against the median of the others, pooled). Standard library only; starts mtr's launcher.

Usage: python human_agreement.py --model PATH.gguf --label qwen0.5b --sample 60 --seed 7
       [--humans FILE] [--threads 1] [--out results.json]
"""
import argparse
import json
import os
import random
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import post, start, stop  # noqa: E402

HUMANS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                      "data", "mtrag", "human_evaluations_clapnq_govt.json")
METRICS = ["appropriateness", "naturalness"]

SYSTEM = ("You audit a conversational search benchmark: a person asks questions in a multi-turn "
          "conversation, and annotators labelled passages and wrote reference answers. Judge only "
          "what you are asked, reading the CURRENT question in the light of the conversation before "
          "it (pronouns and ellipses refer back to it). Be strict and use only the text you are "
          "given, not outside knowledge. First write a short justification (one or two sentences), "
          "then give your verdict. Reply with one JSON object and nothing else.")


def user_prompt(history, question, answer):
    lines = ["## Conversation so far"]
    if history:
        for u in history:
            lines.append(f"{'User' if u['speaker'] == 'user' else 'Assistant'}: {u['text']}")
    else:
        lines.append("(this is the first turn)")
    lines += ["", "## Current question", f"User: {question}", "", "## Reference answer",
              f"Assistant: {answer}", "", "## Task",
              "How good is the reference answer as a reply to the current question in this "
              "conversation: coherent, helpful, and complete? (If the question cannot be answered, "
              "an honest and helpful refusal is a good answer.)",
              "5 = excellent; 4 = good with minor flaws; 3 = acceptable but incomplete or unclear; "
              "2 = poor; 1 = wrong, incoherent or unhelpful.",
              'Reply as {"justification": "...", "rating": N} with N from 1 to 5.']
    return "\n".join(lines)


PREFILL = '{"rating": '


def rating_distribution(resp, key="rating", lo=1, hi=5):
    content = (resp.get("choices") or [{}])[0].get("logprobs", {}) or {}
    content = content.get("content") or []
    text = PREFILL
    marker = f'"{key}"'
    for item in content:
        tok = item.get("token", "")
        at = text.rfind(marker)
        if at >= 0 and text[at + len(marker):].strip() == ":":
            g = tok.strip().strip('"')
            if g.isdigit() and lo <= int(g) <= hi:
                mass = {k: 0.0 for k in range(lo, hi + 1)}
                seen = False
                for alt in item.get("top_logprobs", []):
                    a = alt.get("token", "").strip().strip('"')
                    if a.isdigit() and lo <= int(a) <= hi:
                        mass[int(a)] += pow(2.718281828459045, alt["logprob"])
                        seen |= int(a) == int(g)
                if not seen:
                    mass[int(g)] += pow(2.718281828459045, item.get("logprob", -50))
                tot = sum(mass.values())
                if tot <= 0:
                    return None
                return int(g), sum(k * v for k, v in mass.items()) / tot, tot
        text += tok
    return None


def ranks(x):
    order = sorted(range(len(x)), key=lambda i: x[i])
    r = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def pearson(a, b):
    n = len(a)
    if n < 3:
        return None
    ma, mb = sum(a) / n, sum(b) / n
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    if va == 0 or vb == 0:
        return None
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (va * vb) ** 0.5


def spearman(a, b):
    return pearson(ranks(a), ranks(b))


def qwk(a, b, lo=1, hi=4):
    k = hi - lo + 1
    n = len(a)
    if n < 3:
        return None
    o = [[0] * k for _ in range(k)]
    for x, y in zip(a, b):
        o[x - lo][y - lo] += 1
    ha = [sum(o[i]) for i in range(k)]
    hb = [sum(o[i][j] for i in range(k)) for j in range(k)]
    num = den = 0.0
    for i in range(k):
        for j in range(k):
            w = (i - j) ** 2 / (k - 1) ** 2
            num += w * o[i][j]
            den += w * ha[i] * hb[j] / n
    return None if den == 0 else 1 - num / den


def to_human(s):
    return 1 + (s - 1) * 3 / 4


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def boot(pairs, stat, seed, reps=1000):
    """pairs: list of (cluster, x, y); 95% cluster-bootstrap interval of stat(xs, ys)."""
    clusters = sorted({c for c, _, _ in pairs})
    by = {c: [(x, y) for cc, x, y in pairs if cc == c] for c in clusters}
    rng = random.Random(seed)
    vals = []
    for _ in range(reps):
        xs, ys = [], []
        for c in (rng.choice(clusters) for _ in clusters):
            for x, y in by[c]:
                xs.append(x)
                ys.append(y)
        v = stat(xs, ys)
        if v is not None:
            vals.append(v)
    if len(vals) < reps // 2:
        return None
    vals.sort()
    return vals[int(0.025 * len(vals))], vals[int(0.975 * len(vals)) - 1]


def fmt(v, ci):
    if v is None:
        return "n/a"
    return f"{v:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{v:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--model", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--humans", default=HUMANS)
    ap.add_argument("--sample", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None)
    ap.add_argument("--deadline-s", type=float, default=0,
                    help="stop judging after this many seconds and report on the answers judged "
                         "(the first ones of the seeded sample); 0 = no limit")
    a = ap.parse_args()
    d = json.load(open(a.humans))
    tasks = {t["task_id"]: t for t in d["tasks"]}
    evals = [e for e in d["evaluations"] if all(len(e["annotations"].get(m, {})) >= 2 for m in METRICS)]
    evals.sort(key=lambda e: (e["task_id"], e["model_id"]))
    sample = random.Random(a.seed).sample(evals, min(a.sample, len(evals)))
    proc, url = start(a.python, a.model, a.threads, 1, 4096)
    rows = []
    t0 = time.time()
    try:
        for i, e in enumerate(sample):
            if a.deadline_s and time.time() - t0 > a.deadline_s:
                print(f"  deadline: stopped after {i} of {len(sample)} answers", flush=True)
                break
            t = tasks[e["task_id"]]
            turns = t["input"]
            question = turns[-1]["text"]
            body = {"model": "judge", "temperature": 0.0, "seed": 0, "max_tokens": 1,
                    "cache_prompt": True, "logprobs": True, "top_logprobs": 10,
                    "messages": [{"role": "system", "content": SYSTEM},
                                 {"role": "user", "content": user_prompt(turns[:-1], question, e["model_response"])},
                                 {"role": "assistant", "content": PREFILL}]}
            r = post(url + "/v1/chat/completions", body)
            text = r["choices"][0]["message"]["content"] or ""
            if not text.startswith(PREFILL):
                text = PREFILL + text
            m = re.search(r'"rating"\s*:\s*([1-5])', text)
            dist = rating_distribution(r)
            row = {"task_id": e["task_id"], "model_id": e["model_id"],
                   "generated": int(m.group(1)) if m else None,
                   "probability": dist[1] if dist else None, "mass": dist[2] if dist else None,
                   "humans": {k: [int(v["value"]) for v in e["annotations"][k].values()] for k in METRICS}}
            rows.append(row)
            print(f"  {i + 1}/{len(sample)} generated {row['generated']} probability "
                  f"{row['probability'] if row['probability'] is None else round(row['probability'], 2)} "
                  f"({time.time() - t0:.0f} s, load {open('/proc/loadavg').read().split()[0]})", flush=True)
    finally:
        stop(proc)
    out = {"label": a.label, "model": os.path.basename(a.model), "sample": len(sample), "seed": a.seed,
           "seconds": round(time.time() - t0), "rows": rows, "table": []}
    print(f"\n{a.label}: {len(rows)} answers in {time.time() - t0:.0f} s")
    print("| judge | mode | human metric | n | Spearman [95% CI] | QWK [95% CI] | failed |")
    print("|---|---|---|---:|---|---|---:|")
    for metric in METRICS:
        for mode in ("generated", "probability"):
            ok = [r for r in rows if r[mode] is not None]
            pairs = [(r["task_id"].split("<::>")[0], r[mode], median(r["humans"][metric])) for r in ok]
            sp = spearman([p[1] for p in pairs], [p[2] for p in pairs])
            sp_ci = boot(pairs, spearman, a.seed)

            def kappa(xs, ys):
                return qwk([min(4, max(1, round(to_human(x)))) for x in xs], [int(round(y + 1e-9)) for y in ys])
            kw = kappa([p[1] for p in pairs], [p[2] for p in pairs])
            kw_ci = boot(pairs, kappa, a.seed)
            line = f"| {a.label} | {mode} | {metric} | {len(ok)} | {fmt(sp, sp_ci)} | {fmt(kw, kw_ci)} | {len(rows) - len(ok)} |"
            print(line)
            out["table"].append({"metric": metric, "mode": mode, "n": len(ok), "spearman": sp, "spearman_ci": sp_ci,
                                 "qwk": kw, "qwk_ci": kw_ci, "failed": len(rows) - len(ok)})
        # the annotators' ceiling: each annotator against the median of the others
        pairs = []
        for r in rows:
            h = r["humans"][metric]
            for j, v in enumerate(h):
                rest = h[:j] + h[j + 1:]
                pairs.append((r["task_id"].split("<::>")[0], v, median(rest)))
        sp = spearman([p[1] for p in pairs], [p[2] for p in pairs])
        kw = qwk([p[1] for p in pairs], [int(round(p[2] + 1e-9)) for p in pairs])
        print(f"| annotators (ceiling) | one vs median of others | {metric} | {len(pairs)} | "
              f"{fmt(sp, boot(pairs, spearman, a.seed))} | "
              f"{fmt(kw, boot(pairs, lambda x, y: qwk(x, [int(round(v + 1e-9)) for v in y]), a.seed))} | - |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
