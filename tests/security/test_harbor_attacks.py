"""Issue 44 item 2 through the real harbor CLI: an agent's leftover process against the verifier.

The hostile agent is Harbor's `oracle` running a hostile `solution/solve.sh`: it answers `0`
(wrong for the task) and leaves a `setsid nohup` process behind, as uid 1000, that loops until
its container ends and tries every attack on the verifier's phase at once:

(a) gold theft: it polls for `/tests/task.json` and writes the gold as the answer;
(b) reward rewrite: once the verifier has written, it replaces reward.json, reward.txt and
    verdict.json with a pass;
(c) ungraded on demand: it plants a directory at `/logs/verifier/.verdict.json.tmp`;
(d) redirected write: it plants a symlink at `/logs/verifier/.reward.txt.tmp`.

One Harbor job, two trials: one task as exported (the verifier in Harbor's separate container),
and another with `environment_mode` removed from its task.toml, so Harbor runs the verifier in the
agent's own container where the leftover is still alive (the verifier's own defences: the gold
0600 root's, the agent's processes killed first, /logs/verifier made root's, outputs written
O_EXCL|O_NOFOLLOW under random names). Both must end as the agent's 0, which `report` and
`verify --logs` confirm. On the code before this verifier both trials scored 1 (the gold stolen).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.harbor_adapter import image
from smoldataenvs_tasks.harbor_adapter.export import JOB_CONFIG, export_dataset, task_dir_names
from smoldataenvs_tasks.results.load.load_harbor import load_harbor_job

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
HARBOR = REPO / "scripts" / "harbor"
SEPARATE = "sample/0001/orders.ipynb_qa_1"
SHARED = "sample/0001/orders.ipynb_qa_2"

LEFTOVER = r"""#!/bin/sh
# The agent's leftover: every attack on the verifier's phase, until its container ends.
py=/opt/smoldata-env/bin/python
out=/logs/verifier
echo started >> /logs/agent/leftover.log
while :; do
  if [ -r /tests/task.json ]; then                                        # (a)
    "$py" -c 'import json; print(json.load(open("/tests/task.json"))["record"]["answer"], end="")' \
      > /workdir/.stolen && mv -f /workdir/.stolen /workdir/answer.txt && echo stole >> /logs/agent/leftover.log
  fi
  [ -e "$out/.verdict.json.tmp" ] || mkdir "$out/.verdict.json.tmp" 2>/dev/null || true  # (c)
  [ -L "$out/.reward.txt.tmp" ] || ln -s /workdir/answer.txt "$out/.reward.txt.tmp" 2>/dev/null || true  # (d)
  if [ -f "$out/verdict.json" ] && ! grep -q forged "$out/verdict.json" 2>/dev/null; then  # (b)
    "$py" - "$out" <<'EOF' && echo rewrote >> /logs/agent/leftover.log
import json, sys
out = sys.argv[1]
record = json.load(open(f"{out}/verdict.json"))
record["graded"] = 1
record["verdict"].update(category="correct", reward=1.0, method="exact", reason="forged")
json.dump(record, open(f"{out}/verdict.json", "w"))
open(f"{out}/reward.json", "w").write('{"reward": 1}')
open(f"{out}/reward.txt", "w").write("1")
EOF
  fi
  sleep 0.05
done
"""

SOLVE = f"""#!/bin/sh
# A hostile agent: a wrong answer, and a process left behind for the verifier's phase.
set -eu
printf '0' > /workdir/answer.txt
cat > /tmp/leftover.sh <<'LEFTOVER'
{LEFTOVER}
LEFTOVER
setsid nohup sh /tmp/leftover.sh > /dev/null 2>&1 < /dev/null &
sleep 1
"""


def _engine() -> bool:
    return shutil.which("docker") is not None and (
        subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0
    )


def _hostile(task_dir: Path) -> None:
    solve = task_dir / "solution" / "solve.sh"
    solve.write_text(SOLVE)
    solve.chmod(0o755)


@pytest.fixture(scope="module")
def hostile_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not _engine():
        pytest.skip("no Docker engine answers")
    root = tmp_path_factory.mktemp("harbor-attacks")
    export = root / "export"
    # The grader image is named by the package's files: built first, then the export names it
    # (again if a file of the package changed meanwhile, as in a checkout being edited).
    for _ in range(3):
        tag = image.build_grader_image(quiet=True)
        summary = export_dataset(
            "sample", export, task_ids=[SEPARATE, SHARED], network_mode="public"
        )
        if summary.grader_image == tag:
            break
    assert summary.grader_image == tag, "the package kept changing between build and export"
    assert not summary.ungraded
    names = task_dir_names([SEPARATE, SHARED])
    separate, shared = export / names[SEPARATE], export / names[SHARED]
    toml = shared / "task.toml"
    toml.write_text(
        "\n".join(line for line in toml.read_text().splitlines() if "environment_mode" not in line)
        + "\n"
    )
    for task_dir in (separate, shared):
        _hostile(task_dir)
    jobs = root / "jobs"
    done = subprocess.run(
        # The export's own job config: its dataset, with Harbor's mean and metric.py.
        [str(HARBOR), "run", "-c", str(export / JOB_CONFIG), "-a", "oracle", "--env", "docker",
         "-n", "2", "--job-name", "hostile", "-o", str(jobs), "-q", "-y"],
        cwd=root, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return jobs / "hostile"


def _trials(job: Path) -> dict[str, Path]:
    """Trial folders by the verifier's mode."""
    names = task_dir_names([SEPARATE, SHARED])
    modes = {names[SEPARATE]: "separate", names[SHARED]: "shared"}
    found = {}
    for trial in sorted(p for p in job.iterdir() if (p / "result.json").is_file()):
        found[modes[json.loads((trial / "result.json").read_text())["task_name"]]] = trial
    assert set(found) == {"separate", "shared"}, found
    return found


@pytest.mark.parametrize("mode", ["separate", "shared"])
def test_the_leftover_process_cannot_steal_rewrite_or_block_the_verdict(hostile_job, mode):
    trial = _trials(hostile_job)[mode]
    result = json.loads((trial / "result.json").read_text())
    assert result["exception_info"] is None, result["exception_info"]
    # Harbor's own reward: the agent's answer `0`, never the gold, never the rewrite.
    assert result["verifier_result"]["rewards"] == {"reward": 0.0}
    verifier = trial / "verifier"
    recorded = json.loads((verifier / "verdict.json").read_text())
    assert recorded["graded"] == 1
    assert recorded["verdict"]["reward"] == 0.0 and recorded["verdict"]["category"] != "correct"
    assert recorded["verdict"]["prediction"] == "0"
    assert (verifier / "reward.txt").read_text() == "0\n"
    assert json.loads((verifier / "reward.json").read_text()) == {"reward": 0.0}
    # The planted directory and link were removed, nothing written through them.
    assert sorted(p.name for p in verifier.iterdir()) == [
        "reward.json", "reward.txt", "test-stdout.txt", "verdict.json"
    ]  # fmt: skip
    # The leftover ran, and never got the gold or rewrote an output.
    assert (trial / "agent" / "leftover.log").read_text().split() == ["started"]
    if mode == "shared":  # alive when the verifier started, in its container: killed first
        stdout = (verifier / "test-stdout.txt").read_text()
        assert re.search(r"ended [1-9]\d* process\(es\) of the agent's uid", stdout), stdout


def test_report_and_verify_of_the_hostile_job_give_the_agent_its_zero(hostile_job, tmp_path):
    run = load_harbor_job(hostile_job)
    assert run.pass1() == 0.0
    # Harbor's own summary: its mean, and the exported metric.py applied through the job config.
    [evals] = json.loads((hostile_job / "result.json").read_text())["stats"]["evals"].values()
    assert evals["metrics"] == [
        {"mean": 0.0},
        {"graded": 2, "no_reward": 0, "pass@1": 0.0, "ungraded": 0},
    ]
    runner = CliRunner()
    out = tmp_path / "report"
    # Two tasks of the split (an export with --task-id): a filtered run, partial by its filters.
    result = runner.invoke(main, ["report", str(hostile_job), "--out", str(out), "--allow-partial"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        main, ["verify", str(out / "submission.json"), "--logs", str(hostile_job)]
    )
    assert result.exit_code == 0, result.output
    assert "regrade: 2 recorded answer(s) re-graded" in result.output
    assert "verified against its logs" in result.output
