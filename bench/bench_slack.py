"""Slack channel benchmarks against the fake Slack Web API (prints figures; asserts nothing).

1. Posting throughput: a real daemon posts requests to 20 channels while the fake allows
   1 chat.postMessage per second per channel (429 + Retry-After above that). Target:
   ≥ 95 % of the 20 posts/s ceiling, 0 lost, 0 duplicated.
2. Click → answer stored: a simulated person sends signed block_actions to /slack/events;
   the time until the core publishes the answered request. Target: p50 ≤ 5 ms, p99 ≤ 20 ms.

Run: .venv/bin/python bench/bench_slack.py [--per-channel 11] [--clicks 300]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from bridge.config import Settings
from bridge.daemon import Daemon
from bridge.models import RequestIn, RequestState
from tests.fakes.slack_api import FakeSlack
from tests.slack.person import Person

SIGNING_SECRET = "bench-signing-secret-0123456789"
CHANNELS = 20


def settings(tmp: Path, fake: FakeSlack, routes: list[dict[str, Any]], interval_s: float) -> Settings:
    return Settings.model_validate({
        "store": {"url": f"sqlite:///{tmp}/bridge.db"},
        "http": {"listen": "127.0.0.1:0"},
        "sources": [{"type": "webhook"}],
        "slack": {"bot_token": fake.bot_token, "signing_secret": SIGNING_SECRET,
                  "api_url": fake.api_url, "post_interval_s": interval_s},
        "routes": routes,
    })


def confirm(title: str, **labels: str) -> RequestIn:
    return RequestIn.model_validate({"title": title, "labels": labels, "questions": [
        {"id": "ok", "kind": "confirm", "prompt": "Go?"}]})


async def bench_throughput(per_channel: int) -> None:
    channels = {f"bench{i:02d}": f"C0BENCH{i:02d}" for i in range(CHANNELS)}
    routes = [{"match": {"team": name}, "notify": [f"slack:{cid}"]} for name, cid in channels.items()]
    async with FakeSlack(channels=channels, post_interval_s=1.0) as fake:
        with tempfile.TemporaryDirectory() as tmp:
            daemon = Daemon(settings(Path(tmp), fake, routes, interval_s=1.0))
            await daemon.start()
            try:
                created: list[str] = []
                for n in range(per_channel):
                    for name in channels:
                        request, _ = await daemon.service.submit(
                            confirm(f"{name} #{n}", team=name), source="webhook")
                        created.append(request.id)
                total = len(created)
                deadline = time.monotonic() + per_channel * 3 + 30
                while time.monotonic() < deadline:
                    if len(fake.calls_of("chat.postMessage", ok=True)) >= total:
                        break
                    await asyncio.sleep(0.05)
                await daemon.service.drain()
            finally:
                await daemon.stop()
        ok = fake.calls_of("chat.postMessage", ok=True)
        limited = [c for c in fake.calls_of("chat.postMessage") if c.status == 429]
        posted = Counter(c.args["metadata"]["event_payload"]["request_id"] for c in ok)
        lost = [rid for rid in created if rid not in posted]
        duplicated = [rid for rid, n in posted.items() if n > 1]
        span = max(c.at for c in ok) - min(c.at for c in ok)
        steady = (len(ok) - CHANNELS) / span if span > 0 else float("nan")
        ceiling = float(CHANNELS)  # 1 post/s/channel
        print(f"throughput: {len(ok)} posts to {CHANNELS} channels in {span:.2f}s "
              f"(first posts at t=0, then paced)")
        print(f"  steady rate {steady:.2f} posts/s = {100 * steady / ceiling:.1f}% of the "
              f"{ceiling:.0f}/s ceiling (target >= 95%)")
        print(f"  lost {len(lost)}, duplicated {len(duplicated)}, 429s {len(limited)} "
              f"(target 0 lost, 0 duplicated)")


async def bench_click_latency(clicks: int) -> None:
    async with FakeSlack() as fake:
        with tempfile.TemporaryDirectory() as tmp:
            routes = [{"notify": ["slack:#deploys"]}]
            daemon = Daemon(settings(Path(tmp), fake, routes, interval_s=0))
            await daemon.start()
            try:
                async with httpx.AsyncClient(timeout=10) as http:
                    person = Person(fake, http, f"{daemon.base_url}/slack/events", SIGNING_SECRET)
                    ids = [(await daemon.service.submit(confirm(f"r{i}"), source="webhook"))[0].id
                           for i in range(clicks)]
                    await daemon.service.drain()
                    messages = {m["metadata"]["event_payload"]["request_id"]: m
                                for m in fake.channel_messages("C0DEPLOYS")}
                    await person.click(messages[ids[0]], "hitl:approve")  # warm-up (auth.test)
                    latencies: list[float] = []
                    for rid in ids[1:]:
                        payload = person.block_actions(messages[rid], "hitl:approve")
                        waiter = daemon.service.changes.waiter(rid)
                        start = time.perf_counter()
                        send = asyncio.create_task(person.send(payload))
                        request = await asyncio.wait_for(waiter, 10)
                        latencies.append((time.perf_counter() - start) * 1000)
                        assert request.state in (RequestState.answered, RequestState.delivered)
                        await send
                        # the message update goes to the fake, which shares this event loop:
                        # let it finish outside the measured window
                        await daemon.service.drain()
            finally:
                await daemon.stop()
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"click -> answer stored: n={len(latencies)} p50 {p50:.2f} ms, p99 {p99:.2f} ms, "
          f"max {latencies[-1]:.2f} ms (target p50 <= 5 ms, p99 <= 20 ms)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-channel", type=int, default=11, help="posts per channel")
    parser.add_argument("--clicks", type=int, default=300)
    parser.add_argument("--only", choices=["throughput", "latency"])
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    if args.only != "latency":
        await bench_throughput(args.per_channel)
    if args.only != "throughput":
        await bench_click_latency(args.clicks)


if __name__ == "__main__":
    asyncio.run(main())
