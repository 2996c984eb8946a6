"""The CLI when its dependency misbehaves (in-process, behind a fault proxy in front of a
real daemon): a daemon that goes away while the inbox waits is said once and waited out;
something that answers, but not like the API, is a clear exit 3; hostile values and bad
arguments get one-line refusals."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from hitl_bridge_client import AsyncClient

from bridge import cli
from bridge.cli import render, safe
from bridge.cli.answer import collect
from bridge.cli.exits import Failed
from bridge.cli.inbox import Inbox
from bridge.cli.prompts import Quit, Terminal
from bridge.cli.remote import DaemonAddress, connect
from tests.harness import running_bridge, wait_for
from tests.langgraph.proxy import fault_proxy


class Scripted(Terminal):
    """A person at the inbox: typed lines from a list, what is shown kept."""

    def __init__(self, typed: list[str]) -> None:
        super().__init__(read=self._next, read_hidden=self._next, edit=lambda text: None)
        self.typed = typed
        self.shown: list[str] = []

    def _next(self, prompt: str) -> str:
        self.shown.append(prompt)
        if not self.typed:
            raise EOFError
        return self.typed.pop(0)

    def say(self, text: str = "") -> None:
        self.shown.extend(text.splitlines() or [""])


async def test_inbox_rides_out_a_restart_and_garbage_is_refused(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    async with running_bridge(tmp_path, {}) as bridge, fault_proxy(bridge.base_url) as proxy, \
            AsyncClient(bridge.base_url, token="") as api:
        proxy.mode = "garbage"
        assert await asyncio.to_thread(cli.run, ["list", "--url", proxy.url]) == 3
        assert f"{proxy.url} answers, but not like a hitl-bridge daemon" in capsys.readouterr().err
        proxy.mode = "ok"
        address = DaemonAddress(proxy.url, None, "--url")
        person = Scripted(["y", "q"])
        pacing = threading.Event()
        inbox = Inbox(connect(address), address, person, interval=0.01, sleep=lambda s: pacing.wait(s))
        running = asyncio.create_task(asyncio.to_thread(inbox.run))
        await wait_for(lambda: "waiting for new requests…" in person.shown)
        proxy.mode = "down"  # a restart behind a proxy: 503
        await wait_for(lambda: any(x.startswith(f"lost the daemon at {proxy.url}") for x in person.shown))
        first = await api.create({"title": "Ship it", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}]})
        proxy.mode = "ok"
        await wait_for(lambda: any(x.endswith(f"{first} answered: ok=yes by api:local") for x in person.shown))
        assert "the daemon answers again" in person.shown
        assert sum(x.startswith("lost the daemon") for x in person.shown) == 1  # said once, not per poll
        await api.create({"title": "Next", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"}]})
        assert await asyncio.wait_for(running, 30) == 0  # `q` at the second prompt
        assert (inbox.answered, inbox.skipped) == (1, 0)
        assert (await api.get(first))["answer"]["values"] == {"ok": "yes"}


def test_bad_arguments_are_one_line_refusals() -> None:
    view = {"id": "r_1", "questions": [{"id": "ok", "kind": "confirm", "prompt": "Go?"},
                                       {"id": "pw", "kind": "secret", "prompt": "Password?"},
                                       {"id": "size", "kind": "multi_choice", "prompt": "Sizes?",
                                        "options": ["s", "m", "l"]}]}
    for args, message in (
        (("x", None, "[1"), "give either --values or VALUE"),
        ((None, None, "[1"), "--values is not valid JSON"),
        ((None, None, "[1, 2]"), "--values must be a JSON object by question id"),
        (("yes", "nope", None), "no question 'nope'; its questions: ['ok', 'pw', 'size']"),
        (("hunter2", "pw", None), "a secret on the command line stays in `ps`"),
        ((None, None, '{"ok": "yes", "pw": "hunter2"}'), "a secret on the command line \\(pw\\) stays in `ps`"),
    ):
        with pytest.raises(Failed, match=message.replace("[", r"\[").replace("]", r"\]").replace("?", r"\?")):
            collect(view, *args)
    assert collect(view, "1,3", "size", None) == ({"size": ["s", "l"]}, None)  # numbered as `show` lists them
    assert collect(view, "m", "size", None) == ({"size": ["m"]}, None)
    with pytest.raises(Failed, match="give a VALUE"):  # no terminal to ask in
        collect(view, None, None, None)
    assert cli.run(["inbox", "--label", "=x"]) == 2


def test_what_an_engine_sends_is_shown_never_obeyed() -> None:
    hostile = "a\x1b]52;c;cm0gLXJmIC8=\x07b\u2066c\u202ed\x9b2J\u200be\ufeff"
    assert safe.line(hostile) == "a\\x1b]52;c;cm0gLXJmIC8=\\x07b<U+2066>c<U+202E>d\\x9b2J<U+200B>e<U+FEFF>"
    assert safe.line("one\ntwo\r\nthree") == "one⏎two⏎three"
    assert safe.line("x" * 50, 10) == "x" * 9 + "…"
    view = {"id": "r_1", "title": hostile, "state": "posted", "source": "webhook", "labels": {"k\n": "v\x1b"},
            "description": "line one\n\x1b[31mred\x1b[0m", "context": {"cmd": "rm\x1b[2K -rf /", "deep": [[["x"]]]},
            "questions": [{"id": "c", "kind": "choice", "prompt": "Pick\x1b[A", "options": ["a\x1b", "b"]},
                          {"id": "e", "kind": "edit", "prompt": "Edit", "default": {"cmd": "ls\u202e"}}]}
    text = render.show(view, [{"at": "2026-01-01T00:00:00+00:00", "kind": "created\x1b", "actor": "x\ny",
                               "data": {"k": "v\x07"}}])
    assert all(ch == "\n" or ch.isprintable() for ch in text), repr(text)
    for shown in ("k⏎=v\\x1b", "1) a\\x1b", "\\x1b[31mred", "cmd: ls<U+202E>", "created\\x1b", "x⏎y"):
        assert shown in text, shown


def test_quit_and_eof_end_the_prompts() -> None:
    from bridge.cli.prompts import ask_question

    with pytest.raises(Quit):
        ask_question({"id": "t", "kind": "text", "prompt": "Why?"}, Scripted([]))  # Ctrl-D
    with pytest.raises(Quit):
        ask_question({"id": "c", "kind": "choice", "prompt": "?", "options": ["a"]}, Scripted(["q"]))
    person = Scripted(["maybe", "y"])
    assert ask_question({"id": "ok", "kind": "confirm", "prompt": "Go?"}, person) == "yes"
    assert "  type y or n" in person.shown
    form = {"id": "f", "kind": "form", "prompt": "Vendor", "fields": [
        {"name": "company", "label": "Company"}, {"name": "tier", "options": ["basic", "gold"]},
        {"name": "notes", "required": False}]}
    assert ask_question(form, Scripted(["ACME", "7", "2", ""])) == {"company": "ACME", "tier": "gold"}
