"""What vulture (run by scripts/test over smoldataenvs_tasks at [tool.vulture]'s min_confidence)
reports as unused but is used where it cannot look: each group says who uses it.

Vulture matches names, not objects: an entry keeps every definition of its name, so entries are
exact names, never patterns. Module-level names are imported and methods read from their class,
so `python vulture_whitelist.py` fails once an entry no longer exists; parameters, TypedDict
fields and attributes set on other libraries' objects are `_.name`. Code that is really unused is
deleted, not listed here (the last two groups are the exceptions, each with its reason).
"""
# ruff: noqa: B018

from smoldataenvs_tasks import __getattr__ as lazy_package_attribute
from smoldataenvs_tasks.cli import _LazyGroup
from smoldataenvs_tasks.data.cli import cache_clear, cache_info, cache_verify, prefetch
from smoldataenvs_tasks.harbor_adapter.cli import build_image_command, export_command
from smoldataenvs_tasks.inspect_adapter.models import ReplayModel
from smoldataenvs_tasks.inspect_adapter.program_host import as_program_host
from smoldataenvs_tasks.inspect_adapter.provider_base import (
    LimitsConfig,
    SessionSandboxEnvironment,
)
from smoldataenvs_tasks.lm_eval.hooks import load_split, process_results, process_results_pass_k
from smoldataenvs_tasks.lm_eval.models import ReplayLM
from smoldataenvs_tasks.lm_eval.paths import lm_eval_path_command, task_manager
from smoldataenvs_tasks.lm_eval.program_task import ProgramTask
from smoldataenvs_tasks.regrade import regrade_command
from smoldataenvs_tasks.results.cli import (
    compare_command,
    leaderboard_command,
    report_command,
    verify_command,
)
from smoldataenvs_tasks.results.publish.submission import COVERAGE_INPUTS, verify_submission
from smoldataenvs_tasks.rl.environment import DataAnalysisEnv
from smoldataenvs_tasks.rl.verifiers_v1 import ProgramTaskConfig, ProgramTasksetConfig
from smoldataenvs_tasks.sandboxes.bwrap import bwrap_status
from smoldataenvs_tasks.sandboxes.cli import build_sandbox_image, sandbox_image_status
from smoldataenvs_tasks.sandboxes.docker.image import docker_status
from smoldataenvs_tasks.sandboxes.docker.spares import spare_pool
from smoldataenvs_tasks.sandboxes.inputs import link_inputs_script
from smoldataenvs_tasks.scorers import grader
from smoldataenvs_tasks.scorers.cli import grade_command
from smoldataenvs_tasks.scorers.symbolic import SymbolicPool, _worker_main
from smoldataenvs_tasks.validate import validate_command


class _AnyName:
    """`_.name` marks a name used; any name can be read, so this file runs."""

    def __getattr__(self, name: str) -> str:
        return name


_ = _AnyName()

# Click commands: registered by their decorators, loaded by name ("module:attribute") by cli.py's
# _COMMANDS or a click group.
prefetch
cache_info
cache_verify
cache_clear
lm_eval_path_command
regrade_command
report_command
verify_command
leaderboard_command
compare_command
validate_command
export_command
build_image_command
grade_command
build_sandbox_image
sandbox_image_status

# The ladder's records (scorers/ladder.py, scorers/rules.py): fields that describe a rung or a
# rule, read by tests/scorers/test_ladder.py and test_strict.py, which hold them to the code.
_.rungs
_.refuses
_.accepting

# click.Group's hooks, overridden by the lazy group (click calls them with the context).
_LazyGroup.list_commands
_LazyGroup.get_command
_LazyGroup.format_commands
_.ctx

# PEP 562: Python calls a module's __getattr__ for a name it lacks (the lazily imported tasks).
lazy_package_attribute

# Inspect's SandboxEnvironment and ModelAPI hooks, called by Inspect; parameters of their
# signatures; attributes of Inspect's objects that Inspect reads.
SessionSandboxEnvironment.config_deserialize
SessionSandboxEnvironment.task_init
SessionSandboxEnvironment.sample_init
SessionSandboxEnvironment.sample_cleanup
SessionSandboxEnvironment.task_cleanup
SessionSandboxEnvironment.cli_cleanup  # and the Docker provider's
SessionSandboxEnvironment.default_polling_interval
_.timeout_retry
ReplayModel.count_text_tokens
ReplayModel.max_connections
_.model_args
_.tool_choice
_.usage  # ModelOutput.usage
_.completed  # TaskState.completed
# A tool function's signature and type hints, which Inspect's ToolDef reads for the parameter's
# name and JSON type (inspect_adapter/tools.py names it after its `ToolSpec`).
_.__signature__
_.__annotations__

# lm-eval's hooks: named in the task YAMLs (`!function`, `class:`), registered (ReplayLM as
# `replay`) or called by lm-eval (the LM interface, its parameters); LogRecord fields the logging module reads.
load_split
process_results
process_results_pass_k
ProgramTask
ReplayLM.generate_until
ReplayLM.loglikelihood
ReplayLM.loglikelihood_rolling
ReplayLM.tokenizer_name
ReplayLM.apply_chat_template
_.disable_tqdm
_.add_generation_prompt
_.levelno
_.levelname

# TRL's environment_factory contract: GRPOTrainer calls reset and get_reward, and offers every
# other public method (bash) to the model as a tool; last_verdict is public, for the caller.
DataAnalysisEnv.reset
DataAnalysisEnv.bash
DataAnalysisEnv.get_reward
DataAnalysisEnv.last_verdict
# transformers' TrainerCallback hooks, called by the Trainer (rl/provenance.py ProvenanceCallback).
_.on_step_end
_.on_train_end
_.control
# pydantic runs a model's validators: the verifiers 0.4 taskset's configs (rl/verifiers_v1.py).
ProgramTaskConfig._settings_are_valid
ProgramTasksetConfig._split_is_valid

# The sandbox kinds' records name code as "module:attribute" strings (sandboxes/kinds.py), loaded
# on use.
spare_pool
bwrap_status
docker_status

# harbor_adapter/export.TaskToml's sections: written into task.toml as dict keys, read by Harbor.
_.timeout_sec
_.environment_mode
_.build_timeout_sec
_.memory_mb
_.storage_mb
_.schema_version
_.artifacts
_.agent
_.exporter

# TypedDict fields (results/model/schema.py, results/publish/leaderboard.py, run_plan.RunProvenance): written
# and read as dict keys.
_.data_source
_.package_version
_.ci95
_.n_tasks_excluded
_.coverage_inputs
_.chat_template
_.system_prompt
_.sample_limits
_.generation_extra
_.model_options
_.same_as  # leaderboard.json duplicates
_.n_shared
_.n_same
_.n_train_tasks
_.benchmark
_.model_ids
_.report_generator
_.grader_profile
_.protocol_settings
_.crash_by_exception
_.resource_limit_by_limit
_.ungraded_by_reason
_.n_tasks_split
_.tasks_split
_.can_split
_.n_always_solved
_.n_always_failed
_.per_task_sd
_.n_checked
_.n_table_in_train
_.share
_.n_tasks_common
_.n_solved_by_all
_.n_failed_by_all
_.tasks_solved_by_all
_.tasks_failed_by_all
_.diagnostics
_.attempts_per_task  # leaderboard.json noise floors
_.below_floor
_.input_usd_per_mtok  # submission.json prices
_.output_usd_per_mtok
_.harness  # submission.json metadata (results/submitter.py reads them by name)
_.model_id
_.open_weights
_.trained_on_train_split
_.trained_on_sft_set
_.saw_test_split
_.web_access
_.n_attempts_with_tokens  # submission.json cost
_.usd_note

# Parameters a signature must have: lru_cache keys that make a changed file a new entry
# (data/layout.py, data/source.py), a context manager's __exit__, upstream's ignored keywords.
_.mtime_ns
_.inode
_.exc_info
_.ignored

# Attributes of other libraries' objects, read by them when they write the sample's files.
_.modified  # openpyxl's workbook properties
_.compress_type  # zipfile.ZipInfo

# Called by name in another process: the symbolic grader's worker runs "module._worker_main()".
_worker_main

# Public Python entry points, documented in their modules' docstrings (and tested).
task_manager  # lm_eval.simple_evaluate(..., task_manager=task_manager())
verify_submission

# Test hooks: written for the tests that use them.
SymbolicPool.live_pids

# Used by the tests alone, nothing in the package: each goes with its test (or the test uses
# what the package uses) in a change to its file, which another change holds at the time of this
# list. inspect_adapter/program_host.py (the package builds InspectSandboxHost itself),
# provider_base.py, results/publish/submission.py, sandboxes/inputs.py, scorers/grader.py (the ladder
# inlines both since the grader speed work of issue 25).
as_program_host
LimitsConfig.from_limits
COVERAGE_INPUTS
link_inputs_script
grader._normalise
grader._first_number
