"""Python's `datasets` reading a Parquet dump and drawing a seeded sample of N rows, the way a
researcher would (`load_dataset("parquet", ...)`, then `shuffle(seed).select(range(N))`), for
benchmarks/corpus/run.sh. Prints one line like the Rust reader's."""

import glob
import sys
import time

import datasets

path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = time.time()
files = sorted(glob.glob(f"{path}/data/*.parquet"))
ds = datasets.load_dataset("parquet", data_files=files, split="train")
sample = ds.shuffle(seed=seed).select(range(min(n, len(ds))))
texts = [row["text"] for row in sample]
print(
    f"read {len(ds)} documents from {len(files)} files, kept {len(texts)} "
    f"({sum(len(x.encode()) for x in texts) / 1e6:.1f} MB of text) in {time.time() - t:.2f} s"
)
