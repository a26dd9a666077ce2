"""How often the answerer says it found nothing, per answer prompt, on the same questions.

    python3 benchmarks/pipeline/answer_not_found.py PORT WORK TEMPLATE.j2 [TEMPLATE.j2 ...]

WORK is a `yield.sh` work folder: the questions are the verified turns of its benchmarks (each
asked once, with its conversation before it and its first gold passage). Each template (an
answer prompt: prompts/synth/answer.j2, a variant) is rendered for every question (jinja2,
as minijinja renders these templates) and sent twice (seeds 1000 + i, 2000 + i; temperature
0.7, top_p 0.95, 160 tokens: the generator's sampling) to the llama.cpp server on PORT, e.g.
one started with mtr's launcher:

    ~/.local/share/mtr/venv/bin/python ~/.local/state/mtr/local/xllamacpp_server.py \
        ~/.local/share/mtr/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf 39111 1 4096 x 1

An answer "says not found" when it holds one of the phrases the synthesizer's check looks for
(crates/pipeline/src/text_rules.rs, abridged); such an answer rejects its question.
"""
import glob, json, sys, urllib.request
import jinja2
port = int(sys.argv[1]); work = sys.argv[2]; variants = sys.argv[3:]
corpus = {}
for f in glob.glob(f"{work}/r*-a/bench/corpus.jsonl"):
    for l in open(f):
        d = json.loads(l); corpus[d["id"]] = d
items = []
seen = set()
for f in sorted(glob.glob(f"{work}/r*-*/bench/dialogues.jsonl")):
    for l in open(f):
        d = json.loads(l); hist = []
        for t in d["turns"]:
            g = [x["passage_id"] for x in t["gold"] if x["passage_id"] in corpus]
            if g and t["user"] not in seen:
                seen.add(t["user"])
                items.append((list(hist), t["user"], corpus[g[0]]))
            hist += [{"speaker": "user", "text": t["user"]}, {"speaker": "assistant", "text": t["answer"]}]
NF = ["could not find","couldn't find","cannot find","can't find","unable to find","not able to find","does not mention","doesn't mention","is not mentioned","isn't mentioned","not mentioned in","no mention of","is not specified","isn't specified","not specified in","is not stated","isn't stated","not stated in","not explicitly","no information","no specific information","no details","cannot answer","can't answer","unable to answer","cannot be","i don't know","i do not know","does not provide","does not specify","does not state","does not contain","doesn't contain"]
env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
out = {}
for v in variants:
    t = env.from_string(open(v).read())
    nf = 0; n = 0; ex = []
    for i, (h, q, p) in enumerate(items):
        ctx = {"language": "English", "passage": {"title": p["title"], "section": None, "text": p["text"]}, "history": h, "question": q}
        sysm = "".join(t.blocks["system"](t.new_context(ctx))).strip()
        user = "".join(t.blocks["user"](t.new_context(ctx))).strip()
        for seed in (1, 2):
            body = {"model": "x", "messages": [{"role": "system", "content": sysm}, {"role": "user", "content": user}], "temperature": 0.7, "top_p": 0.95, "seed": seed * 1000 + i, "max_tokens": 160}
            r = urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}), timeout=300)
            a = json.loads(r.read())["choices"][0]["message"]["content"]
            n += 1
            if any(x in a.lower() for x in NF):
                nf += 1; ex.append((q, a[:150]))
    print(f"{v}: {nf} of {n} answers say not found ({len(items)} questions x 2 seeds)", flush=True)
    for e in ex[:4]: print("   ", e, flush=True)
