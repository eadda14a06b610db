from smoldataenvs_tasks.cli import main

main()
