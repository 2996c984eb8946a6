"""`hitl-bridge demo`: a bridge with the web inbox, a handful of realistic requests created
through the normal HTTP intake, and a local callback receiver that prints each outcome.

Everything listens on loopback only. Secret answers reach the receiver (that is the point)
but are never printed. The demo keeps its requests in a temporary store (removed when it
stops) unless given another, and cancels those still open when it stops, so nothing is
left waiting for a receiver that no longer exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import signal
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hitl_bridge_client import AsyncClient, BridgeError, verify_callback
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route as HttpRoute

from bridge.config import EMBEDDED, Settings
from bridge.config_daemon import HttpSettings
from bridge.config_routes import Route
from bridge.errors import ConfigError
from bridge.http.listen import port_taken
from bridge.http.loopback import serving

Out = Callable[[str], None]

DEMO_ROUTES: list[dict[str, Any]] = [
    {"name": "demo-deploy", "match": {"demo": "deploy"}, "notify": ["web"], "quorum": 1, "timeout": "2h",
     "on_timeout": {"answer": "no"}},
    {"name": "demo-escalate", "match": {"demo": "escalate"}, "notify": ["web"], "timeout": "1h",
     "escalate": [{"after": "30s", "notify": ["web"]}]},
    {"name": "demo", "match": {"demo": "*"}, "notify": ["web"], "timeout": "1h"},
]


def demo_requests() -> list[dict[str, Any]]:
    """The requests the demo creates (native model, DESIGN §3), one per kind of question."""
    return [
        {"key": "deploy", "title": "Deploy payments-api v2.14.0 to production",
         "description": "All checks passed on staging. The release agent is waiting for one approval.",
         "engine": "delta", "workspace": "/srv/agents/release/workspaces/deploy-payments", "agent": "release-bot",
         "tool": "kubectl_apply", "labels": {"demo": "deploy", "team": "payments"},
         "context": {"image": "registry.example.com/payments-api:2.14.0", "replicas": 6,
                     "changes": ["retry idempotent refunds", "bump TLS library", "new /v2/payouts endpoint"]},
         "questions": [{"id": "approve", "kind": "confirm",
                        "prompt": "Deploy payments-api v2.14.0 to production now?"}]},
        {"key": "choice", "title": "Pick the canary region", "agent": "release-bot", "labels": {"demo": "choice"},
         "questions": [{"id": "region", "kind": "choice", "prompt": "Which region gets the canary first?",
                        "options": ["eu-west-1", "us-east-1", "ap-southeast-2"]}]},
        {"key": "text", "title": "Reply to a customer about a late refund", "agent": "support-agent",
         "labels": {"demo": "text"}, "context": {"ticket": "SUP-4821", "customer": "ACME GmbH", "days_late": 4},
         "questions": [{"id": "reply", "kind": "text", "prompt": "What should I tell the customer?",
                        "help_text": "Plain text; the agent sends it as is."}]},
        {"key": "secret", "title": "Staging database password needed", "agent": "migration-agent",
         "labels": {"demo": "secret"},
         "questions": [{"id": "password", "kind": "secret",
                        "prompt": "Password for db-staging (user migrator)?"}]},
        {"key": "form", "title": "Onboard a new vendor", "agent": "procurement-agent", "labels": {"demo": "form"},
         "questions": [
             {"id": "vendor", "kind": "form", "prompt": "Vendor details",
              "fields": [{"name": "company", "label": "Company"},
                         {"name": "contact", "label": "Contact e-mail"},
                         {"name": "tier", "label": "Support tier", "options": ["basic", "gold", "platinum"]},
                         {"name": "notes", "label": "Notes", "required": False, "multiline": True}]},
             {"id": "systems", "kind": "multi_choice", "prompt": "Which systems may they access?",
              "options": ["billing", "crm", "data-warehouse", "vpn"]},
             {"id": "terraform", "kind": "edit", "prompt": "Review the generated Terraform variables",
              "default": {"vendor_name": "new-vendor", "sso": True, "seats": 5}},
         ]},
        {"key": "escalate", "title": "Rotate the leaked billing webhook key?", "agent": "security-agent",
         "labels": {"demo": "escalate"}, "context": {"found_in": "public gist", "key_prefix": "whk_live_8f"},
         "questions": [{"id": "rotate", "kind": "confirm",
                        "prompt": "Rotate the key now? (escalates after 30 s without an answer)"}]},
    ]


def demo_settings(settings: Settings, listen: str | None, store_url: str | None = None) -> Settings:
    """The user's settings plus the demo routes, the webhook intake and the web inbox;
    `store_url` replaces the store."""
    demo = settings.model_copy(deep=True)
    if store_url is not None:
        demo.store.url = store_url
    if listen:
        try:
            HttpSettings.model_validate({"listen": listen})  # the same check the config file gets
        except ValidationError:
            raise ConfigError("--listen", "", f"expected host:port such as 127.0.0.1:0, got {listen!r}") from None
        demo.http.listen = listen
    if not any(s.get("type") == "webhook" for s in demo.sources):
        demo.sources.append({"type": "webhook"})
    demo.set_section("web", {**(demo.section("web") or {}), "enabled": True})
    if demo.http.callback_allow or not demo.http.loopback_only:  # its receiver is on 127.0.0.1
        demo.http.callback_allow = [*(demo.http.callback_allow or ["*"]), "127.0.0.1"]
    demo.routes = [Route.model_validate(r) for r in DEMO_ROUTES] + list(demo.routes)
    demo.origin = settings.origin
    return demo


@dataclass
class Receiver:
    """The demo's stand-in for an engine: checks each callback and prints it (secrets hidden)."""

    secret: str
    out: Out
    secret_ids: set[str]
    titles: dict[str, str] = field(default_factory=dict)  # bridge request id → title
    received: dict[str, dict[str, Any]] = field(default_factory=dict)
    url: str = ""

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        if not verify_callback(self.secret, request.headers, body):
            self.out("callback REFUSED: bad signature")
            return JSONResponse({"error": "bad signature"}, status_code=401)
        try:
            payload = json.loads(body)
        except ValueError:
            return JSONResponse({"error": "not JSON"}, status_code=400)
        request_id = str(payload.get("request_id"))
        self.received[request_id] = payload
        self.out(self.describe(payload))
        return JSONResponse({"ok": True})

    def describe(self, payload: dict[str, Any]) -> str:
        title = self.titles.get(str(payload.get("request_id")), str(payload.get("request_id")))
        answer = payload.get("answer")
        if not answer:
            return f"callback received (signature ok): {title!r} → {payload.get('state')}" + (
                f" ({payload['reason']})" if payload.get("reason") else "")
        shown = {k: (f"[secret received: {len(str(v))} characters]" if k in self.secret_ids else v)
                 for k, v in (answer.get("values") or {}).items()}
        who = (answer.get("responder") or {}).get("name") or (answer.get("responder") or {}).get("user_id")
        return (f"callback received (signature ok): {title!r} → {payload.get('state')}: "
                f"{json.dumps(shown, ensure_ascii=False)} by {who} via {answer.get('via')}")


@contextlib.asynccontextmanager
async def serve_receiver(receiver: Receiver) -> AsyncIterator[Receiver]:
    app = Starlette(routes=[HttpRoute("/callback", receiver.handle, methods=["POST"])])
    async with serving(app, "the demo callback receiver") as port:
        receiver.url = f"http://127.0.0.1:{port}/callback"
        yield receiver


async def create_requests(client: AsyncClient, receiver: Receiver) -> list[str]:
    """POST every demo request to the bridge's own intake; return their ids."""
    run = secrets.token_hex(3)
    ids = []
    for spec in demo_requests():
        body = {k: v for k, v in spec.items() if k != "key"}
        body["external_id"] = f"demo-{run}-{spec['key']}"
        body["callback"] = {"url": receiver.url, "secret": receiver.secret}
        request_id = await client.create(body)
        receiver.titles[request_id] = str(spec["title"])
        ids.append(request_id)
    return ids


async def run_demo(settings: Settings, *, listen: str | None = None, out: Out = print,
                   stop: asyncio.Event | None = None, exit_when_done: bool = False,
                   store_url: str | None = None) -> int:
    """Start the bridge and the receiver, create the requests, wait for `stop` (or Ctrl-C, or
    every callback when `exit_when_done`), then cancel what is still open. The store is a
    temporary one unless `store_url` names another."""
    with tempfile.TemporaryDirectory(prefix="hitl-bridge-demo-") as scratch:
        url = store_url or f"sqlite:///{Path(scratch) / 'demo.db'}"
        return await _run(demo_settings(settings, listen, url), settings, out, stop or asyncio.Event(),
                          exit_when_done, temporary=store_url is None)


async def _run(demo: Settings, settings: Settings, out: Out, stop: asyncio.Event, exit_when_done: bool, *,
               temporary: bool) -> int:
    from bridge.daemon import Daemon

    secret_ids = {q["id"] for spec in demo_requests() for q in spec["questions"] if q["kind"] == "secret"}
    receiver = Receiver(secret=secrets.token_urlsafe(32), out=out, secret_ids=secret_ids)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    problem = port_taken(demo.http.host, demo.http.port)
    if problem:
        out(f"demo: cannot listen on {demo.http.listen} ({problem}): is `hitl-bridge serve` running? "
            "Try `hitl-bridge demo --listen 127.0.0.1:0`.")
        return 1
    async with serve_receiver(receiver):
        daemon = Daemon(demo, embedded=settings.origin == EMBEDDED)
        try:
            await daemon.start()
        except BaseException:
            await _stop_quietly(daemon)
            raise
        client = AsyncClient(daemon.base_url, token=demo.http.first_token or "", unavailable_after=5)
        ids: list[str] = []
        try:
            ids = await create_requests(client, receiver)
            where = "a temporary store, removed when the demo stops" if temporary else demo.store.url
            out(f"demo: created {len(ids)} requests in {where}; callbacks go to {receiver.url}")
            out(f"demo: open the inbox at {daemon.base_url}/inbox")
            token = " (with HITL_BRIDGE_TOKEN set to one of your tokens)" if demo.http.api_tokens else ""
            out(f"demo: or answer them in a terminal: hitl-bridge inbox --url {daemon.base_url}{token}")
            web = demo.section("web") or {}
            if web.get("password") or web.get("tokens") or demo.http.api_tokens:
                out("demo: log in with web.password (and your name) or one of your tokens")
            out("demo: each outcome is printed here. Ctrl-C stops.")
            while not stop.is_set():
                if exit_when_done and all(i in receiver.received for i in ids):
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=0.2)
        finally:
            await _wind_down(client, daemon, ids, out)
            await client.aclose()
            await daemon.stop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.remove_signal_handler(sig)
    out("demo: stopped")
    return 0


async def _wind_down(client: AsyncClient, daemon: Any, ids: list[str], out: Out) -> None:
    """Cancel the demo's requests that are still open, and give the deliveries under way
    (to the receiver, which is still up) a moment to land."""
    cancelled = 0
    for request_id in ids:
        with contextlib.suppress(BridgeError):  # closed meanwhile: nothing to cancel
            view = await client.get(request_id)
            if view.get("state") in ("pending", "posted"):
                await client.cancel(request_id, "the demo stopped", actor="demo")
                cancelled += 1
    if cancelled:
        out(f"demo: cancelled {cancelled} open request(s)")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while loop.time() < deadline:
        pending = [i for i in ids for item in await daemon.store.list_outbox(request_id=i) if not item.dead]
        if not pending:
            return
        await asyncio.sleep(0.05)
    out(f"demo: {len(set(pending))} outcome(s) still undelivered to the demo receiver")


async def _stop_quietly(daemon: Any) -> None:
    """Undo a half-done start (the store may be open, some tasks running)."""
    if not hasattr(daemon, "service"):
        with contextlib.suppress(Exception):
            await daemon.store.close()
        return
    with contextlib.suppress(Exception):
        await daemon.stop()
