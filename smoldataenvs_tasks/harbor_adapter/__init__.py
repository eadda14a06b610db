"""Harbor, the third framework: SmolDataEnvs exported as Harbor tasks (`export`), graded inside
each task by this package's grader (`verifier`, on the grader image of `image`), and Harbor jobs
read back into reports. An adapter room beside inspect_adapter/ and lm_eval/: it plans through
`pipeline` and `data`, and never grows its own grader, runner or staging (docs/harbor.md).

Nothing is imported here: `verifier` runs inside a task's container with the package's source
and the symbolic rung's wheels only.
"""
