"""Everything Inspect: the two tasks, their setup step, tools, scorers, the `replay` model, the
`bwrap`, `smoldataenvs-docker` and `smoldataenvs-local` sandbox providers, and the host that lets
the shared program runner drive any Inspect sandbox. Only this package imports `inspect_ai` (the results layer reads
logs through its log API).

    inspect eval smoldataenvs_tasks/smoldataenvs_program -T split=sample \\
        --model replay/gold -M path=smoldataenvs_tasks/sample/replays/gold_program.jsonl

- `tasks`: `smoldataenvs` (agentic) and `smoldataenvs_program` (single shot), one `_create_task`;
- `setup`: fetch and stage a sample's tables before any model call; `release_sample` after;
- `tools`: `bash(command)` and `python(code)`, the SFT data's schema;
- `program_slots`: `program_gate`, how many programs and tool commands run at once here;
- `scoring`: Verdict -> Score (ungraded -> `Score.unscored`), metrics by tier and reward mode;
- `models`: `--model replay/<label> -M path=FILE.jsonl`;
- `bwrap_provider`: `@sandboxenv("bwrap")` over `sandboxes.bwrap.BwrapSession`;
- `docker_provider`: `@sandboxenv("smoldataenvs-docker")` over `sandboxes.docker.DockerSession`
  (its module loads no Docker module until a task uses it);
- `provider_base`: what they share (the lifecycle from the kind's record, the Inspect API over
  one of our sessions);
- `providers`: the Inspect side of the sandbox kinds: a provider made from the record of every
  other kind with a session (`smoldataenvs-local` over `sandboxes.local.LocalSession`), a
  kind's spec, which kind runs a sample;
- `program_host`: `InspectSandboxHost`, Inspect's sandbox as the runner's `ProgramHost`;
- `replay_run`: the agentic task over a replay file, in-process (`smoldataenvs validate`);
- `_compat`: every private `inspect_ai` import.
"""
