"""Wire everything from Settings and run it: store, adapters, service, outbox, timers, HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import threading
from collections.abc import Awaitable, Generator
from typing import Any

import uvicorn

from bridge.clock import SystemClock
from bridge.config import EMBEDDED, Settings
from bridge.crypto import SecretBox
from bridge.errors import ConfigError
from bridge.eventloop import loop_name
from bridge.http.app import create_app
from bridge.http.connections import (
    ConnectionGuard,
    connection_limit,
    listen_backlog,
    protocol_class,
    quiet_accept_errors,
)
from bridge.outbox import Outbox
from bridge.policy.ruleset import RuleSet
from bridge.ports import Channel, Clock, Source
from bridge.preflight import check_targets, switched_off, unreached_channels
from bridge.registry import build_channels, build_sources
from bridge.reload import NoRules, read_new_config
from bridge.retention import Retention
from bridge.router import Router
from bridge.scheduler import Scheduler
from bridge.service import BridgeService
from bridge.source_watch import SourceWatch
from bridge.store import Store, open_store_from_url, redact_url

log = logging.getLogger("hitl_bridge")

STOP_DEADLINE_S = 10.0  # how long `stop()` waits for the parts before it closes the store anyway
EXIT_GRACE_S = 5.0  # then how long the process may take to end before it is ended
STEP_FLOOR_S = 0.2  # past the deadline, each remaining part still gets this long to close


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the daemon owns SIGINT/SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class Daemon:
    def __init__(self, settings: Settings, *, clock: Clock | None = None, store: Store | None = None,
                 embedded: bool = False, stop_deadline_s: float = STOP_DEADLINE_S) -> None:
        self.settings = settings
        self.stop_deadline_s = stop_deadline_s
        self.clock: Clock = clock or SystemClock()
        self.store = store or open_store_from_url(settings.store.url)
        self.embedded = embedded
        self.channels: list[Channel] = []
        self.sources: list[Source] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self.server: uvicorn.Server | None = None
        self.port: int = settings.http.port
        self._reload_lock = asyncio.Lock()
        self._reloads: set[asyncio.Task[bool]] = set()

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
        check_targets(self.settings, self.channels)  # a target nobody shows is a config error
        for note in switched_off(self.settings):
            log.warning("%s (set it, or remove the section)", note)
        for note in unreached_channels(self.settings, self.channels):
            log.warning("%s", note)
        router = Router(self.settings.routes, self.settings.default_route)
        self.service = BridgeService(
            self.store, router, SecretBox(self.settings.secrets.key), self.clock,
            channels=self.channels, sources={s.name: s for s in self.sources}, people=self.settings.directory,
        )
        self.service.policies = RuleSet(self.settings.policies)
        self.store.watch(self.service.health)  # faults as they happen; the probe on /readyz
        self.store.follow(self.service.changes)  # answers by other processes wake long polls here too
        if self.settings.secrets.key is None:
            log.info("no secrets.key: secret answers are delivered but not kept")
        self.outbox = Outbox(self.service, self.settings.delivery)
        self.scheduler = Scheduler(self.service)
        routes = [r for source in self.sources for r in source.http_routes(self.service)]  # sources feed the core
        routes += [r for channel in self.channels for r in channel.http_routes()]
        self.app = create_app(self.service, self.settings, routes, readiness=self._readiness)
        self.instruments = self.app.state.metrics.instruments
        self.scheduler.observers.append(
            lambda fired: self.instruments.timer_late((fired.fired_at - fired.due_at).total_seconds()))
        for channel in self.channels:
            await channel.start(self.service)
        self._tasks.append(asyncio.create_task(self.outbox.run(), name="outbox"))
        await self.scheduler.start()
        if self.settings.store.retain_closed is not None:
            retention = Retention(self.store, self.settings.store.retain_closed, self.clock,
                                  on_pruned=self.instruments.pruned.inc)
            self._tasks.append(asyncio.create_task(retention.run(), name="retention"))
        for source in self.sources:
            watch = SourceWatch(source, self.service.health)  # restarts it; reports source:<name>
            self._tasks.append(asyncio.create_task(watch.run(self.service), name=f"source:{source.name}"))
        await self.service.repost_pending()
        if serve_http:
            await self._serve()

    def on_sighup(self) -> None:
        """SIGHUP: reload in a task of its own (the signal handler must not wait)."""
        task = asyncio.get_running_loop().create_task(self.reload(), name="reload")
        self._reloads.add(task)
        task.add_done_callback(self._reload_done)

    def _reload_done(self, task: asyncio.Task[bool]) -> None:
        self._reloads.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("reload failed, the running config stays", exc_info=task.exception())

    async def reload(self, env: dict[str, str] | None = None) -> bool:
        """Read the config file again (SIGHUP) and apply routes, responders, people; keep
        the running config when the new one is not valid. True when applied. The file is
        read, parsed and checked in a worker thread, so the event loop keeps answering
        (a slow disk, a huge or hostile document); one reload at a time."""
        if self.settings.origin == EMBEDDED:
            log.warning("reload: running on embedded defaults, there is no config file to read again")
            return False
        async with self._reload_lock:
            current = self.settings
            log.info("reloading config from %s", current.origin, extra={"event": "reloading"})
            try:
                plan = await asyncio.to_thread(read_new_config, current, self.channels, env)
            except ConfigError as exc:
                no_rules = isinstance(exc, NoRules)
                log.error("reload refused, the running config stays: %s", exc,
                          extra={"event": "reload_refused", "reason": "no_rules" if no_rules else "invalid",
                                 "no_limit": True})  # one line per SIGHUP: the operator is waiting for it
                self.instruments.config_reloaded(False, no_rules=no_rules)
                self.service.health.degraded("config", f"the last reload was refused, the running config "
                                             f"stays: {exc}", "fix the file and send SIGHUP again")
                return False
            for section in plan.needs_restart:
                log.warning("reload: %s changed in %s; it takes effect after a restart", section, current.origin,
                            extra={"no_limit": True})
            self.apply(plan.settings)
            self.instruments.config_reloaded(True)
            self.service.health.ok("config", f"reloaded from {current.origin}")
            log.info("config reloaded from %s: %s", current.origin, "; ".join(plan.changes) or "routes unchanged",
                     extra={"event": "reloaded", "changes": plan.changes})
            return True

    def apply(self, settings: Settings) -> None:
        """Swap in validated settings whose non-reloadable sections are the running ones.
        Each swap is one assignment, so a request is routed wholly by the old or the new routes."""
        self.settings = settings
        self.service.router = Router(settings.routes, settings.default_route)
        self.service.people = settings.directory
        self.service.policies = RuleSet(settings.policies)
        self.app.state.settings = settings

    async def _readiness(self) -> dict[str, Any]:
        ready, checks = await self.service.health.ready()
        return {"ready": ready, "channels": [c.name for c in self.channels],
                "sources": [s.name for s in self.sources], "checks": [c.as_dict() for c in checks]}

    async def _serve(self) -> None:
        http = self.settings.http
        quiet_accept_errors()
        self.connections = ConnectionGuard(connection_limit(http.max_connections),
                                           http.read_timeout.total_seconds())
        config = uvicorn.Config(
            self.app, host=http.host, port=http.port,
            log_level="warning", log_config=None,  # uvicorn's lines go through our handler (JSON too)
            lifespan="off", access_log=False, server_header=False,
            timeout_graceful_shutdown=5,
            # X-Forwarded-For/-Proto only from http.trusted_proxies (none: the peer is the client)
            proxy_headers=bool(http.trusted_proxies), forwarded_allow_ips=list(http.trusted_proxies),
            http=protocol_class(self.connections),  # read deadline + connection limit
            timeout_keep_alive=max(1, round(http.keep_alive_timeout.total_seconds())),
            backlog=listen_backlog(),
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
        """Stop everything within `stop_deadline_s`. A part still busy at the deadline (a post
        to a platform that does not answer, a source stuck on a hung filesystem) is named in
        the log and left behind; the store is closed all the same. Nothing acknowledged is
        lost by that: requests, answers and deliveries are committed before they are
        acknowledged, and what was in flight is retried from the store at the next start."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.stop_deadline_s
        overdue: list[str] = []

        async def within(what: str, step: Awaitable[Any]) -> None:
            try:
                await asyncio.wait_for(step, max(deadline - loop.time(), STEP_FLOOR_S))
            except TimeoutError:
                overdue.append(what)
            except Exception:
                log.exception("shutdown: stopping %s failed", what)

        for reload in list(self._reloads):  # a reload still reading its file is abandoned
            reload.cancel()
        self.service.changes.release_waiters()  # long polls answer now, not after the grace period
        if self.server is not None:
            self.server.should_exit = True
        await within("the scheduler", self.scheduler.stop())
        for task in self._tasks:
            if task.get_name() != "http":
                task.cancel()
        if self._tasks:
            done, pending = await asyncio.wait(self._tasks, timeout=max(deadline - loop.time(), STEP_FLOOR_S))
            for task in done:  # retrieved here: a crash was logged where it happened
                if not task.cancelled():
                    task.exception()
            overdue.extend(f"task {task.get_name()}" for task in pending)
        self._tasks.clear()
        await within("background posts and updates", self.service.drain())
        for channel in self.channels:
            await within(f"channel {channel.name}", channel.stop())
        for source in self.sources:
            close = getattr(source, "close", None)
            if close is not None:
                await within(f"source {source.name}", close())
        if overdue:
            log.error("shutdown: still waiting after %.0fs for %s; exiting anyway (everything acknowledged "
                      "is in the store; what was in flight is retried at the next start)",
                      self.stop_deadline_s, ", ".join(overdue))
        await self.store.close()

    async def run_forever(self) -> None:
        import signal

        loop = asyncio.get_running_loop()
        # The port answers before start() returns: a SIGHUP sent as soon as /healthz answers
        # must not kill the daemon (SIGHUP's default). Held until started, then applied.
        held: list[bool] = []
        with contextlib.suppress(NotImplementedError, AttributeError):
            loop.add_signal_handler(signal.SIGHUP, lambda: held.append(True))
        await self.start()
        # What start-up built (modules, schemas, routes: ~100,000 objects) lives as long as
        # the process: set aside, a full garbage collection no longer walks it (~90 ms each,
        # which was the intake's p99 under load)
        gc.collect()
        gc.freeze()
        stop = asyncio.Event()

        def on_signal() -> None:
            if stop.is_set():  # asked twice: no more waiting
                _exit_now("a second stop signal")
            stop.set()
            _exit_after(self.stop_deadline_s + EXIT_GRACE_S)

        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, on_signal)
        with contextlib.suppress(NotImplementedError, AttributeError):
            loop.add_signal_handler(signal.SIGHUP, self.on_sighup)
        if held:
            self.on_sighup()
        # said once the signals are handled: a SIGHUP sent on this line reloads, not kills
        log.info("hitl-bridge listening on %s (store %s, %s event loop)", self.base_url,
                 redact_url(self.settings.store.url), loop_name(loop))
        try:
            await stop.wait()
        finally:
            log.info("shutting down (at most %.0fs)", self.stop_deadline_s)
            await self.stop()


def _exit_after(seconds: float) -> None:
    """The last guarantee that a stop signal ends the process: a daemon thread that exits it
    if `stop()` and the interpreter's own teardown (which joins worker threads, possibly
    stuck in a hung filesystem call) have not finished after `seconds`."""
    timer = threading.Timer(seconds, _exit_now, args=(f"shutdown still not done after {seconds:.0f}s",))
    timer.daemon = True
    timer.start()


def _exit_now(why: str) -> None:
    log.critical("%s: exiting now", why)
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    os._exit(1)
