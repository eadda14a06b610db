"""Text that report.md and leaderboard.md did not write themselves (a model name, a run's file
name, a reason a submitter's log gave), made literal markdown: a reader sees what was typed,
never a link, an image or raw HTML the submitter slipped in."""

from __future__ import annotations

import re

# CommonMark lets any ASCII punctuation be escaped with a backslash; these are the ones that
# start markup mid-line (emphasis, links, images, raw HTML, entities, code, strikethrough, a
# table's cell break). `_` inside a word never emphasises, so `gold_program` is left readable.
_MD_SPECIAL = re.compile(r"[\\`*\[\]<>&|~!]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# GitHub also links bare URLs; an escaped character breaks the pattern it looks for.
_MD_AUTOLINK = re.compile(r"(?i)(://|www\.)")


def md_text(text: str) -> str:
    """Text leaderboard.md did not write (a model name, a title, a reason) as literal markdown:
    one line, raw HTML and markup shown as typed, never interpreted."""
    one_line = " ".join(str(text).split())
    escaped = _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), one_line)
    return _MD_AUTOLINK.sub(lambda m: m.group(0)[:-1] + "\\" + m.group(0)[-1], escaped)
