"""Reporting: runs from Inspect logs and lm-eval outputs, statistics, submission.json, reports,
verification and leaderboards.

Rooms, each importing only the rooms below it (pyproject's import-linter contract):
- `cli`: the commands `report`, `verify`, `leaderboard`, `compare`;
- `verify/`: hash, figures, pins and logs of a submission (`verifier`), re-graded against the
  data (`verify_against`, `verifier_data`), its `checks`; `regrade_summary`;
- `render/`: report.md and report.png (`report`), the leaderboard's md/html
  (`leaderboard_page`), escaped `markdown`;
- `publish/`: submission.json, its sha256 and `recompute` (`submission`); ranked tables and
  paired comparisons (`leaderboard`);
- `load/`: Inspect logs, lm-eval folders and Harbor jobs into Runs (`inputs`, `load_inspect`,
  `load_lm_eval`, `load_harbor`, `provenance`, `calls`, `retries`, `fingerprint`); `select`:
  `--model` / `--name`, runs grouped by model and split;
- `figures/`: per-task outcomes, the one input of every figure (`task_outcomes`); bootstrap CIs,
  pass@k, seed errors (`stats`); "is this number any good" (`diagnostics`, `contamination`);
  per-task agreement of two runs (`compare`);
- `model/`: the framework-neutral `Run` (`runs`), its `errors`, the shape of every file
  (`schema`), the settings that can change a score (`protocol`), how much of its split a run
  covered (`coverage`).

    smoldataenvs report logs/ --out report/
    smoldataenvs verify report/submission.json --logs logs/
    smoldataenvs leaderboard a/submission.json b/submission.json --out leaderboard/
"""
