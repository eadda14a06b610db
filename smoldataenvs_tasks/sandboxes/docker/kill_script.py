"""Every process of the sandbox user killed and reaped, but this one; run inside a container as
the sandbox user.

Not imported by the package: commands.py sends this file's source, after proc_walk.py's, to
`python3 -I -S -c` (keeper.py `container_script`), so the processes are found by the one walk the
keeper and the reset use, which sees the non-dumpable ones (their /proc entry is root's). It waits
for the killed ones to be reaped too: each holds a pid of the container's limit until then, and
the next command must be able to fork (60 processes killed by a memory blow-up took ~0.1 s to
go). It exits 0 even if some outlive the ~2 s: the next command meets them.
"""

kill_all_but_me(2.0, 0.05, reaped=True)  # type: ignore[name-defined]  # noqa: F821
