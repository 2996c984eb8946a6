"""Changes other processes commit to the SQLite file (`hitl-bridge answer --offline`, a second
daemon on the same file): one cheap watcher for every waiter.

`PRAGMA data_version` on the daemon's own (writing) connection changes only when ANOTHER
connection commits, so this process's own writes never look foreign. While somebody waits,
it is read every FOLLOW_EVERY_S (one hop into the store's thread); when it moved, one query
finds which waited requests are no longer open and their waiters are woken. With nobody
waiting the watcher sleeps on an event and costs nothing.

No wake-up is missed: a waiter registers before reading its request; the version is read
before the waited ids are taken, so a commit after that read is seen at the next tick, and
one before it is seen by the query (or by the waiter's own read, if it registered later).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from bridge.store.base import ChangeSink, StoreError

log = logging.getLogger("hitl_bridge.store")

FOLLOW_EVERY_S = 0.1  # how stale a foreign answer may be, at ~0.1 ms of CPU per tick


async def follow(data_version: Callable[[], Awaitable[int]],
                 closed_among: Callable[[Sequence[str]], Awaitable[list[str]]],
                 sink: ChangeSink, every_s: float = FOLLOW_EVERY_S) -> None:
    last: int | None = None
    while True:
        await sink.until_waited()
        try:
            version = await data_version()
            if last is not None and version != last:
                waited = sink.waited_ids()
                sink.changed_elsewhere(await closed_among(waited) if waited else ())
            last = version
        except asyncio.CancelledError:
            raise
        except StoreError:
            pass  # reported by the store (health, log); the next tick tries again
        except Exception:
            log.exception("watching the store for changes by other processes failed; trying again")
        await asyncio.sleep(every_s)
