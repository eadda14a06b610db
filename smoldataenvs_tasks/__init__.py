"""SmolDataEnvs as native Inspect AI and lm-evaluation-harness tasks.

`grade` is a drop-in for the dataset's own `grader.grade`:

    >>> from smoldataenvs_tasks import grade
    >>> grade("5768.04", "5768", reward_mode="numeric", abs_tol=0.05, rel_tol=0.01).reward
    1.0
"""

from smoldataenvs_tasks.scorers.grader import GradeResult, grade
from smoldataenvs_tasks.scorers.verdict import GRADER_VERSION, Category, Verdict

__all__ = ["GRADER_VERSION", "Category", "GradeResult", "Verdict", "grade"]
