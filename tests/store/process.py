"""`hitl-bridge serve` as a real child process (to be killed with SIGKILL in crash tests)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path


async def start_daemon(config: Path, cwd: Path) -> tuple[asyncio.subprocess.Process, str]:
    """Start the daemon on `config`; return it and its base URL once it listens."""
    exe = Path(sys.executable).parent / "hitl-bridge"
    proc = await asyncio.create_subprocess_exec(str(exe), "-c", str(config), "serve", cwd=cwd,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    assert proc.stdout is not None
    seen = []
    while True:
        line = (await asyncio.wait_for(proc.stdout.readline(), timeout=60)).decode()
        seen.append(line)
        if not line:
            proc.kill()
            raise AssertionError(f"the daemon ended before listening: {''.join(seen)}")
        if "listening on " in line:
            return proc, line.split("listening on ", 1)[1].split()[0]
