"""Logging for the daemon and the CLI: one setup, plain text or JSON lines, and repeats held back.

A hostile or broken input can make the same warning fire hundreds of times a second (a
mailbox file rewritten in a loop, a flood of half-open connections). `RepeatLimiter` lets
the first occurrence of a message through, holds back identical ones for `window_s`, and
then says how many it held back, so the log stays readable and the disk stays free.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Literal, TextIO

LogFormat = Literal["text", "json"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: libraries whose INFO lines are noise for an operator (one per HTTP call, per scheduler tick)
#: (a channel's own libraries are named in its spec and quieted when it is built: bridge.registry)
QUIET_LIBRARIES = ("httpx", "httpcore", "apscheduler", "aiosqlite", "asyncio",
                   "hpack", "watchfiles", "mcp", "aiosmtplib", "aiosmtpd", "mail.log")
#: our own loggers keep the configured level; every other library logs WARNING and above only
#: (an INFO line from a library, e.g. a retry when Slack is unreachable, is not for operators)
OWN_LOGGERS = ("hitl_bridge", "bridge", "adapters")
_INSTALLED_MARK = "_hitl_bridge_handler"


class RepeatLimiter(logging.Filter):
    """Let through the first record of each (logger, level, message template, args) in every
    `window_s`; count the ones held back and report the count with the next one let through.

    Records at ERROR and above are limited too (a traceback per request is the worst flood),
    but each distinct message still appears at least once per window. A record with a
    `limit_key` extra is compared by that key instead of its arguments.
    """

    def __init__(self, window_s: float = 60.0, max_keys: int = 4096, clock: Any = time.monotonic) -> None:
        super().__init__()
        self.window_s = window_s
        self.max_keys = max_keys
        self._clock = clock
        self._seen: OrderedDict[tuple[Any, ...], list[float]] = OrderedDict()  # key -> [first_at, held]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or getattr(record, "no_limit", False):
            return True
        try:  # `limit_key` (an `extra`) groups lines that differ only by request id: same target, same error
            limited = getattr(record, "limit_key", None)
            args = _hashable(limited) if limited is not None else _hashable(record.args)
            key = (record.name, record.levelno, str(record.msg), args)
        except Exception:  # an unhashable argument: never drop what cannot be compared
            return True
        now = self._clock()
        with self._lock:
            entry = self._seen.get(key)
            if entry is not None and now - entry[0] < self.window_s:
                entry[1] += 1
                return False
            held = int(entry[1]) if entry is not None else 0
            self._seen[key] = [now, 0]
            self._seen.move_to_end(key)
            while len(self._seen) > self.max_keys:
                self._seen.popitem(last=False)
        if held:
            record.msg = f"{record.msg} (repeated {held} more time(s) in the last {self.window_s:.0f}s)"
        return True


def _hashable(args: Any) -> Any:
    if isinstance(args, dict):
        return tuple(sorted((str(k), repr(v)) for k, v in args.items()))
    if isinstance(args, tuple):
        return tuple(repr(a) for a in args)
    return repr(args)


def _json_formatter() -> logging.Formatter:
    from pythonjsonlogger.core import RESERVED_ATTRS
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter(  # extras (request_id, event, …) become keys; limit_key is the limiter's own
        "%(asctime)s %(levelname)s %(name)s %(message)s",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        timestamp=False,
        reserved_attrs=[*RESERVED_ATTRS, "limit_key"],
    )


class TextFormatter(logging.Formatter):
    """The text lines' formatter: the time's text made once a second, not once a line."""

    _second = -1
    _text = ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        second = int(record.created)
        if second != self._second or datefmt is not None:
            self._text = super().formatTime(record, datefmt).rsplit(",", 1)[0]
            self._second = second
        return f"{self._text},{int(record.msecs):03d}"


def cheap_records() -> None:
    """A log record gathers nothing the lines do not show (logging's own "Optimization" advice):
    no thread, process or multiprocessing names, no walk up the stack for the caller's file
    and line. The daemon logs two INFO lines per request it takes in (bridge.lifecycle)."""
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None  # documented: skips sys._getframe per record


def configure_logging(level: str = "INFO", fmt: LogFormat = "text", *, stream: TextIO | None = None,
                      repeat_window_s: float = 60.0) -> logging.Handler:
    """Install one handler on the root logger (replacing an earlier one of ours): `text` or
    `json` lines, identical warnings held back per `repeat_window_s`, our loggers at `level`
    and every library at WARNING (unless `level` is DEBUG). Returns the handler (tests read
    what it wrote)."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _INSTALLED_MARK, False)]:
        root.removeHandler(old)
    handler = logging.StreamHandler(stream or sys.stderr)
    setattr(handler, _INSTALLED_MARK, True)
    handler.setFormatter(_json_formatter() if fmt == "json" else TextFormatter(TEXT_FORMAT))
    cheap_records()
    handler.addFilter(RepeatLimiter(repeat_window_s))
    root.setLevel(level.upper())
    if root.level > logging.DEBUG:  # -vv (DEBUG): the libraries' lines too
        handler.addFilter(OwnInfoOnly())
    root.addHandler(handler)
    quiet_libraries(QUIET_LIBRARIES)
    return handler


def quiet_libraries(names: Iterable[str]) -> None:
    """Let these libraries' loggers pass WARNING and above only (unless we log at DEBUG)."""
    if logging.getLogger().level <= logging.DEBUG:
        return
    for name in names:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET or logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)


class OwnInfoOnly(logging.Filter):
    """Below WARNING, only our own loggers' lines pass: any library's INFO line (a retry while
    Slack is unreachable, a connection opened) is not for operators."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or record.name.split(".", 1)[0] in OWN_LOGGERS
