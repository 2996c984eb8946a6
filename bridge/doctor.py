"""`hitl-bridge doctor`: check what is live, one line per check with the fix.

It reads the config and checks, without a running daemon: the HTTP settings, the store
(opened and written), dead letters, every route target against the configured channels,
each channel against its platform (the channel's own `doctor()`: Slack `auth.test`, the
scopes the config needs, membership of each channel; Telegram `getMe`, each chat), and
each engine source's reachability. When the daemon answers at `http.listen` (or
`daemon_url`), its `/readyz` checks and what its sources cannot show are added.

No argparse here: the CLI (or anything else) calls `diagnose()` and renders the result.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import httpx

from bridge.clock import SystemClock
from bridge.config import Settings
from bridge.durations import format_duration
from bridge.errors import ConfigError
from bridge.models import utcnow
from bridge.ports import Channel, Source
from bridge.preflight import route_targets, switched_off, target_errors, unreached_channels
from bridge.store import Store, open_store_from_url, redact_url

Status = Literal["ok", "warn", "fail", "info"]
MARKS: dict[str, str] = {"ok": "[ok]", "warn": "[warn]", "fail": "[FAIL]", "info": "[--]"}
DOCTOR_NS = "doctor"


@dataclass(frozen=True)
class Finding:
    """One check: `fail` makes doctor exit 1; `warn` is shown but passes; `info` is a note."""

    check: str
    status: Status
    detail: str = ""
    fix: str = ""

    def line(self) -> str:
        text = f"{MARKS[self.status]} {self.check}" + (f": {self.detail}" if self.detail else "")
        return text + (f" — fix: {self.fix}" if self.fix and self.status != "ok" else "")


def ok(check: str, detail: str = "") -> Finding:
    return Finding(check, "ok", detail)


def fail(check: str, detail: str, fix: str = "") -> Finding:
    return Finding(check, "fail", detail, fix)


def warn(check: str, detail: str, fix: str = "") -> Finding:
    return Finding(check, "warn", detail, fix)


def info(check: str, detail: str) -> Finding:
    return Finding(check, "info", detail)


# running all checks --------------------------------------------------------------------
async def diagnose(settings: Settings, *, daemon_url: str | None = None, token: str | None = None,
                   timeout_s: float = 10.0) -> list[Finding]:
    """Every check, in order: config, http, store, targets, channels, sources, daemon."""
    findings = [ok("config", settings.origin)]
    findings.append(_http(settings))
    store = open_store_from_url(settings.store.url)
    store_ok = await _store(store, settings, findings)
    try:
        findings += await _parts(settings, store)
    finally:
        if store_ok:
            await store.close()
    findings += await daemon_checks(daemon_url or local_url(settings), token or settings.http.first_token,
                                    timeout_s=timeout_s)
    return findings


def _http(settings: Settings) -> Finding:
    http = settings.http
    detail = f"listen {http.listen}, {len(http.api_tokens)} API token(s)"
    if not http.loopback_only and not http.api_tokens:
        return fail("http", detail + ": listening beyond loopback without tokens is refused",
                    "set http.api_tokens (e.g. [\"${BRIDGE_API_TOKEN}\"]) or listen on 127.0.0.1")
    return ok("http", detail)


async def _store(store: Store, settings: Settings, findings: list[Finding]) -> bool:
    where = redact_url(settings.store.url)
    missing = _missing_sqlite(settings.store.url)
    if missing is not None:  # checked, not created: doctor run in another folder leaves nothing behind
        findings.append(missing)
        return False
    try:
        await store.open()
    except Exception as exc:
        findings.append(fail("store", f"{where}: cannot open: {type(exc).__name__}: {exc}",
                             "check store.url, that the database runs and accepts this user, "
                             "and that the directory of a SQLite file is writable"))
        return False
    try:
        now = utcnow()
        await store.kv_put(DOCTOR_NS, "write-check", {"at": now.isoformat()}, expires_at=now + timedelta(minutes=1))
        await store.kv_delete(DOCTOR_NS, "write-check")
        counts = await store.count_by_state()
    except Exception as exc:
        findings.append(fail("store", f"{where}: opened but cannot write: {type(exc).__name__}: {exc}",
                             "check disk space, file permissions (SQLite) or the user's grants (PostgreSQL)"))
        return True
    findings.append(ok("store", f"{where} writable ({sum(counts.values())} request(s))"))
    findings.append(_retention(settings, counts))
    try:
        dead = await store.list_outbox(dead=True)
    except Exception as exc:
        findings.append(fail("deliveries", f"cannot list the outbox: {exc}"))
        return True
    if dead:
        ids = ", ".join(sorted({d.request_id for d in dead})[:5])
        findings.append(warn("deliveries", f"{len(dead)} dead-lettered ({ids}{', …' if len(dead) > 5 else ''})",
                             "see why with `hitl-bridge show ID`; fix the engine, then `hitl-bridge redeliver ID`"))
    else:
        findings.append(ok("deliveries", "none dead-lettered"))
    return True


#: closed requests kept beyond this many with no retention set: doctor suggests one
MANY_CLOSED = 1_000_000


def _retention(settings: Settings, counts: dict[str, int]) -> Finding:
    keep = settings.store.retain_closed
    closed = sum(n for state, n in counts.items() if state not in ("pending", "posted"))
    if keep is not None:
        return ok("retention", f"closed requests last changed over {format_duration(keep)} ago are pruned "
                               f"({closed:,} closed now; metric hitl_requests_pruned)")
    if closed > MANY_CLOSED:
        return warn("retention", f"off: {closed:,} closed requests kept",
                    "set store.retain_closed (e.g. 90d) to prune closed requests past it")
    return ok("retention", f"off: closed requests are kept ({closed:,}); store.retain_closed prunes them")


def _missing_sqlite(url: str) -> Finding | None:
    """For a SQLite file that does not exist yet: whether `serve` could create it."""
    if not url.startswith("sqlite:///") or url == "sqlite:///:memory:":
        return None
    path = Path(url.removeprefix("sqlite:///"))
    if path.exists():
        return None
    parent = next((p for p in path.absolute().parents if p.exists()), Path("/"))
    if os.access(parent, os.W_OK):
        return info("store", f"{path} does not exist yet: `serve` creates it (run doctor in the daemon's "
                             "folder, or with its config, to check the store it uses)")
    return fail("store", f"{path} does not exist and {parent} is not writable",
                "point store.url at a writable place, or fix the permissions")


async def _parts(settings: Settings, store: Store) -> list[Finding]:
    from bridge.registry import build_channels, build_sources

    try:
        channels = build_channels(settings, store, SystemClock())
        sources = build_sources(settings, store, SystemClock(), optional=frozenset({"delta"}))
    except ConfigError as exc:
        return [fail("config", str(exc), "fix the key named above")]
    findings = [ok("channels", ", ".join(c.name for c in channels) or "none"),
                ok("sources", ", ".join(s.name for s in sources) or "none")]
    findings += [warn("channels", note, "set it, or remove the section") for note in switched_off(settings)]
    findings += [warn("channels", note) for note in unreached_channels(settings, channels)]
    errors = target_errors(settings, channels)
    findings += [fail(e.target, f"{e.problem}, named in {e.key}", e.fix) for e in errors]
    if not errors:
        findings.append(ok("targets", "every route target has a channel"))
    findings += await channel_checks(settings, channels, store)
    findings += await rota_checks(settings)
    for source in sources:
        findings += await source_checks(source)
    for source in sources:
        close = getattr(source, "close", None)
        if close is not None:
            try:
                await close()
            except Exception:  # a check must never fail on cleanup
                pass
    return findings


async def rota_checks(settings: Settings, now: datetime | None = None) -> list[Finding]:
    """Each on-call rota: who is on call now, and for an iCalendar feed whether it reads and
    parses (a feed the daemon cannot read keeps its last good copy there, or reaches nobody)."""
    if not settings.rotas:
        return []
    from bridge.oncall_feeds import Feeds

    feeds = Feeds()
    await feeds.fresh(settings.rotas)
    problems = feeds.problems()
    now = now or utcnow()
    findings: list[Finding] = []
    for name, rota in settings.rotas.items():
        check = f"rota {name}"
        if rota.ical is not None and rota.ical in problems:
            findings.append(fail(check, problems[rota.ical],
                                 "fix the feed (the path or URL in rotas." + name + ".ical, or the calendar itself); "
                                 "until then oncall:" + name + " reaches nobody, or whoever the last good copy names"))
            continue
        person = settings.directory.on_call(name, now, feeds.calendar(rota.ical) if rota.ical else None)
        source = "its feed" if rota.ical else "the rotation"
        if person is None:
            findings.append(warn(check, f"nobody is on call now by {source}",
                                 f"oncall:{name} reaches nobody until someone's turn: check the calendar or turns"))
        else:
            findings.append(ok(check, f"{person} is on call now (by {source})"))
    return findings


async def channel_checks(settings: Settings, channels: Sequence[Channel], store: Store) -> list[Finding]:
    """Each channel's own `doctor(targets, responders, store)` (optional on the port)."""
    targets = list(dict.fromkeys(t for _, t in route_targets(settings)))
    responders = list(dict.fromkeys(r for route in [*settings.routes, settings.default_route]
                                    for r in route.responders))
    findings: list[Finding] = []
    for channel in channels:
        check = getattr(channel, "doctor", None)
        if check is None:
            continue
        mine = [t for t in targets if channel.owns(t)]
        theirs = [r for r in responders if channel.owns(r)]
        try:
            findings += await check(mine, theirs, store)
        except Exception as exc:  # a broken check is a finding, not a crash
            findings.append(fail(f"{channel.name}", f"the check itself failed: {type(exc).__name__}: {exc}"))
    return findings


async def source_checks(source: Source) -> list[Finding]:
    """A source's own `doctor()` if it has one; else, for engine sources that call an
    engine over HTTP, whether the engine answers at its base URL."""
    own = getattr(source, "doctor", None)
    if own is not None:
        try:
            found: list[Finding] = await own()
            return found
        except Exception as exc:
            return [fail(f"source {source.name}", f"the check itself failed: {type(exc).__name__}: {exc}")]
    client = engine_client(source)
    if client is None:
        return [ok(f"source {source.name}", "no engine URL to reach")]
    return [await reachability(source.name, client)]


def engine_client(source: Source) -> httpx.AsyncClient | None:
    for candidate in (getattr(source, "http", None), getattr(getattr(source, "client", None), "http", None)):
        if isinstance(candidate, httpx.AsyncClient) and str(candidate.base_url).strip("/"):
            return candidate
    return None


async def reachability(name: str, client: httpx.AsyncClient) -> Finding:
    """Any HTTP answer means the engine is there; 401/403 means it refuses our credentials."""
    url = redact_url(str(client.base_url))
    check = f"source {name}"
    try:
        response = await client.get("/", timeout=5.0)
    except httpx.TimeoutException:
        return fail(check, f"{url} did not answer within 5 s", f"check that the engine runs and sources[…] "
                    f"base_url of {name!r} is right")
    except httpx.HTTPError as exc:
        return fail(check, f"{url} unreachable ({type(exc).__name__})",
                    f"start the engine, or fix the base_url of source {name!r}")
    if response.status_code in (401, 403):
        return fail(check, f"{url} refused our credentials (HTTP {response.status_code})",
                    f"check the token/headers of source {name!r}")
    return ok(check, f"{url} answers (HTTP {response.status_code})")


# the running daemon ------------------------------------------------------------------------
def local_url(settings: Settings) -> str:
    host = settings.http.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.http.port}"


async def daemon_checks(base_url: str, token: str | None, *, timeout_s: float = 10.0) -> list[Finding]:
    """What the running daemon says: its /readyz checks and its sources' problems."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout_s) as client:
        try:
            live = await client.get("/healthz", timeout=min(timeout_s, 2.0))
        except httpx.HTTPError:
            return [info("daemon", f"not running at {base_url} (checked the config, store and platforms only)")]
        if live.status_code != 200:
            return [fail("daemon", f"{base_url}/healthz answered HTTP {live.status_code}")]
        findings = [ok("daemon", f"answering at {base_url}")]
        findings += await _readiness(client)
        findings += await _running_sources(client)
    return findings


async def _readiness(client: httpx.AsyncClient) -> list[Finding]:
    try:
        response = await client.get("/readyz")
        body = response.json()
    except (httpx.HTTPError, ValueError):
        return [fail("daemon readyz", "no readable answer from /readyz")]
    if not isinstance(body, dict):
        return [fail("daemon readyz", "no readable answer from /readyz")]
    findings = [ok("daemon readyz", "ready") if response.status_code == 200 else
                fail("daemon readyz", f"not ready (HTTP {response.status_code}): "
                     + "; ".join(str(r) for r in body.get("reasons", [])[:5]))]
    marks: dict[str, Status] = {"ok": "ok", "degraded": "warn", "failing": "fail"}
    for check in body.get("checks", []) if isinstance(body.get("checks"), list) else []:
        if isinstance(check, dict):
            findings.append(Finding(f"daemon {check.get('component')}", marks.get(str(check.get("status")), "warn"),
                                    str(check.get("summary", "")), str(check.get("fix", ""))))
    return findings


async def _running_sources(client: httpx.AsyncClient) -> list[Finding]:
    """What the running daemon's sources cannot show right now (GET /v1/sources)."""
    try:
        response = await client.get("/v1/sources")
        sources = response.json()["sources"] if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        sources = None
    if not isinstance(sources, list):
        return [fail("daemon sources", "the daemon did not say how its sources are (GET /v1/sources)")]
    findings = []
    for source in sources:
        count = int(source.get("problem_count", 0))
        shown = "; ".join(f"{p['where']}: {p['reason']}" for p in source.get("problems", [])[:3])
        more = f" (and {count - 3} more: GET /v1/sources)" if count > 3 else ""
        findings.append(ok(f"source {source.get('name')}", "every engine request is shown") if count == 0 else
                        fail(f"source {source.get('name')}", f"{count} problem(s): {shown}{more}"))
    return findings


# output ----------------------------------------------------------------------------------
def render_text(findings: Sequence[Finding]) -> str:
    return "\n".join(f.line() for f in findings)


def render_json(findings: Sequence[Finding]) -> str:
    body: dict[str, Any] = {"ok": exit_code(findings) == 0,
                            "checks": [{k: v for k, v in asdict(f).items() if v != ""} for f in findings]}
    return json.dumps(body, indent=2)


def exit_code(findings: Sequence[Finding]) -> int:
    return 1 if any(f.status == "fail" for f in findings) else 0
