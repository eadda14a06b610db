"""The protocol a run records (results/model/protocol.py): the task defaults it is compared with are
the ones the tasks really run with, and every setting that differs is named once."""

from __future__ import annotations

import json

import pytest

from smoldataenvs_tasks._pins import SAMPLE_REVISION, SPLIT_SIZES, pinned_split_size
from smoldataenvs_tasks.data.kinds import sample_source
from smoldataenvs_tasks.results.model.protocol import (
    deviations,
    normal_settings,
    signature,
    task_defaults,
)
from smoldataenvs_tasks.run_plan import FRAMEWORKS
from smoldataenvs_tasks.variants import AGENTIC, PROGRAM, VARIANTS
from tests.lm_eval.test_cli_and_names import _yaml

pytestmark = pytest.mark.unit

INSPECT_PROGRAM = normal_settings(
    {
        "framework": "inspect_ai",
        "variant": "program",
        "protocol": "program",
        "num_fewshot": 0,
        "max_tokens": 1024,
        "temperature": 0.0,
        "pass_k": 1,
        "program_timeout_s": 90.0,
        "chat_template": True,
        "sandbox": "bwrap",
    }
)
LM_EVAL_PROGRAM = {**INSPECT_PROGRAM, "framework": "lm_eval", "do_sample": False}
INSPECT_AGENTIC = normal_settings(
    {
        "framework": "inspect_ai",
        "variant": "agentic",
        "protocol": "answer_file",
        "num_fewshot": 0,
        "max_tokens": 1024,
        "pass_k": 1,
        "max_turns": 17,
        "tools": ["bash"],
        "tool_timeout_s": 90.0,
        "chat_template": True,
        "sandbox": "docker",
    }
)


def test_the_defaults_are_the_ones_the_tasks_declare():
    """The defaults a run is held to are what every framework's task declares
    (`Variant.declared`, stored under PROTOCOL_KEY): one declaration, so they cannot drift."""
    for framework in FRAMEWORKS.values():
        for variant in VARIANTS.values():
            for pass_k in (1, 4):
                declared = variant.declared(
                    framework.name,
                    records_do_sample=framework.records_do_sample,
                    pass_k=pass_k,
                    sandbox="docker",
                )
                expected = [] if pass_k == 1 else ["pass_k: 4 (default 1)"]
                assert deviations(declared) == expected, (framework.name, variant.name, pass_k)


def test_the_lm_eval_yamls_state_the_program_defaults():
    common = _yaml("_smoldataenvs_program_common")["generation_kwargs"]
    pass4 = _yaml("_smoldataenvs_program_pass4_common")["generation_kwargs"]
    program = task_defaults({"framework": "lm_eval", "variant": "program", "pass_k": 1})
    sampled = task_defaults({"framework": "lm_eval", "variant": "program", "pass_k": 4})
    assert common["max_gen_toks"] == program["max_tokens"] == PROGRAM.max_tokens
    assert common["temperature"] == program["temperature"] == PROGRAM.temperature
    assert common["do_sample"] is program["do_sample"] is False
    assert pass4["temperature"] == sampled["temperature"] == PROGRAM.temperature_for(4)
    assert pass4["do_sample"] is sampled["do_sample"] is True


def test_the_agent_defaults_are_its_variant_record():
    agentic = task_defaults({"framework": "inspect_ai", "variant": "agentic", "pass_k": 1})
    assert agentic["max_turns"] == AGENTIC.max_turns
    assert agentic["tools"] == list(AGENTIC.tools) == ["bash"]
    assert agentic["max_tokens"] == AGENTIC.max_tokens
    assert agentic["temperature"] is None and agentic["do_sample"] is None


@pytest.mark.parametrize(
    ("variant", "framework"),
    [
        ("foo", "inspect_ai"),
        (["agentic"], "inspect_ai"),
        ({"a": 1}, ["lm_eval"]),
        ("program", "x"),
        (None, 3),
    ],
)
def test_a_hostile_variant_or_framework_is_held_to_the_program_defaults(variant, framework):
    """submission.json's settings are any JSON values: a name this package does not know (or
    a list, which cannot be looked up) reads the program task's defaults, no traceback, and a
    framework it does not know records no do_sample."""
    settings = {**INSPECT_PROGRAM, "variant": variant, "framework": framework}
    defaults = task_defaults(settings)
    assert defaults["max_tokens"] == PROGRAM.max_tokens and defaults["do_sample"] is None
    named = [line.split(":")[0] for line in deviations(settings)]
    assert named == [key for key in ("framework", "variant") if not isinstance(settings[key], str)]


def test_the_sample_pins_are_the_bundled_sample():
    manifest = sample_source().manifest()
    assert manifest["revision"] == SAMPLE_REVISION
    assert manifest["splits"]["sample"]["tasks"] == SPLIT_SIZES["sample"]
    assert pinned_split_size("sample", SAMPLE_REVISION) == 10
    assert pinned_split_size("eval", "another-revision") is None


@pytest.mark.parametrize("settings", [INSPECT_PROGRAM, LM_EVAL_PROGRAM, INSPECT_AGENTIC])
def test_a_run_as_documented_has_no_deviation(settings):
    assert deviations(settings) == []


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"num_fewshot": 3}, "num_fewshot: 3 (default 0)"),
        ({"max_tokens": 64}, "max_tokens: 64 (default 1024)"),
        ({"temperature": 0.7}, "temperature: 0.7 (default 0.0)"),
        ({"top_p": 0.9}, "top_p: 0.9 (default unset)"),
        ({"program_timeout_s": 0.01}, "program_timeout_s: 0.01 (default 90.0)"),
        ({"system_prompt": "Be brief."}, "system_prompt: 'Be brief.' (default unset)"),
        ({"sample_limits": {"message_limit": 7}}, 'sample_limits: {"message_limit": 7}'),
        ({"sandbox": "local"}, "sandbox: 'local' (default: an isolating kind"),
        ({"chat_template": False}, "chat_template: no (the prompt went as plain text"),
        ({"pass_k": 4, "temperature": 0.8}, "pass_k: 4 (default 1)"),
    ],
)
def test_each_setting_that_differs_is_named(change, named):
    found = deviations({**INSPECT_PROGRAM, **change})
    assert len(found) == 1 and found[0].startswith(named), found


def test_pass_k_samples_at_its_own_temperature_and_the_model_options_are_not_deviations():
    sampled = {**LM_EVAL_PROGRAM, "pass_k": 4, "temperature": 0.8, "do_sample": True}
    assert deviations(sampled) == ["pass_k: 4 (default 1)"]
    assert deviations({**INSPECT_PROGRAM, "model_options": {"reasoning_effort": "high"}}) == []
    # but they are part of the protocol: such runs never pool with the others
    assert signature(INSPECT_PROGRAM) != signature(
        {**INSPECT_PROGRAM, "model_options": {"reasoning_effort": "high"}}
    )
    assert json.loads(signature(INSPECT_PROGRAM)) == INSPECT_PROGRAM
