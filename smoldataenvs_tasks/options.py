"""The run options both frameworks take, each checked by one function here before any sample runs.

Inspect spells an option `-T name=value`, lm-eval `--metadata name=value`; a bad value gets the
same one line from either, naming the option as its user wrote it and its valid range or values.
Why: `-T program_timeout=-5` was accepted and every program then "crashed (exit 125)", and
lm-eval's `--metadata concurrency=abc` failed with a traceback only after every reply had been
generated (issue 27).

    from smoldataenvs_tasks.options import INSPECT
    INSPECT.grader("lenient")  # OptionError: -T grader=lenient is not valid: choose default, strict
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from smoldataenvs_tasks._pins import ALL_SPLITS, HUB_SPLITS, KNOWN_REWARD_MODES, SAMPLE_SPLIT, TIERS
from smoldataenvs_tasks.data import hub
from smoldataenvs_tasks.data.source import as_list, recorded_filters
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.sandboxes.kinds import KINDS, SandboxKind, Staging
from smoldataenvs_tasks.scorers.verdict import GRADER_PROFILES

# The most a program or one tool call may be given: longer is a typo, not a plan (the dataset's
# runner gives 90 s), and the runner's own deadline must stay a finite number of seconds.
MAX_TIMEOUT_S = 86_400.0


class OptionError(SmolDataEnvsError, ValueError):
    """A run option outside its valid range or values; the message is the one line to show."""


def _mode_name(mode: str) -> str:
    return mode or "empty"


@dataclass(frozen=True)
class OptionChecks:
    """The checks, with the way one framework's users spell an option (`-T`, `--metadata`)."""

    flag: str

    def invalid(self, name: str, value: object, valid: str) -> OptionError:
        return OptionError(f"{self.flag} {name}={value} is not valid: {valid}")

    def choice(self, name: str, value: object, allowed: Sequence[object]) -> None:
        if value not in allowed:
            raise self.invalid(name, value, f"choose {', '.join(map(str, allowed))}")

    def names(self, given: Mapping[str, object], options: Sequence[str]) -> None:
        """Every option given is one of `options`. Inspect only warns about a `-T` name its task
        does not take and lm-eval passes any `--metadata` key on, so a typo (`-T sandbx=docker`)
        used to run with the default instead."""
        for name, value in given.items():
            if name not in options:
                raise self.invalid(name, value, f"no such option; choose from {', '.join(options)}")

    def split(self, value: object) -> None:
        self.choice("split", value, ALL_SPLITS)

    def bundled_split(self, split: str, **sources: object) -> None:
        """The sample split ships with the package: a mirror or a revision given with it
        (`mirror=`, `revision=`) would be ignored, so the run would not use what was asked."""
        if split != SAMPLE_SPLIT:
            return
        for name, value in sources.items():
            if value not in (None, ""):
                raise self.invalid(
                    name,
                    value,
                    f"split={SAMPLE_SPLIT} is bundled with the package and has no {name}; "
                    f"choose {', '.join(HUB_SPLITS)} to use one",
                )

    def mirror_url(self, value: str | None, sandbox: SandboxKind) -> None:
        """`mirror_url` is read only by kinds whose sandbox fetches its own tables; those
        fetch from the Hub without one, which must then be reachable from where they run."""
        remote = [name for name, record in KINDS.items() if record.staging is Staging.IN_SANDBOX]
        if sandbox.staging is not Staging.IN_SANDBOX:
            if value:
                raise self.invalid(
                    "mirror_url",
                    value,
                    f"only sandbox={' or '.join(remote)} reads it (their sandbox fetches its own "
                    f"tables); sandbox={sandbox.name} reads a mirror directory, "
                    f"{self.flag} mirror=DIR",
                )
            return
        # A stager on another machine (a cluster) has its own network: only one on this
        # machine's engine is known to share this machine's view of the Hub. The compose
        # file's SMOLDATAENVS_MIRROR_URL stands in for a URL not given as an option.
        if value or os.environ.get("SMOLDATAENVS_MIRROR_URL") or not sandbox.on_this_machine:
            return
        why = "HF_HUB_OFFLINE is set" if hub.hub_offline() else hub.hub_unreachable()
        if why is not None:
            raise self.invalid(
                "sandbox",
                sandbox.name,
                f"its sandbox fetches each sample's tables from {self.flag} mirror_url, else the Hub "
                f"({hub.hub_endpoint()}), and {why}: serve a mirror over HTTP "
                f"(`smoldataenvs mirror`, docs/cluster.md) and give {self.flag} mirror_url=URL",
            )

    def grader(self, value: object) -> None:
        self.choice("grader", value, GRADER_PROFILES)

    def sandbox(self, value: object, kinds: Sequence[str]) -> None:
        """`kinds`: what this framework can run (Inspect every kind, lm-eval those with a
        session of ours)."""
        self.choice("sandbox", value, kinds)

    def seconds(self, name: str, value: object) -> float:
        """A time limit: a finite number of seconds above 0 and at most MAX_TIMEOUT_S."""
        try:
            seconds = float(value) if isinstance(value, int | float | str) else math.nan
        except ValueError:
            seconds = math.nan
        if isinstance(value, bool) or not 0 < seconds <= MAX_TIMEOUT_S:  # NaN fails too
            raise self.invalid(
                name, value, f"a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}"
            )
        return seconds

    def whole_number(self, name: str, value: object, what: str) -> int:
        """A count: a whole number, 1 or more (a command line may give it as text)."""
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.invalid(name, value, f"a whole number of {what}, 1 or more")
        return value

    def tiers(self, value: str | Sequence[str] | None) -> None:
        unknown = sorted({tier for tier in as_list(value) or [] if tier} - set(TIERS))
        if unknown:
            raise self.invalid("tiers", ",".join(unknown), f"choose from {', '.join(TIERS)}")

    def reward_modes(self, value: str | Sequence[str] | None, split_modes: Collection[str]) -> None:
        """Every mode asked for is one the dataset knows, or one this split holds (an unknown
        mode in the data is graded by the generic ladder, so it can be filtered on too)."""
        asked = recorded_filters(reward_modes=value)["reward_modes"] or []
        valid = [*KNOWN_REWARD_MODES, *sorted(set(split_modes) - set(KNOWN_REWARD_MODES))]
        unknown = [mode for mode in asked if mode not in valid]
        if unknown:
            raise self.invalid(
                "reward_modes",
                ",".join(map(_mode_name, unknown)),
                f"choose from {', '.join(map(_mode_name, valid))}",
            )


INSPECT = OptionChecks("-T")
LM_EVAL = OptionChecks("--metadata")
