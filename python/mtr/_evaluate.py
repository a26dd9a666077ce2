"""`mtr.evaluate`: `mtr eval`'s numbers in Python, from paths, DataFrames or dicts.

This module only says which form each input has and hands it over in bulk: a DataFrame's id
columns as their object arrays (read by the extension in one pass) or, when pyarrow holds them,
as Arrow's data and offsets buffers; its grade or score column as an int64 or float64 array.
No Python code runs per row. The reading, ranking and averaging are mtr-metrics' own (the
code `mtr eval` runs), without the GIL.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple, Union

from mtr import _mtr
from mtr._errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas

#: The id and value columns each DataFrame spelling uses: PyTerrier, then ir_measures.
QRELS_COLUMNS = (("qid", "docno", "label"), ("query_id", "doc_id", "relevance"))
RUN_COLUMNS = (("qid", "docno", "score"), ("query_id", "doc_id", "score"))

Qrels = Union[str, "os.PathLike[str]", "pandas.DataFrame", Dict[str, Dict[str, int]]]
Run = Union[str, "os.PathLike[str]", "pandas.DataFrame", Dict[str, Dict[str, float]]]
Measures = Union[None, str, Iterable[str]]


def evaluate(
    qrels: Qrels,
    run: Run,
    measures: Measures = None,
    per_query: bool = False,
    *,
    complete: bool = False,
    intersect: bool = False,
    relevance_level: int = 1,
    max_docs: Optional[int] = None,
    compat: str = "trec_eval_10",
    dedup: str = "error",
) -> Dict[str, Any]:
    """Evaluates a run against qrels exactly as ``mtr eval`` (and trec_eval 10.0) does.

    Args:
        qrels: a qrels file (TREC ``qid iter docno grade`` or BEIR ``qid docno grade``), a
            DataFrame with PyTerrier's columns ``qid, docno, label`` or ir_measures'
            ``query_id, doc_id, relevance``, or a dict ``{qid: {docid: grade}}``.
        run: a run file (TREC or MTRAG JSONL), a DataFrame with ``qid, docno, score`` or
            ``query_id, doc_id, score``, or a dict ``{qid: {docid: score}}``. Ranking is by
            score descending, ties by docno descending, as trec_eval ranks (a rank column is
            ignored).
        measures: one measure or a list, in trec_eval spelling (``map``, ``P.5,10``,
            ``ndcg_cut.10``, ``official``, ``all``) or ir_measures spelling (``nDCG@10``,
            ``RR@10``, ``P@5``, ``R@100``, ``AP@100``, ``Success@10``). None: trec_eval's
            official set.
        per_query: return ``{qid: {measure: value}}`` instead of the summary (``-q``).
        complete: average over every qrels query, a query missing from the run scoring 0
            (``-c``).
        intersect: average over the queries both inputs have (``--intersect``, trec_eval 9
            without ``-c``). Without either, a qrels query missing from the run is an error.
        relevance_level: the lowest grade counted relevant (``-l``); nDCG uses raw grades.
        max_docs: evaluate only the top N documents of each query (``-M``).
        compat: ``"trec_eval_10"`` (scores as float64) or ``"trec_eval_9"`` (scores as
            float32, as trec_eval 9, pytrec_eval, BEIR and MTEB read them) (``--compat``).
        dedup: ``"error"`` (a document listed twice for a query is an error naming it) or
            ``"first"`` (keep the first) (``--dedup``).

    Returns:
        ``{measure: value}``, the measure as written when it names one value (``"nDCG@10"``)
        and trec_eval's column names otherwise (``"P_5"``, ``"P_10"`` for ``"P.5,10"``);
        the values of trec_eval's ``all`` lines (``num_*`` as int, ``runid`` as str or None).
        With ``per_query=True``: ``{qid: {measure: value}}`` in qid byte order.

    Raises:
        InputError: a malformed file, DataFrame, dict, measure or flag, named as the CLI
            names it (file, line, field).
        Error: anything else.
    """
    summary, queries = _evaluate(qrels, run, measures, per_query, _flags(locals()))
    return queries if per_query else summary


def evaluate_frame(
    qrels: Qrels,
    run: Run,
    measures: Measures = None,
    per_query: bool = False,
    *,
    complete: bool = False,
    intersect: bool = False,
    relevance_level: int = 1,
    max_docs: Optional[int] = None,
    compat: str = "trec_eval_10",
    dedup: str = "error",
) -> "pandas.DataFrame":
    """`evaluate` as a long DataFrame with columns ``qid, measure, value``.

    The rows are trec_eval's output lines: with ``per_query=True`` every query's values in
    qid byte order, then the ``all`` rows; without it, the ``all`` rows only. ``runid`` is
    left out (it is not a number). Arguments as `evaluate`'s.
    """
    import pandas as pd

    summary, queries = _evaluate(qrels, run, measures, per_query, _flags(locals()))
    qids: List[str] = []
    names: List[str] = []
    values: List[float] = []
    for qid, row in (queries or {}).items():
        qids.extend([qid] * len(row))
        names.extend(row.keys())
        values.extend(row.values())
    for name, value in summary.items():
        if value is None or isinstance(value, str):
            continue
        qids.append("all")
        names.append(name)
        values.append(value)
    return pd.DataFrame({"qid": qids, "measure": names, "value": values})


_FLAG_NAMES = ("complete", "intersect", "relevance_level", "max_docs", "compat", "dedup")


def _flags(args: Dict[str, Any]) -> Dict[str, Any]:
    flags = {name: args[name] for name in _FLAG_NAMES}
    for name in ("complete", "intersect"):
        if not isinstance(flags[name], bool):
            raise InputError(f"{name} must be True or False, not {flags[name]!r}", field=name)
    for name in ("relevance_level", "max_docs"):
        v = flags[name]
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise InputError(f"{name} must be an int, not {v!r}", field=name)
    if flags["max_docs"] is not None and flags["max_docs"] < 0:
        raise InputError("max_docs (-M) must be >= 1", field="max_docs")
    return flags


def _evaluate(
    qrels: Qrels, run: Run, measures: Measures, per_query: bool, flags: Dict[str, Any]
) -> Tuple[Dict[str, Any], Optional[Dict[str, Dict[str, Any]]]]:
    if measures is None:
        specs: List[str] = []
    elif isinstance(measures, str):
        specs = [measures]
    else:
        specs = [str(m) for m in measures]
    q = _describe(qrels, "qrels", QRELS_COLUMNS, "int64")
    r = _describe(run, "run", RUN_COLUMNS, "float64")
    return _mtr.evaluate(q, r, specs, per_query, flags)


def _describe(value: Any, role: str, spellings: Tuple[Tuple[str, str, str], ...], dtype: str) -> tuple:
    """The input as the extension reads it: a path, columns or a dict."""
    if isinstance(value, (str, os.PathLike)):
        return ("path", os.fspath(value))
    if isinstance(value, dict):
        return ("dict", f"{role} dict", value)
    if hasattr(value, "columns") and hasattr(value, "__getitem__"):
        return _columns(value, role, spellings, dtype)
    raise TypeError(
        f"{role} must be a path, a pandas DataFrame or a dict, not {type(value).__name__}"
    )


def _columns(frame: Any, role: str, spellings: Tuple[Tuple[str, str, str], ...], dtype: str) -> tuple:
    import numpy as np

    origin = f"{role} DataFrame"
    present = set(frame.columns)
    for names in spellings:
        if set(names) <= present:
            qid, docno, value = names
            break
    else:
        wanted = " or ".join(", ".join(n) for n in spellings)
        raise InputError(
            f"{origin}: no {wanted} columns (it has {', '.join(map(str, frame.columns))})",
            file=origin,
        )
    column = frame[value]
    values = column.to_numpy()
    if dtype == "int64" and values.dtype.kind == "f":
        bad = ~np.isfinite(values) | (values != np.floor(values))
        if bad.any():
            row = int(np.argmax(bad))
            raise InputError(
                f"{origin}:{row + 1}: field `{value}`: grade {values[row]!r} is not an integer",
                file=origin,
                line=row + 1,
                field=value,
            )
    try:
        values = np.ascontiguousarray(values, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise InputError(f"{origin}: field `{value}`: not {dtype}: {e}", file=origin, field=value) from e
    return ("columns", origin, _ids(frame[qid]), _ids(frame[docno]), values)


def _ids(column: Any) -> tuple:
    """A column of ids as the extension reads it: Arrow's buffers where pyarrow holds the
    column, else an array of objects (numbers and other values written as str() writes them)."""
    import numpy as np

    arrow = _arrow_buffers(column)
    if arrow is not None:
        return arrow
    items = column.to_numpy()
    if items.dtype.kind != "O":
        items = column.astype(str).to_numpy()
    return ("objects", np.ascontiguousarray(items, dtype=object))


def _arrow_buffers(column: Any) -> Optional[tuple]:
    """("arrow", data, offsets) for a pyarrow-backed string column without missing values."""
    dtype = column.dtype
    held_by_arrow = str(getattr(dtype, "storage", "")).startswith("pyarrow") or type(dtype).__name__ == "ArrowDtype"
    to_arrow = getattr(column.array, "__arrow_array__", None)
    if not held_by_arrow or to_arrow is None:
        return None
    import numpy as np
    import pyarrow as pa

    try:
        array = to_arrow()
    except (TypeError, ValueError, NotImplementedError):
        return None
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.null_count or not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        return None
    _, offsets, data = array.buffers()
    width = np.int32 if pa.types.is_string(array.type) else np.int64
    offsets = np.frombuffer(offsets, dtype=width)[array.offset : array.offset + len(array) + 1]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return ("arrow", data, offsets)
