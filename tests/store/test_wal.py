"""The SQLite WAL stays bounded under writes that never pause (a PASSIVE checkpoint alone
never catches up with them: the WAL grew to 1.14 GB in a 60,000-request soak), and is
truncated once the writes stop."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bridge.store.sqlite import SQLiteStore
from bridge.store.sqlite_wal import HARD_LIMIT, SOFT_LIMIT, wal_of
from tests.harness import wait_for

CHUNK = 64 * 1024
TARGET = 64 * 1024 * 1024  # the bound through the soak


async def test_wal_stays_bounded_under_nonstop_writes(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "bridge.db")
    await store.open()
    wal = wal_of(store.path)
    sizes: list[int] = []
    try:
        async def writer(w: int) -> None:
            for n in range(340):  # 4 writers x 340 x 64 KiB: 85 MiB, well past every limit
                await store.kv_put("soak", f"{w}-{n}", {"blob": "x" * CHUNK})
                sizes.append(wal.stat().st_size)

        await asyncio.gather(*(writer(w) for w in range(4)))
        assert max(sizes) <= TARGET, f"WAL reached {max(sizes) / 2**20:.1f} MiB"
        assert max(sizes) <= HARD_LIMIT + 4 * CHUNK * 2  # at most one batch of writes past the hard limit
        assert any(size > SOFT_LIMIT for size in sizes)  # the test did push it past the soft limit
        # once writes stop it is given back to the disk, not kept until a clean shutdown
        await wait_for(lambda: wal.stat().st_size == 0, timeout=30)
        assert len(await store.kv_items("soak")) == 4 * 340
    finally:
        await store.close()
