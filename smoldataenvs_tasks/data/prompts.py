"""The prompts of the three SmolDataEnvs protocols, written once for Inspect and lm-eval alike.

The wording is our own; the elements follow the dataset's protocols
(docs/design.md "Prompts"): the one-turn program protocol the GRPO curves used, and the
bash-agent protocol of the SFT trajectories and Harbor suites. A row's own `instruction` column is
data and is used verbatim by the agentic variant; `agent_instruction` only builds an equivalent
for rows that lack it.

    >>> print(program_prompt("How many rows?", ["a.csv"]).splitlines()[2])
    The data files are in /home/user/input, and your program runs in that directory:
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from smoldataenvs_tasks.contract import ANSWER_FILE, INPUT_DIR, WORKDIR
from smoldataenvs_tasks.variants import ANSWER_FILE_PROTOCOL, BASH, SUBMIT_PROTOCOL

PROGRAM_SYSTEM_PROMPT = (
    "You are a data analyst. You answer questions about data files by writing one short Python "
    "program. The program is run once, and you only get to see what it prints."
)

_PROGRAM_RULES = """\
Reply with one Python program in a single ```python code block, and nothing after it.
- If you need to look at the data (columns, dtypes, a few rows), do it inside the program.
- The LAST line the program prints must be the answer alone: a bare number (no thousands \
separators, no units), a short label, yes/no, or a comma-separated list.
- Keep it under 40 lines. pandas, numpy, scipy, scikit-learn and statsmodels are installed."""


def _file_lines(files: Sequence[str]) -> str:
    return "\n".join(f"- {name}" for name in files)


def program_prompt(question: str, files: Sequence[str], *, input_dir: str = INPUT_DIR) -> str:
    """The user turn of the one-turn program protocol."""
    if files:
        where = (
            f"The data files are in {input_dir}, and your program runs in that directory:\n"
            f"{_file_lines(files)}"
        )
    else:
        where = (
            f"Your program runs in {input_dir}.\n"
            "- No file names were given for this task, but its data is staged in that directory: "
            f"list it first (for example `os.listdir('{input_dir}')`)."
        )
    return f"{question.strip()}\n\n{where}\n\n{_PROGRAM_RULES}"


def agent_system_prompt(
    *, tools: Sequence[str] = (BASH.name,), protocol: str = ANSWER_FILE_PROTOCOL
) -> str:
    """System prompt for the bash-agent protocol (and its `python` tool / `submit` variants).
    The tool names are `variants.ToolSpec` names, so the prompt names the tools a model is given
    (issue 47); the wording is unchanged (tests/inspect/test_tool_spec.py)."""
    if list(tools) == [BASH.name]:
        tool_text = (
            f"Your only tool is `{BASH.name}`: it runs one shell command and returns its output. "
            "Nothing carries over between calls except files on disk."
        )
    else:
        names = ", ".join(f"`{t}`" for t in tools)
        tool_text = (
            f"Your tools are {names}: each call runs in a fresh process and returns its output. "
            "Nothing carries over between calls except files on disk."
        )
    if protocol == SUBMIT_PROTOCOL:
        finish = (
            "When you have the answer, call the `submit` tool with the value alone. "
            "Do not stop without submitting."
        )
    else:
        finish = (
            f"You MUST submit by writing the final value to {ANSWER_FILE} with a tool call. "
            "Do not stop without submitting."
        )
    return (
        "You are an autonomous data-analysis agent in a sandboxed Linux machine with no network. "
        f"{tool_text} The data is in {INPUT_DIR}/; Python 3 with pandas, numpy, scikit-learn and "
        "scipy is installed. Inspect the data, plan, compute, and check your result. "
        f"{finish}"
    )


_ANSWER_FORMAT = (
    "Give the answer as a bare number without thousands separators or units (e.g. 95293), a short "
    "label, yes/no, or a comma-separated list, keeping the decimal precision you computed. If the "
    "data cannot answer the question, the answer is Not Applicable."
)


def agent_instruction(
    question: str,
    files: Sequence[str],
    *,
    answer_format: str | None = None,
    protocol: str = ANSWER_FILE_PROTOCOL,
    input_dir: str = INPUT_DIR,
) -> str:
    """An instruction with the elements of the dataset's own, for rows without `instruction`."""
    if files:
        listing = f"Files (in {input_dir}, flat, no subfolders):\n{_file_lines(files)}"
    else:
        listing = (
            f"Files: none were named for this task, but its data is in {input_dir}; "
            "list that directory first."
        )
    parts = [
        "You are a data-analysis agent in a sandbox. Use your tools to look at the files and "
        "work out the answer.",
        listing,
        "Installed: pandas, numpy, matplotlib, seaborn, scipy, scikit-learn, statsmodels, "
        "tabulate, sqlite3, plotly (there is no network, so nothing else can be installed).",
        f"Question: {question.strip()}",
        "Go step by step: look at the data first (head, shape, dtypes), then compute.",
    ]
    if answer_format:
        parts.append(answer_format.strip())
    parts.append(_ANSWER_FORMAT)
    if protocol == SUBMIT_PROTOCOL:
        parts.append("Submit only that value with the `submit` tool, then stop.")
    else:
        parts.append(
            f'Write only that value to {ANSWER_FILE} (for example `echo -n "<value>" > '
            f"{ANSWER_FILE}`), then stop."
        )
    return "\n\n".join(parts)


# The dataset's instructions end with a sentence telling the agent to write the answer file.
_ANSWER_FILE_SENTENCE = re.compile(
    r"Write only (?:that|the) value to /workdir/answer\.txt.*?(?:then stop\.|$)",
    re.IGNORECASE | re.DOTALL,
)


def adapt_instruction_for_submit(instruction: str) -> str:
    """Turn an answer-file instruction (a row's own) into one for the `submit` tool protocol."""
    replaced, count = _ANSWER_FILE_SENTENCE.subn(
        "Submit only that value with the `submit` tool, then stop.", instruction
    )
    if count:
        return replaced
    return f"{instruction.rstrip()}\n\nSubmit only the final value with the `submit` tool."


def agent_user_prompt(
    instruction: str | None,
    question: str,
    files: Sequence[str],
    *,
    protocol: str = ANSWER_FILE_PROTOCOL,
) -> str:
    """The agentic variant's user turn for a row: its own `instruction` (adapted to the submit
    protocol) or one built from its question. Inspect's agentic task and the Harbor export's
    instruction.md both come from here, so an agent sees the same words in either."""
    if not instruction:
        return agent_instruction(question, files, protocol=protocol)
    if protocol == SUBMIT_PROTOCOL:
        return adapt_instruction_for_submit(instruction)
    return instruction


def relocate_paths(text: str, input_dir: str, workdir: str) -> str:
    """Point a prompt's contract paths at another place (the `local` sandbox's temp dirs)."""
    return text.replace(INPUT_DIR, input_dir).replace(WORKDIR, workdir)
