#!/usr/bin/env bash
# Document benchmark (issue 49): N multi-page PDFs and N HTML pages made from the shipped
# handbook (corpora/en) by the tools people make them with (pandoc's DOCX printed to PDF by
# LibreOffice headless; pandoc's HTML in a site page with a cookie banner, navigation, an aside
# and a footer: tests/fixtures/corpus-docs/page.html), read by `mtr corpus` (release build)
# side by side with pypdf and pdfminer.six (PDF) and trafilatura and readability-lxml (HTML),
# each RUNS times, interleaved, timed with /usr/bin/time (wall time, max RSS). Prints, per
# reader, the source words read per second, the peak memory, the share of each file's source
# words recovered (recovered.py), and mtr's ratios to the others.
#
# Usage: benchmarks/corpus/documents.sh     (N=1000 RUNS=3 SEED=1; DATA=DIR keeps the made
#        files in DIR and reuses them on the next run; VENV=DIR a venv with the Python readers,
#        made in the temporary folder when unset)
# Needs: pandoc, libreoffice-writer-nogui (Debian), python3 with venv, PyPI for the readers.
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${N:-1000}"
runs="${RUNS:-3}"
seed="${SEED:-1}"
tmp="$(mktemp -d /tmp/mtr-corpus-docs.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
data="${DATA:-$tmp/data}"
here=benchmarks/corpus

# 1. the documents (reused when DATA holds N of each already)
if [ "$(ls "$data/pdf" 2>/dev/null | wc -l)" != "$n" ] || [ "$(ls "$data/html" 2>/dev/null | wc -l)" != "$n" ]; then
  rm -rf "$data" && mkdir -p "$data"/{src,docx,pdf,html}
  start=$(date +%s)
  python3 "$here/make_documents.py" corpora/en "$data/src" "$n" "$seed"
  for f in "$data"/src/*.md; do
    b=$(basename "$f" .md)
    pandoc "$f" -o "$data/docx/$b.docx"
    pandoc -s --shift-heading-level-by=-1 --template tests/fixtures/corpus-docs/page.html \
      "$f" -o "$data/html/$b.html"
  done
  # one LibreOffice process per 100 files (a start per file costs seconds; one process for a
  # thousand stopped after a few hundred here), then again for any it left out
  for try in 1 2 3; do
    (cd "$data" && for b in $(ls docx | sed 's/\.docx$//'); do [ -f "pdf/$b.pdf" ] || echo "docx/$b.docx"; done) \
      | xargs -r -n 100 sh -c 'cd "$0" && soffice --headless --convert-to pdf --outdir pdf "$@" > /dev/null 2>&1' "$data" || true
    [ "$(ls "$data/pdf" | wc -l)" = "$n" ] && break
  done
  [ "$(ls "$data/pdf" | wc -l)" = "$n" ] || { echo "LibreOffice made $(ls "$data/pdf" | wc -l) of $n PDFs"; exit 1; }
  echo "made $n PDFs and $n HTML pages in $(( $(date +%s) - start )) s"
fi
pages=$(for f in "$data"/pdf/*.pdf; do pdfinfo "$f" 2>/dev/null | awk '/^Pages:/ {print $2}'; done | awk '{s += $1} END {print s}')
echo "PDF: $n files, $pages pages, $(du -sh "$data/pdf" | cut -f1); HTML: $n files, $(du -sh "$data/html" | cut -f1)"

# 2. the readers
cargo build -q --release --bin mtr
mtr=target/release/mtr
venv="${VENV:-$tmp/venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  # a current pip: the one venv ships could not resolve readability-lxml's lxml extras
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q pypdf pdfminer.six trafilatura readability-lxml lxml_html_clean
fi
py="$venv/bin/python"
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "readers: mtr $("$mtr" --version | cut -d' ' -f2), $("$py" -c 'import importlib.metadata as m; print(", ".join(f"{p} {m.version(p)}" for p in ["pypdf", "pdfminer.six", "trafilatura", "readability-lxml"]))')"

# one measured run: appends `reader wall_s max_rss_kb` to $tmp/times
measure() {
  local name="$1"
  shift
  /usr/bin/time -f "$name %e %M" -a -o "$tmp/times" "$@" > "$tmp/$name.log" 2>&1 \
    || { cat "$tmp/$name.log"; return 1; }
}
for r in $(seq "$runs"); do
  measure mtr-pdf "$mtr" --quiet corpus "$data/pdf" -o "$tmp/mtr-pdf.jsonl"
  measure pypdf "$py" "$here/python_readers.py" pypdf "$data/pdf" "$tmp/pypdf.jsonl"
  measure pdfminer "$py" "$here/python_readers.py" pdfminer "$data/pdf" "$tmp/pdfminer.jsonl"
  measure mtr-html "$mtr" --quiet corpus "$data/html" -o "$tmp/mtr-html.jsonl"
  measure trafilatura "$py" "$here/python_readers.py" trafilatura "$data/html" "$tmp/trafilatura.jsonl"
  measure readability "$py" "$here/python_readers.py" readability "$data/html" "$tmp/readability.jsonl"
  echo "run $r done (load $(cut -d' ' -f1 /proc/loadavg))"
done
for name in mtr-pdf pypdf pdfminer mtr-html trafilatura readability; do
  echo "$name $("$py" "$here/recovered.py" "$data/src" "$tmp/$name.jsonl")" >> "$tmp/recovered"
done

# 3. the table and the ratios
python3 - "$tmp/times" "$tmp/recovered" "$data/src" <<'PY'
import collections, pathlib, re, statistics, sys
times = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, wall, rss = line.split()
    times[name].append((float(wall), int(rss) / 1024))
rec = {l.split()[0]: l.split(" ", 1)[1].strip() for l in open(sys.argv[2])}
words = sum(len(re.findall(r"[^\W_]+", p.read_text())) for p in pathlib.Path(sys.argv[3]).glob("*.md"))
print(f"\nsource words: {words}")
print(f"{'reader':<12} {'wall s (runs)':<24} {'words/s (median)':>17} {'max RSS MB':>11}  recovered")
med = {}
for name, ts in times.items():
    walls = [w for w, _ in ts]
    med[name] = statistics.median(walls)
    walls_s = ", ".join(f"{w:.2f}" for w in walls)
    rss = max(r for _, r in ts)
    print(f"{name:<12} {walls_s:<24} {words / med[name]:>17,.0f} {rss:>11.0f}  {rec[name]}")
print()
for mine, other in [("mtr-pdf", "pypdf"), ("mtr-pdf", "pdfminer"), ("mtr-html", "trafilatura"), ("mtr-html", "readability")]:
    print(f"{mine} / {other}: {med[other] / med[mine]:.1f}x the words per second (median wall times)")
PY
