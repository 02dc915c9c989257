"""Capacity planner time on the whole catalog (every target, every instance type, every capacity type
with a price) against the brute-force enumeration of the same search space, in one run.

Not a test. The brute force grows exponentially with the demand, so it runs only up to
--brute-force-max-users; above that the planner runs alone. Both must find the same $/h.

    python benchmarks/planner_bench.py [--repeat 3] [--brute-force-max-users 200]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from capacity_brute_force import brute_force_cost
from capacity_demands import PRICED_DAY

from serving_stack.config.demand import DemandConfig, SloConfig, TokenShapeConfig
from serving_stack.facts.aws import load_aws_catalog, load_capacity_prices
from serving_stack.facts.catalog import load_catalog
from serving_stack.plan.throughput import CAPACITY_TYPES, instance_offers
from tools.plan_capacity.model import amount, candidate_rows, search_space, unit
from tools.plan_capacity.solver import solve

USERS = (10, 50, 100, 150, 200, 500, 2_000, 10_000)


def timed(repeat: int, run):  # type: ignore[no-untyped-def]
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--brute-force-max-users", type=int, default=200)
    args = parser.parse_args()
    catalog, aws_catalog = load_catalog(), load_aws_catalog()
    rows, offers = (
        candidate_rows(catalog, aws_catalog),
        instance_offers(aws_catalog, load_capacity_prices(), PRICED_DAY),
    )
    criteria = SloConfig.model_construct(
        **catalog.criteria.model_dump(include={"minTokensPerSecondPerUser", "maxTtftP50Ms"})
    )
    types = list(CAPACITY_TYPES)
    demands = [DemandConfig(slo=criteria, concurrentUsers=u, capacityTypes=types) for u in USERS]
    shape = TokenShapeConfig(inputTokens=64_000, outputTokens=400)
    demands.append(DemandConfig(slo=criteria, requestsPerSecond=20.0, tokenShape=shape, capacityTypes=types))
    print(f"catalog: {len(rows)} targets, {len(offers)} instance types, capacity types {', '.join(CAPACITY_TYPES)}")
    print(
        f"{'demand':>14} | {'rows':>4} | {'pools':>5} | {'planner ms':>10} | {'brute force ms':>14} | {'brute/planner':>13} | $/h"
    )
    for demand in demands:
        space = search_space(demand, rows, offers)
        per = unit(demand)
        planner_s, plan = timed(args.repeat, lambda space=space, per=per: solve(space, per))
        label = f"{amount(demand):g} {per}"
        cost = plan.usd_per_hour if plan else math.nan
        if amount(demand) <= args.brute_force_max_users and demand.requestsPerSecond is None:
            brute_s, best = timed(1, lambda space=space: brute_force_cost(space))
            assert best is not None, label
            assert math.isclose(best, cost, abs_tol=1e-6), (label, best, cost)
            print(
                f"{label:>14} | {len(space.rows):>4} | {len(space.pools):>5} | {planner_s * 1e3:>10.1f} | {brute_s * 1e3:>14.1f} | "
                f"{brute_s / planner_s:>12.1f}x | {cost:,.2f} (same)"
            )
        else:
            print(
                f"{label:>14} | {len(space.rows):>4} | {len(space.pools):>5} | {planner_s * 1e3:>10.1f} | {'skipped':>14} | {'':>13} | {cost:,.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
