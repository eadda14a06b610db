"""`smoldataenvs leaderboard`: verified submissions ranked per compatible table, compared pairwise
with a paired bootstrap on the tasks both graded; reproducible byte for byte."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.results.figures.stats import bootstrap_ci
from smoldataenvs_tasks.results.publish.leaderboard import Standing, build_leaderboard
from smoldataenvs_tasks.results.publish.submission import submission_json
from smoldataenvs_tasks.results.render.leaderboard_page import render_leaderboard_markdown
from tests.report.replays import MIXED, expected_reward
from tests.report.synthetic import synthetic_submission

OUTPUTS = ("leaderboard.json", "leaderboard.md", "leaderboard.html")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def save(sub: dict, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "submission.json"
    path.write_bytes(submission_json(sub))
    return path


def board(out: Path, *submissions: Path, logs: tuple[Path, ...] = ()) -> dict:
    options = [arg for log in logs for arg in ("--logs", str(log))]
    result = invoke("leaderboard", *map(str, submissions), *options, "--out", str(out))
    assert result.exit_code == 0, result.output
    return json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def real_logs(inspect_gold_log, inspect_mixed_log) -> tuple[Path, Path]:
    return inspect_gold_log, inspect_mixed_log


@pytest.fixture(scope="module")
def real_submissions(real_logs, tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("subs")
    paths = []
    for name, log in zip(("gold", "mixed"), real_logs, strict=True):
        result = invoke("report", str(log), "--out", str(root / name))
        assert result.exit_code == 0, result.output
        paths.append(root / name / "submission.json")
    return paths


def test_gold_and_mixed_are_ranked_and_their_gap_is_real(real_submissions, real_logs, tmp_path):
    data = board(tmp_path / "lb", *real_submissions, logs=real_logs)
    (table,) = data["tables"]
    assert table["key"]["split"] == "sample" and table["section"] == "ranked"
    gold, mixed = table["entries"]
    graded = sorted(t for t, r in MIXED.items() if expected_reward(r) is not None)
    mixed_values = [expected_reward(MIXED[t]) for t in graded]
    assert (gold["rank"], gold["model"]) == (1, "replay/gold")
    assert (mixed["rank"], mixed["model"]) == (2, "replay/mixed")
    assert gold["pass@1"]["value"] == 1.0
    assert mixed["pass@1"]["value"] == pytest.approx(sum(mixed_values) / len(graded), abs=1e-6)
    assert gold["complete"] and mixed["complete"] and gold["pins"] == "ok"
    assert gold["verified"] and mixed["verified"]

    (pair,) = table["comparisons"]
    diffs = [1.0 - v for v in mixed_values]
    expected = bootstrap_ci(diffs)
    assert (pair["a"], pair["b"], pair["n_tasks"]) == ("replay/gold", "replay/mixed", len(graded))
    assert pair["difference"]["value"] == pytest.approx(expected.value, abs=1e-6)
    assert pair["difference"]["ci95"] == pytest.approx([expected.low, expected.high], abs=1e-6)
    assert pair["n_a_higher"] == sum(v == 0.0 for v in mixed_values) and pair["n_b_higher"] == 0
    assert pair["verdict"] == ("replay/gold ahead" if expected.low > 0 else "not separated")

    d = table["diagnostics"]
    assert d["n_tasks_common"] == len(graded)
    assert d["n_tasks_split"] == sum(v == 0.0 for v in mixed_values)
    assert d["n_solved_by_all"] == sum(v == 1.0 for v in mixed_values)
    assert d["contamination"]["available"] is False

    md = (tmp_path / "lb" / "leaderboard.md").read_text(encoding="utf-8")
    assert "| 1 | replay/gold |" in md and f"{100 * mixed['pass@1']['value']:.1f}%" in md
    assert f"{100 * expected.value:+.1f}" in md


def test_leaderboard_files_are_byte_identical_on_rerun_in_any_order(
    real_submissions, real_logs, tmp_path
):
    board(tmp_path / "a", *real_submissions, logs=real_logs)
    board(tmp_path / "b", *reversed(real_submissions), logs=tuple(reversed(real_logs)))
    for name in OUTPUTS:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_the_html_page_is_self_contained(real_submissions, tmp_path):
    board(tmp_path / "lb", *real_submissions)
    page = (tmp_path / "lb" / "leaderboard.html").read_text(encoding="utf-8")
    assert "<script src" not in page and "<link" not in page and "@import" not in page
    urls = re.findall(r"""(?:https?:)?//[^\s"'<>)]+""", page)
    assert urls == ["http://www.w3.org/2000/svg"], urls  # the SVG namespace, never fetched


def test_a_submission_that_does_not_verify_is_refused(real_submissions, tmp_path):
    edited = json.loads(real_submissions[1].read_text(encoding="utf-8"))
    edited["pass@1"]["value"] = 1.0
    bad = save(edited, tmp_path / "edited")
    result = invoke(
        "leaderboard", str(real_submissions[0]), str(bad), "--out", str(tmp_path / "lb")
    )
    assert result.exit_code != 0
    assert "refusing submissions that do not verify" in result.output and "sha256" in result.output
    assert not (tmp_path / "lb").exists()


# --- tables that must not mix (generated submissions) ---------------------------------------

A = [[1.0], [1.0], [0.0], [1.0], [0.0], [1.0], [None], [1.0]]
B = [[0.0], [1.0], [0.0], [0.0], [0.0], [1.0], [1.0], [0.0]]


def test_incompatible_submissions_go_in_separate_tables(tmp_path):
    subs = {
        "a-test": synthetic_submission("model-a", A),
        "b-test": synthetic_submission("model-b", B),
        "a-eval": synthetic_submission("model-a", A, split="eval"),
        "a-other-revision": synthetic_submission("model-a", A, revision="0" * 40),
        "b-old-grader": synthetic_submission("model-b", B, grader="0.9.0"),
    }
    paths = [save(sub, tmp_path / name) for name, sub in subs.items()]
    data = board(tmp_path / "lb", *paths)
    keys = [
        (t["key"]["split"], t["key"]["dataset_revision"], t["key"]["grader"])
        for t in data["tables"]
    ]
    assert len(keys) == len(set(keys)) == 4
    for table in data["tables"]:
        # no logs came with them: listed apart, never ranked
        assert table["section"] == "unverified"
        assert all(e["rank"] is None and not e["verified"] for e in table["entries"])
        ids = {e["id"] for e in table["entries"]}
        for entry in table["entries"]:
            sub = next(s for s in subs.values() if s["sha256"] == entry["sha256"])
            assert (sub["split"], sub["dataset_revision"], sub["grader_version"]) == (
                table["key"]["split"],
                table["key"]["dataset_revision"],
                table["key"]["grader"],
            )
        for pair in table["comparisons"]:
            assert {pair["a"], pair["b"]} <= ids
    (shared,) = [t for t in data["tables"] if len(t["entries"]) == 2]
    assert [e["model"] for e in shared["entries"]] == ["model-a", "model-b"]
    (old,) = [t for t in data["tables"] if t["key"]["grader"] == "0.9.0"]
    assert old["entries"][0]["pins"] == "differs: grader_version"
    md = (tmp_path / "lb" / "leaderboard.md").read_text(encoding="utf-8")
    assert md.count("\n## UNVERIFIED") == 4 and "**pins differs: grader_version**" in md


def test_pairs_are_compared_only_on_tasks_both_graded(tmp_path):
    longer = B + [[1.0]] * 6  # six tasks model-a never saw
    a = save(synthetic_submission("model-a", A), tmp_path / "a")
    b = save(synthetic_submission("model-b", longer), tmp_path / "b")
    (table,) = board(tmp_path / "lb", a, b)["tables"]
    (pair,) = table["comparisons"]
    both = [i for i in range(len(A)) if A[i][0] is not None and longer[i][0] is not None]
    assert pair["n_tasks"] == len(both)
    diffs = [A[i][0] - longer[i][0] for i in both]
    expected = bootstrap_ci(diffs)
    sign = 1 if pair["a"] == "model-a" else -1
    assert pair["difference"]["value"] == pytest.approx(sign * expected.value, abs=1e-6)


def test_a_partial_submission_is_marked_in_every_output(tmp_path):
    partial = synthetic_submission("model-p", A, split_tasks=len(A) + 5)
    assert partial["coverage"]["complete"] is False
    full = synthetic_submission("model-b", B)
    data = board(tmp_path / "lb", save(partial, tmp_path / "p"), save(full, tmp_path / "f"))
    entry = next(e for e in data["tables"][0]["entries"] if e["model"] == "model-p")
    assert entry["complete"] is False and entry["coverage"].startswith("PARTIAL")
    md = (tmp_path / "lb" / "leaderboard.md").read_text(encoding="utf-8")
    assert "model-p **UNVERIFIED** **PARTIAL**" in md
    page = (tmp_path / "lb" / "leaderboard.html").read_text(encoding="utf-8")
    assert 'class="badge partial"' in page


# --- ranks, formats, file modes (issue 27) ------------------------------------------------------


def rewards_with(correct: set[int], n: int = 60) -> list[list[float | None]]:
    return [[1.0 if i in correct else 0.0] for i in range(n)]


def ranked(*subs: dict) -> dict:
    """One table of verified entries (as if their logs had been re-graded)."""
    (table,) = build_leaderboard(
        [(f"{k}/submission.json", sub, Standing(verified=True)) for k, sub in enumerate(subs)]
    )["tables"]
    return table


def test_entries_that_are_not_separated_share_a_rank():
    # a and b differ on two tasks of 60 (not separated); c is far below both
    a = synthetic_submission("model-a", rewards_with(set(range(40))))
    b = synthetic_submission("model-b", rewards_with(set(range(38)) | {59}))
    c = synthetic_submission("model-c", rewards_with(set(range(5))))
    table = ranked(c, b, a)
    assert [(e["model"], e["rank"]) for e in table["entries"]] == [
        ("model-a", 1),
        ("model-b", 1),
        ("model-c", 3),
    ]
    verdicts = {(p["a"], p["b"]): p["verdict"] for p in table["comparisons"]}
    assert verdicts[("model-a", "model-b")] == "not separated"
    assert verdicts[("model-a", "model-c")] == "model-a ahead"
    assert verdicts[("model-b", "model-c")] == "model-b ahead"


def test_a_rank_is_one_plus_the_entries_ahead_of_it():
    """Each rank counts the entries whose paired CI puts them ahead (here 1, 2, 3, 3: c and d
    are not separated, both are behind a and b)."""
    subs = [
        synthetic_submission("model-a", rewards_with(set(range(45)))),
        synthetic_submission("model-b", rewards_with(set(range(36)))),
        synthetic_submission("model-c", rewards_with(set(range(28)))),
        synthetic_submission("model-d", rewards_with(set(range(27)))),
    ]
    table = ranked(*subs)
    entries = [e["model"] for e in table["entries"]]
    ahead = dict.fromkeys(entries, 0)
    for pair in table["comparisons"]:
        if pair["verdict"] == f"{pair['a']} ahead":
            ahead[pair["b"]] += 1
        elif pair["verdict"] == f"{pair['b']} ahead":
            ahead[pair["a"]] += 1
    assert {e["model"]: e["rank"] for e in table["entries"]} == {
        model: 1 + n for model, n in ahead.items()
    }
    ranks = [e["rank"] for e in table["entries"]]
    assert ranks == sorted(ranks) and ranks[0] == 1 and len(set(ranks)) < len(ranks)


def test_the_markdown_shows_shared_ranks():
    a = synthetic_submission("model-a", rewards_with(set(range(40))))
    b = synthetic_submission("model-b", rewards_with(set(range(39))))
    md = render_leaderboard_markdown(
        build_leaderboard(
            [("a/s.json", a, Standing(verified=True)), ("b/s.json", b, Standing(verified=True))]
        )
    )
    assert re.search(r"^\| 1 \| model-a\b", md, re.M) and re.search(r"^\| 1 \| model-b\b", md, re.M)


def test_format_writes_only_the_files_asked_for(tmp_path):
    paths = [save(synthetic_submission("model-a", A), tmp_path / "a")]
    result = invoke(
        "leaderboard",
        *map(str, paths),
        "--format",
        "md",
        "--format",
        "json",
        "--out",
        str(tmp_path / "lb"),
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "lb").iterdir()) == [
        "leaderboard.json",
        "leaderboard.md",
    ]
    assert "leaderboard.html" not in result.output
    result = invoke("leaderboard", *map(str, paths), "--format", "pdf", "--out", str(tmp_path))
    assert result.exit_code == 2 and "'pdf' is not one of 'md', 'html', 'json'" in result.output
    assert invoke("leaderboard", *map(str, paths), "--out", str(tmp_path / "all")).exit_code == 0
    assert sorted(p.name for p in (tmp_path / "all").iterdir()) == sorted(OUTPUTS)
    assert "md, html, json" in invoke("--help").output  # what the top-level help promises


def test_reports_and_leaderboards_are_readable_by_others(tmp_path):
    """Issue 27: written through mkstemp, they were 0600 (unreadable to a web server or a
    colleague); every output file is 0644."""
    folder = tmp_path / "a"
    path = save(synthetic_submission("model-a", A), folder)
    assert invoke("leaderboard", str(path), "--out", str(tmp_path / "lb")).exit_code == 0
    for name in OUTPUTS:
        assert stat.S_IMODE((tmp_path / "lb" / name).stat().st_mode) == 0o644, name


# --- Holm's correction and partial runs (issue 35) ----------------------------------------------


def test_a_gap_the_uncorrected_interval_separates_is_not_separated_after_holm():
    """a and c solve the same 30 of 60 tasks, b four fewer: alone, each gap's 95% interval
    excludes 0 (p about 0.04), but three pairs are three tests, and Holm's correction leaves no
    pair separated, so all three share rank 1."""
    from smoldataenvs_tasks.results.figures.stats import bootstrap_ci, bootstrap_p_value

    diffs = [1.0] * 4 + [0.0] * 56
    raw = bootstrap_ci(diffs)
    p = bootstrap_p_value(diffs)
    assert raw.low is not None and raw.low > 0 and p is not None and 0.0 < p < 0.05
    a = synthetic_submission("model-a", rewards_with(set(range(30))))
    b = synthetic_submission("model-b", rewards_with(set(range(26))))
    c = synthetic_submission("model-c", rewards_with(set(range(30))))
    table = ranked(a, b, c)
    assert {e["model"]: e["rank"] for e in table["entries"]} == {
        "model-a": 1,
        "model-b": 1,
        "model-c": 1,
    }
    for pair in table["comparisons"]:
        assert pair["verdict"] == "not separated"
        assert pair["p_holm"] >= pair["p_value"]
        if {pair["a"], pair["b"]} != {"model-a", "model-c"}:
            # separated alone (p below 0.05), not once corrected for the table's three pairs
            assert pair["p_value"] < 0.05 <= pair["p_holm"]
    # two entries only: one test, no correction, and the same gap separates them
    alone = ranked(a, b)
    assert [e["rank"] for e in alone["entries"]] == [1, 2]
    assert alone["comparisons"][0]["verdict"] == "model-a ahead"


def test_holm_adjusted_p_values():
    from smoldataenvs_tasks.results.figures.stats import bootstrap_p_value, holm_adjusted

    assert holm_adjusted([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm_adjusted([0.5, None, 0.6]) == pytest.approx([1.0, None, 1.0])
    assert bootstrap_p_value([0.0] * 20) == 1.0
    assert bootstrap_p_value([1.0] * 20) == pytest.approx(2 / 10_001)
    assert bootstrap_p_value([]) is None


def test_a_partial_run_is_listed_apart_never_ranked_with_complete_ones(tmp_path):
    """Issue 35: a run filtered to the tasks a weaker model solves topped a complete run of a
    stronger one in the same table."""
    cherry = synthetic_submission("weak", [[1.0]] * 4, split_tasks=60)
    assert cherry["coverage"]["complete"] is False
    strong = synthetic_submission("strong", rewards_with(set(range(45))))
    board = build_leaderboard(
        [
            ("c/s.json", cherry, Standing(verified=True, complete=False)),
            ("s/s.json", strong, Standing(verified=True)),
        ]
    )
    sections = {t["section"]: t for t in board["tables"]}
    assert [e["model"] for e in sections["ranked"]["entries"]] == ["strong"]
    (listed,) = sections["partial"]["entries"]
    assert listed["model"] == "weak" and listed["rank"] is None
    assert sections["partial"]["title"].startswith("PARTIAL (not the whole split: not ranked)")
    md = render_leaderboard_markdown(board)
    assert md.index("# Ranked") < md.index("# Partial")
