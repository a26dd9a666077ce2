"""The trec_eval golden cases of ../shared/golden through every input form of `mtr.evaluate`
(paths, PyTerrier and ir_measures DataFrames, pytrec_eval dicts, and a path mixed with a
frame) equal `mtr eval --format json` from the same venv, to the bit: the summary and every
query's values. Skipped without ../shared."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional

import pandas as pd
import pytest

import mtr

TREC = "golden/trec_eval_test"

# (qrels, run, measures, flags) as trec_eval was run for each expected output file
CASES = {
    "out.test": ("qrels.test", "results.test", [], {}),
    "out.test.a": ("qrels.test", "results.test", ["all"], {}),
    "out.test.aqc": ("qrels.test", "results.trunc", ["all"], {"complete": True}),
    "out.test.aqcM": ("qrels.test", "results.trunc", ["all"], {"complete": True, "max_docs": 100}),
    "out.test.aql": ("qrels.rel_level", "results.test", ["all"], {"relevance_level": 2}),
    "out.test.meas_params": (
        "qrels.test",
        "results.test",
        [
            "iprec_at_recall..10,.20,.25,.75,.50",
            "P.5,7,3",
            "recall.20,2000",
            "ndcg.1=3,2=9,4=4.5",
            "ndcg_cut.10,20,23.4",
            "success.2,5,20",
        ],
        {},
    ),
    "trec_eval_9": ("qrels.test", "results.trunc", ["official"], {"compat": "trec_eval_9", "intersect": True}),
}

# a measure that names one column is returned under its spelling; the CLI prints the column
RENAMED = {"ndcg.1=3,2=9,4=4.5": "ndcg_1=3,2=9,4=4.5"}

FORMS = ["path", "pyterrier", "ir_measures", "dict", "path+frame", "arrow", "shuffled", "categorical"]


def cli_flags(flags: Dict[str, Any]) -> List[str]:
    out = []
    if flags.get("complete"):
        out.append("-c")
    if flags.get("intersect"):
        out.append("--intersect")
    if "max_docs" in flags:
        out += ["-M", str(flags["max_docs"])]
    if "relevance_level" in flags:
        out += ["-l", str(flags["relevance_level"])]
    if "compat" in flags:
        out += ["--compat", flags["compat"]]
    return out


def cli_json(exe: str, qrels: Path, run: Path, measures: List[str], flags: Dict[str, Any]) -> dict:
    args = [exe, "eval", str(qrels), str(run), "--format", "json", *cli_flags(flags)]
    for m in measures:
        args += ["-m", m]
    out = subprocess.run(args, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def read_qrels(path: Path) -> List[tuple]:
    rows = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts:
            rows.append((parts[0], parts[2], int(parts[3])))
    return rows


def read_run(path: Path) -> List[tuple]:
    rows = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts:
            rows.append((parts[0], parts[2], float(parts[4]), int(parts[3])))
    return rows


def as_form(form: str, role: str, path: Path) -> Any:
    if form == "path" or (form == "path+frame" and role == "qrels"):
        return path
    if form in ("arrow", "shuffled", "categorical"):
        return frame_as(form, as_form("pyterrier", role, path))
    if role == "qrels":
        rows = read_qrels(path)
        if form == "dict":
            d: Dict[str, Dict[str, int]] = {}
            for q, doc, g in rows:
                d.setdefault(q, {})[doc] = g
            return d
        q, doc, g = zip(*rows)
        if form == "ir_measures":
            return pd.DataFrame({"query_id": q, "doc_id": doc, "relevance": g})
        return pd.DataFrame({"qid": q, "iteration": "0", "docno": doc, "label": g})
    rows = read_run(path)
    if form == "dict":
        r: Dict[str, Dict[str, float]] = {}
        for q, doc, s, _ in rows:
            r.setdefault(q, {})[doc] = s
        return r
    q, doc, s, rank = zip(*rows)
    if form == "ir_measures":
        return pd.DataFrame({"query_id": q, "doc_id": doc, "score": s})
    return pd.DataFrame({"qid": q, "docno": doc, "score": s, "rank": rank})


def frame_as(form: str, frame: pd.DataFrame) -> pd.DataFrame:
    """The frame held otherwise: pyarrow-backed ids (32-bit offsets for `qid`, 64-bit for
    `docno`), its rows in a seeded random order (each query's rows scattered), or categorical
    ids."""
    if form == "arrow":
        pa = pytest.importorskip("pyarrow")
        return frame.astype({"qid": "string[pyarrow]", "docno": pd.ArrowDtype(pa.large_string())})
    if form == "shuffled":
        return frame.sample(frac=1.0, random_state=7)
    return frame.astype({"qid": "category", "docno": "category"})


def same(got: Any, want: Any) -> bool:
    """Bit-equal, NaN (JSON null) equal to NaN."""
    if want is None:
        return got is None or (isinstance(got, float) and math.isnan(got))
    return type(got) is type(want) and got == want


def assert_same_values(got: Dict[str, Any], want: Dict[str, Any], where: str, runid: bool) -> None:
    got = {RENAMED.get(k, k): v for k, v in got.items()}
    if not runid:
        got.pop("runid", None)
        want = {k: v for k, v in want.items() if k != "runid"}
    assert set(got) == set(want), f"{where}: measures differ"
    bad = {k: (got[k], want[k]) for k in want if not same(got[k], want[k])}
    assert not bad, f"{where}: {bad}"


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_trec_eval_golden_case_equals_mtr_eval(shared: Path, mtr_exe: str, case: str, form: str) -> None:
    qrels_name, run_name, measures, flags = CASES[case]
    qrels_path = shared / TREC / qrels_name
    run_path = shared / TREC / run_name
    want = cli_json(mtr_exe, qrels_path, run_path, measures, flags)
    qrels = as_form(form, "qrels", qrels_path)
    run = as_form(form, "run", run_path)
    runid = form == "path"

    summary = mtr.evaluate(qrels, run, measures, **flags)
    assert_same_values(summary, want["summary"], f"{case}/{form} summary", runid)

    per_query = mtr.evaluate(qrels, run, measures, per_query=True, **flags)
    hidden = set(want["missing_queries"]) if flags.get("compat") == "trec_eval_9" else set()
    assert list(per_query) == [q for q in want["per_query"] if q not in hidden]
    for qid, values in per_query.items():
        assert_same_values(values, want["per_query"][qid], f"{case}/{form} {qid}", True)


def test_summary_matches_trec_eval_printed_output(shared: Path) -> None:
    """The first golden file as trec_eval printed it (`%6.4f`), from a PyTerrier frame."""
    d = shared / TREC
    got = mtr.evaluate(as_form("pyterrier", "qrels", d / "qrels.test"), d / "results.test")
    for line in (d / "out.test").read_text().splitlines():
        name, qid, value = (p.strip() for p in line.split("\t"))
        if name == "runid":
            continue
        mine = got[name]
        assert (str(mine) if isinstance(mine, int) else f"{mine:6.4f}".strip()) == value, name


def edge_cases(shared_root: Optional[Path]) -> List[str]:
    root = (shared_root or Path("/nonexistent")) / "golden/edge_cases"
    return sorted(p.name for p in root.glob("case*")) if root.is_dir() else ["none"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("complete", [False, True])
def test_edge_cases_equal_mtr_eval(shared: Path, mtr_exe: str, form: str, complete: bool) -> None:
    """Ties, missing and extra queries, graded and negative grades, conversational ids, score
    formats: each form gives `mtr eval`'s numbers, or an InputError where it exits 2."""
    measures = ["official", "ndcg_cut.5,10", "recip_rank", "success.1,5"]
    flags = {"complete": True} if complete else {}
    for case in sorted((shared / "golden/edge_cases").glob("case*")):
        qrels_path, run_path = case / "qrels.txt", case / "run.txt"
        args = [mtr_exe, "eval", str(qrels_path), str(run_path), "--format", "json", *cli_flags(flags)]
        for m in measures:
            args += ["-m", m]
        out = subprocess.run(args, capture_output=True, text=True)
        try:
            qrels = as_form(form, "qrels", qrels_path)
            run = as_form(form, "run", run_path)
        except (ValueError, IndexError):
            # a line this simple test reader cannot split: only the path form reads it
            continue
        if out.returncode != 0:
            assert out.returncode == 2, out.stderr
            if form != "dict":  # a dict cannot hold the duplicate the file has
                with pytest.raises(mtr.InputError):
                    mtr.evaluate(qrels, run, measures, **flags)
            continue
        want = json.loads(out.stdout)
        got = mtr.evaluate(qrels, run, measures, per_query=True, **flags)
        assert list(got) == list(want["per_query"]), case.name
        for qid, values in got.items():
            assert_same_values(values, want["per_query"][qid], f"{case.name}/{form} {qid}", True)
        summary = mtr.evaluate(qrels, run, measures, **flags)
        assert_same_values(summary, want["summary"], f"{case.name}/{form}", form == "path")
