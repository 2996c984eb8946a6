"""The `delta` source: watch many workspaces' mailboxes, feed requests, write answers back.

File events (watchfiles) make a request show up within milliseconds; a periodic rescan
catches what events miss (network filesystems, watch limits, new folders racing the
watcher). Every request is keyed by the engine's own `request_id`, so the store never
holds it twice: not after a restart, not when the file is rewritten, not when two
roots overlap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from adapters.delta.config import DeltaConfig
from adapters.delta.layout import REQUEST_FILE
from adapters.delta.mailbox import FileStamp, MailboxError, MailboxGone, read_request
from adapters.delta.offload import STALL_AFTER_S, LookGuard, in_thread
from adapters.delta.problems import Problems, health_summary, stalled_reason
from adapters.delta.roots import MissingRoot, expand
from adapters.delta.scanner import Sighting, WorkspaceView, scan_workspace
from adapters.delta.translate import mailbox_from_ref
from adapters.delta.watcher import Changes, DirWatcher
from adapters.delta.watchplan import Marks, WatchPlan
from adapters.delta.writeback import AnswerWriter
from bridge.doctor import Finding, fail, ok
from bridge.errors import BridgeError
from bridge.models import OPEN_STATES, RequestState
from bridge.ports import Outcome, RequestSink
from bridge.store.query import RequestQuery

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from bridge.health import Health

log = logging.getLogger("hitl_bridge.delta")

RETRY_DELAY_S = 0.05
SUBMIT_RETRY_S = 1.0
SCAN_CHUNK = 500
GONE_REASON = ("request.json disappeared: the run no longer waits for this answer "
               "(answered outside the bridge, or the run or workspace was removed)")
REPLACED_REASON = "the run asked something else: request.json now holds a newer request"
ROOTS_SCOPE = "roots"


@dataclass
class _Track:
    """What the source knows about one mailbox folder."""

    workspace: str
    request_id: str | None = None
    bad_since: float | None = None  # when its request.json was first seen unreadable


class DeltaSource:
    """Implements bridge.ports.Source for Delta Engine file mailboxes (PROTOCOLS §1)."""

    def __init__(self, config: DeltaConfig, *, cwd: str | None = None, deliver_window_s: float = 9.0,
                 stall_after_s: float = STALL_AFTER_S) -> None:
        self.config = config
        self.name: str = config.name
        self.writer = AnswerWriter(
            self.name, config.resume_command, resume_shell=config.resume_shell,
            resume_timeout_s=config.resume_timeout.total_seconds(), deliver_window_s=deliver_window_s,
            note=self._note, wrote_before=self._wrote_response, reason_line=config.reason_line,
        )
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self._problems = Problems()
        self.guard = LookGuard(self._stalled, self._recovered, stall_after_s)
        self._missing: list[MissingRoot] = []
        self._roots: dict[str, str] = {}  # workspace → the resolved fixed folder of its root
        self._plan = WatchPlan()
        self._sink: RequestSink | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._dirty: set[str] = set()
        self._roots_dirty = False
        self._settled: dict[str, FileStamp | None] = {}
        self._tracks: dict[str, _Track] = {}
        self._ws_keys: dict[str, set[str]] = {}
        self._workspaces: list[str] = []
        self._watcher: DirWatcher | None = None
        self._live: set[str] = set()
        self.scans = 0
        self.expansions = 0  # how often the roots were expanded (a busy ancestor must not drive it)

    # Source -------------------------------------------------------------------------------
    def http_routes(self, sink: RequestSink) -> Sequence[BaseRoute]:
        return []

    @property
    def problems(self) -> dict[str, str]:
        """path → why it is not shown (read by GET /v1/sources, /metrics and doctor)."""
        return self._problems.as_dict()

    @property
    def component(self) -> str:
        return f"source:{self.name}"

    async def doctor(self) -> list[Finding]:
        """`hitl-bridge doctor`: does every root's fixed folder exist?"""
        expansion = await in_thread(expand, self.config.roots, self.cwd)
        check = f"source {self.name}"
        findings = [fail(check, missing.describe(), "create the folder, or fix the root in sources[].roots")
                    for missing in expansion.missing]
        findings += [fail(check, f"{path}: {why}", "keep workspaces inside their root (no links out of it)")
                     for path, why in expansion.refused.items()]
        return findings or [ok(check, f"{len(expansion.workspaces)} workspace(s) under "
                                      f"{len(self.config.roots)} root(s)")]

    async def run(self, sink: RequestSink) -> None:
        """Reconcile with the store, scan everything, then follow events and rescans."""
        self._sink = sink
        self._loop = asyncio.get_running_loop()
        if self.config.watch:
            self._watcher = DirWatcher(self._on_changes, step_ms=self.config.watch_step_ms,
                                       force_polling=self.config.force_polling)
        try:
            await self._withdraw_vanished()
            await self.rescan()
            self._report_health()
            rescanner = asyncio.create_task(self._rescan_forever(), name=f"{self.name}:rescan")
            try:
                await self._process_forever()
            finally:
                rescanner.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await rescanner
        finally:
            await self.close()

    async def close(self) -> None:
        """Stop watching; resume commands still running are stopped too."""
        await self.writer.close()
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            await in_thread(watcher.close)

    async def deliver(self, outcome: Outcome) -> None:
        """Write the answer to `response.txt`, then run `resume_command` once if set."""
        await self.writer.deliver(outcome)

    async def _wrote_response(self, request_id: str) -> bool:
        """Whether an earlier delivery attempt wrote this request's `response.txt`."""
        store = getattr(self._sink, "store", None)
        if store is None:
            return False
        try:
            return any(e.kind == "response_written" for e in await store.list_events(request_id))
        except Exception:
            log.exception("delta: cannot read the events of %s", request_id)
            return False

    async def _note(self, request_id: str, kind: str, data: dict[str, Any]) -> None:
        note = getattr(self._sink, "note", None)
        if note is None:
            return
        try:
            await note(request_id, kind, self.name, data)
        except Exception:
            log.exception("delta: cannot record %s for %s", kind, request_id)

    # watching ---------------------------------------------------------------------------
    def _on_changes(self, changes: Changes) -> None:
        """Called from the watcher thread."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._mark_paths, [path for _, path in changes])

    def _mark_paths(self, paths: Iterable[str]) -> None:
        self._take(self._plan.mark(paths))

    def _take(self, marks: Marks) -> None:
        self._roots_dirty = self._roots_dirty or marks.roots
        self._dirty |= marks.workspaces
        if self._dirty or self._roots_dirty:
            self._wake.set()

    def _mark_workspace(self, workspace: str) -> None:
        self._dirty.add(workspace)
        self._wake.set()

    async def _process_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            async with self._lock:
                if self._roots_dirty:
                    self._roots_dirty = False
                    await self._expand_roots()
                batch, self._dirty = self._dirty, set()
                if batch:
                    await self._scan(sorted(batch))
                await self._refresh_watcher()

    async def _rescan_forever(self) -> None:
        interval = self.config.rescan_every.total_seconds()
        while True:
            await asyncio.sleep(interval)
            try:
                await self.rescan()
            except Exception:
                log.exception("delta: periodic rescan failed; trying again in %.0fs", interval)

    async def rescan(self) -> None:
        """Look at every workspace of every root (the safety net under file events)."""
        async with self._lock:
            previous = list(self._workspaces)
            await self._expand_roots()
            everything = list(dict.fromkeys(self._workspaces + previous))
            self._dirty.difference_update(everything)
        for start in range(0, len(everything), SCAN_CHUNK):
            async with self._lock:
                await self._scan(everything[start:start + SCAN_CHUNK])
        async with self._lock:
            await self._refresh_watcher(tidy=True)

    async def _expand_roots(self) -> None:
        expansion = await in_thread(expand, self.config.roots, self.cwd)
        self.expansions += 1
        known = set(self._workspaces)
        for workspace in expansion.workspaces:
            if workspace not in known:
                self._dirty.add(workspace)
        for workspace in known - set(expansion.workspaces):
            self._dirty.add(workspace)  # gone: one more look reports its requests as gone
        self._workspaces = expansion.workspaces
        self._roots = expansion.roots
        self._live = set(expansion.workspaces)
        self._problems.replace(ROOTS_SCOPE, expansion.refused)
        self._plan.set_roots(expansion)
        if expansion.missing != self._missing:
            self._missing = expansion.missing
            self._report_health()
        if self._dirty:
            self._wake.set()

    async def _scan(self, workspaces: list[str]) -> None:
        views = await self.guard.map(self._look_at, workspaces)
        self.scans += 1
        for view in views:
            if view is not None:
                await self._apply(view)

    def _look_at(self, workspace: str) -> WorkspaceView | None:
        """One workspace, in a worker thread (see LookGuard)."""
        try:
            return scan_workspace(workspace, self._settled, self._roots.get(workspace))
        except Exception:  # never let one odd workspace stop the others
            log.exception("delta: cannot scan %s", workspace)
            return None

    # health ---------------------------------------------------------------------------------
    @property
    def health(self) -> Health | None:
        health: Health | None = getattr(self._sink, "health", None)
        return health

    @property
    def trouble(self) -> tuple[str, str] | None:
        """(summary, fix) while a root's fixed folder is missing or a workspace does not answer;
        the source watch's probe reports the same, so every reader of the health agrees."""
        return health_summary(self._missing, sorted(self.guard.stalled))

    def _report_health(self) -> None:
        """`source:<name>` is degraded while a root's fixed folder is missing or a workspace
        does not answer (the registry logs each change once)."""
        health = self.health
        if health is None:
            return
        trouble = self.trouble
        if trouble is None:
            health.ok(self.component)
        else:
            health.degraded(self.component, *trouble)

    def _stalled(self, workspace: str) -> None:
        self._problems.replace(f"stalled:{workspace}", {workspace: stalled_reason(self.guard.stall_after_s)})
        self._report_health()

    def _recovered(self, workspace: str) -> None:
        self._problems.replace(f"stalled:{workspace}", {})
        self._report_health()
        self._mark_workspace(workspace)

    # applying what a look found ---------------------------------------------------------------
    async def _apply(self, view: WorkspaceView) -> None:
        workspace = view.workspace
        for sighting in view.sightings:
            try:
                await self._apply_sighting(workspace, sighting)
            except Exception:
                log.exception("delta: cannot handle %s", sighting.mailbox.request_path)
        for key in self._ws_keys.get(workspace, set()) - view.present:
            track = self._tracks.pop(key, None)
            self._settled.pop(key, None)
            self._problems.clear(os.path.join(key, REQUEST_FILE))
            if track is not None and track.request_id:
                await self._withdraw(track.request_id, GONE_REASON, key)
        live = workspace in self._live
        if view.present and live:
            self._ws_keys[workspace] = view.present
        else:
            self._ws_keys.pop(workspace, None)
        self._problems.replace(workspace, view.refused if live else {})
        self._plan.set_workspace(workspace, view.watch if live else [])

    async def _apply_sighting(self, workspace: str, sighting: Sighting) -> None:
        key = sighting.key
        track = self._tracks.setdefault(key, _Track(workspace))
        path = sighting.mailbox.request_path
        if sighting.stamp is None:
            self._settled.pop(key, None)
            self._problems.clear(path)
            track.bad_since = None
            if track.request_id:
                old, track.request_id = track.request_id, None
                await self._withdraw(old, GONE_REASON, key)
            return
        if sighting.error is not None:
            error = sighting.error
            now = time.monotonic()
            if error.retryable:
                # Measured from the first bad read, not the latest write: a file rewritten
                # forever without ever parsing is reported after settle_time all the same.
                if track.bad_since is None:
                    track.bad_since = now
                settle = self.config.settle_time.total_seconds()
                if now - track.bad_since < settle:
                    self._settled[key] = None  # read it again, soon
                    assert self._loop is not None
                    self._loop.call_later(RETRY_DELAY_S, self._mark_workspace, workspace)
                    return
                if sighting.request_in is None:
                    self._problems.report(path, f"{error.reason}, and stayed so for {settle:g} s; "
                                                "skipped until it changes", error.kind)
            else:
                self._problems.report(path, f"{error.reason}; skipped until it changes", error.kind)
            if sighting.request_in is None:
                self._settled[key] = sighting.stamp
                return
            log.info("delta: %s: %s; submitting without it", path, error.reason)
        assert sighting.request is not None and sighting.request_in is not None
        self._settled[key] = sighting.stamp
        track.bad_since = None
        self._problems.clear(path)
        request_id = sighting.request.request_id
        if request_id == track.request_id:
            return  # rewritten with the same request_id: already in the bridge
        if track.request_id:
            await self._withdraw(track.request_id, REPLACED_REASON, key)
        track.request_id = request_id
        assert self._sink is not None
        try:
            await self._sink.submit(sighting.request_in, source=self.name, source_ref=sighting.ref)
        except (ValueError, BridgeError) as exc:  # refused as it is: wait for the file to change
            self._problems.report(path, f"refused by the bridge: {exc}", "refused")
        except Exception as exc:  # the store is unavailable: nothing is lost, try again soon
            log.warning("delta: %s: cannot store request %s yet (%s); retrying", path, request_id, exc)
            track.request_id = None
            self._settled[key] = None
            assert self._loop is not None
            self._loop.call_later(SUBMIT_RETRY_S, self._mark_workspace, workspace)

    async def _withdraw(self, request_id: str, reason: str, where: str) -> None:
        assert self._sink is not None
        try:
            withdrawn = await self._sink.withdraw(self.name, request_id, reason)
        except Exception:
            log.exception("delta: cannot withdraw %s (%s)", request_id, where)
            return
        if withdrawn is not None and withdrawn.state is RequestState.cancelled:
            log.info("delta: %s: request %s withdrawn: %s", where, request_id, reason)

    async def _withdraw_vanished(self) -> None:
        """Requests left open by an earlier run of the daemon whose file went away meanwhile."""
        store = getattr(self._sink, "store", None)
        if store is None:
            return
        async for batch in store.pages(RequestQuery(states=tuple(OPEN_STATES), source=self.name)):
            for request in batch:
                try:
                    mailbox = mailbox_from_ref(request.source_ref)
                    current = await asyncio.wait_for(in_thread(read_request, mailbox), self.guard.stall_after_s)
                    still = current.request_id == request.external_id
                except MailboxGone:
                    still = False
                except (KeyError, ValueError, TypeError, MailboxError, TimeoutError):
                    still = True  # unreadable right now (being rewritten? hung?): the scan decides
                if not still and request.external_id:
                    await self._withdraw(request.external_id, GONE_REASON, str(request.source_ref.get("mailbox")))

    async def _refresh_watcher(self, *, tidy: bool = False) -> None:
        """Bring the watched folders up to date (`tidy`: also fold new ones into the large
        notifier, which briefly holds the GIL; done on periodic rescans only)."""
        if self._watcher is None or not (self._plan.stale or tidy):
            return
        self._plan.stale = False
        before = self._watcher.paths
        update = self._watcher.tidy if tidy else self._watcher.replace
        watched = await in_thread(update, self._plan.folders)
        self._take(self._plan.newly_watched(watched - before))
