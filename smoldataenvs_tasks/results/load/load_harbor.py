"""Read a Harbor job of exported SmolDataEnvs tasks (docs/harbor.md) into a `Run`.

A job directory (`harbor run ... -o JOBS --job-name NAME` writes `JOBS/NAME/`) holds `config.json`
and one folder per trial with Harbor's `result.json` (task name, agent and model, rewards, the
exception if any) and `verifier/verdict.json`, which the exported task's grader wrote
(`harbor_adapter/verifier.py`): the Verdict with the answer it read, the task id, the table
digests and the export's provenance. Only this JSON is read: no Harbor import, so any machine
can report a job.

A trial with no verdict.json (its environment or verifier failed before grading) is ungraded
`sandbox_failed`: the run's failure, which a headline counts as 0 (docs/reporting.md), never
left out silently. Harbor's attempts (`-k N`) are the epochs.

    python -c "from smoldataenvs_tasks.results.load.load_harbor import load_harbor_job; \
        print(load_harbor_job('jobs/my-job').pass1())"
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from smoldataenvs_tasks._pins import DATASET_REPO_ID
from smoldataenvs_tasks.results.load.provenance import nested_provenance, read_provenance
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.protocol import normal_settings
from smoldataenvs_tasks.results.model.runs import Attempt, Run, TaskAttempts
from smoldataenvs_tasks.run_plan import RunProvenance
from smoldataenvs_tasks.scorers.verdict import UngradedReason, Verdict

FRAMEWORK = "harbor"
VERDICT_FILE = "verifier/verdict.json"
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


def load_harbor_job(job_dir: str | Path) -> Run:
    job = Path(job_dir)
    config = _json(job / "config.json")
    trials = sorted(p for p in job.iterdir() if p.is_dir() and (p / "result.json").is_file())
    if not trials:
        raise RunLoadError(f"{job}: a Harbor job with no trial results")
    tasks: dict[str, TaskAttempts] = {}
    exported: dict[str, Any] = {}  # the export's facts: protocol, exporter, provenance
    provenance: RunProvenance | None = None
    grader_versions: set[str] = set()
    models: set[str] = set()
    agent_versions: set[str] = set()
    created: str | None = None
    environment = (config.get("environment") or {}).get("type") or "docker"
    for trial in trials:
        result = _json(trial / "result.json")
        agent_info = result.get("agent_info") or {}
        models.add(_model(agent_info))
        agent_versions.add(str(agent_info.get("version") or ""))
        started = result.get("started_at")
        if started and (created is None or started < created):
            created = started
        verdict_path = trial / VERDICT_FILE
        if verdict_path.is_file():
            recorded = _json(verdict_path)
            if recorded.get("format") != VERDICT_FORMAT:
                raise RunLoadError(
                    f"{verdict_path}: unknown verdict format {recorded.get('format')!r}"
                )
            task_id = str(recorded["task_id"])
            verdict = Verdict.from_dict(recorded["verdict"])
            digests = recorded.get("table_sha256") or None
            trial_provenance = recorded.get("provenance") or {}
            if provenance is None:
                exported = dict(trial_provenance)
                provenance = harbor_provenance(exported, str(verdict_path))
            tier = str(trial_provenance.get("difficulty_tier") or "")
            mode = str(trial_provenance.get("reward_mode") or "")
            tables = recorded.get("tables")
        else:
            exception = result.get("exception_info") or {}
            what = exception.get("exception_type") or "no verdict.json"
            task_id = str(result.get("task_name") or trial.name)
            verdict = Verdict.ungraded(
                UngradedReason.SANDBOX_FAILED,
                f"the Harbor trial {trial.name} was not graded: {what}",
            )
            digests, tier, mode, tables = None, "", "", None
        grader_versions.add(str(verdict.grader_version))
        entry = tasks.setdefault(task_id, TaskAttempts(task_id, tier, mode, tables=tables))
        if tier and not entry.difficulty_tier:
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
    settings = normal_settings(
        {
            "framework": FRAMEWORK,
            "variant": "agentic",
            "protocol": exported.get("protocol") or "answer_file",
            # Harbor bounds the agent by wall time (task.toml), with the agent's own tools and
            # system prompt: not the Inspect task's 17 bash turns, so never the same protocol.
            "max_turns": None,
            "tools": None,
            "tool_timeout_s": None,
            "pass_k": int(config.get("n_attempts") or 1),
            "num_fewshot": 0,
            "chat_template": True,
            "sandbox": f"harbor-{environment}",
        }
    )
    return Run(
        source=job.name,
        framework=FRAMEWORK,
        framework_version=None,
        model=model,
        task_name="smoldataenvs_harbor",
        split=provenance["split"] or "unknown",
        variant="agentic",
        protocol=str(exported.get("protocol") or "answer_file"),
        dataset=provenance["dataset"] or DATASET_REPO_ID,
        dataset_revision=provenance["dataset_revision"],
        tables_manifest_digest=provenance["tables_manifest_digest"],
        grader_version=sorted(graded_versions)[0] if len(graded_versions) == 1 else None,
        sandbox=f"harbor-{environment}",
        epochs=max(len(t.attempts) for t in tasks.values()),
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
        settings=settings,
    )
