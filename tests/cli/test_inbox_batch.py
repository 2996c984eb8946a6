"""The terminal inbox offers alike requests together before going one by one: the list as
the preview, "all but 2", a confirmation, then each item's result."""

from __future__ import annotations

import uuid
from pathlib import Path

import pexpect

from tests.cli.helpers import Served, create, env_for
from tests.cli.test_inbox import spawn


def test_the_inbox_approves_alike_requests_at_once_but_one(daemon: Served, elsewhere: Path) -> None:
    suite = uuid.uuid4().hex[:8]
    labels = {"suite": suite}
    tool = f"fs.delete-{suite}"
    ids = [create(daemon, title=f"Delete 'f{n}.txt'", tool=tool, labels=labels, timeout_s=1000 + n)
           for n in range(4)]
    other = create(daemon, title="Restart the db", labels=labels, timeout_s=5000)
    child, seen = spawn(["inbox", "--label", f"suite={suite}", "--once"], elsewhere, env_for(daemon))
    child.expect("5 open requests")
    child.expect(f"4 alike requests: {tool}")
    child.expect("a approve all · e N N approve all except")
    child.sendline("e 9")
    child.expect("the preview lists items 1 to 4, not 9")
    child.sendline("e 2")
    child.expect(r"approve 3 of 4\? \[y/N\]")
    child.sendline("y")
    child.expect("Delete 'f1.txt'")  # then one by one: what is left, the most urgent first
    shown = seen.getvalue()
    for n in (0, 2, 3):  # a result per item
        assert f"{ids[n]} Delete 'f{n}.txt' · answered" in shown, shown
    child.expect("y approve · n reject")
    child.sendline("")
    child.expect("Restart the db")
    child.expect("y approve · n reject")
    child.sendline("q")
    child.expect("inbox: 3 answered")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    with daemon.client() as client:
        assert [client.get(i)["state"] != "posted" for i in ids] == [True, False, True, True]
        assert client.get(other)["state"] == "posted"
    assert "Review" not in seen.getvalue()
