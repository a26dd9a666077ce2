"""Readers that hand mtr's folders to pandas: a benchmark (`Benchmark`), an audit's results
(`read_audit`) and a bench's results (`read_bench`). They read the files the CLI writes, in
the formats docs/format.md, docs/audit.md and docs/bench.md describe; ids stay str (never
parsed as numbers), and each table is read when first asked for.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Union

from mtr._errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas

PathLike = Union[str, "os.PathLike[str]"]


def _jsonl(path: Path) -> Iterator[Dict[str, Any]]:
    with open(path, encoding="utf-8-sig") as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{path}:{no}: not JSON: {e}", file=str(path), line=no) from e


def _json(path: Path) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8-sig") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: not JSON: {e.msg}", file=str(path), line=e.lineno) from e


def _folder(path: PathLike, marker: str, what: str, hint: str) -> Path:
    folder = Path(path)
    if not (folder / marker).is_file():
        raise InputError(
            f"{folder}: not {what} (no {marker}) (hint: {hint})", file=str(folder), hint=hint
        )
    return folder


class Benchmark:
    """A benchmark folder in mtr's format (``benchmark.toml``, ``corpus.jsonl``,
    ``dialogues.jsonl``, ``qrels.tsv``; docs/format.md). Another format is first imported with
    ``mtr import`` (``mtr.run(["import", ...])``).

    Attributes (each read when first used):
        manifest: ``benchmark.toml`` as a dict (Python 3.11+; the text on older Pythons).
        dialogues: the dialogues as dicts, as ``dialogues.jsonl`` holds them.
        turns: one row per turn: ``dialogue_id, turn`` (1-based), ``qid``, ``user``,
            ``rewrite``, ``answer``, ``gold`` (the number of gold passages), and one column per
            tag.
        corpus: ``id, title, text`` (and ``doc_id``, ``meta`` where present).
        qrels: ``qid, docno, label``: PyTerrier's columns, ready for `mtr.evaluate`.
    """

    def __init__(self, path: PathLike) -> None:
        self.path = _folder(
            path, "benchmark.toml", "an mtr benchmark", "convert it with `mtr import`"
        )
        self._cache: Dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"mtr.Benchmark({str(self.path)!r})"

    @property
    def manifest(self) -> Union[Dict[str, Any], str]:
        text = (self.path / "benchmark.toml").read_text(encoding="utf-8-sig")
        try:
            import tomllib
        except ImportError:  # Python < 3.11
            return text
        return tomllib.loads(text)

    @property
    def dialogues(self) -> List[Dict[str, Any]]:
        if "dialogues" not in self._cache:
            self._cache["dialogues"] = list(_jsonl(self.path / "dialogues.jsonl"))
        return self._cache["dialogues"]

    @property
    def turns(self) -> "pandas.DataFrame":
        import pandas as pd

        rows = []
        for d in self.dialogues:
            for i, t in enumerate(d.get("turns", []), 1):
                row = {
                    "dialogue_id": d["id"],
                    "turn": i,
                    "qid": t["id"],
                    "user": t["user"],
                    "rewrite": t.get("rewrite"),
                    "answer": t.get("answer"),
                    "gold": len(t.get("gold", [])),
                }
                for k, v in (t.get("tags") or {}).items():
                    row.setdefault(k, v)
                rows.append(row)
        return pd.DataFrame.from_records(rows)

    @property
    def corpus(self) -> "pandas.DataFrame":
        import pandas as pd

        return pd.DataFrame.from_records(list(_jsonl(self.path / "corpus.jsonl")))

    @property
    def qrels(self) -> "pandas.DataFrame":
        import pandas as pd

        path = self.path / "qrels.tsv"
        qids, docnos, labels = [], [], []
        with open(path, encoding="utf-8-sig", newline="") as f:
            for no, line in enumerate(f, 1):
                parts = line.split()
                if not parts:
                    continue
                if len(parts) != 4:
                    raise InputError(
                        f"{path}:{no}: expected `qid iter docno grade`", file=str(path), line=no
                    )
                qids.append(parts[0])
                docnos.append(parts[2])
                labels.append(int(parts[3]))
        return pd.DataFrame({"qid": qids, "docno": docnos, "label": labels})


class Audit:
    """An `mtr audit` results folder.

    Attributes:
        summary: ``summary.json`` as a dict (the headline numbers, their intervals, the
            verdict on the judges; docs/audit.md).
        items: ``items.jsonl``, one row per judgement (``dimension, judge, model,
            dialogue_id, turn_id, turn, passage_id, score``...).
        verify_items: ``verify_items.jsonl`` where the audit wrote one, else None.
    """

    def __init__(self, path: PathLike) -> None:
        self.path = _folder(path, "summary.json", "an mtr audit", "run `mtr audit` first")

    def __repr__(self) -> str:
        return f"mtr.read_audit({str(self.path)!r})"

    @property
    def summary(self) -> Dict[str, Any]:
        return _json(self.path / "summary.json")

    @property
    def items(self) -> "pandas.DataFrame":
        return self._table("items.jsonl")

    @property
    def verify_items(self) -> Optional["pandas.DataFrame"]:
        if not (self.path / "verify_items.jsonl").is_file():
            return None
        return self._table("verify_items.jsonl")

    def _table(self, name: str) -> "pandas.DataFrame":
        import pandas as pd

        return pd.DataFrame.from_records(list(_jsonl(self.path / name)))


def read_audit(path: PathLike) -> Audit:
    """Reads the folder an ``mtr audit`` wrote (``summary.json``, ``items.jsonl``)."""
    return Audit(path)


class Bench:
    """An `mtr bench` results folder.

    Attributes:
        result: ``bench.json`` as a dict (docs/bench.md).
        systems: one row per (system, measure): ``system, measure`` and the estimate's fields
            (the mean and its cluster-bootstrap interval).
        per_query: ``per_query.jsonl``, one row per (system, scored turn): ``system, qid,
            dialogue, position, num_rel``..., one column per measure, one per tag
            (``tag.<name>``).
    """

    def __init__(self, path: PathLike) -> None:
        self.path = _folder(path, "bench.json", "an mtr bench result", "run `mtr bench` first")

    def __repr__(self) -> str:
        return f"mtr.read_bench({str(self.path)!r})"

    @property
    def result(self) -> Dict[str, Any]:
        return _json(self.path / "bench.json")

    @property
    def systems(self) -> "pandas.DataFrame":
        import pandas as pd

        rows = []
        for s in self.result.get("systems", []):
            for measure, est in s.get("measures", {}).items():
                row: Dict[str, Any] = {"system": s["name"], "measure": measure}
                row.update(est if isinstance(est, dict) else {"mean": est})
                rows.append(row)
        return pd.DataFrame.from_records(rows)

    @property
    def per_query(self) -> "pandas.DataFrame":
        import pandas as pd

        rows = []
        for rec in _jsonl(self.path / "per_query.jsonl"):
            measures = rec.pop("measures", {})
            tags = rec.pop("tags", {})
            rec.update(measures)
            rec.update({f"tag.{k}": v for k, v in tags.items()})
            rows.append(rec)
        return pd.DataFrame.from_records(rows)


def read_bench(path: PathLike) -> Bench:
    """Reads the folder an ``mtr bench`` wrote (``bench.json``, ``per_query.jsonl``)."""
    return Bench(path)
