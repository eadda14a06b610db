"""Staging cost does not depend on table size, and the eval process never holds tables in memory.

Measures, on generated (sparse) tables in a temp dir:
1. `stage_tables` time for a 1 MB and a 500 MB table (hard links: the ratio should be ~1),
   next to what a plain copy of the 500 MB table costs, and the first staging of each table,
   which reads it once to check its sha256 (later samples reuse that hash);
2. the eval-side peak RSS of a process that loads a mirror's rows and resolves + stages the
   tables of 20 samples, once with 1 MB tables and once with 500 MB tables (should be ~equal),
   next to a process that reads the 500 MB table into memory (what `Sample.files` would do).

    .venv/bin/python bench/bench_staging.py            # prints the numbers
    .venv/bin/python bench/bench_staging.py --repeat 50
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MB = 1_000_000
BUCKET = "bench/tables"


def sparse_file(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(b"id,value\n")
        handle.truncate(size)
    return path


def time_staging(table: Path, repeat: int) -> list[float]:
    from smoldataenvs_tasks.data.staging import new_stage_dir, stage_tables
    from smoldataenvs_tasks.data.tables import TableFile, TableSet

    table_set = TableSet("bench", (TableFile("t.csv", table, table.stat().st_size, None, "p/t"),))
    root = new_stage_dir()
    samples = []
    for _ in range(repeat):
        stage = new_stage_dir(root)
        started = time.perf_counter()
        stage_tables(table_set, stage)
        samples.append(time.perf_counter() - started)
    shutil.rmtree(root)
    return samples


def make_mirror(root: Path, table_size: int, samples: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from smoldataenvs_tasks.data.layout import write_manifest

    rows = []
    for index in range(samples):
        prefix = f"bench__p{index % 4}"  # four prefixes shared by the samples
        sparse_file(root / "buckets" / BUCKET / prefix / "table.csv", table_size)
        rows.append(
            {
                "task_id": f"bench/{index:04d}.ipynb_qa_1",
                "question": "q?",
                "answer": "1",
                "reward_mode": "numeric",
                "atol": 0.0,
                "rtol": 0.0,
                "difficulty_tier": "easy",
                "files": ["table.csv"],
                "hf_bucket": BUCKET,
                "bucket_prefix": prefix,
            }
        )
    (root / "data").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), root / "data" / "eval-00000-of-00001.parquet")
    write_manifest(root, dataset="bench_staging", revision="bench", splits={}, files={})
    return root


_EVAL_SIDE = """
import json, resource, sys
from smoldataenvs_tasks.data.kinds import load_tasks
from smoldataenvs_tasks.data.staging import new_stage_dir, stage_tables
from smoldataenvs_tasks.sandboxes.inputs import link_inputs_on_host
from smoldataenvs_tasks.data.kinds import resolve_tables
mirror, work = sys.argv[1], sys.argv[2]
root = new_stage_dir()
staged = 0
for index, task in enumerate(load_tasks("eval", mirror=mirror)):
    tables = resolve_tables(task, mirror=mirror)
    assert tables.available, tables.error
    stage = stage_tables(tables, new_stage_dir(root))
    link_inputs_on_host(f"{work}/input-{index}", list(tables.paths()))
    staged += sum(t.size for t in tables.files)
print(json.dumps({"peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "staged_bytes": staged}))
"""

_NAIVE = """
import json, resource, sys
data = open(sys.argv[1], "rb").read()
print(json.dumps({"peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "read_bytes": len(data)}))
"""


def run_child(code: str, *args: str, env: dict[str, str]) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="stagings per table size")
    parser.add_argument("--samples", type=int, default=20, help="samples in the RSS runs")
    parser.add_argument("--big-mb", type=int, default=500)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="smoldata-bench-") as tmp_name:
        tmp = Path(tmp_name)
        os.environ["SMOLDATAENVS_CACHE"] = str(tmp / "cache")  # same filesystem as the tables
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        small = sparse_file(tmp / "tables" / "small.csv", 1 * MB)
        big = sparse_file(tmp / "tables" / "big.csv", args.big_mb * MB)

        time_staging(small, 3)  # warm imports and directories
        small_times = time_staging(small, args.repeat)
        big_times = time_staging(big, args.repeat)
        started = time.perf_counter()
        shutil.copyfile(big, tmp / "copy.csv")
        copy_s = time.perf_counter() - started
        (tmp / "copy.csv").unlink()

        small_med, big_med = statistics.median(small_times), statistics.median(big_times)
        print(f"staging, median of {args.repeat} (hard links):")
        print(f"  1 MB table:            {small_med * 1e3:8.3f} ms")
        print(f"  {args.big_mb} MB table:          {big_med * 1e3:8.3f} ms")
        print(f"  ratio {args.big_mb} MB / 1 MB:     {big_med / small_med:8.2f}")
        print(
            f"  first staging of the {args.big_mb} MB table (hashes it once per process): "
            f"{big_times[0] * 1e3:.1f} ms"
        )
        print(
            f"  plain copy of {args.big_mb} MB (sparse source, for contrast): {copy_s * 1e3:.1f} ms"
        )

        rss = {}
        for label, size in (("1 MB", 1 * MB), (f"{args.big_mb} MB", args.big_mb * MB)):
            mirror = make_mirror(tmp / f"mirror-{size}", size, args.samples)
            work = tmp / f"work-{size}"
            work.mkdir()
            rss[label] = run_child(_EVAL_SIDE, str(mirror), str(work), env=env)
        naive = run_child(_NAIVE, str(big), env=env)
        print(f"eval-side peak RSS, load rows + resolve + stage {args.samples} samples:")
        for label, result in rss.items():
            print(
                f"  {label} tables: {result['peak_rss_kb'] / 1024:8.1f} MiB "
                f"(staged {result['staged_bytes'] / MB:,.0f} MB of tables)"
            )
        print(
            f"  for contrast, a process reading one {args.big_mb} MB table into memory: "
            f"{naive['peak_rss_kb'] / 1024:.1f} MiB"
        )


if __name__ == "__main__":
    main()
