"""Wire everything from Settings and run it: store, adapters, service, outbox, timers, HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Generator
from typing import Any

import uvicorn

from bridge.clock import SystemClock
from bridge.config import Settings
from bridge.crypto import SecretBox
from bridge.errors import ConfigError
from bridge.http.app import create_app
from bridge.outbox import Outbox
from bridge.ports import Channel, Clock, Source
from bridge.registry import build_channels, build_sources
from bridge.router import Router
from bridge.scheduler import Scheduler
from bridge.service import BridgeService
from bridge.store import Store, open_store_from_url, redact_url

log = logging.getLogger("hitl_bridge")


def unrouted_targets(settings: Settings, channels: list[Channel]) -> list[str]:
    """Targets named in routes that no configured channel owns."""
    router = Router(settings.routes, settings.default_route)
    return sorted(t for t in router.all_targets() if not any(c.owns(t) for c in channels))


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the daemon owns SIGINT/SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class Daemon:
    def __init__(self, settings: Settings, *, clock: Clock | None = None, store: Store | None = None,
                 embedded: bool = False) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self.store = store or open_store_from_url(settings.store.url)
        self.embedded = embedded
        self.channels: list[Channel] = []
        self.sources: list[Source] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self.server: uvicorn.Server | None = None
        self.port: int = settings.http.port

    def check_listen(self) -> None:
        http = self.settings.http
        if not http.loopback_only and not http.api_tokens:
            raise ConfigError(self.settings.origin, "http.listen",
                              f"listening on {http.host} (beyond loopback) needs http.api_tokens")

    async def start(self, *, serve_http: bool = True) -> None:
        """Open the store, build and start everything; on any failure, undo what was started."""
        self.check_listen()
        await self.store.open()
        try:
            await self._start(serve_http)
        except BaseException:
            await self._abort()
            raise

    async def _abort(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks.clear()
        for channel in self.channels:
            with contextlib.suppress(Exception):
                await channel.stop()
        await self.store.close()

    async def _start(self, serve_http: bool) -> None:
        self.channels = build_channels(self.settings, self.store, self.clock)
        self.sources = build_sources(self.settings, self.store, self.clock,
                                     optional=frozenset({"delta"}) if self.embedded else frozenset())
        for target in unrouted_targets(self.settings, self.channels):
            log.warning("target %s has no configured channel: requests routed there are not shown "
                        "(configure its channel or fix the route)", target)
        router = Router(self.settings.routes, self.settings.default_route)
        self.service = BridgeService(
            self.store, router, SecretBox(self.settings.secrets.key), self.clock,
            channels=self.channels, sources={s.name: s for s in self.sources},
        )
        self.store.watch(self.service.health)  # faults as they happen; the probe on /readyz
        if self.settings.secrets.key is None:
            log.info("no secrets.key: secret answers are delivered but not kept")
        self.outbox = Outbox(self.service, self.settings.delivery)
        self.scheduler = Scheduler(self.service)
        routes = [r for source in self.sources for r in source.http_routes()]
        routes += [r for channel in self.channels for r in channel.http_routes()]
        self.app = create_app(self.service, self.settings, routes, readiness=self._readiness)
        for channel in self.channels:
            await channel.start(self.service)
        self._tasks.append(asyncio.create_task(self.outbox.run(), name="outbox"))
        await self.scheduler.start()
        for source in self.sources:
            self._tasks.append(asyncio.create_task(self._run_source(source), name=f"source:{source.name}"))
        await self.service.repost_pending()
        if serve_http:
            await self._serve()

    async def _run_source(self, source: Source) -> None:
        delay = 1.0
        while True:
            try:
                await source.run(self.service)
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("source %s crashed; restarting in %.0fs", source.name, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 60)

    async def _readiness(self) -> dict[str, Any]:
        ready, checks = await self.service.health.ready()
        return {"ready": ready, "channels": [c.name for c in self.channels],
                "sources": [s.name for s in self.sources], "checks": [c.as_dict() for c in checks]}

    async def _serve(self) -> None:
        config = uvicorn.Config(
            self.app, host=self.settings.http.host, port=self.settings.http.port,
            log_level="warning", lifespan="off", access_log=False, server_header=False,
            timeout_graceful_shutdown=5,
        )
        self.server = _Server(config)
        task = asyncio.create_task(self._serve_guarded(self.server), name="http")
        self._tasks.append(task)
        while not self.server.started:
            if task.done():
                task.result()
                raise OSError(f"could not listen on {self.settings.http.listen} (is the port in use?)")
            await asyncio.sleep(0.01)
        sockets = self.server.servers[0].sockets if self.server.servers else []
        if sockets:
            self.port = sockets[0].getsockname()[1]

    async def _serve_guarded(self, server: uvicorn.Server) -> None:
        try:
            await server.serve()
        except SystemExit:  # uvicorn exits the process when it cannot bind; report it instead
            raise OSError(f"could not listen on {self.settings.http.listen} (is the port in use?)") from None

    @property
    def base_url(self) -> str:
        host = self.settings.http.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    async def stop(self) -> None:
        self.service.changes.release_waiters()  # long polls answer now, not after the grace period
        if self.server is not None:
            self.server.should_exit = True
        await self.scheduler.stop()
        for task in self._tasks:
            if task.get_name() != "http":
                task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        await self.service.drain()
        for channel in self.channels:
            with contextlib.suppress(Exception):
                await channel.stop()
        for source in self.sources:
            close = getattr(source, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()
        await self.store.close()

    async def run_forever(self) -> None:
        await self.start()
        log.info("hitl-bridge listening on %s (store %s)", self.base_url, redact_url(self.settings.store.url))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        import signal

        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            log.info("shutting down")
            await self.stop()
