"""Scores what a reader recovered of each file of the document benchmark
(benchmarks/corpus/documents.sh): the share of the source Markdown's words (lowercased runs
of letters and digits, as a multiset) found in the text read from the file made of it, and
the words read beyond them (a web page's navigation, cookie banner and footer) per source
word. Reads a JSON-lines file of `mtr corpus` (`text`, `source.file`; a section's own heading,
the last part of its `title`, counts as read, since the passage carries it) or of
python_readers.py (`file`, `text`).

Usage: recovered.py SRC_DIR OUT.jsonl   (prints: files, source words, recovered %, mean and
lowest per file, extra %)
"""

import collections
import json
import pathlib
import re
import sys

WORD = re.compile(r"[^\W_]+")


def words(text):
    return collections.Counter(w.lower() for w in WORD.findall(text))


src_dir, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
read = collections.defaultdict(collections.Counter)
for line in out.open(encoding="utf-8"):
    rec = json.loads(line)
    if "source" in rec:
        name = rec["source"]["file"]
        text = rec["text"]
        if rec["source"].get("section"):
            text = rec["title"].split(" › ")[-1] + "\n" + text
    else:
        name, text = rec["file"], rec["text"]
    read[pathlib.Path(name).stem].update(words(text))

total = found = extra = 0
shares = []
for src in sorted(src_dir.glob("*.md")):
    want = words(src.read_text(encoding="utf-8").replace("#", " "))
    got = read.get(src.stem, collections.Counter())
    hit = sum((want & got).values())
    n = sum(want.values())
    total += n
    found += hit
    extra += sum(got.values()) - hit
    shares.append(hit / n if n else 1.0)
print(
    f"files {len(shares)}, source words {total}, recovered {100 * found / total:.2f}%, "
    f"per file mean {100 * sum(shares) / len(shares):.2f}% lowest {100 * min(shares):.2f}%, "
    f"extra {100 * extra / total:.2f}%"
)
