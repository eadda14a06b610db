"""`leaderboard.md` and `leaderboard.html` from a built leaderboard (never from the submissions,
so the files cannot disagree with leaderboard.json).

The HTML page is one self-contained file: inline CSS, a few lines of inline JavaScript that sort
a table when its header is clicked (numbers by the cell's `data-sort` value, empty cells last),
and an inline SVG chart of pass@1 with its 95% CI per model. It loads nothing from the network.

    from smoldataenvs_tasks.results.render.leaderboard_page import render_html, render_leaderboard_markdown
    Path("leaderboard.html").write_text(render_html(board))

One module (over 500 lines): the markdown and the HTML page share the section words, notes and
column order, so the two files cannot describe a board differently.
"""

from __future__ import annotations

import html

from smoldataenvs_tasks._pins import KNOWN_REWARD_MODES, TIERS, reward_mode_label
from smoldataenvs_tasks.results.figures.cost import tokens_text, usd_text, wall_text
from smoldataenvs_tasks.results.figures.leaderboard_floor import (
    flip_text,
    floor_cells,
    verdict_text,
)
from smoldataenvs_tasks.results.model.schema import EstimateEntry
from smoldataenvs_tasks.results.publish.leaderboard import (
    Leaderboard,
    LeaderboardEntry,
    LeaderboardTable,
    PassKValue,
)
from smoldataenvs_tasks.results.render.markdown import md_text as _md_text
from smoldataenvs_tasks.results.render.submitter import Stated, statements_html, statements_markdown


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _signed_points(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:+.1f}"


def _interval(entry: EstimateEntry | PassKValue | None) -> str:
    if not entry or not entry["ci95"]:
        return "—"
    low, high = entry["ci95"]
    return f"{_pct(low)} – {_pct(high)}"


def _clustered(entry: LeaderboardEntry) -> str:
    clustered = entry.get("pass@1_clustered")
    if not clustered or not clustered["ci95"]:
        return "—"
    widening = clustered["widening"]
    times = "" if widening is None else f", ×{widening:.2f}"
    return f"{_interval(clustered)} ({clustered['n_clusters']}{times})"


def _value(entry: EstimateEntry | PassKValue | None) -> float | None:
    return None if entry is None else entry["value"]


def _columns(entries: list[LeaderboardEntry]) -> tuple[list[str], list[str], list[str]]:
    """The tiers, reward modes and k of pass@k any entry of the table has, in canonical order."""
    tiers = [t for t in TIERS if any(t in e["pass@1_by_tier"] for e in entries)]
    tiers += sorted({t for e in entries for t in e["pass@1_by_tier"]} - set(tiers))
    canonical = [reward_mode_label(m) for m in KNOWN_REWARD_MODES]
    modes = [m for m in canonical if any(m in e["pass@1_by_reward_mode"] for e in entries)]
    modes += sorted({m for e in entries for m in e["pass@1_by_reward_mode"]} - set(modes))
    ks = sorted({k for e in entries for k in e["pass@k"]}, key=int)
    return tiers, modes, ks


def _model_note(entry: LeaderboardEntry) -> list[str]:
    notes = []
    if not entry["verified"]:
        notes.append("UNVERIFIED")
    if not entry["complete"]:
        notes.append("PARTIAL")
    if entry["nonstandard"]:
        notes.append("NONSTANDARD")
    if entry.get("same_replies_as"):
        # Which of the copies is the original no file proves ("Counted as one" names them).
        notes.append(f"SAME REPLIES AS {len(entry.get('same_replies_as', []))} LEFT OUT")
    if entry["pins"] != "ok":
        notes.append(f"pins {entry['pins']}")
    return notes


def _rank(entry: LeaderboardEntry) -> str:
    return "—" if entry["rank"] is None else str(entry["rank"])


_SECTION_WORDS = {
    "re-executed": "Re-executed: verified against their logs and the maintainer's data, and "
    "every graded answer produced again on the maintainer's machine (each program re-run, each "
    "agent's commands replayed in a fresh sandbox) with every recorded reward reproduced; "
    "ranked above the re-graded tier.",
    "ranked": "Ranked: verified against their logs (every answer re-graded) and the "
    "maintainer's data, with the task's default settings.",
    "other settings": "Other settings: verified, but a setting differs from the task's "
    "defaults, the split is nonstandard, or other pins were used; ranked only within their "
    "own table.",
    "partial": "PARTIAL: verified, but the run does not cover its whole split (filters, "
    "--limit, or samples it left ungraded); listed by pass@1, never ranked with complete runs.",
    "not reproduced": "NOT REPRODUCED: verified, but re-execution could not replay some of "
    "their attempts (two fresh runs disagree, or the maintainer's time limits are shorter than "
    "the run's), so those records were neither reproduced nor refuted; listed by pass@1, not "
    "ranked.",
    "unverified": "UNVERIFIED: no logs came with these submissions, so no answer was "
    "re-graded; listed by pass@1, not ranked.",
}


_PAIR_HEADER = [
    "A",
    "B",
    "tasks",
    "A − B (points)",
    "95% CI",
    "p (Holm)",
    "verdict",
    "tasks needed",
    "noise floor (points)",
    "epochs needed",
]


# -- markdown ----------------------------------------------------------------------------------
def _md_row(cells: list[str]) -> str:
    """A table row of cells already made safe (`_md_text` for anything a submission wrote)."""
    return "| " + " | ".join(cells) + " |"


def render_leaderboard_markdown(board: Leaderboard) -> str:
    out = ["# SmolDataEnvs leaderboard", ""]
    out += [
        "pass@1 with its 95% bootstrap CI over tasks (seed 0, 10,000 resamples): every task "
        "whose data is gradable counts, and a task the run left ungraded (a model error, an "
        "interrupt, a broken sandbox) counts as 0. Tables are separated by split, dataset "
        "revision, grader, variant, protocol and split size; entries of different tables are "
        "never ranked or compared together, and unverified submissions are never ranked.",
        "",
    ]
    duplicates = board.get("duplicates", [])
    if duplicates:
        out += ["# Counted as one", ""]
        out += [
            f"- {_md_text(d['file'])} ({_md_text(d['model'])}): the same model replies as "
            f"{_md_text(d['same_as'])} ({d['n_same']} of {d['n_shared']} identical); not "
            "listed again"
            for d in duplicates
        ]
        out.append("")
    section = None
    for table in board["tables"]:
        if table["section"] != section:
            section = table["section"]
            out += [f"# {section.capitalize()}", "", _SECTION_WORDS[section], ""]
        entries = table["entries"]
        tiers, modes, ks = _columns(entries)
        out += [f"## {_md_text(table['title'])}", ""]
        header = ["#", "model", "framework", "variant", "split", "pass@1", "95% CI"]
        header += ["95% CI clustered by dataset (datasets, × width)"]
        header += [f"pass@1 {t}" for t in tiers] + [f"mode {m}" for m in modes]
        header += [f"pass@{k}" for k in ks]
        header += ["tasks", "left ungraded by the run", "ungradable", "graded only"]
        header += ["grader", "date", "coverage"]
        header += ["retried", "tokens in / out", "wall time", "cost", "flip rate (95% CI)"]
        out += [_md_row(header), "|" + "|".join("---" for _ in header) + "|"]
        for e in entries:
            model = _md_text(e["id"]) + "".join(f" **{note}**" for note in _model_note(e))
            row = [_rank(e), model, *map(_md_text, (e["framework"], e["variant"], e["split"]))]
            row += [_pct(e["pass@1"]["value"]), _interval(e["pass@1"]), _clustered(e)]
            row += [_pct(_value(e["pass@1_by_tier"].get(t))) for t in tiers]
            row += [_pct(_value(e["pass@1_by_reward_mode"].get(m))) for m in modes]
            row += [_pct(_value(e["pass@k"].get(k))) for k in ks]
            row += [str(e["n_countable"]), str(e["n_left_ungraded"]), str(e["n_ungradable"])]
            row += [_pct(e["pass@1_graded"]["value"]), _md_text(e["grader"])]
            row += [_md_text(e["date"]) if e["date"] else "—", _md_text(e["coverage"])]
            row += [_text_count(e.get("n_retried")), tokens_text(e.get("cost"))]
            row += [wall_text(e.get("cost")), usd_text(e.get("cost"))]
            row += [_md_text(flip_text(e.get("noise_floor")))]
            out.append(_md_row(row))
        out.append("")
        out += statements_markdown(_stated(entries))
        if table["comparisons"]:
            out += [
                "### Pairwise (paired bootstrap on the tasks both counted; Holm-corrected over the "
                "table's pairs)",
                "",
                _md_row(_PAIR_HEADER),
                "|" + "|".join("---" for _ in _PAIR_HEADER) + "|",
            ]
            for c in table["comparisons"]:
                d = c["difference"]
                ci = "—"
                if d["ci95"]:
                    ci = f"{_signed_points(d['ci95'][0])} – {_signed_points(d['ci95'][1])}"
                row = [_md_text(c["a"]), _md_text(c["b"]), str(c["n_tasks"])]
                p_holm = c.get("p_holm")
                row += [_signed_points(d["value"]), ci, "—" if p_holm is None else f"{p_holm:.3f}"]
                floor = c.get("noise_floor")
                row += [_md_text(verdict_text(c["verdict"], floor))]
                row += [_text_count(c["tasks_to_separate"]), *floor_cells(floor)]
                out.append(_md_row(row))
            out.append("")
        out += ["### Is this number any good?", ""]
        out += [f"- {_md_text(line)}" for line in _diagnostic_lines(table)]
        out.append("")
    return "\n".join(out)


def _stated(entries: list[LeaderboardEntry]) -> Stated:
    return [(e["id"], e["sha256"], e.get("metadata")) for e in entries]


def _text_count(value: int | None) -> str:
    return "—" if value is None else str(value)


def _diagnostic_lines(table: LeaderboardTable) -> list[str]:
    d = table["diagnostics"]
    sizes = sorted({e["n_tasks"] for e in table["entries"]})
    lines = [
        f"Tasks counted by every entry: {d['n_tasks_common']} (entries cover "
        f"{', '.join(map(str, sizes))} tasks).",
        f"Tasks that split (some attempts right, some wrong, across entries): "
        f"{d['n_tasks_split']}; solved by every entry: {d['n_solved_by_all']}; failed by "
        f"every entry: {d['n_failed_by_all']}. Only the tasks that split tell entries apart.",
    ]
    floors = [c for c in table["comparisons"] if "noise_floor" in c]
    if floors:
        below = sum(c["noise_floor"]["below_floor"] for c in floors)
        lines.append(
            f"Noise floor: {below} of {len(floors)} pair(s) differ by less than sampling noise "
            "alone gives (95% half-width of A − B from the entries' within-task spread over "
            "repeated attempts): 'gap below floor'. 'epochs needed' separates the measured "
            "gap with 80% power."
        )
    needed = [c for c in table["comparisons"] if c["tasks_to_separate"] is not None]
    if needed:
        lines.append(
            "Sample size: 'tasks needed' is how many tasks separate each pair at its measured "
            "gap and paired spread (80% power, 5% two-sided); a pair whose need exceeds its "
            "tasks is not yet told apart by this split."
        )
    c = d["contamination"]
    if c["available"]:
        lines.append(
            f"Contamination: {c['n_table_in_train']} of {c['n_checked']} tasks "
            f"({_pct(c['share'])}) use tables that also appear in train."
        )
    else:
        lines.append(f"Contamination: not computed: {c['note']}.")
    lines += [f"Note: {note}." for note in table["notes"]]
    return lines


# -- HTML --------------------------------------------------------------------------------------
# Readable at 1280 px wide (tests/report/test_leaderboard_browser.py measures it): headers and
# model names wrap, a CI sits under its value, and the per-reward-mode columns have a table of
# their own, so the counts and "graded only" stay in view.
_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 84rem; color: #222;
       padding: 0 1rem; }
table { border-collapse: collapse; margin: .6rem 0 1.2rem; }
.scroll { overflow-x: auto; }
th, td { border-bottom: 1px solid #ddd; padding: .3rem .35rem; text-align: right;
         white-space: nowrap; }
th { background: #f4f4f4; cursor: pointer; user-select: none; white-space: normal;
     vertical-align: bottom; max-width: 5.5rem; }
th[aria-sort=ascending]::after { content: " ▲"; }
th[aria-sort=descending]::after { content: " ▼"; }
td.text, th.text { text-align: left; }
td.model, td.wrap { white-space: normal; min-width: 9rem; max-width: 19rem;
                    overflow-wrap: anywhere; }
.ci { display: block; color: #666; font-size: 12px; }
.badge { display: inline-block; margin-right: .3rem; padding: 0 .35rem; border-radius: 3px;
         font-size: 11px; background: #c44e52; color: #fff; white-space: nowrap; }
.badge.pins { background: #8c6d31; }
.badge.unverified { background: #555; }
.badge.settings, .badge.nonstandard { background: #8172b3; }
.ahead { color: #2d6a2d; font-weight: 600; }
svg text { font: 12px system-ui, sans-serif; }
"""

_JS = """
document.querySelectorAll("table.board").forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    th.addEventListener("click", function () {
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col].getAttribute("data-sort"), y = b.cells[col].getAttribute("data-sort");
        if (x === "" || y === "") { return (x === "") - (y === ""); }
        var nx = Number(x), ny = Number(y), c;
        if (!isNaN(nx) && !isNaN(ny)) { c = nx - ny; } else { c = x < y ? -1 : x > y ? 1 : 0; }
        return ascending ? c : -c;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _sort_value(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(round(value, 6))
    return str(value)


def _th(text: str, cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<th scope="col"{klass}>{_e(text)}</th>'


def _td(text: str, sort: object, *, cls: str = "", extra: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<td{klass} data-sort="{_e(_sort_value(sort))}">{_e(text)}{extra}</td>'


def _estimate_td(
    entry: EstimateEntry | PassKValue | None, *, with_ci: bool = False, cls: str = ""
) -> str:
    value = _value(entry)
    extra = f' <span class="ci">{_e(_interval(entry))}</span>' if with_ci and entry else ""
    return _td(_pct(value), value, cls=cls, extra=extra)


def _badges(e: LeaderboardEntry) -> str:
    badges = []
    if e.get("reexecuted"):
        badges.append(
            '<span class="badge reexecuted" title="every answer produced again by the '
            'verifier">re-executed</span>'
        )
    if not e["verified"]:
        badges.append(
            '<span class="badge unverified" title="no logs: not re-graded">unverified</span>'
        )
    if not e["complete"]:
        badges.append(f'<span class="badge partial" title="{_e(e["coverage"])}">partial</span>')
    if e["nonstandard"]:
        badges.append('<span class="badge nonstandard">nonstandard</span>')
    if e["settings"]:
        shown = "; ".join(e["settings"])
        badges.append(f'<span class="badge settings" title="{_e(shown)}">settings</span>')
    if e["pins"] != "ok":
        badges.append(f'<span class="badge pins" title="{_e(e["pins"])}">pins</span>')
    return "".join(f" {badge}" for badge in badges)


def _model_td(e: LeaderboardEntry) -> str:
    name = f'<span class="name">{_e(e["id"])}</span>'
    return f'<td class="text model" data-sort="{_e(e["id"])}">{name}{_badges(e)}</td>'


def _entry_row(e: LeaderboardEntry, cells: list[str]) -> str:
    """One entry's row, keyed by its submission's sha256 (the page's sorting and linking)."""
    return f'<tr data-sha256="{_e(e["sha256"])}">' + "".join(cells) + "</tr>"


def _scroll_table(
    classes: str, table_id: str, heads: list[tuple[str, str]], rows: list[str]
) -> str:
    """A sortable table in its own horizontal scroller: every table of the page."""
    head_html = "".join(_th(h, c) for h, c in heads)
    return (
        f'<div class="scroll"><table class="{classes}" id="{table_id}"><thead><tr>{head_html}'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _board_table(table: LeaderboardTable, index: int) -> str:
    """The ranking: what a reader compares first (pass@1 and what it counts) next to the model,
    then by tier and pass@k, then how it was run. The split, variant and grader are the table's
    (its title names them), so they take no column here."""
    entries = table["entries"]
    tiers, _, ks = _columns(entries)
    heads = [("rank", ""), ("model", "text"), ("pass@1 (95% CI)", "")]
    heads += [("tasks", ""), ("left ungraded", ""), ("ungradable", ""), ("graded only", "")]
    heads += [(f"pass@1 {t}", "") for t in tiers] + [(f"pass@{k}", "") for k in ks]
    heads += [("framework", "text"), ("date", "text")]
    rows = []
    for e in entries:
        cells = [
            _td(_rank(e), e["rank"]),
            _model_td(e),
            _estimate_td(e["pass@1"], with_ci=True, cls="pass1"),
            _td(str(e["n_countable"]), e["n_countable"]),
            _td(str(e["n_left_ungraded"]), e["n_left_ungraded"]),
            _td(str(e["n_ungradable"]), e["n_ungradable"]),
            _estimate_td(e["pass@1_graded"]),
        ]
        cells += [_estimate_td(e["pass@1_by_tier"].get(t)) for t in tiers]
        cells += [_estimate_td(e["pass@k"].get(k)) for k in ks]
        cells += [
            _td(e["framework"], e["framework"], cls="text"),
            _td(e["date"] or "—", e["date"], cls="text"),
        ]
        rows.append(_entry_row(e, cells))
    return _scroll_table("board", f"board-{index}", heads, rows)


def _modes_table(table: LeaderboardTable, index: int) -> str:
    """pass@1 per reward mode, a table of its own (eight modes would push the ranking's
    columns off a 1280 px screen)."""
    entries = table["entries"]
    _, modes, _ = _columns(entries)
    if not modes:
        return ""
    heads = [("rank", ""), ("model", "text")] + [(f"mode {m}", "") for m in modes]
    rows = []
    for e in entries:
        cells = [_td(_rank(e), e["rank"]), _model_td(e)]
        cells += [_estimate_td(e["pass@1_by_reward_mode"].get(m)) for m in modes]
        rows.append(_entry_row(e, cells))
    return "<h3>pass@1 by reward mode</h3>" + _scroll_table(
        "board modes", f"modes-{index}", heads, rows
    )


def _cost_table(table: LeaderboardTable, index: int) -> str:
    """Cost, retried attempts and the noise floor per entry, a table of their own (beside the
    ranking they would push its columns off a 1280 px screen)."""
    heads = [("rank", ""), ("model", "text"), ("retried", ""), ("tokens in / out", "")]
    heads += [("wall time", ""), ("cost", ""), ("flip rate (95% CI)", "text")]
    rows = []
    for e in table["entries"]:
        cost = e.get("cost")
        floor = e.get("noise_floor")
        cells = [
            _td(_rank(e), e["rank"]),
            _model_td(e),
            _td(_text_count(e.get("n_retried")), e.get("n_retried")),
            _td(tokens_text(cost), None if cost is None else cost["input_tokens"]),
            _td(wall_text(cost), None if cost is None else cost["wall_seconds"]),
            _td(usd_text(cost), None if cost is None else cost["usd"]),
            _td(
                flip_text(floor),
                None if floor is None else floor["flip_rate"]["value"],
                cls="text wrap",
            ),
        ]
        rows.append(_entry_row(e, cells))
    return "<h3>Cost, retries and noise floor</h3>" + _scroll_table(
        "board cost", f"cost-{index}", heads, rows
    )


def _short(label: str, limit: int = 38) -> str:
    """A chart label that fits its margin: the start and end of a long model name."""
    if len(label) <= limit:
        return label
    return f"{label[: limit // 2 - 2]}…{label[-(limit // 2 + 1) :]}"


def _chart(table: LeaderboardTable, index: int) -> str:
    """pass@1 per entry: a dot at the value and a bar across its 95% CI, on a 0–100% axis."""
    entries = table["entries"]
    label_w, plot_w, row_h, top = 260, 480, 26, 28
    height = top + row_h * len(entries) + 24
    width = label_w + plot_w + 70

    def x(value: float) -> float:
        return round(label_w + plot_w * value, 2)

    parts = [
        f'<svg class="chart" id="chart-{index}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="pass@1 with 95% CI per model">'
    ]
    for tick in range(0, 101, 20):
        tx = x(tick / 100)
        parts.append(
            f'<line x1="{tx}" y1="{top - 8}" x2="{tx}" y2="{height - 20}" stroke="#e3e3e3"/>'
            f'<text x="{tx}" y="{height - 6}" text-anchor="middle">{tick}%</text>'
        )
    parts.append(f'<text x="{label_w}" y="14">pass@1 with 95% CI</text>')
    for row, e in enumerate(entries):
        cy = top + row_h * row + row_h / 2
        p = e["pass@1"]
        parts.append(
            f'<text x="{label_w - 8}" y="{cy + 4}" text-anchor="end">{_e(_short(e["id"]))}'
            f"<title>{_e(e['id'])}</title></text>"
        )
        if p["ci95"]:
            lo, hi = p["ci95"]
            parts.append(
                f'<line class="ci" x1="{x(lo)}" y1="{cy}" x2="{x(hi)}" y2="{cy}" '
                f'stroke="#4c72b0" stroke-width="3"/>'
            )
        if p["value"] is not None:
            fill = "#4c72b0" if e["complete"] else "#c44e52"
            parts.append(
                f'<circle cx="{x(p["value"])}" cy="{cy}" r="5" fill="{fill}">'
                f"<title>{_e(e['id'])}: {_pct(p['value'])} ({_e(_interval(p))})</title></circle>"
                f'<text x="{x(1) + 8}" y="{cy + 4}">{_pct(p["value"])}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _comparisons(table: LeaderboardTable, index: int) -> str:
    if not table["comparisons"]:
        return ""
    heads = [("A", "text"), ("B", "text"), ("tasks", ""), ("A − B (points)", ""), ("95% CI", "")]
    heads += [("verdict", "text"), ("tasks needed", "")]
    heads += [("noise floor (points)", ""), ("epochs needed", "")]
    rows = []
    for c in table["comparisons"]:
        d = c["difference"]
        ci = "—"
        if d["ci95"]:
            ci = f"{_signed_points(d['ci95'][0])} – {_signed_points(d['ci95'][1])}"
        verdict_cls = "text wrap ahead" if c["verdict"].endswith(" ahead") else "text wrap"
        floor = c.get("noise_floor")
        floor_shown, epochs_shown = floor_cells(floor)
        rows.append(
            "<tr>"
            + _td(c["a"], c["a"], cls="text wrap")
            + _td(c["b"], c["b"], cls="text wrap")
            + _td(str(c["n_tasks"]), c["n_tasks"])
            + _td(_signed_points(d["value"]), d["value"])
            + _td(ci, None if not d["ci95"] else d["ci95"][0])
            + _td(verdict_text(c["verdict"], floor), c["verdict"], cls=verdict_cls)
            + _td(_text_count(c["tasks_to_separate"]), c["tasks_to_separate"])
            + _td(floor_shown, None if floor is None else floor["floor"])
            + _td(epochs_shown, None if floor is None else floor["epochs_to_separate"])
            + "</tr>"
        )
    return "<h3>Pairwise: paired bootstrap on the tasks both counted</h3>" + _scroll_table(
        "board pairs", f"pairs-{index}", heads, rows
    )


def render_html(board: Leaderboard) -> str:
    sections = []
    current = None
    for index, table in enumerate(board["tables"]):
        if table["section"] != current:
            current = table["section"]
            sections.append(
                f'<h2 class="section" data-section="{_e(current)}">{_e(current.capitalize())}'
                f"</h2><p>{_e(_SECTION_WORDS[current])}</p>"
            )
        lines = "".join(f"<li>{_e(line)}</li>" for line in _diagnostic_lines(table))
        sections.append(
            f'<section class="board-table" data-split="{_e(table["key"]["split"])}" '
            f'data-section="{_e(table["section"])}">'
            f"<h2>{_e(table['title'])}</h2>"
            f"{_board_table(table, index)}{_modes_table(table, index)}{_cost_table(table, index)}"
            f"{_chart(table, index)}"
            f"{_comparisons(table, index)}{statements_html(_stated(table['entries']))}"
            f"<h3>Is this number any good?</h3><ul>{lines}</ul></section>"
        )
    duplicates = board.get("duplicates", [])
    if duplicates:
        items = "".join(
            f"<li>{_e(d['file'])} ({_e(d['model'])}): the same model replies as "
            f"{_e(d['same_as'])} ({d['n_same']} of {d['n_shared']} identical); not listed "
            "again</li>"
            for d in duplicates
        )
        sections.insert(0, f'<h2 class="section">Counted as one</h2><ul>{items}</ul>')
    stats = board["statistics"]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>SmolDataEnvs leaderboard</title>"
        f"<style>{_CSS}</style></head><body>"
        "<h1>SmolDataEnvs leaderboard</h1>"
        f"<p>pass@1 with its {100 * stats['confidence']:.0f}% percentile bootstrap CI over "
        f"tasks (seed {stats['seed']}, {stats['resamples']:,} resamples). Click a column header "
        "to sort. A task the run left ungraded counts as 0. Tables are separated by split, "
        "dataset revision, grader, variant, protocol and split size and are never mixed; "
        "unverified submissions are never ranked.</p>"
        + "".join(sections)
        + f"<script>{_JS}</script></body></html>\n"
    )
