"""Email end to end: a real SMTP server (aiosmtpd) on 127.0.0.1, the real aiosmtplib client in
the daemon, and a simulated manager who reads the received mail, follows its link with a
real HTTP client and answers on the page. Time moves by a manual clock."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.daemon import Daemon
from bridge.models import RequestState
from tests.email.smtp_server import SmtpServer, free_port, smtp_server
from tests.harness import ManualClock, wait_for
from tests.timing.helpers import CONFIRM, bridge_on, events, step, stored
from tests.web.helpers import csrf_of

BOSS = "boss@example.com"


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SmtpServer]:
    with smtp_server(tmp_path) as server:
        yield server


def email_config(server: SmtpServer, *, port: int, starttls: bool = False, **email: Any) -> dict[str, Any]:
    section: dict[str, Any] = {"smtp_url": server.url(), "from": "Agents <agents@example.com>",
                               "starttls": starttls, "first_retry_s": 0.05, "max_per_second": 100, **email}
    if server.cert is not None:
        section["ca_file"] = str(server.cert)
    return {
        "http": {"listen": f"127.0.0.1:{port}", "public_url": f"http://127.0.0.1:{port}"},
        "email": section,
        "people": {"boss": [f"email:{BOSS}", "slack:U0BOSS"]},
        "routes": [{"name": "deploys", "notify": ["web"], "remind_every": "10m",
                    "escalate": [{"after": "15m", "notify": [f"email:{BOSS}"]}]}],
    }


@asynccontextmanager
async def ladder(tmp_path: Path, server: SmtpServer, **email: Any) -> AsyncIterator[tuple[Daemon, ManualClock]]:
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, email_config(server, port=free_port(), **email)) as daemon:
        yield daemon, clock


async def create(daemon: Daemon, **body: Any) -> str:
    async with httpx.AsyncClient(base_url=daemon.base_url) as http:
        response = await http.post("/v1/requests", json={
            "title": "Deploy api v2 to prod", "description": "Rolls out 6 replicas.",
            "context": {"command": "kubectl rollout restart deploy/api"}, "questions": CONFIRM, **body})
    assert response.status_code == 201, response.text
    await daemon.service.drain()
    return str(response.json()["id"])


def link_in(message: EmailMessage) -> str:
    body = message.get_body(("plain",))
    assert body is not None
    found = re.search(r"Answer here: (\S+)", body.get_content())
    assert found, body.get_content()
    return found.group(1)


async def escalated_mail(daemon: Daemon, clock: ManualClock, server: SmtpServer) -> EmailMessage:
    await step(daemon, clock, minutes=15)
    mails: list[EmailMessage] = await wait_for(lambda: server.box.to(BOSS), 10)
    return mails[0]


async def test_the_manager_answers_from_the_mail(tmp_path: Path, smtp: SmtpServer) -> None:
    async with ladder(tmp_path, smtp) as (daemon, clock):
        rid = await create(daemon)
        mail = await escalated_mail(daemon, clock, smtp)
        assert mail["Subject"] == "[Approval] Deploy api v2 to prod (escalated to you)"
        assert mail["From"] == "Agents <agents@example.com>" and mail["To"] == BOSS
        text = mail.get_body(("plain",)).get_content()  # type: ignore[union-attr]
        html = mail.get_body(("html",)).get_content()  # type: ignore[union-attr]
        for part in (text, html):
            assert "Deploy api v2 to prod" in part and "Rolls out 6 replicas." in part
            assert "kubectl rollout restart deploy/api" in part
        link = link_in(mail)
        assert link.startswith(f"{daemon.base_url}/inbox/a/") and link in html

        async with httpx.AsyncClient() as manager:  # a real HTTP client, no login
            page = await manager.get(link)
            assert page.status_code == 200 and "Deploy api v2 to prod" in page.text
            assert f"Sent to {BOSS}" in page.text
            assert (await stored(daemon, rid)).is_open  # opening never answers
            answered = await manager.post(link, data={"csrf": csrf_of(page.text), "q.ok": "yes",
                                                      "reason": "looks fine"})
            assert answered.status_code == 303
            done = await manager.get(daemon.base_url + answered.headers["location"])
            assert "Your answer was recorded" in done.text
        request = await stored(daemon, rid)
        assert request.state in (RequestState.answered, RequestState.delivered)
        assert request.answer is not None and request.answer.via == "email"
        assert request.answer.responder.key == f"email:{BOSS}" and request.answer.responder.person == "boss"
        assert request.answer.reason == "looks fine"
        copies = {p.target: p for p in await daemon.store.list_posts(rid)}
        assert copies[f"email:{BOSS}"].ok and copies[f"email:{BOSS}"].ref["address"] == BOSS


async def test_a_scanner_fetching_the_link_answers_nothing(tmp_path: Path, smtp: SmtpServer) -> None:
    async with ladder(tmp_path, smtp) as (daemon, clock):
        rid = await create(daemon)
        link = link_in(await escalated_mail(daemon, clock, smtp))
        async with httpx.AsyncClient() as scanner:  # previews and security scanners: GET, HEAD, even a blind POST
            assert (await scanner.get(link)).status_code == 200
            assert (await scanner.head(link)).status_code == 200
            assert (await scanner.get(link + "?q.ok=yes")).status_code == 200
            blind = await scanner.post(link, data={"q.ok": "yes"})
            assert blind.status_code == 403
        async with httpx.AsyncClient() as elsewhere:  # a form from another site: no cookie, foreign origin
            page = await elsewhere.get(link)
            foreign = {"Origin": "https://attacker.example", "Sec-Fetch-Site": "cross-site"}
            forged = await elsewhere.post(link, data={"csrf": csrf_of(page.text), "q.ok": "yes"}, headers=foreign)
            assert forged.status_code == 403
        request = await stored(daemon, rid)
        assert request.is_open and request.answer is None


async def test_links_are_bound_to_their_request_and_close_with_it(tmp_path: Path, smtp: SmtpServer) -> None:
    async with ladder(tmp_path, smtp) as (daemon, clock):
        first = await create(daemon)
        link = link_in(await escalated_mail(daemon, clock, smtp))
        async with httpx.AsyncClient() as person:
            csrf = csrf_of((await person.get(link)).text)
            token = link.rsplit("/", 1)[1]
            for forged in (token[:-1] + ("A" if token[-1] != "A" else "B"), "x" * 43, "x" * 5000, "%00", ""):
                response = await person.get(link.rsplit("/", 1)[0] + "/" + forged)
                assert response.status_code == 404, forged
            async with httpx.AsyncClient(base_url=daemon.base_url) as api:
                cancelled = await api.post(f"/v1/requests/{first}/cancel", json={"reason": "not needed"})
                assert cancelled.status_code == 200
            page = await person.get(link)
            assert page.status_code == 410 and "no longer accepts answers" in page.text
            late = await person.post(link, data={"csrf": csrf, "q.ok": "yes"})
            assert late.status_code == 409
        assert (await stored(daemon, first)).state is RequestState.cancelled


async def test_reminders_thread_under_the_first_mail_and_stop_once_answered(tmp_path: Path,
                                                                             smtp: SmtpServer) -> None:
    async with ladder(tmp_path, smtp, send_resolved=True) as (daemon, clock):
        rid = await create(daemon)
        first = await escalated_mail(daemon, clock, smtp)
        await step(daemon, clock, minutes=5)  # 20m: the reminder
        mails = await wait_for(lambda: len(smtp.box.to(BOSS)) == 2 and smtp.box.to(BOSS), 10)
        reminder = mails[1]
        assert reminder["Subject"] == "Re: Reminder: [Approval] Deploy api v2 to prod (escalated to you)"
        assert reminder["In-Reply-To"] == first["Message-ID"] == reminder["References"]
        assert link_in(reminder) == link_in(first)  # the same link
        async with httpx.AsyncClient(base_url=daemon.base_url) as api:
            await api.post(f"/v1/requests/{rid}/answer", json={"value": "no", "reason": "freeze"})
        resolved = await wait_for(lambda: len(smtp.box.to(BOSS)) == 3 and smtp.box.to(BOSS)[2], 10)
        assert resolved["Subject"].startswith("Re: Resolved: [Approval]")
        assert "Rejected by local" in resolved.get_body(("plain",)).get_content()  # type: ignore[union-attr]
        assert resolved["In-Reply-To"] == first["Message-ID"]
        await step(daemon, clock, minutes=30)  # answered elsewhere: no more mail
        assert len(smtp.box.to(BOSS)) == 3


async def test_temporary_failures_are_retried_and_permanent_ones_recorded(tmp_path: Path, smtp: SmtpServer) -> None:
    smtp.box.temporary_failures = 2
    smtp.box.refuse.add("nobody@example.com")
    config = email_config(smtp, port=free_port())
    config["routes"][0]["escalate"][0]["notify"] = [f"email:{BOSS}", "email:nobody@example.com",
                                                    "email:bad address@example.com"]
    clock = ManualClock()
    async with bridge_on(tmp_path, clock, config) as daemon:
        rid = await create(daemon)
        await step(daemon, clock, minutes=15)
        await wait_for(lambda: smtp.box.to(BOSS), 10)  # delivered after two 451s

        async def copies() -> dict[str, Any]:
            return {p.target: p for p in await daemon.store.list_posts(rid) if p.channel == "email"}

        found = await wait_for(lambda: _three(copies()), 10)
        assert found[f"email:{BOSS}"].ok
        refused = found["email:nobody@example.com"]
        assert not refused.ok and "550" in str(refused.error) and "permanent" in str(refused.error)
        bad = found["email:bad address@example.com"]
        assert not bad.ok and "not an email address" in str(bad.error)
        failed = await events(daemon, rid, "post_failed")
        assert "email:nobody@example.com" in failed[0].data["targets"]
        assert smtp.box.temporary_failures == 0


async def _three(pending: Any) -> Any:
    found = await pending
    return found if len(found) == 3 else None


async def test_starttls_with_a_login_and_a_refused_login(tmp_path: Path) -> None:
    with smtp_server(tmp_path, starttls=True, user="agents", password="right-password") as server:
        config = email_config(server, port=free_port(), starttls=True)
        config["routes"][0]["escalate"][0]["after"] = "1m"
        clock = ManualClock()
        async with bridge_on(tmp_path, clock, config) as daemon:
            await create(daemon)
            await step(daemon, clock, minutes=1)
            mail = (await wait_for(lambda: server.box.to(BOSS), 10))[0]
            assert server.box.logins == ["agents"] and link_in(mail)
            checks = await daemon.channels[-1].doctor([f"email:{BOSS}", "email:not an address"])  # type: ignore[attr-defined]
            assert checks[0].status == "ok" and "logged in" in checks[0].detail
            assert checks[1].status == "fail" and "not an email address" in checks[1].detail

        config["email"]["smtp_url"] = server.url(password="wrong-password")
        async with bridge_on(tmp_path / "second", clock, config) as daemon:
            rid = await create(daemon)
            await step(daemon, clock, minutes=1)
            posts = await wait_for(lambda: _email_copy(daemon, rid), 10)
            assert not posts.ok and "SMTP login refused: 535" in str(posts.error)
            ready, checks = await daemon.service.health.ready()
            assert not ready
            assert any(c.component == "channel:email" and "login refused" in c.summary for c in checks)
            doctor = await daemon.channels[-1].doctor()  # type: ignore[attr-defined]
            assert doctor[0].status == "fail" and "535" in doctor[0].detail and "password" in doctor[0].fix
            assert "wrong-password" not in str(posts.error) + doctor[0].line()


async def _email_copy(daemon: Daemon, rid: str) -> Any:
    return next((p for p in await daemon.store.list_posts(rid) if p.channel == "email"), None)


async def test_a_title_cannot_add_headers_and_secrets_are_asked_on_the_page(tmp_path: Path,
                                                                            smtp: SmtpServer) -> None:
    async with ladder(tmp_path, smtp) as (daemon, clock):
        rid = await create(daemon, title="Rotate key\r\nBcc: everyone@example.com\r\n\r\nhi", questions=[
            {"id": "key", "kind": "secret", "prompt": "New API key?"}])
        mail = await escalated_mail(daemon, clock, smtp)
        assert mail["Bcc"] is None and "\n" not in mail["Subject"]
        assert mail["Subject"].startswith("[Secret needed] Rotate key Bcc: everyone@example.com hi")
        text = mail.get_body(("plain",)).get_content()  # type: ignore[union-attr]
        assert "never by email" in text
        async with httpx.AsyncClient() as person:
            page = await person.get(link_in(mail))
            assert 'type="password"' in page.text
            done = await person.post(link_in(mail), data={"csrf": csrf_of(page.text), "q.key": "sk-live-123"})
            assert done.status_code == 303
        request = await stored(daemon, rid)
        assert request.answer is not None and "sk-live-123" not in request.model_dump_json()
