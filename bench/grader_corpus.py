"""The grader on the fuzz corpus: parity with the published grader, and what strict changes.

    python bench/grader_corpus.py              # the tables docs/scoring.md quotes
    python bench/grader_corpus.py --examples 5 # more example pairs per class

Grades every pair of `tests/scorers/fuzz_corpus.py` with the published grader's restatement
(`tests/scorers/published_grader.py`) and with `grade` under both profiles, then prints:

1. parity: pairs where the default profile's (reward, method) equals the published grader's, and
   the rest by deliberate deviation;
2. per loophole class of issue 12 (the corpus relation that makes it): how many of its pairs the
   published grader and the default profile accept, and how many strict accepts;
3. every class strict newly rejects (default accepted it, strict does not), with the rule that
   refused and example pairs, split by the generator's judgement of the answer (wrong, or
   depends on the question);
4. the pairs judged wrong that strict still accepts (loopholes left open), and the pairs judged
   right that strict rejects (should be none);
5. issue 25's loophole classes as generated variants (`tests/scorers/phrasings.py`): how many
   of each the published grader, the default profile and strict accept;
6. the false-rejection budget: of the generated correct phrasings the default profile accepts,
   how many strict rejects (at most 0.5%), and the phrasings the published grader rejects.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from smoldataenvs_tasks.scorers import grader, symbolic
from tests.scorers.fuzz_corpus import Pair, corpus
from tests.scorers.phrasings import correct_phrasings, loophole_variants
from tests.scorers.published_grader import published_grade, remembered_math_verify

LOOPHOLES = [
    ("hedging", ("hedge_or", "hedge_sequence", "hedge_comma", "hedge_range")),
    ("dates", ("date_year_only", "date_wrong_day", "date_wrong_month", "date_month_only")),
    ("lists: last item", ("list_last_item_only",)),
    ("x100 bridge without %", ("x100_no_percent",)),
    ("label golds", ("label_comparison", "label_same_number", "label_number_only")),
    ("list items by first number", ("list_items_relabelled", "list_of_dates_wrong_days")),
    ("comma merge", ("comma_merge",)),
    ("unicode / spaced minus", ("unicode_minus_sign_flip", "spaced_minus_sign_flip")),
    ("units", ("wrong_unit",)),
]


def show(pair: Pair) -> str:
    mode = pair.reward_mode or '""'
    return f"{pair.gold!r} vs {pair.candidate!r} [{mode}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=3, help="example pairs per class")
    args = parser.parse_args()

    pairs = corpus()
    rows = []
    for pair in pairs:
        kwargs = {"reward_mode": pair.reward_mode, "abs_tol": pair.atol, "rel_tol": pair.rtol}
        published = published_grade(
            pair.gold, pair.candidate, symbolic=remembered_math_verify, **kwargs
        )
        default = grader.grade(pair.gold, pair.candidate, **kwargs)
        strict = grader.grade(pair.gold, pair.candidate, profile="strict", **kwargs)
        rows.append((pair, published, default, strict))

    # 1. parity
    agree = sum((d.reward, d.method) == p for _, p, d, _ in rows)
    deviations: Counter[str] = Counter()
    for pair, published, default, _ in rows:
        if (default.reward, default.method) == published:
            continue
        if not pair.gold.strip():
            deviations["blank gold: miss (published: exact against a blank answer)"] += 1
        elif default.method == "math_verify_timeout":
            deviations["math-verify deadline: math_verify_timeout (published: miss)"] += 1
        else:
            deviations[f"UNEXPLAINED {show(pair)}: {default} vs {published}"] += 1
    same_reward = sum(d.reward == p[0] for _, p, d, _ in rows)
    print(f"corpus: {len(pairs):,} pairs")
    print(
        f"parity, default vs published: reward {same_reward:,} ({same_reward / len(rows):.3%}), "
        f"reward and method {agree:,} ({agree / len(rows):.3%})"
    )
    for name, count in deviations.most_common():
        print(f"  {count:>6,}  {name}")

    # 2. loophole classes
    print("\nloophole classes (pairs judged wrong): accepted by published / default / strict")
    for name, relations in LOOPHOLES:
        chosen = [r for r in rows if r[0].relation in relations and r[0].same is False]
        counts = [
            sum(published[0] for _, published, _, _ in chosen),
            sum(default.reward for _, _, default, _ in chosen),
            sum(strict.reward for _, _, _, strict in chosen),
        ]
        n = len(chosen)
        cells = "  ".join(f"{c:>6,.0f} ({c / n:>4.0%})" for c in counts)
        print(f"  {name:<28}{n:>7,}  {cells}")

    # 3. what strict newly rejects
    newly: dict[tuple, list[Pair]] = defaultdict(list)
    defaults: Counter[tuple] = Counter()
    for pair, _, default, strict in rows:
        key = (pair.same, pair.relation)
        if default.reward:
            defaults[key] += 1
        if default.reward and not strict.reward:
            newly[(pair.same, pair.relation, strict.rule)].append(pair)
    total_new = sum(len(v) for v in newly.values())
    print(
        f"\nstrict newly rejects {total_new:,} of the {sum(defaults.values()):,} pairs default "
        "accepts (class, rule: rejected / accepted by default)"
    )
    for judged, label in ((False, "judged wrong"), (None, "depends on the question")):
        print(f"  -- {label}")
        for (same, relation, rule), chosen in sorted(
            newly.items(), key=lambda kv: (-len(kv[1]), kv[0][1])
        ):
            if same is not judged:
                continue
            print(f"  {relation:<28}{rule:<20}{len(chosen):>6,} / {defaults[(same, relation)]:>6,}")
            step = max(1, len(chosen) // args.examples)
            for pair in chosen[::step][: args.examples]:
                print(f"      {show(pair)}")

    # 4. what is left
    right = [r for r in rows if r[0].same is True]
    print(
        f"\npairs judged right: {len(right):,}; accepted by published "
        f"{sum(r[1][0] for r in right):,.0f}, default {sum(r[2].reward for r in right):,.0f}, "
        f"strict {sum(r[3].reward for r in right):,.0f}"
    )
    lost = [r for r in right if r[2].reward and not r[3].reward]
    print(f"pairs judged right that default accepts and strict rejects: {len(lost)}")
    for pair, *_ in lost[: args.examples]:
        print(f"      {show(pair)}")
    left: dict[tuple, list[Pair]] = defaultdict(list)
    for pair, _, _, strict in rows:
        if pair.same is False and strict.reward:
            left[(pair.relation, strict.method)].append(pair)
    print("pairs judged wrong that strict still accepts:", sum(len(v) for v in left.values()))
    for (relation, method), chosen in sorted(left.items(), key=lambda kv: -len(kv[1])):
        print(f"  {relation:<28}{method:<16}{len(chosen):>6,}")
        for pair in chosen[: args.examples]:
            print(f"      {show(pair)}")

    issue_25(args.examples)
    symbolic.shutdown()


def issue_25(examples: int) -> None:
    """5. and 6.: the loophole classes of issue 25 and the false-rejection budget."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    rules: dict[str, Counter[str]] = defaultdict(Counter)
    for variant in loophole_variants():
        kwargs = {"reward_mode": variant.reward_mode, "abs_tol": variant.atol,
                  "rel_tol": variant.rtol}  # fmt: skip
        published = published_grade(
            variant.gold, variant.candidate, symbolic=remembered_math_verify, **kwargs
        )
        default = grader.grade(variant.gold, variant.candidate, **kwargs)
        strict = grader.grade(variant.gold, variant.candidate, profile="strict", **kwargs)
        counts[variant.loophole].update(
            n=1, published=int(published[0]), default=int(default.reward),
            strict=int(strict.reward),
        )  # fmt: skip
        if default.reward:
            rules[variant.loophole][strict.rule or "-"] += 1
    print("\nissue 25 classes (generated variants): accepted by published / default / strict")
    for name, count in counts.items():
        named = ", ".join(f"{rule} {n}" for rule, n in rules[name].most_common())
        print(
            f"  {name:<42}{count['n']:>6,}  {count['published']:>6,}  {count['default']:>6,}"
            f"  {count['strict']:>6,}   ({named})"
        )

    phrasings = correct_phrasings()
    accepted = []
    rejected_by_default = []
    for phrasing in phrasings:
        kwargs = {"reward_mode": phrasing.reward_mode, "abs_tol": phrasing.atol,
                  "rel_tol": phrasing.rtol}  # fmt: skip
        if grader.grade(phrasing.gold, phrasing.candidate, **kwargs).reward:
            accepted.append((phrasing, kwargs))
        else:
            rejected_by_default.append(phrasing)
    lost = [
        (p, result)
        for p, kwargs in accepted
        if not (result := grader.grade(p.gold, p.candidate, profile="strict", **kwargs)).reward
    ]
    modes = Counter(p.mode for p, _ in accepted)
    print(
        f"\ncorrect phrasings: {len(phrasings):,} generated, {len(accepted):,} accepted by the "
        f"default profile ({', '.join(f'{m} {n}' for m, n in modes.most_common())})"
    )
    print(f"  strict rejects {len(lost)} ({len(lost) / len(accepted):.2%}; budget 0.5%)")
    for phrasing, result in lost[:examples]:
        print(f"      {phrasing.gold!r} vs {phrasing.candidate!r}: {result.rule}")
    by_template = Counter((p.mode, p.template) for p in rejected_by_default)
    print(f"  the published grader rejects {len(rejected_by_default)} (strict cannot accept them):")
    for (mode, template), n in by_template.most_common():
        print(f"      {mode:<10}{template:<24}{n:>4}")


if __name__ == "__main__":
    main()
