"""Grades per second by rung, against a naive re-statement of the ladder.

    python bench/bench_grader.py              # >= 10,000 pairs per in-process rung
    python bench/bench_grader.py --pairs 50000

Prints, for each rung, grades/s of `smoldataenvs_tasks.grade` with a cold memo (every pair
distinct), with a warm memo (the same pairs again, as RL re-samples answers), and of the naive
ladder below, plus the ratio ours/naive. The naive ladder is the issue's text written out
plainly: re.sub normalisation, regexes looked up per call, and math-verify called in-process
(main thread, its own signal timeouts) for pairs that reach the symbolic rung. Target: >= 50,000
grades/s on one core for pairs settled before the symbolic worker.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from smoldataenvs_tasks.scorers import grader, symbolic


def naive_grade(gold, candidate, *, reward_mode="", rel_tol=1e-3, abs_tol=1e-3):
    """The ladder as the issue states it, with no care for speed."""
    if gold is None or candidate is None or not gold.strip() or not candidate.strip():
        return (0.0, "miss")

    def norm(s):
        return re.sub(r"\s+", " ", s.strip().lower())

    if norm(gold) == norm(candidate):
        return (1.0, "exact")

    def first_number(s):
        m = re.search(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", s.replace(",", ""))
        return float(m.group()) if m else None

    def close(g, c):
        return abs(g - c) <= abs_tol or abs(g - c) / max(abs(g), 1e-9) <= rel_tol

    clean = gold.strip().replace("%", "").replace("$", "").replace(",", "")
    if reward_mode in ("numeric", "flexible") or re.fullmatch(
        r"-?\d+([.,]\d+)?([eE][-+]?\d+)?", clean
    ):
        g, c = first_number(gold), first_number(candidate)
        if g is not None and c is not None:
            if close(g, c):
                return (1.0, "numeric")
            g_frac, c_frac = 0 < abs(g) < 1, 0 < abs(c) < 1
            if (g_frac and abs(c) >= 1) or (c_frac and abs(g) >= 1):
                if close(g, c * 100) or close(g, c / 100):
                    return (1.0, "numeric_scaled")

    if reward_mode in ("list", "list_csv") or ("," in gold and "," in candidate):
        gi = [x.strip() for x in gold.split(",") if x.strip()]
        ci = [x.strip() for x in candidate.split(",") if x.strip()]
        if len(gi) >= 2 and len(gi) == len(ci):

            def item_ok(a, b):
                if norm(a) == norm(b):
                    return True
                x, y = first_number(a), first_number(b)
                return x is not None and y is not None and close(x, y)

            if all(item_ok(a, b) for a, b in zip(gi, ci, strict=True)):
                return (1.0, "list")
            gs, cs = sorted(gi, key=str.lower), sorted(ci, key=str.lower)
            if all(item_ok(a, b) for a, b in zip(gs, cs, strict=True)):
                return (1.0, "list")

    try:
        from math_verify import parse, verify

        if verify(parse(gold), parse(candidate)):
            return (1.0, "math_verify")
    except Exception:
        pass
    return (0.0, "miss")


LABELS = [
    "East",
    "West",
    "North",
    "South",
    "Kettle",
    "Blender",
    "Toaster",
    "yes",
    "no",
    "Not Applicable",
    ">50K",
    "<=50K",
    "Female",
    "Male",
    "Premium",
    "Basic",
]


def _letters(i: int) -> str:
    out = ""
    while True:
        i, r = divmod(i, 26)
        out += chr(ord("a") + r)
        if i == 0:
            return out


def make_pairs(n: int, seed: int = 0) -> dict[str, list[tuple[str, str, dict]]]:
    rnd = random.Random(seed)
    tol = {"reward_mode": "numeric", "abs_tol": 0.05, "rel_tol": 0.01}
    zero = {"reward_mode": "numeric", "abs_tol": 0.0, "rel_tol": 0.0}
    sets: dict[str, list[tuple[str, str, dict]]] = {
        k: []
        for k in (
            "exact",
            "numeric",
            "numeric_scaled",
            "list",
            "miss (labels, shortcut)",
            "miss (numbers, shortcut)",
        )
    }
    for i in range(n):
        label = f"{rnd.choice(LABELS)} {i}"
        sets["exact"].append((label, "  " + label.upper() + " ", {"reward_mode": "exact_short"}))
        value = round(rnd.uniform(1, 100_000), 2)
        sets["numeric"].append((f"{value}", f"{round(value)}", tol))
        pct = round(rnd.uniform(1, 99), 1)
        sets["numeric_scaled"].append((f"{pct}%", f"{pct / 100:.4f}", {}))
        a, b = rnd.sample(LABELS, 2)
        sets["list"].append((f"{a} {i}, {b}", f"{b}, {a} {i}", {"reward_mode": "list"}))
        wrong = rnd.choice([x for x in LABELS if x != a])
        tag = _letters(i)  # distinct pairs without digits, like real label answers
        sets["miss (labels, shortcut)"].append(
            (f"{a} {tag}", f"{wrong} {tag}", {"reward_mode": "exact_short"})
        )
        sets["miss (numbers, shortcut)"].append(
            (f"{i + 10}", f"{i + 10 + rnd.randint(1, 500)}", zero)
        )
    return sets


def rate(fn: Callable, pairs: list[tuple[str, str, dict]]) -> float:
    start = time.perf_counter()
    for gold, cand, kw in pairs:
        fn(gold, cand, **kw)
    return len(pairs) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10_000, help="pairs per in-process rung")
    parser.add_argument(
        "--symbolic-pairs",
        type=int,
        default=400,
        help="pairs that go to the math-verify worker (slow rung)",
    )
    args = parser.parse_args()
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as the target says
        pinned = "pinned to one core"
    except (AttributeError, OSError):
        pinned = "not pinned"

    sets = make_pairs(args.pairs)
    # Sanity: ours and the naive ladder agree on every pair we time.
    for name, pairs in sets.items():
        for gold, cand, kw in pairs[:500]:
            ours = grader.grade(gold, cand, **kw)
            assert (ours.reward, ours.method) == naive_grade(gold, cand, **kw), (name, gold, cand)
    print(f"grades/s by rung ({args.pairs:,} distinct pairs each, single thread, {pinned})")
    print(f"{'rung':<28}{'ours cold':>12}{'ours warm':>12}{'naive':>12}{'cold/naive':>12}")
    settled = []
    for name, pairs in sets.items():
        grader.clear_memo()
        cold = rate(grader.grade, pairs)
        warm = rate(grader.grade, pairs)
        naive = rate(naive_grade, pairs[: max(200, len(pairs) // 20)] if "miss" in name else pairs)
        settled.append((len(pairs), cold))
        print(f"{name:<28}{cold:>12,.0f}{warm:>12,.0f}{naive:>12,.0f}{cold / naive:>11.1f}x")
    total = sum(n for n, _ in settled)
    overall = total / sum(n / r for n, r in settled)
    print(f"{'all settled in-process':<28}{overall:>12,.0f}   (target >= 50,000)")

    # The symbolic rung proper: pairs neither shortcut can settle, through the worker pool.
    rnd = random.Random(1)
    sym = [
        (f"{a}/{b}", f"{a / b:.6f}" if rnd.random() < 0.5 else f"{a}/{b + 1}", {})
        for a, b in ((rnd.randint(1, 99), rnd.randint(2, 99)) for _ in range(args.symbolic_pairs))
    ]
    grader.clear_memo()
    grader.grade("1/2", "0.5")  # start a worker outside the timing
    grader.clear_memo()
    cold = rate(grader.grade, sym)
    warm = rate(grader.grade, sym)
    naive = rate(naive_grade, sym)
    print(
        f"{'math_verify (worker pool)':<28}{cold:>12,.0f}{warm:>12,.0f}{naive:>12,.0f}{cold / naive:>11.1f}x"
        f"   ({len(sym)} pairs; naive = in-process, main thread only)"
    )
    symbolic.shutdown()


if __name__ == "__main__":
    main()
