"""An email address is one mailbox however it is written (`Zed@Example.com`, `zed@example.com`):
one copy, one vote, and four-eyes holds whichever spelling asked. Through the real daemon, a
real SMTP server and the link in the mail, answered with a real HTTP client."""

from __future__ import annotations

from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.daemon import Daemon
from tests.email.smtp_server import SmtpServer, free_port, smtp_server
from tests.email.test_email import create, email_config, link_in
from tests.harness import ManualClock, wait_for
from tests.timing.helpers import bridge_on, stored
from tests.web.helpers import csrf_of


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SmtpServer]:
    with smtp_server(tmp_path) as server:
        yield server


def config(server: SmtpServer, route: dict[str, Any]) -> dict[str, Any]:
    return {**email_config(server, port=free_port()), "people": {}, "routes": [{"name": "deploys", **route}]}


async def answer_from(daemon: Daemon, mail: EmailMessage) -> httpx.Response:
    async with httpx.AsyncClient() as reader:
        link = link_in(mail)
        page = await reader.get(link)
        return await reader.post(link, data={"csrf": csrf_of(page.text), "q.ok": "yes"})


async def test_two_spellings_of_one_address_get_one_copy_and_one_vote(tmp_path: Path, smtp: SmtpServer) -> None:
    route = {"notify": ["email:Zed@Example.com", "email:zed@example.COM"], "quorum": 2}
    async with bridge_on(tmp_path, ManualClock(), config(smtp, route)) as daemon:
        rid = await create(daemon)
        mails: list[EmailMessage] = await wait_for(lambda: smtp.box.messages, 10)
        assert [p.target for p in await daemon.store.list_posts(rid)] == ["email:zed@example.com"]
        assert len(mails) == 1
        assert (await answer_from(daemon, mails[0])).status_code == 303
        assert (await stored(daemon, rid)).is_open  # one mailbox, one vote: quorum 2 not met


async def test_four_eyes_holds_whichever_spelling_asked(tmp_path: Path, smtp: SmtpServer) -> None:
    route = {"notify": ["email:Zed@Example.com"], "forbid_self_approval": True}
    async with bridge_on(tmp_path, ManualClock(), config(smtp, route)) as daemon:
        rid = await create(daemon, requested_by="email:zed@example.com")
        mails: list[EmailMessage] = await wait_for(lambda: smtp.box.messages, 10)
        refused = await answer_from(daemon, mails[0])
        assert refused.status_code == 403 and "someone else must approve it" in refused.text
        assert (await stored(daemon, rid)).is_open
