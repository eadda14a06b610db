"""Deciding rewards: the grader ladder (pure), the answer rules, the Verdict, and framework glue.

Nothing in this package's pure modules (`grader`, `symbolic`, `answers`, `verdict`, `decide`)
imports inspect_ai or lm_eval; the framework glue lives in its own modules.
"""
