"""The column path's own cases: ids that are not str (written as str() writes them), a
pyarrow column sliced out of a larger one, a frame whose queries' rows are scattered, ids
with spaces (which no TREC file can hold)."""

from __future__ import annotations

import pandas as pd
import pytest

import mtr

QRELS = pd.DataFrame({"qid": ["q1", "q1", "q2", "q2"], "docno": ["a", "b", "c", "d"], "label": [1, 0, 2, 1]})
RUN = pd.DataFrame(
    {"qid": ["q1", "q2", "q1", "q2", "q1"], "docno": ["a", "c", "b", "x", "y"], "score": [3.0, 2.0, 1.0, 1.5, 0.5]}
)
MEASURES = ["map", "ndcg_cut.10", "P.2", "recip_rank", "num_ret"]


def as_dicts(qrels: pd.DataFrame, run: pd.DataFrame):
    q: dict = {}
    for a, b, c in qrels[["qid", "docno", "label"]].itertuples(index=False):
        q.setdefault(str(a), {})[str(b)] = int(c)
    r: dict = {}
    for a, b, c in run[["qid", "docno", "score"]].itertuples(index=False):
        r.setdefault(str(a), {})[str(b)] = float(c)
    return q, r


def test_scattered_rows_equal_grouped_rows_and_dicts() -> None:
    want = mtr.evaluate(QRELS, RUN, MEASURES, per_query=True)
    assert want == mtr.evaluate(QRELS, RUN.sort_values("qid", kind="stable"), MEASURES, per_query=True)
    assert want == mtr.evaluate(*as_dicts(QRELS, RUN), MEASURES, per_query=True)
    assert want["q1"]["num_ret"] == 3 and want["q2"]["num_ret"] == 2


def test_numeric_ids_read_as_str_writes_them() -> None:
    qrels = pd.DataFrame({"qid": [1, 1, 2], "docno": [10, 11, 12], "label": [1, 0, 1]})
    run = pd.DataFrame({"qid": [1, 1, 2], "docno": [10, 11, 99], "score": [2.0, 1.0, 1.0]})
    got = mtr.evaluate(qrels, run, "map", per_query=True)
    assert got == mtr.evaluate(*as_dicts(qrels, run), "map", per_query=True)
    assert list(got) == ["1", "2"] and got["1"]["map"] == 1.0 and got["2"]["map"] == 0.0
    # an object column mixing str and int
    mixed = run.astype({"qid": object})
    mixed.loc[0, "qid"] = "1"
    assert mtr.evaluate(qrels, mixed, "map", per_query=True) == got


def test_a_sliced_pyarrow_column_reads_its_own_rows() -> None:
    pytest.importorskip("pyarrow")
    big = pd.concat([RUN.assign(qid="zz"), RUN], ignore_index=True)
    arrow = big.astype({"qid": "string[pyarrow]", "docno": "string[pyarrow]"}).iloc[len(RUN):]
    assert mtr.evaluate(QRELS, arrow, MEASURES) == mtr.evaluate(QRELS, RUN, MEASURES)


def test_ids_with_spaces_work_from_frames() -> None:
    qrels = pd.DataFrame({"qid": ["a q"], "docno": ["d 1"], "label": [1]})
    run = pd.DataFrame({"qid": ["a q", "a q"], "docno": ["d 2", "d 1"], "score": [2.0, 1.0]})
    assert mtr.evaluate(qrels, run, "recip_rank") == {"recip_rank": 0.5}
