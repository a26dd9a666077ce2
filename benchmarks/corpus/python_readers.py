"""The Python readers the document benchmark (benchmarks/corpus/documents.sh) sets beside
`mtr corpus`: pypdf and pdfminer.six for PDF, trafilatura and readability-lxml for HTML, each
over every file of a folder (sorted), writing one JSON line per file (`file`, `text`) as
`mtr corpus` writes one per page or section, so that recovered.py scores them alike.

Usage: python_readers.py READER DIR OUT.jsonl   (READER: pypdf, pdfminer, trafilatura, readability)
"""

import json
import pathlib
import sys


def pypdf_text(path):
    import pypdf

    return "\n\n".join(page.extract_text() or "" for page in pypdf.PdfReader(path).pages)


def pdfminer_text(path):
    from pdfminer.high_level import extract_text

    return extract_text(path)


def trafilatura_text(path):
    import trafilatura

    return trafilatura.extract(path.read_bytes(), include_comments=False, include_tables=True) or ""


def readability_text(path):
    import lxml.html
    from readability import Document

    summary = Document(path.read_bytes()).summary(html_partial=True)
    return lxml.html.fromstring(summary).text_content()


READERS = {
    "pypdf": pypdf_text,
    "pdfminer": pdfminer_text,
    "trafilatura": trafilatura_text,
    "readability": readability_text,
}

reader, folder, out = READERS[sys.argv[1]], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
files = words = 0
with out.open("w", encoding="utf-8") as w:
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        text = reader(path)
        files += 1
        words += len(text.split())
        w.write(json.dumps({"file": path.name, "text": text}, ensure_ascii=False) + "\n")
print(f"{files} files, {words} words")
