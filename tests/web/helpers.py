"""A person in a browser, without the browser: an httpx client that keeps cookies, reads the
CSRF token from each page and posts the forms the inbox serves."""

from __future__ import annotations

import html
import re
from typing import Any

import httpx

from bridge.daemon import Daemon

CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')

CONFIRM = {"title": "Deploy api v2 to production", "questions": [
    {"id": "ok", "kind": "confirm", "prompt": "Deploy now?"}]}
CHOICE = {"title": "Pick a region", "questions": [
    {"id": "region", "kind": "choice", "prompt": "Which region?", "options": ["eu-west-1", "us-east-1"]}]}
MULTI = {"title": "Grant access", "questions": [
    {"id": "systems", "kind": "multi_choice", "prompt": "Which systems?", "options": ["crm", "vpn", "billing"]}]}
TEXT = {"title": "Reply to customer", "questions": [
    {"id": "reply", "kind": "text", "prompt": "What should I say?"}]}
SECRET = {"title": "Database password", "questions": [
    {"id": "password", "kind": "secret", "prompt": "Password for db-staging?"}]}
FORM = {"title": "Onboard vendor", "questions": [
    {"id": "vendor", "kind": "form", "prompt": "Vendor details", "fields": [
        {"name": "company", "label": "Company"},
        {"name": "tier", "label": "Tier", "options": ["basic", "gold"]},
        {"name": "notes", "label": "Notes", "required": False, "multiline": True}]}]}
EDIT = {"title": "Review tool call", "questions": [
    {"id": "args", "kind": "edit", "prompt": "Check the arguments", "default": {"replicas": 3, "image": "api:2"}}]}
MIXED = {"title": "Release checklist", "questions": [
    {"id": "ok", "kind": "confirm", "prompt": "Ship it?"},
    {"id": "region", "kind": "choice", "prompt": "Region?", "options": ["eu", "us"]},
    {"id": "note", "kind": "text", "prompt": "Note?", "required": False}]}


def csrf_of(page: str) -> str:
    match = CSRF_RE.search(page)
    assert match, "no CSRF token in the page"
    return html.unescape(match.group(1))


def text_of(page: str) -> str:
    """The page's visible text, roughly (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


class Person:
    """Browses the inbox over HTTP like a browser without JS would."""

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        self.http = httpx.AsyncClient(base_url=base_url, follow_redirects=False, timeout=10, **kwargs)
        self.csrf = ""

    async def __aenter__(self) -> Person:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def get(self, path: str, **kwargs: Any) -> httpx.Response:
        response = await self.http.get(path, **kwargs)
        if response.status_code == 200 and "csrf" in response.text:
            self.csrf = csrf_of(response.text)
        return response

    async def open(self, request_id: str) -> httpx.Response:
        response = await self.get(f"/inbox/r/{request_id}")
        assert response.status_code == 200, response.text
        return response

    async def submit(self, path: str, data: dict[str, Any], *, csrf: str | None = None) -> httpx.Response:
        body = {"csrf": self.csrf if csrf is None else csrf, **data}
        return await self.http.post(path, data=body)

    async def answer(self, request_id: str, data: dict[str, Any]) -> httpx.Response:
        """Open the request (for the CSRF token) and submit its answer form."""
        await self.open(request_id)
        return await self.submit(f"/inbox/r/{request_id}/answer", data)

    async def login(self, secret: str, name: str = "") -> httpx.Response:
        page = await self.get("/inbox/login")
        assert page.status_code == 200, page.text
        return await self.submit("/inbox/login", {"name": name, "secret": secret, "next": "/inbox"})


async def create(bridge: Daemon, body: dict[str, Any], **extra: Any) -> str:
    """Create a request through the normal intake (POST /v1/requests); return its id."""
    headers = extra.pop("headers", {})
    async with httpx.AsyncClient(base_url=bridge.base_url, headers=headers) as client:
        response = await client.post("/v1/requests", json={**body, **extra})
    assert response.status_code == 201, response.text
    request_id: str = response.json()["id"]
    return request_id
