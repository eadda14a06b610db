"""The Harbor verifier's writes into /logs/verifier (harbor_adapter/verifier.py), on this machine:
the directory made the verifier's own, anything planted in it removed, outputs written under
random names with O_EXCL|O_NOFOLLOW and renamed. (Ending the agent's processes is exercised only
inside a task's container, tests/security/test_harbor_attacks.py: on a host, `kill -9 -1` as uid
1000 would reach every process of that uid.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from smoldataenvs_tasks.harbor_adapter.verifier import (
    SANDBOX_UID,
    give_answer_to_agent,
    write_outputs,
)
from smoldataenvs_tasks.scorers.decide import verdict_for_answer_file

pytestmark = pytest.mark.unit

TASK = {"task_id": "a/1", "table_sha256": {}, "record": {}, "provenance": {}}


def test_planted_directories_and_links_neither_block_nor_redirect_the_outputs(tmp_path: Path):
    out = tmp_path / "verifier"
    out.mkdir(mode=0o777)
    os.chmod(out, 0o777)
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("untouched")
    (out / ".verdict.json.tmp").mkdir()  # the old fixed temporary name, as a directory
    (out / ".verdict.json.tmp" / "x").write_text("x")
    (out / ".reward.txt.tmp").symlink_to(elsewhere)  # ... and as a link
    (out / "verdict.json").mkdir()  # a directory where an output goes
    (out / "reward.json").symlink_to(elsewhere)  # a link where an output goes
    (out / "test-stdout.txt").write_text("harbor's redirect\n")
    write_outputs(TASK, verdict_for_answer_file("0", gold="5"), out)
    assert elsewhere.read_text() == "untouched"
    assert sorted(p.name for p in out.iterdir()) == [
        "reward.json", "reward.txt", "test-stdout.txt", "verdict.json"
    ]  # fmt: skip
    assert all(not p.is_symlink() and p.is_file() for p in out.iterdir())
    assert json.loads((out / "reward.json").read_text()) == {"reward": 0.0}
    assert (out / "reward.txt").read_text() == "0\n"
    assert json.loads((out / "verdict.json").read_text())["graded"] == 1
    assert (out / "test-stdout.txt").read_text() == "harbor's redirect\n"
    # The directory is the verifier's alone: no one else may add or replace an entry.
    info = out.stat()
    assert info.st_uid == os.geteuid() and info.st_mode & 0o777 == 0o755


def test_a_link_in_place_of_the_directory_is_refused_never_followed(tmp_path: Path):
    target = tmp_path / "target"
    target.mkdir()
    out = tmp_path / "verifier"
    out.symlink_to(target)
    with pytest.raises(OSError):
        write_outputs(TASK, verdict_for_answer_file("5", gold="5"), out)
    assert list(target.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_only_a_root_owned_single_link_regular_answer_is_given_to_the_agent(tmp_path: Path):
    answer = tmp_path / "answer.txt"
    answer.write_text("5")
    give_answer_to_agent(str(answer))
    assert answer.stat().st_uid == SANDBOX_UID  # Harbor's root-owned copy, given back
    linked = tmp_path / "linked.txt"
    linked.write_text("5")
    os.link(linked, tmp_path / "second-link")
    give_answer_to_agent(str(linked))
    assert linked.stat().st_uid == 0  # a hard link could be any root file: never chowned
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "second-link")
    give_answer_to_agent(str(link))
    assert (tmp_path / "second-link").stat().st_uid == 0
