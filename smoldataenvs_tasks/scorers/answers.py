"""The answer rules (docs/design.md "Answer rules"): what in a reply or a run counts as the answer.

Pure text functions, no I/O:

* `last_nonempty_line(stdout)`: the program variant's answer.
* `extract_program(completion)`: the program in a model's reply (last python/untagged fenced
  block; a trailing shell block is a shell answer; an unclosed last fence is a truncated program).
* `is_command(answer)`: the command guard (`echo 5` is not the value 5).
* `exception_name_from_stderr`, `exception_line_from_stderr`, `is_syntax_error`: classify a
  crashed program from what its Python printed.

    python -c "from smoldataenvs_tasks.scorers.answers import is_command; print(is_command('echo 5'))"
"""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass

__all__ = [
    "COMMAND_WORDS",
    "PYTHON_TAGS",
    "SHELL_TAGS",
    "ExtractedProgram",
    "exception_line_from_stderr",
    "exception_name_from_stderr",
    "extract_program",
    "is_command",
    "is_syntax_error",
    "last_nonempty_line",
    "without_lone_surrogates",
]

PYTHON_TAGS = frozenset({"", "python", "py", "python3"})
SHELL_TAGS = frozenset({"bash", "sh", "shell", "zsh", "console", "shell-session"})
# A first token from this list followed by anything makes the answer a command.
COMMAND_WORDS = frozenset(
    {"echo", "printf", "tee", "awk", "sed", "python", "python3", "bash", "sh"}
)
_SYNTAX_ERRORS = frozenset({"SyntaxError", "IndentationError", "TabError"})


# --- the program variant's answer --------------------------------------------------------------


def last_nonempty_line(stdout: str | None) -> str | None:
    """The last line of `stdout` that is not blank, stripped; None when there is none."""
    if not stdout:
        return None
    for line in reversed(stdout.splitlines()):
        stripped = line.strip()
        if stripped:
            return stripped
    return None


# --- code extraction ---------------------------------------------------------------------------

# A UTF-16 surrogate with no partner: a provider can pass `"\ud800"` through its JSON, Python's
# json keeps it, and no UTF-8 encoder (a sandbox's pipe, a log or samples file) can write it.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, as a UTF-8 decoder with
    errors="replace" reads the bytes a provider would have sent for it. Idempotent, so a reply
    recorded after it (lm-eval's samples file) and one recorded before it (Inspect's log) reach
    the sandbox as the same text (docs/design.md "Answer rules")."""
    return _LONE_SURROGATE.sub("\ufffd", text)


@dataclass(frozen=True)
class ExtractedProgram:
    """What a reply offers as its program.

    `code` is the program text (None when the reply has fences but no program block, or ends in
    a shell block); `shell_tag` is the tag when the last fenced block is a shell block;
    `truncated` is True when the last fence was never closed (a generation cut off mid-block).
    """

    code: str | None
    shell_tag: str | None = None
    truncated: bool = False


# A fence opens at a run of three or more backticks followed by an optional language tag, the
# rest of its line (attributes such as `title=...` are ignored), then a newline or the end of the
# reply. Like whileai's extractor it need not start a line ("Here it is: ```python"). A run with
# more backticks later on its line is an inline code span (```x```), not a fence.
_BACKTICK_RUN = re.compile(r"`{3,}")
_OPENER_TAIL = re.compile(r"[ \t]*([A-Za-z0-9_+.#-]*)[^\n`]*(?:\n|\Z)")
# A backtick run with a language tag on its line: only ever an opener.
_TAGGED_OPENER = re.compile(r"`{3,}[ \t]*[A-Za-z0-9_+.#-]+[^\n`]*(?:\n|\Z)")


def _fenced_blocks(text: str) -> list[tuple[str, str, bool]]:
    """(tag, content, closed) for every fenced block, in order.

    A block closes at the next run of three backticks, wherever it stands (models often glue
    the closing fence to the last code line); with none, the block runs to the end of the text.
    """
    blocks: list[tuple[str, str, bool]] = []
    pos = 0
    while True:
        run = _BACKTICK_RUN.search(text, pos)
        if run is None:
            return blocks
        tail = _OPENER_TAIL.match(text, run.end())
        if tail is None:
            # Not an opener: skip an inline span's closing run on the same line, if any.
            closing = _BACKTICK_RUN.search(text, run.end())
            same_line = closing is not None and "\n" not in text[run.end() : closing.start()]
            pos = closing.end() if same_line and closing is not None else run.end()
            continue
        tag = tail.group(1).lower()
        start = tail.end()
        close = text.find("```", start)
        if close == -1:
            blocks.append((tag, text[start:], False))
            return blocks
        if not text[start:close].strip() and _TAGGED_OPENER.match(text, close):
            # "```\n```python\n...": a stray empty fence then the program's opener, not an
            # empty block closed by "```" and followed by the word "python" (a closing fence
            # carries no tag), which read as no program at all (issue 43).
            pos = close
            continue
        blocks.append((tag, text[start:close], True))
        closing_run = _BACKTICK_RUN.match(text, close)
        pos = closing_run.end() if closing_run is not None else close + 3


def _clean_code(content: str) -> str:
    return textwrap.dedent(content).strip()


def extract_program(completion: str | None) -> ExtractedProgram:
    """The program in a model's reply, by the code-extraction rule (docs/design.md "Answer rules")."""
    text = without_lone_surrogates(completion or "")
    blocks = _fenced_blocks(text)
    if not blocks:
        return ExtractedProgram(code=_clean_code(text))
    last_tag, _last_content, last_closed = blocks[-1]
    truncated = not last_closed
    if last_tag in SHELL_TAGS:
        return ExtractedProgram(code=None, shell_tag=last_tag, truncated=truncated)
    for tag, content, _closed in reversed(blocks):
        # An empty block (a stray fence pair) offers no program: an earlier one may.
        if tag in PYTHON_TAGS and content.strip():
            return ExtractedProgram(code=_clean_code(content), truncated=truncated)
    return ExtractedProgram(code=None, truncated=truncated)


# --- the command guard -------------------------------------------------------------------------

# `>` or `>>` with something non-blank before it and a token after it; `>=` is a comparison.
_REDIRECT = re.compile(r"\S\s*>>?(?!=)\s*(\S+)")


def _path_like(token: str) -> bool:
    return "/" in token or "." in token or token.startswith("-")


def is_command(answer: str | None) -> bool:
    """True when the answer is the shell line that would produce a value, not the value.

    docs/design.md: the first token is echo/printf/tee/awk/sed/python/python3/bash/sh followed by
    anything; or `cat` followed by a path-like token (contains `/` or `.`, or starts with `-`);
    or it contains `$(`, a backtick or a `|`; or a `>`/`>>` with a token before it and a
    path-like token after it. "Followed by anything" means at least one more token, so a bare
    label such as `python` stays a value; command words match case-sensitively, as a shell does.
    """
    if not answer:
        return False
    text = answer.strip()
    if "$(" in text or "`" in text or "|" in text:
        return True
    tokens = text.split()
    if not tokens:
        return False
    first = tokens[0]
    if first in COMMAND_WORDS and len(tokens) > 1:
        return True
    if first == "cat" and len(tokens) > 1 and _path_like(tokens[1]):
        return True
    return any(_path_like(match.group(1)) for match in _REDIRECT.finditer(text))


# --- crash classification ----------------------------------------------------------------------

# The header of the traceback that ended the program: a plain one at column 0, or a top-level
# exception group's (tracebacks nested inside a group sit behind "|" decorations).
_TRACEBACK_HEADER = re.compile(
    r"Traceback \(most recent call last\):|[ \t]*\+ Exception Group Traceback \(most recent call last\):"
)
_EXCEPTION_LINE = re.compile(r"([A-Za-z_][\w.]*)(?::(?:\s.*)?)?")
# `  File "/tmp/solve.py", line 3` (a compile error has no ", in <module>" part).
_COMPILE_FILE_LINE = re.compile(r'\s*File "(.*)", line \d+\s*')
_GROUP_PREFIX = re.compile(r"^[ \t]*(?:[|+][ \t]?)+")


def _exception_line_index(lines: list[str]) -> tuple[int, str, int | None] | None:
    """(index, exception line, index of its traceback header or None) of the last exception."""
    header = None
    for i in range(len(lines) - 1, -1, -1):
        if _TRACEBACK_HEADER.fullmatch(lines[i].rstrip()):
            header = i
            break
    if header is not None:
        group = lines[header].lstrip().startswith(("+", "|"))
        for j in range(header + 1, len(lines)):
            line = lines[j]
            if group:
                # Exception groups print every line behind "  | " / "  + " decorations.
                body = _GROUP_PREFIX.sub("", line, count=1)
                if body and not body[0].isspace() and _EXCEPTION_LINE.fullmatch(body):
                    return j, body.strip(), header
                continue
            if line and not line[0].isspace():
                if _EXCEPTION_LINE.fullmatch(line):
                    return j, line.strip(), header
                return None
        return None
    # No traceback header: a compile error of the program file itself (SyntaxError and friends
    # are reported as `File ..., line N`, the source line, a caret, then the error line).
    for i in range(len(lines) - 1, -1, -1):
        match = _EXCEPTION_LINE.fullmatch(lines[i])
        if match and match.group(1) in _SYNTAX_ERRORS:
            return i, lines[i].strip(), None
    return None


def exception_line_from_stderr(stderr: str | None) -> str | None:
    """The last traceback's exception line, e.g. "KeyError: 'price'"; None when there is none."""
    if not stderr:
        return None
    found = _exception_line_index(stderr.splitlines())
    return found[1] if found else None


def exception_name_from_stderr(stderr: str | None) -> str | None:
    """The class name of the exception that ended the program, unqualified.

    "KeyError: 'price'" → "KeyError"; "pandas.errors.ParserError: ..." → "ParserError" (the
    crash category's detail is a short class name, as in the published failure histograms);
    chained tracebacks report the last exception; exception groups report the group's class.
    None when stderr shows no traceback (killed by a signal, `sys.exit("message")`, ...).
    """
    line = exception_line_from_stderr(stderr)
    if line is None:
        return None
    match = _EXCEPTION_LINE.fullmatch(line)
    if match is None:  # pragma: no cover - the line was selected by this same pattern
        return None
    return match.group(1).rsplit(".", 1)[-1]


def is_syntax_error(stderr: str | None, program_path: str | None = None) -> bool:
    """True when Python refused to compile the program file itself.

    A compile error of the script Python was asked to run prints no traceback header, only
    `File "<path>", line N`, the source line, a caret and the SyntaxError/IndentationError/
    TabError line. A SyntaxError raised while the program ran (`eval("1 +")`, importing a broken
    module, `ast.parse`) comes inside a traceback and is a crash instead. With `program_path`, the
    reported file must be that file (same path, or the same base name when the sandbox reports
    a different mount point).
    """
    if not stderr:
        return False
    lines = stderr.splitlines()
    found = _exception_line_index(lines)
    if found is None:
        return False
    index, line, header = found
    if header is not None:
        return False
    name = line.split(":", 1)[0].strip()
    if name not in _SYNTAX_ERRORS:
        return False
    # Walk back over the source/caret lines to the `File "...", line N` line.
    for j in range(index - 1, -1, -1):
        match = _COMPILE_FILE_LINE.fullmatch(lines[j])
        if match:
            if program_path is None:
                return True
            reported = match.group(1)
            return reported == program_path or os.path.basename(reported) == os.path.basename(
                program_path
            )
        if lines[j] and not lines[j][0].isspace():
            return False
    return False
