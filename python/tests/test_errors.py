"""Bad input raises `mtr.InputError` (a ValueError) naming the file, line and field as the
CLI does; the CLI exits 2 on the same input."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest

import mtr

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n"
RUN = "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq2 Q0 d3 1 0.5 t\n"


@pytest.fixture
def files(tmp_path: Path):
    q = tmp_path / "qrels.txt"
    r = tmp_path / "run.txt"
    q.write_text(QRELS)
    r.write_text(RUN)
    return q, r


def test_input_error_is_a_value_error_and_an_mtr_error() -> None:
    assert issubclass(mtr.InputError, ValueError)
    assert issubclass(mtr.InputError, mtr.Error)


def test_a_bad_run_line_names_the_file_line_and_field_like_the_cli(files, tmp_path: Path, mtr_exe: str) -> None:
    q, _ = files
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 high t\n")
    with pytest.raises(mtr.InputError) as e:
        mtr.evaluate(q, bad, "map")
    assert e.value.file == str(bad)
    assert e.value.line == 2
    assert str(bad) in str(e.value) and ":2" in str(e.value)
    cli = subprocess.run([mtr_exe, "eval", str(q), str(bad), "-m", "map"], capture_output=True, text=True)
    assert cli.returncode == 2
    assert str(e.value) in cli.stderr


def test_a_missing_file_is_the_users_error(tmp_path: Path, files) -> None:
    q, _ = files
    with pytest.raises(mtr.InputError) as e:
        mtr.evaluate(q, tmp_path / "nope.run")
    assert "nope.run" in str(e.value)


def test_a_run_frame_with_a_duplicate_names_its_rows(files) -> None:
    q, _ = files
    run = pd.DataFrame({"qid": ["q1", "q1", "q1", "q2"], "docno": ["d1", "d2", "d1", "d3"], "score": [3.0, 2.0, 1.0, 1.0]})
    with pytest.raises(mtr.InputError) as e:
        mtr.evaluate(q, run, "map")
    assert e.value.file == "run DataFrame" and e.value.line == 3
    assert "first at row 1" in str(e.value)
    # the CLI's --dedup first
    assert mtr.evaluate(q, run, "map", dedup="first")["map"] == mtr.evaluate(q, run.drop(index=2), "map")["map"]


def test_a_qrels_frame_with_a_duplicate_names_its_rows_and_the_python_flag(files) -> None:
    _, r = files
    qrels = pd.DataFrame({"qid": ["q1", "q2", "q1"], "docno": ["d1", "d3", "d1"], "label": [1, 2, 0]})
    with pytest.raises(mtr.InputError) as e:
        mtr.evaluate(qrels, r, "map")
    assert e.value.file == "qrels DataFrame" and e.value.line == 3 and e.value.field == "docno"
    assert "first at row 1" in str(e.value) and 'dedup="first"' in e.value.hint
    # the first judgement kept, as the file reader keeps it
    assert mtr.evaluate(qrels, r, "map", dedup="first") == mtr.evaluate(qrels.iloc[:2], r, "map")


def test_a_qrels_frame_with_a_fractional_grade_names_the_row() -> None:
    qrels = pd.DataFrame({"qid": ["q1", "q1"], "docno": ["d1", "d2"], "label": [1.0, 0.5]})
    run = {"q1": {"d1": 1.0}}
    with pytest.raises(mtr.InputError) as e:
        mtr.evaluate(qrels, run, "map")
    assert e.value.file == "qrels DataFrame" and e.value.line == 2 and e.value.field == "label"


def test_a_frame_without_the_columns_says_which_it_wants(files) -> None:
    q, _ = files
    with pytest.raises(mtr.InputError, match="run DataFrame: no qid, docno, score or query_id, doc_id, score"):
        mtr.evaluate(q, pd.DataFrame({"query": ["q1"], "doc": ["d1"]}))


def test_a_dict_with_a_bad_score_names_the_entry(files) -> None:
    q, _ = files
    with pytest.raises(mtr.InputError) as e:
        mtr.evaluate(q, {"q1": {"d1": "high"}, "q2": {"d3": 1.0}}, "map")
    assert e.value.file == "run dict" and '["q1"]["d1"]' in e.value.field


def test_bad_measures_and_flags_are_input_errors(files) -> None:
    q, r = files
    with pytest.raises(mtr.InputError, match="nDCG@"):
        mtr.evaluate(q, r, "nDCG@")
    with pytest.raises(mtr.InputError, match="exclude each other"):
        mtr.evaluate(q, r, "map", complete=True, intersect=True)
    with pytest.raises(mtr.InputError, match="trec_eval_9"):
        mtr.evaluate(q, r, "map", compat="trec_eval_8")
    with pytest.raises(TypeError):
        mtr.evaluate(q, r, "map", no_such_flag=True)  # type: ignore[call-arg]


def test_a_query_missing_from_the_run_is_an_error_unless_complete(files) -> None:
    q, _ = files
    run = {"q1": {"d1": 2.0}}
    with pytest.raises(mtr.InputError, match="q2"):
        mtr.evaluate(q, run, "map")
    assert mtr.evaluate(q, run, "map", complete=True)["map"] == 0.5
    assert mtr.evaluate(q, run, "map", intersect=True)["map"] == 1.0
