"""Deciding rewards, purely: strings (and a run's report) in, a Verdict out.

`grader` (the ladder's fast path), `ladder` and `rules` (the ladder and strict's rules as records,
and the plain reference `grader` is held to), `strict` and `reading` (strict's rules and how it
reads a side), `symbolic` (its math-verify rung), `answers` (what in a reply or a run
is the answer), `outcome` (what a program run's exit means), `decide` (answer rules + ladder ->
Verdict), `verdict` (the Verdict, its categories, GRADER_VERSION), `cli` (`smoldataenvs grade`).
Nothing here imports a framework, a sandbox or the data layer (import-linter checks it); the
Inspect scorers live in `inspect_adapter/scoring.py`, the lm-eval hooks in `lm_eval/hooks.py`.
"""
