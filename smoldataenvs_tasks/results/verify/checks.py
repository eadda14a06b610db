"""One check of `smoldataenvs verify`: a name, a status and the detail in words.

Statuses: `ok`; `fail` (the submission is not what it claims, or not this package's); `skip`
(could not be checked here, with the reason); `flag` (true, and a reader must know it: settings
other than the task's defaults, a nonstandard split); `note`.
"""

from __future__ import annotations

from dataclasses import dataclass

OK, FAIL, SKIP, FLAG, NOTE = "ok", "fail", "skip", "flag", "note"


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
