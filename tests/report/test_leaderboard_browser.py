"""leaderboard.html in a real headless browser: Debian's chromium driven by playwright (never a
browser build of playwright's own). The page renders, sorts when a header is clicked, shows the
numbers of a generated set of submissions, requests nothing from the network, and is readable at
1280 px: every column of its widest tables is on screen (issue 27: the graded and ungraded
columns were off it).

scripts/test installs chromium (as root, with apt) when it is missing; without a browser the
test is skipped and says why.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.results.publish.leaderboard import Standing, build_leaderboard
from smoldataenvs_tasks.results.publish.submission import submission_json
from smoldataenvs_tasks.results.render.leaderboard_page import render_html
from tests.report.synthetic import synthetic_submission

CHROMIUM_FLAGS = [
    "--no-sandbox",  # as root chromium refuses to start with its own sandbox
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
N_TASKS = 40


def _rewards(seed: int) -> list[list[float | None]]:
    """A deterministic mix: task i is right when (i * seed) mod 7 < seed mod 7 + 1; task 5 is
    ungraded for every other model."""
    out: list[list[float | None]] = []
    for i in range(N_TASKS):
        if i == 5 and seed % 2:
            out.append([None])
        else:
            out.append([1.0 if (i * seed + seed) % 7 < (seed % 7) + 1 else 0.0])
    return out


MODELS = {f"model-{chr(ord('a') + k)}": _rewards(seed) for k, seed in enumerate((3, 5, 6, 9, 11))}


def expected_pass1(rewards: list[list[float | None]]) -> float:
    graded = [r[0] for r in rewards if r[0] is not None]
    return sum(graded) / len(graded)


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip(
            "no chromium browser on this machine: scripts/test installs Debian's `chromium` "
            "with apt-get when run as root; elsewhere install it to run this test"
        )
    return path


@pytest.fixture(scope="module")
def sync_playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is missing: pip install -e '.[dev]'")
    return sync_playwright


@pytest.fixture(scope="module")
def leaderboard_page(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    paths = []
    for model, rewards in MODELS.items():
        folder = root / model
        folder.mkdir()
        (folder / "submission.json").write_bytes(
            submission_json(synthetic_submission(model, rewards))
        )
        paths.append(str(folder / "submission.json"))
    # another split: a table of its own
    other = root / "other"
    other.mkdir()
    (other / "submission.json").write_bytes(
        submission_json(synthetic_submission("model-eval", _rewards(4), split="eval"))
    )
    paths.append(str(other / "submission.json"))
    result = CliRunner().invoke(main, ["leaderboard", *paths, "--out", str(root / "lb")])
    assert result.exit_code == 0, result.output
    return root / "lb"


def open_page(sync_playwright, chromium, profile: Path, html: Path, width: int = 1280):
    """A context manager: the page `html` in a fresh chromium profile, `width` px wide."""
    from contextlib import contextmanager

    @contextmanager
    def opened():
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                str(profile),
                executable_path=chromium,
                headless=True,
                args=CHROMIUM_FLAGS,
                viewport={"width": width, "height": 900},
            )
            try:
                page = context.new_page()
                requests: list[str] = []
                page.on("request", lambda request: requests.append(request.url))
                page.goto(html.as_uri())
                page.requests = requests  # type: ignore[attr-defined]
                yield page
            finally:
                context.close()

    return opened()


@pytest.fixture
def page(chromium, sync_playwright, leaderboard_page, tmp_path):
    html = leaderboard_page / "leaderboard.html"
    with open_page(sync_playwright, chromium, tmp_path / "profile", html) as page:
        yield page


def column(page, table: str, css: str) -> list[str]:
    return page.locator(f"{table} tbody tr {css}").all_inner_texts()


def models_in_order(page, table: str = "#board-1") -> list[str]:
    return column(page, table, "td.model .name")


def test_the_page_renders_the_numbers_of_every_submission(page, leaderboard_page):
    data = json.loads((leaderboard_page / "leaderboard.json").read_text(encoding="utf-8"))
    assert page.title() == "SmolDataEnvs leaderboard"
    assert (
        page.locator("table.board:not(.pairs):not(.modes):not(.cost)").count() == 2
    )  # never mixed
    # cost, retries and the noise floor: a table of their own per board
    assert page.locator("table.board.cost").count() == 2
    test_index = [t["key"]["split"] for t in data["tables"]].index("test")
    table = f"#board-{test_index}"
    # as ranked: highest pass@1 first
    by_value = sorted(MODELS, key=lambda m: (-round(expected_pass1(MODELS[m]), 6), m))
    assert models_in_order(page, table) == by_value
    shown = dict(zip(models_in_order(page, table), column(page, table, "td.pass1"), strict=True))
    for model, rewards in MODELS.items():
        assert shown[model].startswith(f"{100 * expected_pass1(rewards):.1f}%"), shown[model]
    # the chart: one point per model, titled with its value
    titles = page.locator(f"#chart-{test_index} circle title").all_text_contents()
    assert len(titles) == len(MODELS)
    for model, rewards in MODELS.items():
        assert f"{model}: {100 * expected_pass1(rewards):.1f}%" in " ".join(titles)
    # the pairwise table compares every pair once
    pairs = page.locator(f"#pairs-{test_index} tbody tr").count()
    assert pairs == len(MODELS) * (len(MODELS) - 1) // 2
    assert all(url.startswith("file:") for url in page.requests), page.requests


def test_clicking_a_header_sorts_the_table(page, leaderboard_page):
    data = json.loads((leaderboard_page / "leaderboard.json").read_text(encoding="utf-8"))
    test_index = [t["key"]["split"] for t in data["tables"]].index("test")
    table = f"#board-{test_index}"
    header = page.locator(f"{table} thead th", has_text="pass@1 (95% CI)")
    header.click()
    ascending = sorted(MODELS, key=lambda m: expected_pass1(MODELS[m]))
    values = [expected_pass1(MODELS[m]) for m in models_in_order(page, table)]
    assert values == sorted(values) and set(models_in_order(page, table)) == set(ascending)
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    values = [expected_pass1(MODELS[m]) for m in models_in_order(page, table)]
    assert values == sorted(values, reverse=True)
    assert header.get_attribute("aria-sort") == "descending"

    page.locator(f"{table} thead th", has_text="model").first.click()
    assert models_in_order(page, table) == sorted(MODELS)
    page.locator(f"{table} thead th", has_text="ungradable").click()
    heads = [h.rstrip(" ▲▼") for h in page.locator(f"{table} thead th").all_inner_texts()]
    nth = heads.index("ungradable") + 1
    ungradable = [int(x) for x in column(page, table, f"td:nth-child({nth})")]
    assert ungradable == sorted(ungradable) and sum(ungradable) == sum(
        any(r[0] is None for r in rewards) for rewards in MODELS.values()
    )


# -- readable at 1280 px -------------------------------------------------------------------------
SCREEN = 1280
ALL_MODES = ("numeric", "flexible", "list", "list_csv", "exact_short", "exact_bool", "exact", "")
LONG_NAMES = (
    "openai-chat-completions/gpt-4.1-mini-2025-04-14",
    "anthropic/claude-3-7-sonnet-20250219",
    "hf/Qwen/Qwen2.5-Coder-32B-Instruct",
    "vllm/meta-llama/Llama-3.3-70B-Instruct",
)


@pytest.fixture(scope="module")
def widest_page(tmp_path_factory) -> Path:
    """The widest tables a leaderboard makes: long model names with every badge, three tiers,
    all eight reward modes, pass@2, pass@4 and pass@8 (eight epochs), in each section."""
    subs = []
    for k, model in enumerate(LONG_NAMES):
        rewards = [[1.0 if (i * (k + 3) + e) % 5 < 3 else 0.0 for e in range(8)] for i in range(48)]
        subs.append(synthetic_submission(model, rewards, split_tasks=250, modes=ALL_MODES))
    standings = [
        Standing(verified=True),
        Standing(verified=True, pin_failures=["grader_version"], flags=["protocol: x"]),
        Standing(verified=False),
        Standing(verified=False),
    ]
    board = build_leaderboard(
        [
            (f"{k}/submission.json", sub, s)
            for k, (sub, s) in enumerate(zip(subs, standings, strict=True))
        ]
    )
    path = tmp_path_factory.mktemp("wide") / "leaderboard.html"
    path.write_text(render_html(board), encoding="utf-8")
    return path


def right_edge(element) -> float:
    box = element.bounding_box()
    return box["x"] + box["width"]


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_every_column_is_on_a_1280_px_screen(chromium, sync_playwright, widest_page, tmp_path):
    with open_page(sync_playwright, chromium, tmp_path / "profile", widest_page) as page:
        tables = page.locator("table")
        assert tables.count() >= 7  # a board and a modes table per section, and the pairs
        widths = {}
        for table in tables.all():
            heads = table.locator("thead th")
            names = [name.replace("\n", " ") for name in heads.all_inner_texts()]
            rights = [right_edge(head) for head in heads.all()]
            widths[table.get_attribute("id")] = max(rights)
            off = [name for name, right in zip(names, rights, strict=True) if right > SCREEN]
            assert not off, f"{table.get_attribute('id')}: {off} end past {SCREEN} px ({rights})"
        # nothing scrolls sideways: not the page, not a table's own scroller
        assert page.evaluate("document.documentElement.scrollWidth") <= SCREEN
        scrolled = page.evaluate(
            "[...document.querySelectorAll('.scroll')].filter(d => d.scrollWidth > d.clientWidth)"
            ".length"
        )
        assert scrolled == 0
        shot = tmp_path / "leaderboard-1280.png"
        page.screenshot(path=str(shot), full_page=True)
    # a page wider than the screen makes a wider full-page screenshot
    assert png_size(shot)[0] == SCREEN
    print(f"right edge of each table's last column at {SCREEN} px: {widths}")


def test_the_board_shows_the_counts_next_to_pass1(chromium, sync_playwright, widest_page, tmp_path):
    with open_page(sync_playwright, chromium, tmp_path / "profile", widest_page) as page:
        heads = [h.replace("\n", " ") for h in page.locator("#board-0 thead th").all_inner_texts()]
        assert heads[:7] == [
            "rank",
            "model",
            "pass@1 (95% CI)",
            "tasks",
            "left ungraded",
            "ungradable",
            "graded only",
        ]
        modes = page.locator("#modes-0 thead th").all_inner_texts()
        assert len(modes) == 2 + len(ALL_MODES)


def test_a_narrower_window_does_scroll_the_table(chromium, sync_playwright, widest_page, tmp_path):
    """The check above can fail: at 800 px the same board does not fit."""
    with open_page(sync_playwright, chromium, tmp_path / "p", widest_page, width=800) as page:
        rights = [right_edge(head) for head in page.locator("#board-0 thead th").all()]
        assert max(rights) > 800
