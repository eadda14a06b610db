"""Reporting: runs from Inspect logs and lm-eval outputs, statistics, submission.json, reports,
verification and leaderboards.

- `runs`: the framework-neutral `Run` (per task, per attempt, a Verdict; its coverage record);
- `load`: Inspect logs (through Inspect's log API) and lm-eval output folders into Runs;
- `select`: `--model` / `--name`, and a directory of runs grouped by model and split;
- `coverage`: how much of its split a run covered (`complete`, and why not);
- `task_outcomes`: per-task outcomes (every attempt of every task), the one input of every
  figure;
- `stats`: bootstrap CIs over tasks (seed 0, 10,000 resamples), pass@k, seed standard errors;
- `diagnostics`: "is this number any good" (tasks that split, sample size, contamination);
- `contamination`: which tasks' tables also serve train (looked up once, on this machine);
- `schema`: the shape of submission.json (TypedDicts) and its check at load;
- `submission`: submission.json, its sha256, and `recompute`;
- `verify`: hash, figures, pins and logs of a submission;
- `leaderboard`, `leaderboard_page`: ranked tables, paired comparisons, md/html/json;
- `render`: report.md and report.png;
- `compare`: per-task agreement between two runs.

    smoldataenvs report logs/ --out report/
    smoldataenvs verify report/submission.json --logs logs/
    smoldataenvs leaderboard a/submission.json b/submission.json --out leaderboard/
"""
