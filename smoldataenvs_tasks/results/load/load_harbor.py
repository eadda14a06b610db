"""Read a Harbor job of exported SmolDataEnvs tasks (docs/harbor.md) into a `Run`.

A job directory (`harbor run ... -o JOBS --job-name NAME` writes `JOBS/NAME/`) holds `config.json`
and one folder per trial with Harbor's `result.json` (task name, agent and model, rewards, the
exception if any) and `verifier/verdict.json`, which the exported task's grader wrote
(`harbor_adapter/verifier.py`): the Verdict with the answer it read, whether it was graded, the
task id, the table digests, the export's provenance and the task protocol it declared. Only this
JSON is read: no Harbor import, so any machine can report a job.

The settings are the declared protocol with what the job itself says over it: Harbor's agent
brings its own model settings, tools and system prompt and is bounded by wall time (task.toml),
so the declared reply budget, turns and tools are not the run's; Harbor's attempts are its
pass_k and its environment the sandbox. A job of an export from before the protocol was stored
(under `variants.PROTOCOL_KEY`) reads as the record that export declared: the agentic variant's
with the loose `protocol` it kept. Both give the same settings.

A trial with no verdict.json (its environment or verifier failed before grading) is ungraded
`sandbox_failed`: the run's failure, which a headline counts as 0 (docs/reporting.md), never
left out silently; it is the task another trial of the same Harbor task was graded as. A job with
no verdict at all is refused in one line: nothing in it says which export or split it ran, so no
submission of it could be verified. Harbor's attempts (`-k N`) are the epochs, as the job's
config.json planned them (`n_attempts`), not as many as the trials found: a trial folder deleted
from every task leaves a partial run.

    python -c "from smoldataenvs_tasks.results.load.load_harbor import load_harbor_job; \
        print(load_harbor_job('jobs/my-job').pass1())"
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from smoldataenvs_tasks._pins import DATASET_REPO_ID
from smoldataenvs_tasks.contract import HARBOR_VERDICT_FILE, HARBOR_VERIFIER_DIR
from smoldataenvs_tasks.results.load.provenance import (
    nested_provenance,
    read_protocol,
    read_provenance,
)
from smoldataenvs_tasks.results.model.coverage import normal_filters
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.protocol import normal_settings
from smoldataenvs_tasks.results.model.runs import Attempt, Run, TaskAttempts
from smoldataenvs_tasks.run_plan import HARBOR, RunProvenance
from smoldataenvs_tasks.scorers.verdict import UngradedReason, Verdict
from smoldataenvs_tasks.variants import (
    AGENTIC,
    PROTOCOL_KEY,
    VARIANTS,
    TaskProtocol,
)

# A trial's verdict, relative to its directory.
TRIAL_VERDICT = f"{HARBOR_VERIFIER_DIR}/{HARBOR_VERDICT_FILE}"
VERDICT_FORMAT = 1


def is_harbor_job(path: Path) -> bool:
    """A Harbor job folder: its config.json names the job, and a trial folder holds a result."""
    config = path / "config.json"
    if not config.is_file():
        return False
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "job_name" in data and "n_attempts" in data


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RunLoadError(f"{path}: not readable JSON ({error})") from None
    if not isinstance(data, dict):
        raise RunLoadError(f"{path}: not a JSON object")
    return data


def _model(agent_info: dict[str, Any]) -> str:
    """`<agent>` or `<agent>/<provider>/<model>`: Harbor's agent is part of what is measured."""
    name = str(agent_info.get("name") or "unknown-agent")
    model = agent_info.get("model_info") or {}
    if not model.get("name"):
        return name
    provider = f"{model['provider']}/" if model.get("provider") else ""
    return f"{name}/{provider}{model['name']}"


def harbor_provenance(exported: dict[str, Any], where: str) -> RunProvenance:
    """The run plan's provenance an export copied into each verdict.json (under PROVENANCE_KEY);
    an export from before it kept the same names beside the task's own facts."""
    return nested_provenance(exported, where, "provenance")


# The declared settings a Harbor agent brings its own of (its model's reply budget and sampling,
# its tools, no turn budget but task.toml's wall time): unknown to the job, so unset.
_AGENTS_OWN = ("max_tokens", "temperature", "do_sample", "max_turns", "tools", "tool_timeout_s")


def declared_protocol(exported: dict[str, Any], where: str) -> TaskProtocol:
    """The task protocol the export declared (copied into each verdict.json under PROTOCOL_KEY),
    each field missing from it None; for an export from before it, the record it declared
    without storing it: the agentic variant's, with the `protocol` it kept beside its facts."""
    stored = exported.get(PROTOCOL_KEY)
    if stored is None:
        legacy = exported.get("protocol")
        return AGENTIC.declared(HARBOR.name, protocol=legacy if isinstance(legacy, str) else None)
    at = f"{where} provenance {PROTOCOL_KEY}"
    declared = read_protocol(stored, at)
    if declared["variant"] is not None and declared["variant"] not in VARIANTS:
        raise RunLoadError(f"{at}.variant: {declared['variant']!r:.60} is no variant")
    return declared


def job_settings(declared: TaskProtocol, attempts: int, environment: str) -> TaskProtocol:
    """The run's settings: what the export declared, with what the Harbor job says over it."""
    return normal_settings(
        {
            **declared,
            **dict.fromkeys(_AGENTS_OWN),
            "framework": HARBOR.name,
            "variant": declared["variant"] or AGENTIC.name,
            "protocol": declared["protocol"] or AGENTIC.protocol,
            "pass_k": attempts,
            "sandbox": f"harbor-{environment}",
        }
    )


def _task_ids_of_graded_trials(results: dict[Path, dict[str, Any]]) -> dict[str, str]:
    """Harbor's task name -> the task id its verdict.json gives, over the trials graded."""
    found: dict[str, str] = {}
    for trial, result in results.items():
        verdict_path = trial / TRIAL_VERDICT
        if verdict_path.is_file():
            task_id = _json(verdict_path).get("task_id")
            found[str(result.get("task_name") or trial.name)] = str(task_id)
    return found


def _planned_attempts(config: dict[str, Any], job: Path) -> int | None:
    """The attempts per task the job planned (config.json's `n_attempts`, Harbor's `-k`), or None
    where it records none. From the plan, not from the trials found: an attempt deleted from
    every task would otherwise leave a run that looks complete at one attempt fewer."""
    planned = config.get("n_attempts")
    if planned is None:
        return None
    if isinstance(planned, bool) or not isinstance(planned, int) or planned < 1:
        raise RunLoadError(f"{job}/config.json: n_attempts {planned!r:.40} is not a count")
    return planned


def load_harbor_job(job_dir: str | Path) -> Run:
    job = Path(job_dir)
    config = _json(job / "config.json")
    trials = sorted(p for p in job.iterdir() if p.is_dir() and (p / "result.json").is_file())
    if not trials:
        raise RunLoadError(f"{job}: a Harbor job with no trial results")
    tasks: dict[str, TaskAttempts] = {}
    exported: dict[str, Any] = {}  # the export's facts: protocol, exporter, provenance
    exported_where = str(job)
    provenance: RunProvenance | None = None
    grader_versions: set[str] = set()
    models: set[str] = set()
    agent_versions: set[str] = set()
    created: str | None = None
    environment = (config.get("environment") or {}).get("type") or "docker"
    results = {trial: _json(trial / "result.json") for trial in trials}
    graded_ids = _task_ids_of_graded_trials(results)
    if not graded_ids:
        # Nothing says which export, split or tasks the job ran: no run to report or verify.
        first = next(iter(results.values())).get("exception_info") or {}
        raise RunLoadError(
            f"{job}: no trial of this Harbor job has a verdict (verifier/verdict.json; the first "
            f"failed with {first.get('exception_type') or 'no exception recorded'}), so nothing "
            "says what it ran: re-run the job"
        )
    for trial in trials:
        result = results[trial]
        agent_info = result.get("agent_info") or {}
        models.add(_model(agent_info))
        agent_versions.add(str(agent_info.get("version") or ""))
        started = result.get("started_at")
        if started and (created is None or started < created):
            created = started
        verdict_path = trial / TRIAL_VERDICT
        if verdict_path.is_file():
            recorded = _json(verdict_path)
            if recorded.get("format") != VERDICT_FORMAT:
                raise RunLoadError(
                    f"{verdict_path}: unknown verdict format {recorded.get('format')!r}"
                )
            task_id = str(recorded["task_id"])
            verdict = Verdict.from_dict(recorded["verdict"])
            # `graded` beside the verdict (reward.json holds the reward alone); a job of an
            # export before it has none, and its verdict says the same.
            if "graded" in recorded and recorded["graded"] != (1 if verdict.graded else 0):
                raise RunLoadError(
                    f"{verdict_path}: graded {recorded['graded']!r} disagrees with its verdict"
                )
            digests = recorded.get("table_sha256") or None
            trial_provenance = recorded.get("provenance") or {}
            if provenance is None:
                exported, exported_where = dict(trial_provenance), str(verdict_path)
                provenance = harbor_provenance(exported, str(verdict_path))
            tier = str(trial_provenance.get("difficulty_tier") or "unknown")
            mode = str(trial_provenance.get("reward_mode") or "")
            tables = recorded.get("tables")
        else:
            exception = result.get("exception_info") or {}
            what = exception.get("exception_type") or "no verdict.json"
            # The task's id where another trial of the same Harbor task was graded; else its
            # Harbor name (the export's directory) is all there is.
            task_name = str(result.get("task_name") or trial.name)
            task_id = graded_ids.get(task_name, task_name)
            verdict = Verdict.ungraded(
                UngradedReason.SANDBOX_FAILED,
                f"the Harbor trial {trial.name} was not graded: {what}",
            )
            # "unknown" as every loader says for a task whose tier nothing recorded.
            digests, tier, mode, tables = None, "unknown", "", None
        grader_versions.add(str(verdict.grader_version))
        entry = tasks.setdefault(task_id, TaskAttempts(task_id, tier, mode, tables=tables))
        if tier != "unknown" and entry.difficulty_tier == "unknown":
            entry.difficulty_tier, entry.reward_mode, entry.tables = tier, mode, tables
        entry.attempts.append(Attempt(len(entry.attempts) + 1, verdict, table_sha256=digests))
    if len(models) > 1:
        raise RunLoadError(
            f"{job}: trials of several agents or models ({', '.join(sorted(models))})"
        )
    graded_versions = {v for v in grader_versions if v}
    if provenance is None:  # no trial was graded: nothing says what was exported
        provenance = read_provenance({}, str(job))
    package_version = provenance["package_version"] or (
        str(exported["exporter"]).split()[-1] if exported.get("exporter") else None
    )
    (model,) = models
    # Harbor bounds the agent by wall time (task.toml), with the agent's own tools and system
    # prompt: not the Inspect task's bash turns, so never the same protocol.
    epochs = _planned_attempts(config, job) or max(len(t.attempts) for t in tasks.values())
    settings = job_settings(declared_protocol(exported, exported_where), epochs, environment)
    return Run(
        source=job.name,
        framework=HARBOR.name,
        framework_version=None,
        model=model,
        task_name="smoldataenvs_harbor",
        split=provenance["split"] or "unknown",
        variant=str(settings["variant"]),
        protocol=str(settings["protocol"]),
        dataset=provenance["dataset"] or DATASET_REPO_ID,
        dataset_revision=provenance["dataset_revision"],
        tables_manifest_digest=provenance["tables_manifest_digest"],
        grader_version=sorted(graded_versions)[0] if len(graded_versions) == 1 else None,
        sandbox=f"harbor-{environment}",
        epochs=epochs,
        tasks=tasks,
        run_id=f"harbor:{config.get('job_name') or job.name}",
        created=created,
        package_versions={
            "harbor_agent": ",".join(sorted(v for v in agent_versions if v)),
            **({"smoldataenvs_tasks": package_version} if package_version else {}),
        },
        split_tasks=provenance["split_tasks"],
        n_selected=len(tasks),
        split_sha256=provenance["split_sha256"],
        # An export of some tasks (`--task-id`) is a filtered run, as Inspect's would be.
        filters=normal_filters(provenance["filters"]),
        settings=settings,
    )
