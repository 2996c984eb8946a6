"""Whether the daemon (or the demo) can listen where it is told, checked before starting:
uvicorn would exit the whole process with a traceback instead of a one-line reason."""

from __future__ import annotations

import os
import socket


def port_taken(host: str, port: int) -> str | None:
    """Why `host:port` cannot be bound right now, else None (port 0 is always free)."""
    if port == 0:
        return None
    try:
        with socket.create_server((host, port)):
            return None
    except OSError as exc:
        return os.strerror(exc.errno) if exc.errno else str(exc)
