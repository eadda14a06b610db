"""Reporting: runs from Inspect logs and lm-eval outputs, statistics, submission.json, reports.

- `runs`: the framework-neutral `Run` (per task, per attempt, a Verdict);
- `load`: Inspect logs (through Inspect's log API) and lm-eval output folders into Runs;
- `stats`: bootstrap CIs over tasks (seed 0, 10,000 resamples), pass@k, seed standard errors;
- `submission`: submission.json and its sha256;
- `render`: report.md and report.png;
- `compare`: per-task agreement between two runs.

    smoldataenvs report logs/ --out report/
"""
