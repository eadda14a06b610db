"""Deciding rewards, purely: strings (and a run's report) in, a Verdict out.

`grader` (the ladder) and `symbolic` (its math-verify rung), `answers` (what in a reply or a run
is the answer), `outcome` (what a program run's exit means), `decide` (answer rules + ladder ->
Verdict), `verdict` (the Verdict, its categories, GRADER_VERSION), `cli` (`smoldataenvs grade`).
Nothing here imports a framework, a sandbox or the data layer (import-linter checks it); the
Inspect scorers live in `inspect_adapter/scoring.py`, the lm-eval hooks in `lm_eval/hooks.py`.
"""
