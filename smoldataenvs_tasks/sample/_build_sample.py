"""Rebuild the bundled `sample` split: a tiny mirror of ten tasks over tables generated here.

Everything is derived from fixed seeds. The gold answers are not typed in: each task's gold
program is run against the generated tables in a directory laid out like /home/user/input (with
this interpreter), and the last line it prints becomes the row's `answer`. The agentic gold
trajectories are produced the same way, by running their bash commands with the contract paths
pointed at temp dirs, so every tool result in them is real output.

    python -m smoldataenvs_tasks.sample._build_sample            # rewrite the sample in place
    python -m smoldataenvs_tasks.sample._build_sample --check    # rebuild in a temp dir, compare

Rebuilds give the same rows and answers; HDF5 object headers carry creation times, so
sensors.h5's bytes (and its sha256 in manifest.json) change on every rebuild.

Coverage: every reward mode (numeric, flexible, list, list_csv, exact_short, exact_bool, exact,
"") and tier; csv, a latin-1 csv, xlsx, parquet (in a sub-folder, with a deeper stale copy of the
same name), json, sqlite, HDF5 (pandas + PyTables), a task with empty `files`, and a task whose
table (returns.csv) is deliberately absent from the bucket.

One module of ~730 lines on purpose: it is a generator read top to bottom, ten task definitions
each beside the table it builds, and nothing else imports its parts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from smoldataenvs_tasks.data.layout import Manifest, file_entry, split_entry, write_manifest

SAMPLE_VERSION = "sample-1"
BUCKET = "smoldataenvs/sample-tables"  # = data.source.SAMPLE_BUCKET
HERE = Path(__file__).resolve().parent
INPUT_DIR = "/home/user/input"
WORKDIR = "/workdir"


@dataclass
class SampleTask:
    task_id: str
    prefix: str
    files: list[str]
    question: str
    reward_mode: str
    tier: str
    program: str
    atol: float = 0.0
    rtol: float = 0.0
    answer_format: str | None = None
    explore: list[str] = field(default_factory=list)  # agentic: look before computing


# -- tables -------------------------------------------------------------------------------------
def _orders(rng: random.Random) -> tuple[str, list[int]]:
    regions = ["North", "South", "East", "West"]
    products = {"kettle": 39.99, "blender": 74.5, "toaster": 29.95}
    lines = ["order_id,order_date,region,product,units,unit_price"]
    day = dt.date(2023, 1, 1)
    for order_id in range(1001, 1121):
        product = rng.choice(sorted(products))
        region = rng.choices(regions, weights=[2, 2, 3, 2])[0]
        units = rng.randint(1, 9)
        price = products[product] if rng.random() > 0.2 else round(products[product] * 0.9, 2)
        when = day + dt.timedelta(days=rng.randint(0, 180))
        lines.append(f"{order_id},{when},{region},{product},{units},{price}")
    returned = sorted(rng.sample(range(1001, 1121), 7))
    return "\n".join(lines) + "\n", returned


def _survey(rng: random.Random) -> bytes:
    cities = ["Zürich", "São Paulo", "Málaga", "Köln", "Genève", "Bergen"]
    lines = ["respondent;city;age;hours_online;satisfied"]
    for respondent in range(1, 201):
        lines.append(
            f"{respondent};{rng.choice(cities)};{rng.randint(18, 70)};"
            f"{rng.randint(0, 60)};{rng.choice(['oui', 'non', 'ja', 'nein'])}"
        )
    # a European export: latin-1 and semicolons (utf-8 readers fail on "Zürich")
    return ("\n".join(lines) + "\n").encode("latin-1")


def _write_xlsx(path: Path, rng: random.Random) -> None:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "sales"
    sheet.append(["product_line", "quarter", "region", "sales"])
    lines = {"Blenders": 1.3, "Kettles": 1.0, "Mixers": 0.55, "Toasters": 1.15, "Juicers": 0.4}
    for line, scale in lines.items():
        for quarter in ("Q1", "Q2", "Q3", "Q4"):
            for region in ("North", "South"):
                sheet.append([line, quarter, region, round(scale * rng.uniform(4000, 9000), 2)])
    notes = workbook.create_sheet("notes")
    notes.append(["Figures in EUR, excluding VAT. Source: regional sales reports."])
    fixed = dt.datetime(2024, 1, 1)
    workbook.properties.created = fixed
    workbook.properties.modified = fixed
    workbook.save(path)
    _pin_zip_times(path)


def _pin_zip_times(path: Path) -> None:
    """Rewrite a zip (xlsx) with fixed entry times, so rebuilds give the same bytes."""
    import zipfile

    with zipfile.ZipFile(path) as source:
        entries = [(info, source.read(info)) for info in source.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for info, data in entries:
            if info.filename == "docProps/core.xml":  # openpyxl stamps "modified" on save
                data = re.sub(
                    rb"(<dcterms:modified[^>]*>)[^<]*", rb"\g<1>2024-01-01T00:00:00Z", data
                )
            pinned = zipfile.ZipInfo(info.filename, date_time=(2024, 1, 1, 0, 0, 0))
            pinned.compress_type = zipfile.ZIP_DEFLATED
            pinned.external_attr = info.external_attr
            target.writestr(pinned, data)


def _weather(rng: random.Random, year: int, offset: float):
    import pandas as pd

    days = pd.date_range(f"{year}-01-01", f"{year}-12-31", freq="D")
    rows = []
    for day in days:
        seasonal = 12 - 10 * math.cos((day.day_of_year - 15) / 365 * 2 * math.pi)
        tmax = round(seasonal + offset + rng.uniform(-3, 3), 1)
        rows.append(
            {
                "date": day.date().isoformat(),
                "tmax_c": tmax,
                "tmin_c": round(tmax - rng.uniform(4, 11), 1),
                "precip_mm": round(max(0.0, rng.gauss(0.5, 3)), 1),
            }
        )
    return pd.DataFrame(rows)


def _books(rng: random.Random) -> str:
    titles = [
        "The Quiet Ledger",
        "Rivers of Glass",
        "A Map of Small Things",
        "Orchard Winter",
        "The Salt Road",
        "Paper Lanterns",
        "Night Train to Bergen",
        "The Clockmaker's Daughter",
        "Under the Linden",
        "Harbour Lights",
        "The Last Cartographer",
        "Seven Bridges",
        "Blue Hour",
        "The Copper Kettle",
        "Field Notes",
        "Iron and Lace",
        "The Long Table",
        "Weather Report",
        "A Study in Grey",
        "The Honey Thief",
    ]
    genres = ["novel", "poetry", "history", "travel", "crime"]
    prices = rng.sample(range(799, 4999, 7), len(titles))  # distinct: no ties at the top
    books = [
        {
            "title": title,
            "author": f"Author {index + 1}",
            "year": rng.randint(1950, 2023),
            "genre": rng.choice(genres),
            "price": price / 100,
        }
        for index, (title, price) in enumerate(zip(titles, prices, strict=True))
    ]
    return json.dumps(books, indent=1, ensure_ascii=False) + "\n"


def _write_sqlite(path: Path, rng: random.Random) -> None:
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        PRAGMA journal_mode = DELETE;
        CREATE TABLE members (member_id INTEGER PRIMARY KEY, name TEXT, joined TEXT);
        CREATE TABLE loans (loan_id INTEGER PRIMARY KEY, member_id INTEGER, book_id INTEGER,
                            loan_date TEXT, returned INTEGER);
        """
    )
    connection.executemany(
        "INSERT INTO members VALUES (?, ?, ?)",
        [
            (i, f"Member {i}", f"20{rng.randint(10, 22)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}")
            for i in range(1, 31)
        ],
    )
    loans = []
    for loan_id in range(1, 401):
        month = rng.randint(1, 6)
        member = rng.randint(1, 30)
        loans.append(
            (
                loan_id,
                member,
                rng.randint(1, 500),
                f"2023-{month:02d}-{rng.randint(1, 28):02d}",
                rng.randint(0, 1),
            )
        )
    # member 17 was a heavy reader in March: the yes/no question has a definite answer
    for extra in range(7):
        loans.append((401 + extra, 17, rng.randint(1, 500), f"2023-03-{extra + 2:02d}", 1))
    connection.executemany("INSERT INTO loans VALUES (?, ?, ?, ?, ?)", loans)
    connection.commit()
    connection.execute("VACUUM")
    connection.close()


def _write_hdf5(path: Path, rng: random.Random) -> None:
    import pandas as pd

    sensors = [f"S-{i:02d}" for i in range(1, 13)]
    rows = [
        {"sensor_id": rng.choice(sensors), "minute": minute, "value": round(rng.gauss(50, 8), 3)}
        for minute in range(3000)
    ]
    frame = pd.DataFrame(rows)
    frame.loc[frame["minute"] == 2024, ["sensor_id", "value"]] = ["S-07", 99.125]
    frame.to_hdf(path, key="readings", format="table", complevel=9, complib="zlib")


def _flights(rng: random.Random) -> tuple[str, str]:
    airports = ["BER", "CDG", "FRA", "LIS", "MAD", "OSL", "VIE", "ZRH"]
    lines = ["flight_id,origin,destination,dep_delay_min,distance_km"]
    for flight in range(1, 801):
        origin, destination = rng.sample(airports, 2)
        delay = max(-10, int(rng.expovariate(1 / 18)) - 5)
        lines.append(f"{flight},{origin},{destination},{delay},{rng.randint(300, 2500)}")
    airport_lines = ["code,city,country"] + [
        f"{code},City {code},Country {i}" for i, code in enumerate(airports)
    ]
    return "\n".join(lines) + "\n", "\n".join(airport_lines) + "\n"


def build_tables(bucket_root: Path, hidden_root: Path) -> None:
    """Write the bucket's tables; tables deliberately absent from it go to `hidden_root`."""
    rng = random.Random(20240607)

    def put(prefix: str, relpath: str, data: str | bytes) -> Path:
        path = bucket_root / prefix / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return path

    orders, returned = _orders(rng)
    put("sample__retail-orders", "orders.csv", orders)
    hidden = hidden_root / "sample__retail-orders"
    hidden.mkdir(parents=True, exist_ok=True)
    (hidden / "returns.csv").write_text(
        "order_id,reason\n" + "".join(f"{o},damaged\n" for o in returned), encoding="utf-8"
    )
    put("sample__city-survey", "survey_latin1.csv", _survey(rng))
    xlsx = bucket_root / "sample__quarterly-sales" / "quarterly_sales.xlsx"
    xlsx.parent.mkdir(parents=True, exist_ok=True)
    _write_xlsx(xlsx, rng)
    weather = bucket_root / "sample__weather-station" / "data" / "2023" / "daily_weather.parquet"
    weather.parent.mkdir(parents=True, exist_ok=True)
    _weather(rng, 2023, 0.0).to_parquet(weather, index=False)
    stale = bucket_root / "sample__weather-station" / "backup" / "2022" / "old" / weather.name
    stale.parent.mkdir(parents=True, exist_ok=True)
    _weather(rng, 2022, 6.0).to_parquet(stale, index=False)
    put("sample__book-catalog", "books.json", _books(rng))
    sqlite_path = bucket_root / "sample__library-loans" / "library.sqlite"
    sqlite_path.parent.mkdir(parents=True, exist_ok=True)
    _write_sqlite(sqlite_path, rng)
    h5 = bucket_root / "sample__sensor-readings" / "sensors.h5"
    h5.parent.mkdir(parents=True, exist_ok=True)
    _write_hdf5(h5, rng)
    flights, airports = _flights(rng)
    put("sample__flight-delays", "flights.csv", flights)
    put("sample__flight-delays", "airports.csv", airports)


# -- tasks --------------------------------------------------------------------------------------
def _p(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


TASKS: list[SampleTask] = [
    SampleTask(
        "sample/0001/orders.ipynb_qa_1",
        "sample__retail-orders",
        ["orders.csv"],
        "Which region sold the most units in total?",
        "exact_short",
        "easy",
        _p("""
            import pandas as pd

            orders = pd.read_csv("orders.csv")
            units = orders.groupby("region")["units"].sum()
            print(units.sort_values(ascending=False))
            print(units.idxmax())
        """),
        explore=["head -n 5 /home/user/input/orders.csv"],
    ),
    SampleTask(
        "sample/0001/orders.ipynb_qa_2",
        "sample__retail-orders",
        ["orders.csv"],
        "What was the total revenue (units × unit_price) from kettles, rounded to 2 decimals?",
        "numeric",
        "medium",
        _p("""
            import pandas as pd

            orders = pd.read_csv("orders.csv")
            kettles = orders[orders["product"] == "kettle"]
            revenue = (kettles["units"] * kettles["unit_price"]).sum()
            print(f"{revenue:.2f}")
        """),
        atol=0.05,
        rtol=0.01,
        explore=["head -n 5 /home/user/input/orders.csv"],
    ),
    SampleTask(
        "sample/0002/survey.ipynb_qa_1",
        "sample__city-survey",
        ["survey_latin1.csv"],
        "How many respondents living in Zürich are older than 30?",
        "numeric",
        "medium",
        _p("""
            import pandas as pd

            survey = pd.read_csv("survey_latin1.csv", sep=";", encoding="latin-1")
            print(survey.dtypes)
            print(int(((survey["city"] == "Zürich") & (survey["age"] > 30)).sum()))
        """),
        explore=[
            "python3 -c \"print(open('/home/user/input/survey_latin1.csv', "
            "encoding='latin-1').read()[:200])\""
        ],
    ),
    SampleTask(
        "sample/0003/sales.ipynb_qa_1",
        "sample__quarterly-sales",
        ["quarterly_sales.xlsx"],
        "Which product lines had total annual sales above the average total of all product lines?",
        "list",
        "hard",
        _p("""
            import pandas as pd

            sales = pd.read_excel("quarterly_sales.xlsx", sheet_name="sales")
            totals = sales.groupby("product_line")["sales"].sum()
            print(totals.round(2))
            print(", ".join(sorted(totals[totals > totals.mean()].index)))
        """),
        answer_format="Answer with the product lines as a comma-separated list in alphabetical "
        "order.",
    ),
    SampleTask(
        "sample/0004/weather.ipynb_qa_1",
        "sample__weather-station",
        ["daily_weather.parquet"],
        "What was the mean daily maximum temperature in July 2023, in °C, rounded to 2 decimals?",
        "flexible",
        "medium",
        _p("""
            import pandas as pd

            weather = pd.read_parquet("daily_weather.parquet")
            july = weather[pd.to_datetime(weather["date"]).dt.month == 7]
            print(len(july), "days")
            print(f"{july['tmax_c'].mean():.2f}")
        """),
        atol=0.01,
        rtol=0.001,
    ),
    SampleTask(
        "sample/0005/books.ipynb_qa_1",
        "sample__book-catalog",
        ["books.json"],
        "What are the titles of the three most expensive books, most expensive first?",
        "list_csv",
        "hard",
        _p("""
            import json

            with open("books.json", encoding="utf-8") as handle:
                books = json.load(handle)
            top = sorted(books, key=lambda book: book["price"], reverse=True)[:3]
            print(", ".join(book["title"] for book in top))
        """),
        answer_format="Answer as a comma-separated list of the three titles, most expensive first.",
        explore=["head -c 300 /home/user/input/books.json"],
    ),
    SampleTask(
        "sample/0006/library.ipynb_qa_1",
        "sample__library-loans",
        ["library.sqlite"],
        "Did any member borrow more than 5 books in March 2023? Answer yes or no.",
        "exact_bool",
        "medium",
        _p("""
            import sqlite3

            db = sqlite3.connect("file:library.sqlite?mode=ro", uri=True)
            heavy = db.execute(
                "SELECT member_id, COUNT(*) AS n FROM loans "
                "WHERE loan_date BETWEEN '2023-03-01' AND '2023-03-31' "
                "GROUP BY member_id HAVING n > 5"
            ).fetchall()
            print(heavy)
            print("yes" if heavy else "no")
        """),
    ),
    SampleTask(
        "sample/0007/sensors.ipynb_qa_1",
        "sample__sensor-readings",
        ["sensors.h5"],
        "Which sensor recorded the highest single reading? Give its id.",
        "exact",
        "hard",
        _p("""
            import pandas as pd

            readings = pd.read_hdf("sensors.h5", "readings")
            top = readings.loc[readings["value"].idxmax()]
            print(top.to_dict())
            print(top["sensor_id"])
        """),
    ),
    SampleTask(
        "sample/0008/flights.ipynb_qa_1",
        "sample__flight-delays",
        [],
        "What is the median departure delay, in minutes, over all flights?",
        "",
        "easy",
        _p("""
            import os

            import pandas as pd

            print(sorted(os.listdir(".")))
            flights = pd.read_csv("flights.csv")
            print(flights["dep_delay_min"].median())
        """),
    ),
    SampleTask(
        "sample/0009/returns.ipynb_qa_1",
        "sample__retail-orders",
        ["returns.csv"],
        "How many orders were returned?",
        "numeric",
        "medium",
        _p("""
            import pandas as pd

            returns = pd.read_csv("returns.csv")
            print(returns["order_id"].nunique())
        """),
    ),
]


# -- running programs and commands like the sandbox does -----------------------------------------
def _layout(tmp: Path, tables: dict[str, Path]) -> tuple[Path, Path]:
    """Like a sandbox: tmp/tables (= /mnt/tables, flat copies), tmp/input (= /home/user/input,
    one symlink per table into tmp/tables) and tmp/workdir (= /workdir)."""
    tables_dir, input_dir, workdir = tmp / "tables", tmp / "input", tmp / "workdir"
    for directory in (tables_dir, input_dir, workdir):
        directory.mkdir()
    for name, path in tables.items():
        shutil.copyfile(path, tables_dir / name)
        (input_dir / name).symlink_to(tables_dir / name)
    return input_dir, workdir


def _task_tables(task: SampleTask, bucket_root: Path, hidden_root: Path) -> dict[str, Path]:
    tables: dict[str, Path] = {}
    for root in (hidden_root, bucket_root):  # hidden tables exist only for the gold runs
        base = root / task.prefix
        if not base.is_dir():
            continue
        found = sorted(
            (p for p in base.rglob("*") if p.is_file()),
            key=lambda p: (len(p.relative_to(base).parts), p.as_posix()),
        )
        for path in found:
            if (not task.files or path.name in task.files) and path.name not in tables:
                tables[path.name] = path
    return tables


def _env() -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": "/tmp",
    }


def run_program(program: str, input_dir: Path, python: str = sys.executable) -> str:
    result = subprocess.run(
        [python, "-c", program],
        cwd=input_dir,
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"gold program failed:\n{program}\n{result.stderr}")
    return result.stdout


def last_line(stdout: str) -> str:
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def run_command(command: str, input_dir: Path, workdir: Path, python: str = sys.executable) -> str:
    """One bash tool call with the contract paths mapped onto temp dirs; output mapped back."""
    local = command.replace(INPUT_DIR, str(input_dir)).replace(WORKDIR, str(workdir))
    local = local.replace("python3 ", f"{python} ")
    result = subprocess.run(
        ["bash", "-c", local],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        check=False,
    )
    output = result.stdout + result.stderr
    tables_dir = str(input_dir.parent / "tables")
    return (
        output.replace(str(input_dir), INPUT_DIR)
        .replace(str(workdir), WORKDIR)
        .replace(tables_dir, "/mnt/tables")
    )


# -- replies --------------------------------------------------------------------------------------
def program_reply(task: SampleTask) -> str:
    return (
        "I'll load the data, look at what I need, and print the answer last.\n\n"
        f"```python\n{task.program}```\n"
    )


def agentic_commands(task: SampleTask, answer: str) -> list[tuple[str, str]]:
    """(assistant text, bash command) pairs of the gold trajectory."""
    steps = [("Let me see which files I have.", f"ls {INPUT_DIR}")]
    steps += [("Let me look at the data first.", command) for command in task.explore]
    steps.append(
        (
            "Now I'll compute the answer with pandas.",
            f"cd {INPUT_DIR} && python3 - <<'EOF'\n{task.program}EOF",
        )
    )
    steps.append(
        (
            "I have the answer; writing it to the answer file.",
            f'echo -n "{answer}" > {WORKDIR}/answer.txt && cat {WORKDIR}/answer.txt',
        )
    )
    return steps


def build(out: Path) -> Manifest:
    """Write the whole sample into `out` (the package's sample dir, or a temp dir)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from smoldataenvs_tasks.data import prompts

    for sub in ("data", "buckets", "replays"):
        shutil.rmtree(out / sub, ignore_errors=True)
    bucket_root = out / "buckets" / BUCKET
    rows, program_rows, agentic_rows, missing = [], [], [], {}
    with tempfile.TemporaryDirectory(prefix="smoldata-sample-") as scratch_name:
        scratch = Path(scratch_name)
        hidden_root = scratch / "hidden"
        build_tables(bucket_root, hidden_root)
        for index, task in enumerate(TASKS):
            tables = _task_tables(task, bucket_root, hidden_root)
            run_dir = scratch / f"run-{index}"
            run_dir.mkdir()
            input_dir, workdir = _layout(run_dir, tables)
            answer = last_line(run_program(task.program, input_dir))
            bucket_names = {p.name for p in (bucket_root / task.prefix).rglob("*") if p.is_file()}
            absent = [name for name in task.files if name not in bucket_names]
            if absent:
                missing[task.task_id] = f"{absent[0]}: not found under prefix '{task.prefix}'"
            instruction = prompts.agent_instruction(
                task.question, task.files, answer_format=task.answer_format
            )
            rows.append(
                {
                    "task_id": task.task_id,
                    "question": task.question,
                    "answer": answer,
                    "reward_mode": task.reward_mode,
                    "atol": task.atol,
                    "rtol": task.rtol,
                    "difficulty_tier": task.tier,
                    "files": task.files,
                    "hf_bucket": BUCKET,
                    "bucket_prefix": task.prefix,
                    "kaggle_dataset": task.prefix.replace("__", "/", 1),
                    "instruction": instruction,
                }
            )
            program_rows.append(
                {
                    "task_id": task.task_id,
                    "messages": [
                        {"role": "system", "content": prompts.PROGRAM_SYSTEM_PROMPT},
                        {
                            "role": "user",
                            "content": prompts.program_prompt(task.question, task.files),
                        },
                        {"role": "assistant", "content": program_reply(task)},
                    ],
                }
            )
            messages: list[dict[str, object]] = [
                {"role": "system", "content": prompts.agent_system_prompt()},
                {"role": "user", "content": instruction},
            ]
            for step, (text, command) in enumerate(agentic_commands(task, answer), start=1):
                call_id = f"call_{index + 1:02d}_{step}"
                messages.append(
                    {
                        "role": "assistant",
                        "content": text,
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {
                                    "name": "bash",
                                    "arguments": json.dumps({"command": command}),
                                },
                            }
                        ],
                    }
                )
                output = run_command(command, input_dir, workdir)
                messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
            written = (workdir / "answer.txt").read_text(encoding="utf-8")
            if written != answer:
                raise RuntimeError(
                    f"{task.task_id}: agentic gold wrote {written!r}, not {answer!r}"
                )
            messages.append({"role": "assistant", "content": f"The answer is {answer}."})
            agentic_rows.append({"task_id": task.task_id, "messages": messages})

    data_path = out / "data" / "sample-00000-of-00001.parquet"
    data_path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), data_path)
    replays = out / "replays"
    replays.mkdir(parents=True, exist_ok=True)
    for name, replay_rows in (
        ("gold_program.jsonl", program_rows),
        ("gold_agentic.jsonl", agentic_rows),
    ):
        with open(replays / name, "w", encoding="utf-8") as handle:
            for replay_row in replay_rows:
                handle.write(json.dumps(replay_row, ensure_ascii=False) + "\n")

    files = {
        path.relative_to(out).as_posix(): file_entry(path)
        for path in sorted((out / "buckets").rglob("*"))
        if path.is_file()
    }
    manifest = write_manifest(
        out,
        dataset="smoldataenvs_tasks bundled sample",
        revision=SAMPLE_VERSION,
        splits={"sample": split_entry(out, "sample", len(rows))},
        files=files,
        missing=missing,
    )
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="rebuild in a temp dir and compare the answers with the bundled ones",
    )
    args = parser.parse_args()
    if not args.check:
        manifest = build(HERE)
        total = sum(p.stat().st_size for p in HERE.rglob("*") if p.is_file())
        splits = cast(dict[str, dict[str, object]], manifest["splits"])
        print(f"sample rebuilt: {splits['sample']['tasks']} tasks, {total} bytes")
        return
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp))
        fresh = pq.read_table(Path(tmp) / "data" / "sample-00000-of-00001.parquet").to_pylist()
    bundled = pq.read_table(HERE / "data" / "sample-00000-of-00001.parquet").to_pylist()
    if fresh != bundled:
        sys.exit("the bundled sample rows differ from a fresh build")
    print("bundled sample rows match a fresh build")


if __name__ == "__main__":
    main()
