"""results/load/calls.py: the settings the model calls recorded against the header's."""

from __future__ import annotations

import pytest

from smoldataenvs_tasks.results.load.calls import CallSettings, header_values
from smoldataenvs_tasks.results.model.errors import RunLoadError

pytestmark = pytest.mark.unit

DEFAULTS = {"max_tokens": 1024, "temperature": 0.0, "top_p": None, "model_options": None}


def test_calls_that_used_the_header_settings_have_no_mismatch():
    calls = CallSettings()
    calls.observe({"max_tokens": 1024, "temperature": 0}, "s1")
    assert calls.mismatches(header_values(DEFAULTS)) == []
    assert calls.applied(DEFAULTS)["max_tokens"] == 1024


def test_calls_with_other_settings_are_named_and_replace_the_header():
    calls = CallSettings()
    calls.observe({"max_tokens": 64, "temperature": 0.9, "seed": 7}, "s1")
    calls.observe({"max_tokens": 1024, "temperature": 0.0}, "s2")
    assert calls.mismatches(header_values(DEFAULTS)) == [
        "max_tokens: header 1024, calls 64, 1024",
        "temperature: header 0.0, calls 0.9, 0.0",
        "seed: header null, calls 7, null",
    ]
    applied = calls.applied(DEFAULTS)
    assert applied["max_tokens"] == 64 and applied["model_options"] == {"seed": 7}


def test_no_recorded_call_checks_nothing():
    assert CallSettings().mismatches({"max_tokens": 5}) == []


@pytest.mark.parametrize("value", ["64", True, float("nan"), [1]])
def test_a_call_setting_that_is_not_a_number_is_one_line(value):
    with pytest.raises(RunLoadError, match="s9: the call's max_tokens is"):
        CallSettings().observe({"max_tokens": value}, "s9")


def test_the_sign_test_is_the_binomial_tail():
    from smoldataenvs_tasks.results.load.retries import sign_test

    assert sign_test(0, 0) == 1.0
    assert sign_test(4, 0) == 1 / 16
    assert sign_test(8, 0) == 1 / 256
    assert sign_test(3, 3) == 42 / 64
