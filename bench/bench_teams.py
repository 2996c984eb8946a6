"""Teams channel benchmark against the fake Microsoft side (prints figures; asserts nothing).

A real daemon posts requests to a channel while the fake Bot Connector takes `--limit`
calls per second (429 + Retry-After above that), then a simulated person approves each
with a signed Action.Execute invoke (each answer also updates the card). Target: posts
and answers at ≥ 80 % of the rate limit, 0 lost, 0 duplicated.

Run: .venv/bin/python bench/bench_teams.py [--requests 60] [--limit 20]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.teams.cards import APPROVE
from tests.fakes.teams_api import FakeTeams
from tests.harness import wait_for
from tests.teams.conftest import CHANNEL, confirm_body, teams_bridge


async def bench(requests: int, limit: float) -> None:
    async with FakeTeams() as fake:
        with tempfile.TemporaryDirectory() as tmp:
            async with teams_bridge(Path(tmp), fake, teams={"max_attempts": 50, "calls_per_s": limit}) as bridge:
                await bridge.install()
                fake.rate_limit = limit
                start = time.monotonic()
                ids = [await bridge.create(confirm_body(title=f"Deploy {i}")) for i in range(requests)]
                await wait_for(lambda: len(fake.in_conversation(CHANNEL)) >= requests, 600, 0.05)
                posted_s = time.monotonic() - start
                posts = fake.in_conversation(CHANNEL)
                seen = [str(p.card["actions"][0]["data"]["request_id"]) for p in posts]
                start = time.monotonic()
                await asyncio.gather(*(bridge.click(APPROVE, {"request_id": rid}) for rid in ids))
                for rid in ids:
                    await bridge.closed(rid)
                await wait_for(lambda: all(p.versions for p in posts), 600, 0.05)
                answered_s = time.monotonic() - start
    post_rate, answer_rate = requests / posted_s, requests / answered_s
    print(f"teams posts: {requests} in {posted_s:.2f}s = {post_rate:.2f}/s = {100 * post_rate / limit:.0f}% "
          f"of the fake's {limit:.0f} calls/s (target >= 80%); lost {len(set(ids) - set(seen))}, "
          f"duplicated {len(seen) - len(set(seen))} (target 0, 0); 429s {fake.throttled}")
    print(f"teams answers (invoke + card update for everyone): {requests} in {answered_s:.2f}s = "
          f"{answer_rate:.2f}/s = {100 * answer_rate / limit:.0f}% of the limit (target >= 80%)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--limit", type=float, default=20.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    await bench(args.requests, args.limit)


if __name__ == "__main__":
    asyncio.run(main())
