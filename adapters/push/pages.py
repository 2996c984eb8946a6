"""The inbox as an installable app, and where a person turns notifications on.

- `/inbox/manifest.webmanifest`, `/inbox/sw.js` (the service worker, scope `/inbox/`) and
  the icons make the inbox installable; the service worker shows the pushed
  notifications and POSTs a button's decision (adapters.taps).
- `/inbox/push` lists the signed-in person's devices; its script subscribes this browser
  with the daemon's VAPID public key and sends the subscription to
  `POST /inbox/push/devices` (JSON, with the page's CSRF token in `X-CSRF-Token`).
  `POST /inbox/push/devices/off` turns one device off (a form).

Pages use the web inbox's logins, sessions and CSRF (adapters.web.auth); a device belongs
to the inbox login that turned it on, which is the push handle (`web:ana` → `push:ana`).
The shared password and API tokens are nobody in particular: they cannot turn it on.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jinja2 import ChoiceLoader, FileSystemLoader
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from adapters.push.settings import PushSettings
from adapters.push.subscriptions import BadSubscription, Devices, device_name, parse_subscription
from adapters.web.auth import Viewer
from adapters.web.render import SECURITY_HEADERS, browser_id, is_secure, read_form, redirect

if TYPE_CHECKING:
    from adapters.web import WebChannel
    from bridge.ports import Clock

STATIC = Path(__file__).parent / "static"
TEMPLATES = Path(__file__).parent / "templates"
MAX_SUBSCRIPTION = 4096
CSRF_HEADER = "x-csrf-token"


def push_login(viewer: Viewer) -> str | None:
    """The push handle's id of an inbox viewer, or None for one who is nobody in particular."""
    if viewer.platform != "web" or viewer.shared:
        return None
    return viewer.identity


def manifest(title: str) -> dict[str, Any]:
    return {
        "name": title, "short_name": "Approvals", "start_url": "/inbox", "scope": "/inbox/", "id": "/inbox",
        "display": "standalone", "background_color": "#ffffff", "theme_color": "#1f4fd1",
        "icons": [{"src": f"/inbox/push-static/icon-{size}.png", "sizes": f"{size}x{size}", "type": "image/png",
                   "purpose": "any maskable"} for size in (192, 512)],
    }


class PushHost(Protocol):
    """What the pages need of the push channel: the inbox it lives in, its devices, its key."""

    settings: PushSettings
    clock: Clock
    devices: Devices

    @property
    def web(self) -> WebChannel: ...

    @property
    def public_key(self) -> str: ...


class PushPages:
    def __init__(self, channel: PushHost) -> None:
        self.channel = channel
        self._loader_set = False

    def routes(self) -> Sequence[BaseRoute]:
        return [
            Route("/inbox/manifest.webmanifest", self.manifest, methods=["GET"]),
            Route("/inbox/sw.js", self.service_worker, methods=["GET"]),
            Route("/inbox/push-static/{name}", self.static, methods=["GET"]),
            Route("/inbox/push", self._guard(self.page), methods=["GET"]),
            Route("/inbox/push/devices", self._guard(self.subscribe), methods=["POST"]),
            Route("/inbox/push/devices/off", self._guard(self.turn_off), methods=["POST"]),
        ]

    # plumbing -----------------------------------------------------------------------------
    @property
    def web(self) -> WebChannel:
        return self.channel.web

    def _guard(self, handler: Callable[[Request, Viewer], Awaitable[Response]]
               ) -> Callable[[Request], Awaitable[Response]]:
        async def guarded(request: Request) -> Response:
            viewer = await self.web.auth.viewer(request)
            if viewer is None:
                if request.method == "GET":
                    return redirect("/inbox/login?next=/inbox/push")
                return JSONResponse({"error": "log in first"}, status_code=401)
            return await handler(request, viewer)
        return guarded

    def _page(self, request: Request, viewer: Viewer, status: int = 200, **context: Any) -> Response:
        render = self.web.inbox.render
        if not self._loader_set:  # our template extends the inbox's base.html
            render.env.loader = ChoiceLoader([FileSystemLoader(TEMPLATES), render.env.loader])  # type: ignore[list-item]
            self._loader_set = True
        browser, cookies = browser_id(request, self.web.auth)
        return render.page("push.html", status=status, cookies=cookies, secure=is_secure(request),
                           csrf=self.web.auth.csrf_token(browser), viewer=viewer, open_mode=self.web.auth.open,
                           **context)

    # the installable app ------------------------------------------------------------------
    async def manifest(self, request: Request) -> Response:
        return Response(json.dumps(manifest(self.web.config.title)), media_type="application/manifest+json",
                        headers={"Cache-Control": "no-cache"})

    async def service_worker(self, request: Request) -> Response:
        headers = {"Cache-Control": "no-cache", "Service-Worker-Allowed": "/inbox/",
                   "X-Content-Type-Options": "nosniff"}
        return FileResponse(STATIC / "sw.js", media_type="text/javascript", headers=headers)

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        files = {p.name: p for p in STATIC.iterdir() if p.name != "sw.js"}
        if name not in files:
            return Response("not found", status_code=404)
        return FileResponse(files[name], headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"})

    # the person's devices -----------------------------------------------------------------
    async def page(self, request: Request, viewer: Viewer) -> Response:
        login = push_login(viewer)
        now = self.channel.clock.now()
        devices = await self.channel.devices.of(login) if login else []
        gone = await self.channel.devices.gone(now, login) if login else []
        return self._page(request, viewer, login=login or "", devices=devices, gone=gone,
                          public_key=self.channel.public_key, max_devices=self.channel.settings.max_devices,
                          done=request.query_params.get("done", "") in ("off",), device_name=device_name)

    async def subscribe(self, request: Request, viewer: Viewer) -> Response:
        if not self.web.auth.csrf_ok(request, viewer, request.headers.get(CSRF_HEADER)):
            return JSONResponse({"error": "this page is stale: reload it and try again"}, status_code=403)
        login = push_login(viewer)
        if login is None:
            return JSONResponse({"error": "log in with your own inbox token: the shared password and API tokens "
                                          "are nobody in particular"}, status_code=403)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_SUBSCRIPTION:
                return JSONResponse({"error": "the subscription is too large"}, status_code=413)
        try:
            data = json.loads(body)
            device = parse_subscription(data, login, self.channel.settings.push_services,
                                        added=self.channel.clock.now().isoformat(),
                                        agent=request.headers.get("user-agent", ""))
            await self.channel.devices.add(device, self.channel.settings.max_devices)
        except (ValueError, UnicodeDecodeError) as exc:
            message = str(exc) if isinstance(exc, BadSubscription) else "send the subscription as JSON"
            return JSONResponse({"error": message}, status_code=422 if isinstance(exc, BadSubscription) else 400)
        return JSONResponse({"ok": True, "device": device.key.partition(" ")[2], "push": f"push:{login}"},
                            status_code=201, headers=SECURITY_HEADERS)

    async def turn_off(self, request: Request, viewer: Viewer) -> Response:
        form = await read_form(request) or {}
        given = (form.get("csrf") or [""])[0]
        login = push_login(viewer)
        if not self.web.auth.csrf_ok(request, viewer, given) or login is None:
            return self._page(request, viewer, status=403, login=login or "", devices=[], gone=[],
                              public_key=self.channel.public_key, max_devices=self.channel.settings.max_devices,
                              done=False, device_name=device_name)
        device = (form.get("device") or [""])[0][:64]
        await self.channel.devices.remove(login, f"{login} {device}")
        return redirect("/inbox/push?done=off")
