"""The readers hand mtr's folders to pandas: a benchmark's turns, corpus and qrels (which
`mtr.evaluate` takes as they are), an audit's summary and items, a bench's systems and
per-query values; `evaluate_frame` is `evaluate` as a long frame."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mtr
from test_cli import write_benchmark


def test_benchmark_tables(tmp_path: Path) -> None:
    b = mtr.Benchmark(write_benchmark(tmp_path))
    assert list(b.turns["qid"]) == ["d::1", "d::2"]
    assert list(b.turns["turn"]) == [1, 2]
    assert b.turns["rewrite"].tolist()[1] == "What do guinea pigs eat?"
    assert list(b.corpus["id"]) == ["gp", "food", "cat"]
    assert b.qrels.to_dict("list") == {"qid": ["d::1", "d::2"], "docno": ["gp", "food"], "label": [1, 2]}
    assert b.dialogues[0]["id"] == "d"
    run = {"d::1": {"gp": 2.0, "cat": 1.0}, "d::2": {"cat": 2.0, "food": 1.0}}
    assert mtr.evaluate(b.qrels, run, "RR@10") == {"RR@10": 0.75}


def test_a_folder_that_is_not_a_benchmark_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(mtr.InputError, match="mtr import"):
        mtr.Benchmark(tmp_path)


def test_read_audit(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"schema": "x", "judges": ["a"]}))
    items = [
        {"id": "1", "dimension": "alignment", "judge": "a", "turn_id": "d::1", "score": 4},
        {"id": "2", "dimension": "alignment", "judge": "a", "turn_id": "d::2", "score": None},
    ]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    a = mtr.read_audit(tmp_path)
    assert a.summary["judges"] == ["a"]
    assert a.items["score"].tolist()[0] == 4 and len(a.items) == 2
    assert a.verify_items is None


def test_read_bench(tmp_path: Path) -> None:
    result = {"systems": [{"name": "bm25", "measures": {"ndcg_cut_10": {"mean": 0.5, "lo": 0.4, "hi": 0.6}}}]}
    (tmp_path / "bench.json").write_text(json.dumps(result))
    rows = [
        {"system": "bm25", "qid": "d::1", "position": 1, "measures": {"ndcg_cut_10": 1.0}, "tags": {"domain": "x"}},
        {"system": "bm25", "qid": "d::2", "position": 2, "measures": {"ndcg_cut_10": 0.0}},
    ]
    (tmp_path / "per_query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    b = mtr.read_bench(tmp_path)
    assert b.systems.to_dict("records") == [{"system": "bm25", "measure": "ndcg_cut_10", "mean": 0.5, "lo": 0.4, "hi": 0.6}]
    assert b.per_query["ndcg_cut_10"].tolist() == [1.0, 0.0]
    assert b.per_query["tag.domain"].tolist()[0] == "x"


def test_evaluate_frame_is_evaluate_long(tmp_path: Path) -> None:
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 1}}
    run = {"q1": {"d1": 1.0, "d2": 2.0}, "q2": {"d3": 1.0}}
    f = mtr.evaluate_frame(qrels, run, ["nDCG@10", "P.1,2"], per_query=True)
    assert list(f.columns) == ["qid", "measure", "value"]
    per_query = mtr.evaluate(qrels, run, ["nDCG@10", "P.1,2"], per_query=True)
    summary = mtr.evaluate(qrels, run, ["nDCG@10", "P.1,2"])
    for row in f.itertuples():
        want = summary[row.measure] if row.qid == "all" else per_query[row.qid][row.measure]
        assert row.value == want
    assert set(f.loc[f.qid == "all", "measure"]) == {"nDCG@10", "P_1", "P_2"}


def test_help_shows_the_flags() -> None:
    import inspect

    params = inspect.signature(mtr.evaluate).parameters
    for flag in ("complete", "intersect", "relevance_level", "max_docs", "compat", "dedup"):
        assert params[flag].kind is inspect.Parameter.KEYWORD_ONLY
    assert "(``-c``)" in mtr.evaluate.__doc__
    assert inspect.signature(mtr.evaluate_frame).parameters.keys() == params.keys()
