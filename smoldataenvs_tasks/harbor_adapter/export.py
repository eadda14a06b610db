"""A split as a Harbor dataset: one task directory per row (docs/harbor.md).

    smoldataenvs harbor export --split sample ./harbor-sample
    scripts/harbor run -p ./harbor-sample -a oracle --env docker

Each task is the agentic Inspect task's sample in Harbor's shape:

    <task>/instruction.md          the agentic task's prompt (data/prompts.py, as Inspect builds it)
    <task>/task.toml               the agentic task's limits, no network, [metadata] provenance
                                   and the task protocol (`[metadata.task_protocol]`)
    <task>/environment/Dockerfile  FROM the grader image (image.py), the tables baked in
    <task>/environment/tables/     the staged tables, their sha256 in task.toml and task.json
    <task>/tests/test.sh           this package's grader on /workdir/answer.txt (verifier.py), in
                                   Harbor's separate verifier container
    <task>/tests/task.json         the row (with its gold), the profile, the table digests; 0600
    <task>/solution/solve.sh       writes the gold answer (Harbor's `oracle` agent)
    metric.py                      pass@1 over graded tasks; ungraded ones left out and counted
    harbor-job.yaml                a Harbor job config of this dataset with metric.py as its metric
    smoldataenvs-export.json       what was exported from where, and which tasks are ungraded

The tables come through `pipeline.prepare_tables`, the one staging path, so a task whose tables
cannot be had (or are not the recorded bytes, or whose row is invalid) is exported as such: its
task.json carries the ungraded reason, its verifier writes `graded: 0`, never a silent 0.
The export is deterministic: the same package, data and options give byte-identical files
(no times, sorted keys, fixed modes), and it replaces OUT as a whole, atomically.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from smoldataenvs_tasks._pins import reward_mode_label
from smoldataenvs_tasks.contract import (
    ANSWER_FILE,
    DEFAULT_LIMITS,
    INPUT_DIR,
    SANDBOX_HOME,
    TABLES_DIR,
    writable_dir_sizes,
)
from smoldataenvs_tasks.data.integrity import content_sha256
from smoldataenvs_tasks.data.kinds import resolve_tables
from smoldataenvs_tasks.data.prompts import agent_user_prompt
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.data.staging import new_stage_dir, remove_stage_dir
from smoldataenvs_tasks.data.tables import tables_manifest_digest
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.harbor_adapter import image
from smoldataenvs_tasks.harbor_adapter.plan import plan_export
from smoldataenvs_tasks.harbor_adapter.verifier import SANDBOX_UID as AGENT_UID
from smoldataenvs_tasks.harbor_adapter.verifier import TASK_FILE_FORMAT
from smoldataenvs_tasks.pipeline import prepare_tables
from smoldataenvs_tasks.run_plan import PROVENANCE_KEY, RunPlan, RunProvenance
from smoldataenvs_tasks.variants import AGENTIC, PROTOCOL_KEY, TaskProtocol

EXPORT_MANIFEST = "smoldataenvs-export.json"
# 2: the dataset's facts under the run plan's provenance (`run`), as every framework stores them.
# 3: the task protocol the plan declares under PROTOCOL_KEY, in place of the loose `protocol`,
# `max_turns` and `tool_timeout_s` (results/load/load_harbor.py reads both).
EXPORT_FORMAT = 3
METRIC_FILE = "metric.py"
JOB_CONFIG = "harbor-job.yaml"
# The reader's own 60 s (sandboxes/answer_file.py) plus the symbolic rung's worst case.
VERIFIER_TIMEOUT_S = 180.0
BUILD_TIMEOUT_S = 600.0

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class ExportError(SmolDataEnvsError, ValueError):
    """An export that cannot be written; the message is the one line to show."""


@dataclass(frozen=True)
class ExportSummary:
    out: Path
    tasks: int
    ungraded: dict[str, str] = field(default_factory=dict)  # task id -> reason
    grader_image: str = ""


def package_version() -> str:
    try:
        return version("smoldataenvs_tasks")
    except PackageNotFoundError:  # pragma: no cover - the package runs from a plain checkout
        return "0+unknown"


def task_dir_names(task_ids: Sequence[str]) -> dict[str, str]:
    """A directory (Harbor's task name) per task id: its characters made safe (`/` -> `__`),
    with a short hash of the id appended where two ids would share one."""
    import hashlib

    base = {
        tid: _UNSAFE_NAME.sub("-", tid.replace("/", "__")).strip(".-") or "task" for tid in task_ids
    }
    counts: dict[str, int] = {}
    for name in base.values():
        counts[name] = counts.get(name, 0) + 1
    return {
        tid: name if counts[name] == 1 else f"{name}-{hashlib.sha256(tid.encode()).hexdigest()[:8]}"
        for tid, name in base.items()
    }


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml_value, value)) + "]"
    # A JSON string is a TOML basic string (json.dumps escapes only what both define).
    return json.dumps(str(value), ensure_ascii=False)


class VerifierSection(TypedDict):
    timeout_sec: float
    user: str
    environment_mode: str


class AgentSection(TypedDict):
    timeout_sec: float
    user: int


class EnvironmentSection(TypedDict):
    build_timeout_sec: float
    cpus: int
    memory_mb: int
    storage_mb: int
    network_mode: str


class TaskFacts(TypedDict):
    """The task's own facts in its task.toml's `[metadata]` (the run's are the provenance)."""

    benchmark: str
    task_id: str
    difficulty_tier: str
    reward_mode: str
    grader_image: str
    graded: bool
    network_mode: str
    exporter: str
    ungraded_reason: NotRequired[str]


class TaskMetadata(TaskFacts):
    """task.toml's `[metadata]`, free-form in Harbor: the task's facts, the run plan's provenance
    under `run` (PROVENANCE_KEY; its `filters` a table of its own, left out when nothing is
    filtered), the task protocol the plan declares under `task_protocol` (PROTOCOL_KEY) and the
    tables' sha256. TOML has no null: a None field is left out of the text, and a reader takes a
    missing one as None (`variants.PROTOCOL_FIELDS` names them all)."""

    run: dict[str, Any]
    task_protocol: TaskProtocol
    table_sha256: dict[str, str]


class TaskToml(TypedDict):
    """A task's task.toml in Harbor's `TaskConfig` shape (tests/harbor/test_harbor_run.py holds
    every key here to a field of Harbor's own models, and `metadata` to Harbor's free-form
    table)."""

    schema_version: str
    # The one thing the separate verifier is given of the agent's container.
    artifacts: list[str]
    metadata: TaskMetadata
    # The grader runs in a container of its own, after the agent's was stopped: the gold is never
    # where the agent is, and nothing of the agent's runs while it grades. As root, so that it
    # can still end any process of the agent's uid and own /logs/verifier (verifier.py); it reads
    # the answer as the agent's user.
    verifier: VerifierSection
    # The agent runs as uid 1000, as in every SmolDataEnvs sandbox; the container's keep-alive
    # is root's (the Dockerfile), so ending the agent's processes keeps it.
    agent: AgentSection
    environment: EnvironmentSection


def agent_timeout_s(protocol: TaskProtocol) -> float:
    """Harbor bounds an agent by wall time only, so the agent gets the most the protocol's turns
    could spend in tools: its `max_turns` calls of `tool_timeout_s` each."""
    turns, per_call = protocol["max_turns"], protocol["tool_timeout_s"]
    if turns is None or per_call is None:
        raise ExportError(
            f"a Harbor task is agentic; the {protocol['variant']} variant has no turns"
        )
    return turns * per_call


def task_config(
    facts: TaskFacts,
    provenance: RunProvenance,
    protocol: TaskProtocol,
    table_sha256: dict[str, str],
    network_mode: str = "no-network",
) -> TaskToml:
    sizes = writable_dir_sizes(DEFAULT_LIMITS)
    run: dict[str, Any] = {key: value for key, value in provenance.items() if key != "filters"}
    filters = {key: value for key, value in (provenance["filters"] or {}).items() if value}
    if filters:
        run["filters"] = filters
    metadata: TaskMetadata = {
        **facts,
        # The run plan's provenance and the protocol its task declares, under the keys every
        # framework stores them at.
        "run": run,
        "task_protocol": protocol,
        "table_sha256": dict(sorted(table_sha256.items())),
    }
    return {
        "schema_version": "1.4",
        "artifacts": [ANSWER_FILE],
        "metadata": metadata,
        "verifier": {
            "timeout_sec": VERIFIER_TIMEOUT_S,
            "user": "root",
            "environment_mode": "separate",
        },
        "agent": {"timeout_sec": agent_timeout_s(protocol), "user": AGENT_UID},
        "environment": {
            "build_timeout_sec": BUILD_TIMEOUT_S,
            "cpus": int(DEFAULT_LIMITS.cpus),
            "memory_mb": DEFAULT_LIMITS.memory_bytes // 2**20,
            # The contract's writable directories together (contract.writable_dir_sizes).
            "storage_mb": sum(sizes.values()) // 2**20,
            "network_mode": network_mode,
        },
    }


def _toml_tables(name: str, values: Mapping[str, Any]) -> list[str]:
    """A TOML table of scalars and lists, then each table inside it as one of its own; a None is
    left out (TOML has no null), which the provenance's readers take as None again."""
    lines = [f"[{name}]"] if name else []
    lines += [
        f"{json.dumps(key)} = {_toml_value(value)}"
        if not re.fullmatch(r"[A-Za-z0-9_-]+", key)
        else f"{key} = {_toml_value(value)}"
        for key, value in values.items()
        if value is not None and not isinstance(value, Mapping)
    ]
    tables = ["\n".join(lines)]
    for key, value in values.items():
        if isinstance(value, Mapping):
            tables += _toml_tables(f"{name}.{key}" if name else key, value)
    return tables


def render_task_toml(config: TaskToml) -> str:
    """The task.toml text of `config`: its scalars, then each table in the shape's order."""
    header = "# Written by `smoldataenvs harbor export` (docs/harbor.md).\n"
    return header + "\n\n".join(_toml_tables("", config)) + "\n"


def dockerfile(task_id: str, grader_image: str, has_tables: bool) -> str:
    lines = [
        f"# SmolDataEnvs task {task_id}: the grader image (the sandbox image plus this",
        "# package's grader) with the task's tables baked in, read-only, their sha256 in",
        "# task.toml; linked into the input directory as every SmolDataEnvs sandbox does.",
        f"FROM {grader_image}",
        "USER root",
    ]
    if has_tables:
        lines.append(f"COPY tables/ {TABLES_DIR}/")
    lines += [
        f"RUN set -eu; chown -R root:root {TABLES_DIR}; chmod -R a-w,a+rX {TABLES_DIR}; \\",
        f'    for f in {TABLES_DIR}/* {TABLES_DIR}/.[!.]*; do [ -e "$f" ] || continue; '
        f'ln -sfn "$f" {INPUT_DIR}/"${{f##*/}}"; done; \\',
        # What the sandbox image's entrypoint does at start, done here for uid 1000: the
        # container starts as root (below), and a root entrypoint would make these root's.
        f"    mkdir -p {SANDBOX_HOME}/.cache; "
        f"cp -R /opt/smoldata/mplconfig {SANDBOX_HOME}/.cache/matplotlib; "
        f"chown -R {AGENT_UID}:{AGENT_UID} {SANDBOX_HOME}/.cache",
        "# The container's keep-alive (Harbor's `sleep infinity`) runs as root and the agent as",
        f"# uid {AGENT_UID} (task.toml [agent] user): the verifier can end every process of the",
        "# agent's without ending the container.",
        "USER root",
        "ENTRYPOINT []",
        'CMD ["sleep", "infinity"]',
    ]
    return "\n".join(lines) + "\n"


def _launcher() -> str:
    paths = json.dumps([image.GRADER_SRC, image.GRADER_LIB])
    return (
        f"import sys; sys.path[:0] = {paths}; "
        "from smoldataenvs_tasks.harbor_adapter.verifier import main; sys.exit(main(sys.argv[1:]))"
    )


def test_sh() -> str:
    return (
        "#!/bin/sh\n"
        "# SmolDataEnvs verifier: this package's grader, the Inspect answer-file scorer's own path,\n"
        "# on /workdir/answer.txt, as root. Ends the agent's processes, makes /logs/verifier its\n"
        "# own, then writes reward.json ({reward}), reward.txt and verdict.json (graded, method,\n"
        "# category, the answer read).\n"
        "set -eu\n"
        f"exec {image.GRADER_PYTHON} -I -c {shlex.quote(_launcher())} \\\n"
        "    /tests/task.json /logs/verifier\n"
    )


def solve_sh(gold: str | None) -> str:
    body = f"printf '%s' {shlex.quote(gold)} > /workdir/answer.txt\n" if gold else ""
    return "#!/bin/sh\n# The gold answer, for Harbor's oracle agent.\nset -eu\n" + body


METRIC_PY = '''\
# /// script
# dependencies = []
# ///
"""SmolDataEnvs pass@1 over a Harbor job's rewards (Harbor's metric.py protocol: -i rewards.jsonl,
-o metric.json). A task the data cannot grade (reward.json `{}`) is left out and counted, never
averaged in as a 0; a trial with no reward at all (the trial failed) counts as a 0, as our reports
count a run's failures."""

import argparse
import json
from pathlib import Path


def main(input_path: Path, output_path: Path) -> None:
    graded = passed = ungraded = no_reward = 0
    for line in input_path.read_text().splitlines():
        reward = json.loads(line) if line.strip() else None
        if reward is None:
            no_reward += 1
            graded += 1
        elif "reward" not in reward or reward.get("graded", 1) == 0:
            # {}: the verifier's ungraded task (an export before it wrote {"graded": 0}).
            ungraded += 1
        else:
            graded += 1
            passed += 1 if reward.get("reward", 0) == 1 else 0
    result = {
        "pass@1": passed / graded if graded else 0.0,
        "graded": graded,
        "ungraded": ungraded,
        "no_reward": no_reward,
    }
    output_path.write_text(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-i", "--input-path", type=Path, required=True)
    parser.add_argument("-o", "--output-path", type=Path, required=True)
    args = parser.parse_args()
    main(args.input_path, args.output_path)
'''


def job_config(out: Path) -> str:
    """A Harbor job config of the export at `out`: Harbor applies a local dataset's metric.py
    only from a job config's `metrics` (a dataset.toml's is read for a published package alone).
    JSON strings are YAML's double-quoted scalars."""
    return (
        "# A Harbor job of this export, with its metric (docs/harbor.md):\n"
        f"#   scripts/harbor run -c {out / JOB_CONFIG} -a <agent> --env docker\n"
        "# Harbor's own mean, and metric.py's pass@1 over the graded tasks (ungraded ones left\n"
        "# out and counted). Written by `smoldataenvs harbor export`.\n"
        "datasets:\n"
        f"  - path: {json.dumps(str(out))}\n"
        "metrics:\n"
        "  - type: mean\n"
        "  - type: uv-script\n"
        "    kwargs:\n"
        f"      script_path: {json.dumps(str(out / METRIC_FILE))}\n"
    )


def _write(path: Path, text: str | bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    os.chmod(path, mode)


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _answer_rule(protocol: TaskProtocol) -> str:
    """The answer rule the instruction states: the plan's (Harbor's verifier reads the file)."""
    return protocol["protocol"] or AGENTIC.protocol


def _export_task(
    record: TaskRecord,
    task_dir: Path,
    *,
    plan: RunPlan,
    provenance: RunProvenance,
    grader_image: str,
    network_mode: str,
) -> str | None:
    """Write one task; returns the ungraded reason, or None for a gradable task."""
    stage = new_stage_dir()
    try:
        prepared = prepare_tables(
            record, stage, mirror=plan.options.mirror, revision=plan.source.revision
        )
        tables: dict[str, bytes] = {}
        if prepared.problem is None:
            for name, digest in sorted(prepared.table_sha256.items()):
                staged = (stage / name).resolve()
                if content_sha256(staged) != digest:
                    raise ExportError(f"{record.task_id}: table {name} changed while exporting")
                tables[name] = staged.read_bytes()
    finally:
        remove_stage_dir(stage)
    ungraded = (
        {"reason": prepared.problem.value, "detail": prepared.reason}
        if prepared.problem is not None
        else None
    )
    # The task's own facts; the run's (dataset, split, digests, grader) are the provenance, what
    # the agent is asked and allowed the protocol.
    facts: TaskFacts = {
        "benchmark": "SmolDataEnvs",
        "task_id": record.task_id,
        "difficulty_tier": record.difficulty_tier or "",
        "reward_mode": reward_mode_label(record.reward_mode),
        "grader_image": grader_image,
        "graded": ungraded is None,
        "network_mode": network_mode,
        "exporter": f"smoldataenvs_tasks {package_version()}",
    }
    if ungraded is not None:
        facts["ungraded_reason"] = ungraded["reason"]
    protocol = plan.protocol
    prompt = agent_user_prompt(
        record.instruction, record.question, record.files, protocol=_answer_rule(protocol)
    )
    _write(task_dir / "instruction.md", prompt.rstrip("\n") + "\n")
    _write(
        task_dir / "task.toml",
        render_task_toml(
            task_config(facts, provenance, protocol, prepared.table_sha256, network_mode)
        ),
    )
    _write(
        task_dir / "environment" / "Dockerfile",
        dockerfile(record.task_id, grader_image, bool(tables)),
    )
    for name, data in tables.items():
        _write(task_dir / "environment" / "tables" / name, data, 0o444)
    task_file = {
        "format": TASK_FILE_FORMAT,
        "task_id": record.task_id,
        "record": record.to_doc(),
        "grader": provenance["grader"],
        "grader_version": provenance["grader_version"],
        "table_sha256": dict(sorted(prepared.table_sha256.items())),
        "ungraded": ungraded,
        # What a report of the job needs, copied into each verdict.json (verifier.py).
        "provenance": {
            PROVENANCE_KEY: provenance,
            PROTOCOL_KEY: protocol,
            "difficulty_tier": facts["difficulty_tier"],
            "reward_mode": facts["reward_mode"],
            "network_mode": facts["network_mode"],
            "exporter": facts["exporter"],
        },
    }
    # The gold: readable by the verifier's root only (Harbor copies modes into the container).
    _write(task_dir / "tests" / "task.json", _json(task_file), 0o600)
    _write(task_dir / "tests" / "test.sh", test_sh(), 0o755)
    _write(task_dir / "solution" / "solve.sh", solve_sh(record.answer or None), 0o755)
    return ungraded["reason"] if ungraded else None


def export_dataset(
    split: str,
    out: Path,
    *,
    mirror: str | None = None,
    grader: str = "default",
    task_ids: Sequence[str] | None = None,
    network_mode: str = "no-network",
) -> ExportSummary:
    """Write `split` (or its `task_ids`) as a Harbor dataset at `out`, replacing a previous
    export there. Needs no Docker: the grader image is named by its content tag and built by
    `smoldataenvs harbor build-image` (or the first `scripts/harbor run`)."""
    out = out.resolve()
    if out.exists() and not (out / EXPORT_MANIFEST).is_file():
        if not out.is_dir() or any(out.iterdir()):
            raise ExportError(
                f"{out} exists and is not a SmolDataEnvs Harbor export: give a new or empty directory"
            )
    plan = plan_export(split, mirror=mirror, grader=grader, task_ids=task_ids)
    records, source = plan.records, plan.source
    grader_image = image.grader_tag()
    # Tables fetched (or found in the cache) first: the digest over their manifests goes into
    # every task, and from the Hub it is known only once they are.
    for record in records:
        if record.invalid_row is None:
            resolve_tables(record, mirror=plan.options.mirror, revision=source.revision)
    provenance: RunProvenance = {
        **plan.provenance,
        "tables_manifest_digest": tables_manifest_digest(records, source),
    }
    names = task_dir_names([r.task_id for r in records])
    out.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        ungraded: dict[str, str] = {}
        for record in records:
            reason = _export_task(
                record,
                building / names[record.task_id],
                plan=plan,
                provenance=provenance,
                grader_image=grader_image,
                network_mode=network_mode,
            )
            if reason is not None:
                ungraded[record.task_id] = reason
        _write(building / METRIC_FILE, METRIC_PY)
        _write(building / JOB_CONFIG, job_config(out))
        manifest = {
            "format": EXPORT_FORMAT,
            "benchmark": "SmolDataEnvs",
            PROVENANCE_KEY: provenance,
            PROTOCOL_KEY: plan.protocol,
            "grader_image": grader_image,
            "network_mode": network_mode,
            "exporter": f"smoldataenvs_tasks {package_version()}",
            "tasks": {names[r.task_id]: r.task_id for r in records},
            "ungraded": dict(sorted(ungraded.items())),
        }
        _write(building / EXPORT_MANIFEST, _json(manifest))
        os.chmod(building, 0o755)
        if out.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, retired / "export")
            os.replace(building, out)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(building, out)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return ExportSummary(out, len(records), ungraded, grader_image)
