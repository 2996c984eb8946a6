"""Telegram channel benchmarks against the fake Bot API (prints figures; asserts nothing).

1. Posting throughput: a real daemon posts 500 requests to 50 private chats while the fake
   enforces Telegram's limits (more than 30 calls naming a chat in any second, or two
   messages to one private chat within a second → 429). Target: ≥ 95 % of 30 messages/s,
   0 lost, 0 duplicated, no 429 provoked.
2. Button press → answer stored: a simulated person presses Approve; the time from the
   update leaving the fake (webhook POST, or getUpdates reply when polling) until the core
   publishes the answered request. Target: p50 ≤ 5 ms, p99 ≤ 20 ms.

Run: .venv/bin/python bench/bench_telegram.py [--requests 500] [--chats 50] [--presses 200]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bridge.config import Settings
from bridge.daemon import Daemon
from bridge.models import Request, RequestIn, RequestState
from tests.fakes.telegram_api import FakeTelegram

LIMIT = 30.0


def settings(tmp: Path, fake: FakeTelegram, routes: list[dict[str, Any]], mode: str = "polling",
             port: int = 0, per_chat_interval: float = 1.0) -> Settings:
    telegram: dict[str, Any] = {"bot_token": fake.token, "api_url": fake.api_url, "mode": mode,
                                "poll_timeout": 5, "per_chat_interval": per_chat_interval}
    if mode == "webhook":
        telegram.update(webhook_url=f"http://127.0.0.1:{port}/telegram/webhook", webhook_secret="bench_secret")
    return Settings.model_validate({
        "store": {"url": f"sqlite:///{tmp}/bridge.db"},
        "http": {"listen": f"127.0.0.1:{port}"},
        "sources": [{"type": "webhook"}],
        "telegram": telegram,
        "routes": routes,
    })


def confirm(title: str, **labels: str) -> RequestIn:
    return RequestIn.model_validate({"title": title, "labels": labels, "questions": [
        {"id": "ok", "kind": "confirm", "prompt": "Go?"}]})


async def wait_until(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return False


async def bench_throughput(total: int, chats: int) -> None:
    fake = FakeTelegram(enforce_limits=True, overall_per_second=int(LIMIT), per_chat_interval=1.0)
    await fake.start()
    chat_ids = [1000 + i for i in range(chats)]
    for chat_id in chat_ids:
        fake.person(chat_id)
    routes = [{"match": {"chat": str(c)}, "notify": [f"telegram:{c}"]} for c in chat_ids]
    with tempfile.TemporaryDirectory() as tmp:
        daemon = Daemon(settings(Path(tmp), fake, routes))
        await daemon.start()
        try:
            started, cpu = time.monotonic(), time.process_time()
            for n in range(total):
                await daemon.service.submit(confirm(f"bench request {n:04d}", chat=str(chat_ids[n % chats])),
                                            source="webhook")
            submitted = time.monotonic() - started
            posted = await wait_until(lambda: len(fake.calls_of("sendMessage")) >= total, timeout=total / 10 + 30)
            busy = (time.process_time() - cpu) / (time.monotonic() - started)
            await asyncio.sleep(1.0)  # let any duplicate show up
            sends = fake.calls_of("sendMessage")
            titles = Counter(str(c.params.get("text", "")).split("</b>")[0] for c in sends)
            rejected = [c for c in fake.calls if c.status == 429]
            states = await daemon.store.count_by_state()
        finally:
            await daemon.stop()
            await fake.stop()
    span = sends[-1].at - sends[0].at if len(sends) > 1 else float("nan")
    rate = (len(sends) - 1) / span if span else float("nan")
    print("== Telegram posting throughput ==")
    print(f"requests: {total} to {chats} private chats; fake enforces {LIMIT:.0f} calls/s and 1 message/s per chat")
    print(f"messages posted: {len(sends)} in {span:.2f} s → {rate:.2f} messages/s "
          f"({100 * rate / LIMIT:.1f} % of {LIMIT:.0f}/s; target ≥ 95 %)")
    print(f"lost: {total - len(titles)}   duplicated: {sum(n - 1 for n in titles.values() if n > 1)}   "
          f"429 provoked: {len(rejected)}   limit violations seen: {len(fake.violations)}   "
          f"all posted in time: {posted}")
    print(f"request states: {states}   (submitting all {total} took {submitted:.2f} s; "
          f"CPU busy {100 * busy:.0f} % of the posting time, fake and daemon in one process)")


async def bench_latency(presses: int, mode: str) -> None:
    fake = FakeTelegram(per_chat_interval=0.0)
    await fake.start()
    ann = fake.person(42, "Ann")
    port = free_port() if mode == "webhook" else 0
    routes = [{"match": {}, "notify": ["telegram:42"]}]
    latencies: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        # one chat gets every request here: the 1/s per-chat pacing would only slow the loop down
        daemon = Daemon(settings(Path(tmp), fake, routes, mode=mode, port=port, per_chat_interval=0.0))
        await daemon.start()
        answered_at: dict[str, float] = {}
        feed = daemon.service.changes.subscribe()

        async def watch() -> None:
            while True:
                request: Request = await feed.get()
                if request.state is RequestState.answered:
                    answered_at.setdefault(request.id, time.monotonic())

        watcher = asyncio.create_task(watch())
        try:
            for n in range(presses):
                request, _ = await daemon.service.submit(confirm(f"press {n:04d}"), source="webhook")
                title = f"press {n:04d}"
                await wait_until(lambda t=title: any(t in m["text"] for m in fake.sent_to(42)), 10)
                message = next(m for m in fake.sent_to(42) if title in m["text"])
                update = await ann.press(message, "Approve")
                await wait_until(lambda r=request.id: r in answered_at, 10)
                # let this press's trailing work (answerCallbackQuery, the closing edit, the
                # write-back) finish, so the next press is timed alone, not queued behind it
                await wait_until(lambda k=n: len(fake.calls_of("answerCallbackQuery")) >= k + 1, 5)
                await wait_until(lambda: not daemon.service._tasks, 5)
                sent = fake.delivered_at.get(update["update_id"])
                if sent is not None and request.id in answered_at:
                    latencies.append((answered_at[request.id] - sent) * 1000)
        finally:
            watcher.cancel()
            await daemon.stop()
            await fake.stop()
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"== Button press → answer stored ({mode}) ==")
    print(f"presses: {len(latencies)}/{presses}   p50 {p50:.2f} ms (target ≤ 5)   p99 {p99:.2f} ms (target ≤ 20)   "
          f"max {latencies[-1]:.2f} ms")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--chats", type=int, default=500)
    parser.add_argument("--presses", type=int, default=200)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    await bench_throughput(args.requests, args.chats)
    for mode in ("webhook", "polling"):
        await bench_latency(args.presses, mode)


if __name__ == "__main__":
    asyncio.run(main())
