"""`mtr export --to hf` and `--to triplets` read by Hugging Face `datasets`, as a user would.

The dataset folder must load config by config with `datasets.load_dataset(DIR, NAME)` (the
card's YAML `configs` decide which files each config reads), in the columns MTEB's retrieval
loader expects; the triplets must load with the `json` builder into the columns FlagEmbedding
(`query`, `pos`, `neg`) and sentence-transformers (`anchor`, `positive`, `negative`) read.

On MTRAG's fixture (history, rewrites, graded judgements); test_publish_main_job.py does the
same on a benchmark the main job synthesized. The binary is `publish_support.mtr_bin()`'s.
Skipped without `datasets`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from publish_support import REPO, fingerprint, mtr
from publish_support import load as load_with

datasets = pytest.importorskip("datasets")
yaml = pytest.importorskip("yaml")

FIXTURE = REPO / "tests" / "fixtures" / "formats" / "mtrag"


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("publish")
    out = root / "bench"
    mtr("import", "mtrag", FIXTURE, "-o", out)
    return out


@pytest.fixture(scope="module")
def hf_dir(bench: Path) -> Path:
    out = bench.parent / "hf"
    mtr("export", bench, "--to", "hf", "-o", out)
    return out


def load(path: Path, name: str, split: str):
    return load_with(datasets, path, name, split)


def test_the_card_front_matter_is_yaml_with_a_config_per_table(hf_dir: Path) -> None:
    text = (hf_dir / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["task_categories"] == ["text-retrieval"]
    assert front["license"]
    assert front["size_categories"] and front["pretty_name"]
    names = [c["config_name"] for c in front["configs"]]
    assert names == ["corpus", "queries", "qrels", "dialogues"]
    for c in front["configs"]:
        for f in c["data_files"]:
            assert (hf_dir / f["path"]).is_file(), f


def test_every_config_loads_with_datasets_in_mteb_columns(hf_dir: Path) -> None:
    corpus = load(hf_dir, "corpus", "corpus")
    assert {"_id", "title", "text"} <= set(corpus.column_names)
    queries = load(hf_dir, "queries", "queries")
    assert {"_id", "text", "history", "rewrite"} <= set(queries.column_names)
    qrels = load(hf_dir, "qrels", "test")
    assert qrels.column_names == ["query-id", "corpus-id", "score"]
    dialogues = load(hf_dir, "dialogues", "test")
    assert len(dialogues) == len(queries)
    # every judged query and passage exists
    ids = set(corpus["_id"])
    qids = set(queries["_id"])
    assert all(d in ids for d in qrels["corpus-id"])
    assert all(q in qids for q in qrels["query-id"])
    # the history of a second turn holds the first turn's question
    second = next(r for r in queries if r["turn"] == 2)
    first = next(
        r for r in queries if r["dialogue_id"] == second["dialogue_id"] and r["turn"] == 1
    )
    assert second["history"][0] == first["question"]
    assert second["history_speakers"][0] == "user"
    # the default config is the qrels, where MTEB's loader reads them
    default = datasets.load_dataset(
        str(hf_dir), split="test", cache_dir=str(hf_dir.parent / "hf-cache")
    )
    assert default.column_names == ["query-id", "corpus-id", "score"]


def test_the_folder_reimports_with_the_same_fingerprint(bench: Path, hf_dir: Path) -> None:
    before = fingerprint(bench)
    out = mtr("import", "auto", hf_dir, "-o", hf_dir.parent / "back")
    assert f"fingerprint {before}" in out


@pytest.mark.parametrize(
    ("flags", "columns"),
    [
        ([], {"query", "pos", "neg"}),
        (["--flat"], {"anchor", "positive", "negative"}),
    ],
)
def test_triplets_load_into_the_trainers_columns(
    bench: Path, flags: list[str], columns: set[str]
) -> None:
    out = bench.parent / f"triplets{len(flags)}.jsonl"
    mtr("export", bench, "--to", "triplets", "--negatives", "2", "-o", out, *flags)
    ds = datasets.load_dataset("json", data_files=str(out), split="train")
    assert len(ds) > 0
    if flags:
        assert ds.column_names == ["anchor", "positive", "negative"]
        assert all(isinstance(x, str) and x for x in ds["negative"])
    else:
        assert columns <= set(ds.column_names)
        assert all(isinstance(x, list) and x for x in ds["pos"])
        assert all(isinstance(x, list) for x in ds["neg"])
        assert "turn_id" in ds.column_names
