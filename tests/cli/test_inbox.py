"""The terminal inbox and `answer ID` without a value, driven through a pseudo-terminal
(pexpect) as a person types: the prompts that fit each kind, a secret that is never echoed,
the editor for an edit, new requests shown as they arrive, a request answered elsewhere
meanwhile, quitting."""

from __future__ import annotations

import contextlib
import io
import uuid
from pathlib import Path

import pexpect

from tests.cli.helpers import HITL, LEAD, Served, create, env_for
from tests.processes import poll_until

SECRET = "pa55-w0rd-never-echoed"


def spawn(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[pexpect.spawn, io.StringIO]:
    seen = io.StringIO()
    child = pexpect.spawn(HITL, args, cwd=str(cwd), env=env, encoding="utf-8", timeout=30, dimensions=(50, 120))
    child.logfile_read = seen
    return child, seen


# what the child's main thread may be blocked in while it waits for a key: read, poll, select,
# pselect6, ppoll (x86-64 numbers; /proc/<pid>/syscall starts with the number)
WAITING_FOR_INPUT = {"0", "7", "23", "270", "271"}


def wait_until_reading(child: pexpect.spawn, within: float = 15.0) -> None:
    """Block until the child waits for input. A Ctrl-C that lands after input() showed its prompt
    but before readline's select() starts is only noticed at the next key (CPython's readline
    checks for signals when select() is interrupted), so a test must not press it earlier."""
    def reading() -> bool:
        with contextlib.suppress(OSError):
            return Path(f"/proc/{child.pid}/syscall").read_text().split(" ", 1)[0] in WAITING_FOR_INPUT
        return False
    assert poll_until(reading, within=within, every=0.01), f"the child never waited for input within {within} s"


def test_inbox_answers_each_kind_in_place_and_follows_new_requests(daemon: Served, elsewhere: Path) -> None:
    suite = uuid.uuid4().hex[:8]
    labels = {"suite": suite}
    editor = elsewhere.parent / "editor.sh"  # what a person does in $EDITOR: change one value, save
    editor.write_text('#!/bin/sh\nsed -i \'s/"seats": 5/"seats": 7/\' "$1"\n')
    editor.chmod(0o755)
    first = create(daemon, title="Deploy payments-api", labels=labels, timeout_s=1000,
                   context={"command": "kubectl rollout restart deploy/api"})
    second = create(daemon, title="Canary region", labels=labels, timeout_s=2000,
                    questions=[{"id": "region", "kind": "choice", "prompt": "Which region first?",
                                "options": ["eu-west-1", "us-east-1", "ap-southeast-2"]}])
    third = create(daemon, title="Vendor access", labels=labels, timeout_s=3000,
                   questions=[{"id": "vars", "kind": "edit", "prompt": "Review the variables",
                               "default": {"vendor": "acme", "seats": 5}},
                              {"id": "password", "kind": "secret", "prompt": "Password for db-staging?"}])
    create(daemon, title="Not for this inbox", labels={"suite": "other"})
    child, seen = spawn(["inbox", "--label", f"suite={suite}", "--interval", "0.2"], elsewhere,
                        env_for(daemon, EDITOR=str(editor)))
    child.expect("3 open requests")  # the nearest deadline first
    child.expect("Deploy payments-api")
    child.expect("command: kubectl rollout restart deploy/api")
    child.expect("y approve · n reject · Enter skip · q quit > ")
    child.sendline("n")
    child.expect(r"reason \(optional, sent with your answer; Enter for none\): ")
    child.sendline("too risky during the sale")
    child.expect(f"{first} answered: ok=no by api:ops — too risky during the sale")
    child.expect("Which region first\\?")
    child.expect(r"1\) eu-west-1\s+2\) us-east-1\s+3\) ap-southeast-2")
    child.sendline("9")
    child.expect("type a number from 1 to 3")
    child.sendline("2")
    child.expect(f"{second} answered: region=us-east-1")
    child.expect("question 1 of 2")
    child.expect(r"a accept as proposed · e edit in \$EDITOR · Enter skip · q quit > ")
    child.sendline("e")
    child.expect("seats: 7")
    child.expect(r"\(hidden as you type; Enter on an empty line skips\) > ")
    child.sendline(SECRET)
    child.expect(r'answers: vars=\{"vendor": "acme", "seats": 7\}, password=\[secret\]')
    child.sendline("")  # send these answers? [Y/n]
    child.expect(f"{third} answered: ")
    child.expect("waiting for new requests…")
    late = create(daemon, title="A late question", labels=labels,
                  questions=[{"id": "reply", "kind": "text", "prompt": "What do I tell the customer?"}])
    child.expect("A late question")  # shown as it arrives
    child.expect(r"\(Enter on an empty line skips\) > ")
    child.sendline("")
    child.expect("skipped")
    child.expect("waiting for new requests…")
    taken = create(daemon, title="Answered elsewhere", labels=labels)
    child.expect("y approve · n reject")
    with daemon.client(LEAD) as client:  # someone in Slack is quicker
        client.answer(taken, "yes", responder="ana")
    child.sendline("y")
    child.expect("not sent: already answered by ana")
    child.expect("waiting for new requests…")
    create(daemon, title="One more", labels=labels)
    child.expect("y approve · n reject")
    child.sendline("q")
    child.expect("inbox: 3 answered, 1 skipped")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert SECRET not in seen.getvalue()  # typed without echo, never printed
    assert "Not for this inbox" not in seen.getvalue()
    with daemon.client() as client:
        assert client.get(first)["answer"]["reason"] == "too risky during the sale"
        assert client.get(second)["answer"]["values"] == {"region": "us-east-1"}
        assert client.get(third)["answer"]["values"] == {"vars": {"vendor": "acme", "seats": 7}, "password": "[secret]"}
        assert client.get(late)["state"] == "posted"


def test_answer_without_a_value_asks_and_ctrl_c_stops(daemon: Served, elsewhere: Path) -> None:
    rid = create(daemon, title="Pick a size", questions=[{"id": "size", "kind": "choice", "prompt": "Which size?",
                                                          "options": ["small", "large"]}])
    child, _ = spawn(["answer", rid, "--as", "Ana"], elsewhere, env_for(daemon))
    child.expect("Pick a size")
    child.expect(r"1-2 · Enter skip · q quit > ")
    child.sendline("1")
    child.expect(f"{rid} answered: size=small by Ana \\(api:ops\\)")
    child.expect("is only the name shown")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    suite = uuid.uuid4().hex[:8]
    rid = create(daemon, title="Never mind", labels={"suite": suite})
    child, _ = spawn(["inbox", "--label", f"suite={suite}"], elsewhere, env_for(daemon))
    child.expect("y approve")
    wait_until_reading(child)
    child.sendintr()
    child.expect(r"inbox: 0 answered, 0 skipped")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    with daemon.client() as client:
        assert client.get(rid)["state"] == "posted"


def test_inbox_offers_standing_approvals_after_yes_and_sends_the_choice(daemon: Served, elsewhere: Path) -> None:
    suite = uuid.uuid4().hex[:8]
    tool = f"Bash_{suite}"  # a tool of this test alone: its grants decide nothing elsewhere
    labels = {"suite": suite}

    def call(command: str, name: str = tool) -> str:
        return create(daemon, title=f"Run {command}", labels=labels, tool=name, session="sess-1",
                      context={"command": command},
                      questions=[{"id": "approve", "kind": "confirm", "prompt": "Allow?"}])

    always = call("make build")
    span = call("make test")
    child, _ = spawn(["inbox", "--once", "--label", f"suite={suite}"], elsewhere, env_for(daemon))
    child.expect("Enter one by one · q quit > ")  # the two calls are alike: offered as a batch first
    child.sendline("")
    child.expect("Run make build")
    child.expect("y approve · n reject · Enter skip · q quit > ")
    child.sendline("y")
    child.expect(r"keep allowing it\?  0\) just this once \(Enter\)")
    child.expect(r"1\) Allow for this session")
    child.expect(r"2\) Allow for 1 hour")
    child.expect(r"3\) Always allow this")
    child.sendline("7")
    child.expect("type a number from 0 to 3")
    child.sendline("3")
    child.expect(rf"pattern \[{tool}\] \(narrow it, or Enter to keep\): ")
    child.sendline("Edit(./src/**)")  # another tool: wider than the offer, refused by the daemon
    child.expect("refused: .*pattern refused")
    child.expect("y approve · n reject · Enter skip · q quit > ")
    child.sendline("y")
    child.sendline("3")
    child.sendline("")  # keep the default
    child.expect(f"{always} answered: approve=yes")
    child.expect(f"Always allowed: {tool}")
    child.expect("Run make test")
    child.sendline("y")
    child.sendline("2")
    child.expect(f"{span} answered: approve=yes")
    child.expect(f"Allowed for 1 hour: {tool} — until ")
    child.expect("no more open requests")
    child.expect(pexpect.EOF)
    with daemon.client() as client:
        decided = client.get(call("make lint"))
        assert decided["state"] != "pending" and decided["answer"]["responder"]["platform"] == "grant"
        asked = client.get(call("ls", name=f"Other_{suite}"))
        assert asked["state"] in ("pending", "posted")
