"""Issue 50's check on a benchmark the main job synthesized: tests/fixtures/main-job/ holds the
English benchmark `bash scripts/main-job.sh` made from corpora/ with the embedded local models
and the main job's audit of it, each file as they wrote it (PROVENANCE.md: the command, the
seed, the models, the fingerprint; scripts/main-job-fixture.sh makes it again).

Its Hugging Face export must load with `datasets.load_dataset(DIR, CONFIG)` config by config,
in the columns and with the rows of the native benchmark; the folder must come back through
`mtr import auto` with the same data fingerprint; the card must carry the audit's verdict and
say how the benchmark was made; and its triplets, mined with BM25 and cleaned by the audit,
must load with `datasets`' `json` builder into FlagEmbedding's columns (`query`, `pos`, `neg`)
and, with `--flat`, exactly sentence-transformers' (`anchor`, `positive`, `negative`), with
no negative a gold of its turn and splits that keep each dialogue whole.

The fixture is copied to a temporary folder first: exporting triplets builds the BM25 index
beside the benchmark, and the tests write nothing into the repository.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from publish_support import REPO, fingerprint, load, mtr, mtr_bin

datasets = pytest.importorskip("datasets")
yaml = pytest.importorskip("yaml")

FIXTURE = REPO / "tests" / "fixtures" / "main-job"


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("main-job")
    shutil.copytree(FIXTURE / "bench-en", root / "bench")
    shutil.copytree(FIXTURE / "audit-en", root / "audit")
    return root


@pytest.fixture(scope="module")
def native(root: Path) -> dict:
    """What the native benchmark holds: passages, dialogues, judgements."""
    bench = root / "bench"
    qrels = [
        line.split()
        for line in (bench / "qrels.tsv").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    return {
        "corpus": {p["id"]: p for p in jsonl(bench / "corpus.jsonl")},
        "dialogues": jsonl(bench / "dialogues.jsonl"),
        "qrels": qrels,
    }


@pytest.fixture(scope="module")
def hf_dir(root: Path) -> Path:
    out = root / "hf"
    mtr("export", root / "bench", "--to", "hf", "--audit", root / "audit", "-o", out)
    return out


def test_the_fixture_is_the_main_jobs_synthesis(native: dict) -> None:
    manifest = (FIXTURE / "bench-en" / "benchmark.toml").read_text(encoding="utf-8")
    assert 'source = "mtr-synth"' in manifest
    assert 'corpus = "corpora/en"' in manifest
    assert "seed = 7" in manifest
    provenance = (FIXTURE / "PROVENANCE.md").read_text(encoding="utf-8")
    assert fingerprint(FIXTURE / "bench-en") in provenance
    assert native["dialogues"] and native["qrels"]
    summary = json.loads((FIXTURE / "audit-en" / "summary.json").read_text(encoding="utf-8"))
    assert summary["fingerprint"]["data"] == fingerprint(FIXTURE / "bench-en")


def test_the_card_says_what_it_is_how_it_was_made_and_its_verdict(
    root: Path, hf_dir: Path
) -> None:
    text = (hf_dir / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["language"] == ["en"]
    assert front["task_categories"] == ["text-retrieval"]
    assert front["size_categories"] == ["n<1K"]
    assert front["pretty_name"] == "bench-en"
    assert front["license"]
    assert [c["config_name"] for c in front["configs"]] == [
        "corpus",
        "queries",
        "qrels",
        "dialogues",
    ]
    body = text.split("---\n", 2)[2]
    for part in (
        "Synthesized from a corpus by `mtr synth`",
        "qwen2.5-coder-0.5b-instruct-q4_k_m",
        fingerprint(root / "bench"),
        "## Audit",
        "Verdict of the LLM-judge audit",
        "## Realism",
        "## Loading",
        "MTEB",
        "## Citation",
    ):
        assert part in body, part


def test_every_config_loads_with_the_native_rows(hf_dir: Path, native: dict) -> None:
    turns = [t for d in native["dialogues"] for t in d["turns"]]
    corpus = load(datasets, hf_dir, "corpus", "corpus")
    assert corpus.column_names == ["_id", "title", "text", "doc_id", "metadata"]
    assert sorted(corpus["_id"]) == sorted(native["corpus"])
    row = corpus[0]
    assert row["text"] == native["corpus"][row["_id"]]["text"]

    queries = load(datasets, hf_dir, "queries", "queries")
    assert {"_id", "text", "history", "rewrite"} <= set(queries.column_names)
    assert queries["_id"] == [t["id"] for t in turns]
    assert queries["question"] == [t["user"] for t in turns]
    assert queries["rewrite"] == [t.get("rewrite") for t in turns]

    qrels = load(datasets, hf_dir, "qrels", "test")
    assert qrels.column_names == ["query-id", "corpus-id", "score"]
    got = sorted(zip(qrels["query-id"], qrels["corpus-id"], qrels["score"], strict=True))
    assert got == sorted((q, d, int(s)) for q, _, d, s in native["qrels"])

    dialogues = load(datasets, hf_dir, "dialogues", "test")
    assert dialogues["turn_id"] == [t["id"] for t in turns]
    assert Counter(dialogues["dialogue_id"]) == {
        d["id"]: len(d["turns"]) for d in native["dialogues"]
    }
    # a follow-up's history holds the question and the answer before it
    for d in native["dialogues"]:
        for i, t in enumerate(d["turns"][1:], start=1):
            q = queries[queries["_id"].index(t["id"])]
            assert q["history"][0] == d["turns"][0]["user"]
            assert len(q["history"]) == len(q["history_speakers"]) >= i


def test_mtebs_loaders_find_corpus_queries_and_qrels(hf_dir: Path, native: dict) -> None:
    """The calls MTEB's retrieval loaders make, through `datasets` alone (MTEB itself pulls
    torch): mteb 2's `RetrievalDatasetLoader` lists the configs, reads the qrels from `default`
    or else `qrels`, and takes each config's `test` split or else its only one; mteb 1's
    `HFDataLoader` loads `corpus` and `queries` without a split (their first) and the qrels
    from the default config's `test` split."""
    path = str(hf_dir)
    configs = datasets.get_dataset_config_names(path)
    assert {"corpus", "queries", "qrels"} <= set(configs) and "default" not in configs

    def split(config: str) -> str:
        splits = datasets.get_dataset_split_names(path, config_name=config)
        return "test" if "test" in splits else next(iter(splits)) if len(splits) == 1 else ""

    assert [split(c) for c in ("corpus", "queries", "qrels")] == ["corpus", "queries", "test"]
    cache = str(hf_dir.parent / "hf-cache")
    qrels = datasets.load_dataset(path, "qrels", split="test", cache_dir=cache)
    qrels = qrels.select_columns(["query-id", "corpus-id", "score"]).cast(
        datasets.Features(
            {
                "query-id": datasets.Value("string"),
                "corpus-id": datasets.Value("string"),
                "score": datasets.Value("int32"),
            }
        )
    )
    assert len(qrels) == len(native["qrels"])
    corpus = next(iter(datasets.load_dataset(path, "corpus", cache_dir=cache).values()))
    assert {"_id", "title", "text"} <= set(corpus.column_names)
    assert len(corpus) == len(native["corpus"])
    default = datasets.load_dataset(path, cache_dir=cache)["test"]
    assert default.column_names == ["query-id", "corpus-id", "score"]


def test_the_folder_reimports_with_the_same_fingerprint(root: Path, hf_dir: Path) -> None:
    out = mtr("import", "auto", hf_dir, "-o", root / "back")
    assert f"fingerprint {fingerprint(root / 'bench')}" in out
    assert fingerprint(root / "back") == fingerprint(root / "bench")


def gold_texts(native: dict) -> dict[str, set[str]]:
    """Each turn's gold passages as the triplets write them (title line, then text)."""
    out: dict[str, set[str]] = {}
    for d in native["dialogues"]:
        for t in d["turns"]:
            texts = set()
            for g in t["gold"]:
                p = native["corpus"][g["passage_id"]]
                title = p.get("title", "").strip()
                plain = p["text"]
                texts.add(plain if not title or plain.startswith(title) else f"{title}\n{plain}")
            out[t["id"]] = texts
    return out


def test_triplets_load_into_flagembeddings_columns_cleaned_by_the_audit(
    root: Path, native: dict
) -> None:
    out = root / "lists.jsonl"
    report = json.loads(
        mtr(
            "export", root / "bench", "--to", "triplets", "--audit", root / "audit",
            "--negatives", "3", "--format", "json", "-o", out,
        )
    )
    ds = datasets.load_dataset(
        "json", data_files=str(out), split="train", cache_dir=str(root / "json-cache")
    )
    assert {"query", "pos", "neg"} <= set(ds.column_names)
    assert len(ds) == report["turns"] > 0
    golds = gold_texts(native)
    for row in ds:
        assert row["pos"] and set(row["pos"]) <= golds[row["turn_id"]]
        assert 0 < len(row["neg"]) <= 3
        assert not set(row["neg"]) & golds[row["turn_id"]], "a negative is never a gold"
    # `--query full` (the default) writes the conversation so far before the question
    follow_ups = [
        t for d in native["dialogues"] for t in d["turns"][1:] if t["id"] in ds["turn_id"]
    ]
    for t in follow_ups:
        assert ds["query"][ds["turn_id"].index(t["id"])].endswith(t["user"])
    assert report["audit_exclusions"] is not None
    assert report["removed"]["audit"] >= 0


def test_flat_triplets_load_into_sentence_transformers_columns_split_by_dialogue(
    root: Path, native: dict
) -> None:
    out = root / "flat.jsonl"
    mtr(
        "export", root / "bench", "--to", "triplets", "--audit", root / "audit",
        "--negatives", "2", "--flat", "--splits", "train=0.5,dev=0.5", "-o", out,
    )
    files = {s: root / f"flat.{s}.jsonl" for s in ("train", "dev")}
    flat = datasets.load_dataset(
        "json",
        data_files={s: str(p) for s, p in files.items()},
        cache_dir=str(root / "json-cache"),
    )
    golds = set().union(*gold_texts(native).values())
    rows = 0
    for split in ("train", "dev"):
        if not files[split].read_text(encoding="utf-8"):
            continue  # a split whose dialogues had no turn to train on
        assert flat[split].column_names == ["anchor", "positive", "negative"]
        rows += len(flat[split])
        assert all(p in golds for p in flat[split]["positive"])
    assert rows > 0
    # the same split in the lists form names each line's dialogue: none is in both files
    mtr(
        "export", root / "bench", "--to", "triplets", "--negatives", "2",
        "--splits", "train=0.5,dev=0.5", "-o", root / "split.jsonl",
    )
    dialogues = {
        s: {line["dialogue_id"] for line in jsonl(root / f"split.{s}.jsonl")}
        for s in ("train", "dev")
    }
    assert not dialogues["train"] & dialogues["dev"]


def test_no_negatives_is_refused_naming_the_flag(root: Path) -> None:
    out = subprocess.run(
        [mtr_bin(), "export", str(root / "bench"), "--to", "triplets", "--negatives", "0",
         "-o", str(root / "none.jsonl")],
        capture_output=True, text=True, check=False,
    )
    assert out.returncode == 2, out.stderr
    assert "--negatives" in out.stderr
    assert not (root / "none.jsonl").exists()


def test_an_mteb_folder_pyarrow_wrote_imports(root: Path, native: dict) -> None:
    """MTEB's layout without mtr's `dialogues` config, as `datasets` and `pyarrow` write
    Parquet (large strings, dictionary pages, zstd; int64 scores; qrels in `default/`): read as
    BEIR is, every passage, query and judgement comes in."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    folder = root / "mteb"
    for config in ("corpus", "queries", "default"):
        (folder / config).mkdir(parents=True)
    corpus = list(native["corpus"].values())
    text = pa.large_string()
    pq.write_table(
        pa.table(
            {
                "_id": pa.array([p["id"] for p in corpus], text),
                "title": pa.array([p.get("title", "") for p in corpus], text),
                "text": pa.array([p["text"] for p in corpus], text),
            }
        ),
        folder / "corpus" / "corpus-00000-of-00001.parquet",
        compression="zstd",
        use_dictionary=True,
    )
    turns = [t for d in native["dialogues"] for t in d["turns"]]
    pq.write_table(
        pa.table({"_id": [t["id"] for t in turns], "text": [t["user"] for t in turns]}),
        folder / "queries" / "queries-00000-of-00001.parquet",
    )
    q, _, d, s = zip(*native["qrels"], strict=True)
    pq.write_table(
        pa.table(
            {"query-id": q, "corpus-id": d, "score": pa.array([int(x) for x in s], pa.int64())}
        ),
        folder / "default" / "test-00000-of-00001.parquet",
    )
    out = mtr("import", "auto", folder, "-o", root / "from-mteb")
    assert (
        f"{len(turns)} turns ({len(turns)} with gold), {len(corpus)} passages, "
        f"{len(native['qrels'])} qrels judgements" in out
    ), out
