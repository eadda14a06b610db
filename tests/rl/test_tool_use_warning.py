"""A model that never calls its bash tool in many episodes is, most often, one whose chat template
TRL parses no tool call from (TRL then runs none and says nothing): `DataAnalysisEnv` says so once.
"""

from __future__ import annotations

import logging

import pytest

from smoldataenvs_tasks.rl.environment import _ToolUse

pytestmark = pytest.mark.unit


def test_many_episodes_without_a_tool_call_warn_once(caplog):
    use = _ToolUse()
    with caplog.at_level(logging.WARNING, logger="smoldataenvs_tasks.rl"):
        for _ in range(_ToolUse.EPISODES_BEFORE_WARNING * 2):
            use.episode_ended()
    [warning] = [r.getMessage() for r in caplog.records]
    assert "not one bash call" in warning and "check_tool_calling" in warning
    assert "\n" not in warning


def test_one_tool_call_is_enough_to_stay_quiet(caplog):
    use = _ToolUse()
    use.called()
    with caplog.at_level(logging.WARNING, logger="smoldataenvs_tasks.rl"):
        for _ in range(_ToolUse.EPISODES_BEFORE_WARNING * 2):
            use.episode_ended()
    assert caplog.records == []
