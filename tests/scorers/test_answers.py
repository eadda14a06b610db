"""The answer rules: last line, code extraction, the command guard, crash classification.

python -m pytest tests/scorers/test_answers.py -q
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from smoldataenvs_tasks.scorers.answers import (
    ExtractedProgram,
    exception_line_from_stderr,
    exception_name_from_stderr,
    extract_program,
    is_command,
    is_syntax_error,
    last_nonempty_line,
)

pytestmark = pytest.mark.unit

# --- last non-empty line -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        ("East\n", "East"),
        ("region units\nEast 94\nWest 85\n\nEast\n\n  \n", "East"),  # whileai r1: last line wins
        ("  5768.04  \r\n", "5768.04"),
        ("loading 50%\rloading 100%\n42", "42"),
        ("", None),
        ("\n \n\t\n", None),
        (None, None),
    ],
)
def test_last_nonempty_line(stdout, expected) -> None:
    assert last_nonempty_line(stdout) == expected


# --- code extraction ---------------------------------------------------------------------------

PY = "import pandas as pd\nprint(1)"


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        (f"```python\n{PY}\n```", ExtractedProgram(PY)),
        (f"```Python3\n{PY}\n```", ExtractedProgram(PY)),
        (f"```PY\n{PY}\n```", ExtractedProgram(PY)),
        (f"```\n{PY}\n```", ExtractedProgram(PY)),
        (f"Here it is: ```python\n{PY}\n```\nDone.", ExtractedProgram(PY)),
        # the last python block wins
        (f"```python\nprint(0)\n```\ntext\n```python\n{PY}\n```", ExtractedProgram(PY)),
        # other tags are skipped
        (f"```python\n{PY}\n```\n```text\nEast\n```", ExtractedProgram(PY)),
        (f"```python\n{PY}\n```\n```json\n{{}}\n```", ExtractedProgram(PY)),
        # a trailing shell block earns shell_answer, whatever came before
        (f"```python\n{PY}\n```\n```bash\necho East\n```", ExtractedProgram(None, "bash")),
        ('```bash\necho "East"\n```', ExtractedProgram(None, "bash")),
        ("```sh\necho 1\n```", ExtractedProgram(None, "sh")),
        ("```shell\necho 1\n```", ExtractedProgram(None, "shell")),
        ("```zsh\necho 1\n```", ExtractedProgram(None, "zsh")),
        ("```console\n$ echo 1\n```", ExtractedProgram(None, "console")),
        ("```shell-session\n$ echo 1\n```", ExtractedProgram(None, "shell-session")),
        ("```BASH\necho 1\n```", ExtractedProgram(None, "bash")),
        # a shell block followed by a python block: the python block is last
        (f"```bash\nls\n```\n```python\n{PY}\n```", ExtractedProgram(PY)),
        # truncated generation: the text after the unclosed fence
        (
            "```python\nimport pandas as pd\nprint(",
            ExtractedProgram("import pandas as pd\nprint(", truncated=True),
        ),
        ("```python", ExtractedProgram(None, truncated=True)),
        # an empty untagged fence, then the program's block (issue 43: read as no_answer)
        (f"Sure.\n```\n```python\n{PY}\n```\n", ExtractedProgram(PY)),
        (f"```\n\n```\n```python\n{PY}\n```", ExtractedProgram(PY)),
        # an empty fence pair after the program offers none: the program before it stands
        (f"```python\n{PY}\n```\n```\n```", ExtractedProgram(PY)),
        ("```\n```", ExtractedProgram(None)),
        # a lone surrogate (a provider passing "\ud800" through) reads as U+FFFD
        ("```python\nprint('East\ud800')\n```", ExtractedProgram("print('East\ufffd')")),
        # no fence at all: the whole reply
        (PY, ExtractedProgram(PY)),
        ("  print(2)  \n", ExtractedProgram("print(2)")),
        # only other tags: no program
        ("```text\nEast\n```", ExtractedProgram(None)),
        # closing fence glued to the last line; indented block
        ("```python\nprint(1)```", ExtractedProgram("print(1)")),
        (
            "```python title=solve.py\n    x = 1\n    print(x)\n```",
            ExtractedProgram("x = 1\nprint(x)"),
        ),
        # an inline code span is not a fence
        (f"use ```df.head()``` first\n```python\n{PY}\n```", ExtractedProgram(PY)),
        ("", ExtractedProgram("")),
    ],
)
def test_extract_program(completion: str, expected: ExtractedProgram) -> None:
    assert extract_program(completion) == expected


# --- the command guard: docs/design.md's lists verbatim ------------------------------------------

VALUES = [">50K", "> 2 Years", ">40hrs", "<=50K, >50K", "cat", "dog, cat", "5", "yes"]
COMMANDS = [
    "echo >50K",
    "echo 5",
    "printf '2'",
    "cat answer.txt",
    "$(cat answer.txt)",
    "| 2.14",
    "| /tmp/2.14",
    "2.14 | tee answer.txt",
    "2 > answer.txt",
    'echo -n "2.14" > /workdir/answer.txt',
]


@pytest.mark.parametrize("answer", VALUES)
def test_command_guard_lets_values_through(answer: str) -> None:
    assert is_command(answer) is False


@pytest.mark.parametrize("answer", COMMANDS)
def test_command_guard_flags_commands(answer: str) -> None:
    assert is_command(answer) is True


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("python", False),  # a bare label: "followed by anything" needs something after it
        ("Python 3", False),  # command words are case-sensitive, as in a shell
        ("python3 solve.py", True),
        ("awk '{print $1}' f.csv", True),
        ("sed -n 1p x", True),
        ("bash -c 'echo 1'", True),
        ("sh run.sh", True),
        ("tee out.txt", True),
        ("cat -A", True),
        ("cat food", False),  # not a path-like token
        ("`cat x`", True),
        ("x >= 3.5", False),  # a comparison, not a redirect
        ("2>answer.txt", True),
        ("5 >> /tmp/log", True),
        ("a > b", False),  # the token after `>` is not path-like
        ("", False),
        (None, False),
    ],
)
def test_command_guard_details(answer, expected) -> None:
    assert is_command(answer) is expected


# --- crash classification from what a real Python prints ---------------------------------------

PROGRAMS = {
    # name: (source, exception line, exception name, is a syntax error of the program)
    "key_error": ("d = {}\nd['price']\n", "KeyError: 'price'", "KeyError", False),
    "syntax": ("x = = 2\n", "SyntaxError: invalid syntax", "SyntaxError", True),
    "unclosed": ('print("hi"\n', "SyntaxError: '(' was never closed", "SyntaxError", True),
    "indentation": (
        "if True:\nprint(1)\n",
        "IndentationError: expected an indented block after 'if' statement on line 1",
        "IndentationError",
        True,
    ),
    "tab": ("if True:\n\tx = 1\n        y = 2\n", None, "TabError", True),
    "eval_syntax": ('eval("1 +")\n', "SyntaxError: invalid syntax", "SyntaxError", False),
    "chained": (
        "try:\n    {}['a']\nexcept KeyError as e:\n    raise ValueError('bad') from e\n",
        "ValueError: bad",
        "ValueError",
        False,
    ),
    "qualified": (
        "import json\njson.loads('{')\n",
        None,
        "JSONDecodeError",
        False,
    ),
    "group": (
        "raise ExceptionGroup('eg', [ValueError(1), KeyError(2)])\n",
        "ExceptionGroup: eg (2 sub-exceptions)",
        "ExceptionGroup",
        False,
    ),
    "exit_message": ("import sys\nsys.exit('bye')\n", None, None, False),
    "bare_class": ("class E(Exception):\n    pass\nraise E\n", "E", "E", False),
    "unicode_decode": (
        "b'\\xff'.decode('utf-8')\n",
        None,
        "UnicodeDecodeError",
        False,
    ),
}


def _run(tmp_path: Path, name: str, source: str) -> tuple[str, str]:
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True)
    return done.stderr, str(path)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_crash_classification_from_real_stderr(tmp_path: Path, name: str) -> None:
    source, line, exc_name, syntax = PROGRAMS[name]
    stderr, path = _run(tmp_path, name, source)
    if line is not None:
        assert exception_line_from_stderr(stderr) == line
    assert exception_name_from_stderr(stderr) == exc_name
    assert is_syntax_error(stderr) is syntax
    assert is_syntax_error(stderr, program_path=path) is syntax
    assert is_syntax_error(stderr, program_path="/elsewhere/other.py") is False


def test_syntax_error_path_matches_by_base_name_across_mounts(tmp_path: Path) -> None:
    stderr, _ = _run(tmp_path, "solve", "x = = 1\n")
    assert is_syntax_error(stderr, program_path="/tmp/solve.py") is True


def test_qualified_exception_name_is_unqualified() -> None:
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "/tmp/solve.py", line 2, in <module>\n'
        "    df = pd.read_csv('x.csv')\n"
        "pandas.errors.ParserError: Error tokenizing data. C error: Expected 3 fields\n"
    )
    assert exception_name_from_stderr(stderr) == "ParserError"
    assert exception_line_from_stderr(stderr).startswith("pandas.errors.ParserError:")


@pytest.mark.parametrize("stderr", ["", None, "Killed\n", "some warning\n"])
def test_no_traceback_no_exception(stderr) -> None:
    assert exception_name_from_stderr(stderr) is None
    assert is_syntax_error(stderr) is False
