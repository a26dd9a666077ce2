"""Writes N Markdown sources for the document benchmark (benchmarks/corpus/documents.sh) from
the shipped English handbook (corpora/en): each one is two to four of its policies, in a
seeded order, under a title of its own, so that each PDF LibreOffice makes of it has several
pages and no two files are alike. Beside each `doc-NNNN.md` goes nothing else: the scoring
(recovered.py) reads the words back from the Markdown.

Usage: make_documents.py CORPUS_DIR OUT_DIR N SEED
"""

import pathlib
import random
import sys

corpus, out, n, seed = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
policies = [p.read_text(encoding="utf-8") for p in sorted(corpus.glob("*.md"))]
rng = random.Random(seed)
out.mkdir(parents=True, exist_ok=True)
for i in range(n):
    parts = rng.sample(policies, rng.randint(2, 4))
    body = []
    for text in parts:
        # each policy's `# Title` becomes a `## Title`, its `##` sections `###`
        body.append("\n".join("#" + line if line.startswith("#") else line for line in text.splitlines()))
    doc = f"# Staff handbook, part {i + 1}\n\n" + "\n\n".join(body) + "\n"
    (out / f"doc-{i:04d}.md").write_text(doc, encoding="utf-8")
