"""Make the documentation's pictures of the web inbox: a daemon on loopback with realistic requests
(open, approved, rejected, answered), photographed by headless Chromium (Debian's
/usr/bin/chromium, driven by Playwright) as a person logged in as `ana` sees them.

    .venv/bin/python scripts/screenshots.py            # writes docs/inbox-*.png
    .venv/bin/python scripts/screenshots.py --serve    # keeps the daemon up to look around

Writes docs/inbox-desktop.png (1280 wide: list and request side by side),
docs/inbox-phone.png and docs/inbox-phone-detail.png (390×844), docs/inbox-dark.png
(desktop, dark mode), docs/inbox-grant-buttons.png (a tool call with the standing-approval
buttons next to Approve; docs/inbox-phone-grants.png on a phone) and
docs/inbox-standing-approvals.png (the page that lists and revokes them).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bridge.config import Settings  # noqa: E402
from bridge.daemon import Daemon  # noqa: E402
from bridge.models import Responder  # noqa: E402
from bridge.policy import GrantChoice, GrantScope  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ANA_TOKEN = "ana-inbox-token-0123456789"
DOCS = ROOT / "docs"

DEPLOY = {
    "title": "Deploy payments-api v2.14.0 to production",
    "description": ("All checks passed on **staging**. This release:\n\n"
                    "- retries idempotent refunds\n- bumps the TLS library\n- adds `/v2/payouts`\n\n"
                    "[Release notes](https://git.example.com/payments/releases/v2.14.0)"),
    "agent": "release-bot", "engine": "delta", "tool": "kubectl_apply", "labels": {"team": "payments"},
    "context": {"image": "registry.example.com/payments-api:2.14.0", "replicas": 6,
                "rollout": {"strategy": "canary", "steps": [10, 50, 100], "pause": "5m"},
                "tests": {"passed": 1843, "failed": 0}},
    "responders": ["group:oncall"], "timeout_s": 1800,
    "questions": [{"id": "approve", "kind": "confirm", "prompt": "Deploy payments-api v2.14.0 to production now?"}],
}
OPEN = [
    {"title": "Reply to a customer about a late refund", "agent": "support-agent",
     "description": "ACME GmbH asked for the third time. Their refund is **4 days late**.",
     "context": {"ticket": "SUP-4821", "customer": "ACME GmbH", "days_late": 4},
     "responders": ["person:ana"], "timeout_s": 5400,
     "questions": [{"id": "reply", "kind": "text", "prompt": "What should I tell the customer?"}]},
    {"title": "Review the arguments of kubectl scale", "agent": "ops-agent", "tool": "kubectl_scale",
     "description": "The agent wants to scale the batch workers before the nightly import.",
     "timeout_s": 3600,
     "questions": [{"id": "args", "kind": "edit", "prompt": "Check the arguments",
                    "default": {"deployment": "batch-worker", "namespace": "jobs", "replicas": 12}}]},
    {"title": "Pick the canary region", "agent": "release-bot", "timeout_s": 2700,
     "questions": [{"id": "region", "kind": "choice", "prompt": "Which region gets the canary first?",
                    "options": ["eu-west-1", "us-east-1", "ap-southeast-2"]}]},
]
CLOSED: list[tuple[dict[str, Any], Responder, str, dict[str, Any], str | None]] = [
    ({"title": "Rotate the billing webhook key", "agent": "security-agent",
      "questions": [{"id": "ok", "kind": "confirm", "prompt": "Rotate it now?"}]},
     Responder(platform="slack", user_id="U0BO", name="bo"), "slack", {"ok": "no"}, "change freeze until Monday"),
    ({"title": "Onboard Globex as a vendor", "agent": "procurement-agent",
      "questions": [{"id": "vendor", "kind": "form", "prompt": "Vendor details", "fields": [
          {"name": "company", "label": "Company"}, {"name": "tier", "label": "Support tier",
                                                    "options": ["basic", "gold"]}]}]},
     Responder(platform="web", user_id="ana", name="ana"), "web",
     {"vendor": {"company": "Globex", "tier": "gold"}}, None),
    ({"title": "Drop the staging read replica", "agent": "cost-agent",
      "questions": [{"id": "ok", "kind": "confirm", "prompt": "Drop it?"}]},
     Responder(platform="telegram", user_id="42", name="ana"), "telegram", {"ok": "yes"}, None),
]


def tool_call(command: str, tool: str = "Bash", **context: Any) -> dict[str, Any]:
    """A Claude Code permission prompt, as the MCP tool `permission_prompt` files it."""
    return {"title": f"Claude Code wants to run {tool}: {command}", "agent": "claude-code", "engine": "claude",
            "tool": tool, "session": "7f3c-session", "workspace": "/home/ana/src/shop",
            "context": {"command": command, **context},
            "questions": [{"id": "approve", "kind": "confirm", "prompt": "Allow this call?"}]}


GRANTED: list[tuple[dict[str, Any], GrantChoice]] = [
    (tool_call("npm test -- --watch=false"), GrantChoice(scope=GrantScope.always)),
    (tool_call("https://docs.stripe.com/api", tool="WebFetch"), GrantChoice(scope=GrantScope.span, span_s=3600)),
    (tool_call("./src/cart.ts", tool="Edit"), GrantChoice(scope=GrantScope.session)),
]
ASKED = tool_call("npm install stripe@14", description="Adds the Stripe SDK to package.json.")


def settings(tmp: Path) -> Settings:
    return Settings.model_validate({
        "store": {"url": f"sqlite:///{tmp}/bridge.db"},
        "http": {"listen": "127.0.0.1:0"},
        "sources": [{"type": "webhook"}],
        "web": {"tokens": {"ana": ANA_TOKEN}, "title": "Acme agents"},
        "people": {"ana": ["web:ana", "slack:U0ANA", "telegram:42"], "bo": ["slack:U0BO"]},
        "groups": {"oncall": ["ana", "bo"]},
        "routes": [{"name": "deploys", "match": {"labels.team": "payments"}, "notify": ["web"], "quorum": 2}],
    })


async def fill(daemon: Daemon) -> dict[str, str]:
    ids: dict[str, str] = {}
    async with httpx.AsyncClient(base_url=daemon.base_url) as api:
        for body, responder, via, values, reason in CLOSED:
            created = (await api.post("/v1/requests", json=body)).raise_for_status().json()
            await daemon.service.answer(created["id"], responder, values, via=via, reason=reason)
        for body in reversed(OPEN):
            ids[body["title"]] = (await api.post("/v1/requests", json=body)).raise_for_status().json()["id"]
        ids["deploy"] = (await api.post("/v1/requests", json=DEPLOY)).raise_for_status().json()["id"]
    bo = Responder(platform="slack", user_id="U0BO", name="bo")
    await daemon.service.answer(ids["deploy"], bo, {"approve": "yes"}, via="slack")  # 1 of 2 votes
    ana = Responder(platform="web", user_id="ana", name="ana", person="ana")
    async with httpx.AsyncClient(base_url=daemon.base_url) as api:
        for body, choice in GRANTED:
            made = (await api.post("/v1/requests", json=body)).raise_for_status().json()
            await daemon.service.answer(made["id"], ana, {"approve": "yes"}, via="web", grant=choice)
        ids["tool"] = (await api.post("/v1/requests", json=ASKED)).raise_for_status().json()["id"]
    await daemon.service.drain()
    return ids


async def shoot(daemon: Daemon, ids: dict[str, str]) -> list[Path]:
    from playwright.async_api import async_playwright

    base = daemon.base_url
    written = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
        try:
            shots = [
                ("inbox-desktop.png", {"width": 1280, "height": 860}, "light", f"/inbox/r/{ids['deploy']}?view=mine"),
                ("inbox-phone.png", {"width": 390, "height": 844}, "light", "/inbox?view=mine"),
                ("inbox-phone-detail.png", {"width": 390, "height": 844}, "light", f"/inbox/r/{ids['deploy']}"),
                ("inbox-dark.png", {"width": 1280, "height": 860}, "dark",
                 f"/inbox/r/{ids['Review the arguments of kubectl scale']}"),
                ("inbox-grant-buttons.png", {"width": 1280, "height": 860}, "light", f"/inbox/r/{ids['tool']}"),
                ("inbox-standing-approvals.png", {"width": 1280, "height": 560}, "light", "/inbox/grants"),
                ("inbox-phone-grants.png", {"width": 390, "height": 844}, "light", f"/inbox/r/{ids['tool']}"),
            ]
            for name, viewport, scheme, path in shots:
                phone = viewport["width"] < 600
                context = await browser.new_context(viewport=viewport, color_scheme=scheme,  # type: ignore[arg-type]
                                                    device_scale_factor=2 if phone else 1,
                                                    is_mobile=phone, has_touch=phone)
                page = await context.new_page()
                await page.goto(f"{base}/inbox/login")
                await page.fill("#login-secret", ANA_TOKEN)
                await page.get_by_role("button", name="Log in").click()
                await page.wait_for_url("**/inbox")
                await page.goto(base + path)
                await page.wait_for_selector("html[data-js=ready]")
                if name == "inbox-grant-buttons.png":
                    await page.locator("details.grant-pattern summary").click()  # the pattern to narrow
                if "kubectl" in path or name == "inbox-dark.png":
                    editor = page.locator("textarea[data-json]")
                    await editor.fill('{\n  "deployment": "batch-worker",\n  "namespace": "jobs",\n  "replicas": 8\n}')
                target = DOCS / name
                await page.screenshot(path=str(target))
                written.append(target)
                await context.close()
        finally:
            await browser.close()
    return written


async def main(serve: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        daemon = Daemon(settings(Path(tmp)))
        await daemon.start()
        try:
            ids = await fill(daemon)
            if serve:
                print(f"inbox at {daemon.base_url}/inbox (token {ANA_TOKEN}); Ctrl-C stops", flush=True)
                await asyncio.Event().wait()
            for path in await shoot(daemon, ids):
                print(f"wrote {path.relative_to(ROOT)}")
        finally:
            await daemon.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", action="store_true", help="keep the daemon running instead of taking pictures")
    asyncio.run(main(parser.parse_args().serve))
