"""How the inbox reads (pure functions): decisions as sentences, answers per question,
context trees, the diff of edited arguments, safe Markdown, who "waiting for me" is, and
the list's parameters from hostile URLs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.web.auth import Viewer
from adapters.web.listing import ListState
from adapters.web.markdown import render_markdown
from adapters.web.mine import me
from adapters.web.present import MAX_NODES, answer_items, context_tree, decision, json_diff
from bridge.models import Answer, Question, QuestionKind, Request, RequestState, Responder
from bridge.people import People

AT = datetime(2026, 1, 1, 14, 2, tzinfo=UTC)
ANA_SLACK = Responder(platform="slack", user_id="U0ANA", name="ana")


def request(*questions: Question, state: RequestState = RequestState.posted, **extra: Any) -> Request:
    return Request(id="r_1", title="t", questions=list(questions), state=state, created_at=AT, updated_at=AT,
                   **extra)


def answered(req: Request, values: dict[str, Any], *, via: str = "slack", reason: str | None = None,
             who: Responder = ANA_SLACK) -> Request:
    return req.model_copy(update={"state": RequestState.answered, "answer": Answer(
        values=values, responder=who, via=via, answered_at=AT, reason=reason)})


CONFIRM = Question(id="ok", kind=QuestionKind.confirm, prompt="Deploy?")
CHOICE = Question(id="region", kind=QuestionKind.choice, prompt="Where?", options=["eu", "us"])
SECRET = Question(id="pw", kind=QuestionKind.secret, prompt="Password?")
FORM = Question(id="vendor", kind=QuestionKind.form, prompt="Vendor", fields=[
    {"name": "company", "label": "Company"}, {"name": "seats", "label": "Seats", "required": False}])
EDIT = Question(id="args", kind=QuestionKind.edit, prompt="Arguments", default={"replicas": 3, "image": "a:1"})


def test_decisions_read_like_the_chat_copies() -> None:
    rejected = decision(answered(request(CONFIRM), {"ok": "no"}, reason="change freeze"))
    assert rejected is not None
    assert (rejected.tone, rejected.icon, rejected.sentence, rejected.reason) == (
        "rejected", "x", "Rejected by ana via Slack", "change freeze")
    approved = decision(answered(request(CONFIRM), {"ok": "yes"}, via="web"))
    assert approved is not None and (approved.tone, approved.sentence) == ("approved", "Approved by ana in the inbox")
    chosen = decision(answered(request(CHOICE), {"region": "eu"}, via="telegram"))
    assert chosen is not None and chosen.sentence == "“eu” chosen by ana via Telegram"
    secret = decision(answered(request(SECRET), {"pw": "sealed"}, via="email"))
    assert secret is not None and (secret.icon, secret.sentence) == ("lock", "Secret provided by ana by email")
    mixed = decision(answered(request(CONFIRM, CHOICE), {"ok": "yes", "region": "us"}, via="api"))
    assert mixed is not None and (mixed.tone, mixed.sentence) == ("answered", "Answered by ana through the API")
    timeout = decision(answered(request(CONFIRM), {"ok": "no"}, via="timeout",
                                who=Responder(platform="timeout", user_id="timeout"))
                       .model_copy(update={"state": RequestState.expired}))
    assert timeout is not None and (timeout.tone, timeout.sentence) == (
        "expired", "Expired: rejected by the timeout rule")
    cancelled = decision(request(CONFIRM, state=RequestState.cancelled, error="run deleted"))
    assert cancelled is not None and (cancelled.tone, cancelled.reason) == ("cancelled", "run deleted")
    failed = decision(request(CONFIRM, state=RequestState.failed, error="bad request"))
    assert failed is not None and failed.tone == "failed"
    assert decision(request(CONFIRM)) is None  # open: nothing decided
    odd = decision(answered(request(CONFIRM), {"ok": "yes"}, via="carrier-pigeon"))
    assert odd is not None and odd.sentence == "Approved by ana via carrier-pigeon"


def test_answers_are_labelled_values_never_json() -> None:
    req = answered(request(CONFIRM, FORM, SECRET, EDIT, CHOICE),
                   {"ok": "no", "vendor": {"company": "Globex \"Inc\"", "seats": 5}, "pw": "sealed",
                    "args": {"replicas": 5, "image": "a:1", "dry_run": True}})
    items = {item.label: item for item in answer_items(req)}
    assert (items["Deploy?"].kind, items["Deploy?"].text, items["Deploy?"].tone) == ("decision", "Rejected", "rejected")
    assert items["Vendor"].fields == [("Company", 'Globex "Inc"'), ("Seats", "5")]
    assert items["Password?"].kind == "secret" and "sealed" not in repr(items["Password?"])
    assert [(c.path, c.kind, c.old, c.new) for c in items["Arguments"].changes] == [
        ("replicas", "changed", "3", "5"), ("dry_run", "added", "", "true")]
    assert items["Where?"].kind == "none"


def test_diff_of_edited_arguments() -> None:
    assert json_diff({"a": 1}, {"a": 1}) == []
    assert [(c.path, c.kind) for c in json_diff({"a": True}, {"a": 1})] == [("a", "changed")]  # not Python's ==
    assert [(c.path, c.kind) for c in json_diff({"a": {"b": [1, 2]}, "c": 1}, {"a": {"b": [1, 3]}})] == [
        ("a.b[1]", "changed"), ("c", "removed")]
    assert [(c.path, c.old, c.new) for c in json_diff([1, 2], [1, 2, 3])] == [("(all)", "[1, 2]", "[1, 2, 3]")]
    many = json_diff({f"k{i}": i for i in range(1000)}, {})
    assert len(many) == 200  # bounded
    long = json_diff({"a": "x"}, {"a": "y" * 10_000})
    assert len(long[0].new) == 300 and long[0].new.endswith("…")


def test_context_tree_is_bounded_and_folds_long_text() -> None:
    tree = context_tree({"ticket": "SUP-1", "n": None, "flag": False, "notes": "word " * 100,
                         "nested": {"list": [1, {"deep": "x"}]}})
    shown = {n.key: n for n in tree}
    assert shown["ticket"].text == "SUP-1" and not shown["ticket"].long
    assert shown["n"].text == "—" and shown["flag"].text == "false"
    assert shown["notes"].long
    assert shown["nested"].kind == "map" and shown["nested"].children[0].size == "2 items"
    wide = context_tree({f"k{i}": i for i in range(5000)})
    assert len(wide) == MAX_NODES and wide[-1].kind == "more" and "more not shown" in wide[-1].text
    deep: dict[str, Any] = {"v": 1}
    for _ in range(30):
        deep = {"d": deep}
    node = context_tree(deep)[0]
    for _ in range(7):
        node = node.children[0]
    assert node.kind == "text" and node.text.startswith('{"d"')  # deeper levels as text


@pytest.mark.parametrize(("source", "absent", "present"), [
    ("<script>alert(1)</script>", ["<script"], ["&lt;script&gt;"]),
    ("<img src=x onerror=alert(1)>", ["<img"], ["&lt;img"]),
    ("[x](javascript:alert(1))", ["href=\"javascript"], []),
    ("[x](JaVaScRiPt:alert(1)) [y](vbscript:x) [z](data:text/html;base64,PHNjcmlwdD4=)", ["href"], []),
    ("[rel](/inbox/logout) [file](file:///etc/passwd)", ["href"], []),
    ("![pixel](https://tracker.example/p.gif)", ["<img"], ['href="https://tracker.example/p.gif"', "image: pixel"]),
    ("![inline](data:image/png;base64,AAAA)", ["<img", 'href="data:'], []),
    ('[t](https://a.example "x\\"><script>")', ["<script"], ['rel="nofollow noopener noreferrer"']),
    ("# Big heading", ["<h1", "<h2"], ["<h3>Big heading</h3>"]),
    ("<https://ok.example/a>", [], ['<a href="https://ok.example/a" rel="nofollow noopener noreferrer"']),
])
def test_hostile_markdown_stays_text(source: str, absent: list[str], present: list[str]) -> None:
    html = str(render_markdown(source).html)
    for bad in absent:
        assert bad not in html, (source, html)
    for good in present:
        assert good in html, (source, html)


def test_markdown_excerpt_and_size_limit() -> None:
    rendered = render_markdown("**Bold** and [a link](https://x.example)\n\n- one\n- two")
    assert rendered.plain == "Bold and a link one two"
    huge = render_markdown("word " * 10_000)
    assert len(huge.plain) < 21_000
    assert render_markdown("").html == ""


PEOPLE = People({"ana": ["web:ana", "slack:U0ANA", "email:Ana@Example.com"], "bo": ["slack:U0BO"],
                 "ci": ["api:ci"]}, {"oncall": ["ana", "bo"], "other": ["bo"]})


@pytest.mark.parametrize("entry", ["person:ana", "group:oncall", "group:other", "person:bo", "web:ana",
                                   "slack:U0ANA", "slack:@U0ANA", "email:ana@example.com", "email:Ana@Example.COM",
                                   "slack:U0BO", "web:zoe", "group:nobody", "slack:#deploys", "api:ci"])
def test_waiting_for_me_names_exactly_whom_the_core_admits(entry: str) -> None:
    for viewer in (Viewer("ana", "session", name="ana"), Viewer("ci", "bearer", name="ci", platform="api"),
                   Viewer("zoe", "session", name="zoe")):
        who = me(PEOPLE, viewer)
        assert who is not None and not who.everything
        responder = Responder(platform=viewer.platform, user_id=viewer.identity)
        core = entry in (responder.key,) or PEOPLE.admits(entry, responder)
        mine = request(CONFIRM, responders=[entry])
        assert who.named_in(mine) == core, (viewer.handle, entry)


def test_waiting_for_me_on_an_open_inbox_and_for_the_shared_password() -> None:
    local = me(PEOPLE, Viewer("local", "open", name="local"))
    assert local is not None and local.everything and local.query().responders_any == ()
    assert local.query().not_voted_by == ("local",)
    assert me(PEOPLE, Viewer("shared-password", "session", name="Dana")) is None
    ana = me(PEOPLE, Viewer("ana", "session", name="ana"))
    assert ana is not None and set(ana.query(text="x").not_voted_by) == {"person:ana", "web:ana"}


@pytest.mark.parametrize(("params", "expected"), [
    ({}, ListState()),
    ({"view": "mine", "q": "  deploy   api ", "offset": "100"}, ListState(view="mine", q="deploy api", offset=100)),
    ({"view": "<script>", "q": "x" * 500}, ListState(q="x" * 200)),
    ({"q": "a\x00b", "source": "%00", "route": "r" * 500, "offset": "-5"}, ListState()),
    ({"offset": "99999999999"}, ListState()),
])
def test_list_parameters_from_hostile_urls(params: dict[str, str], expected: ListState) -> None:
    assert ListState.from_params(params) == expected


def test_list_links_keep_the_state() -> None:
    state = ListState(view="mine", q="déploy & co", route="deploys")
    assert state.suffix() == "?view=mine&q=d%C3%A9ploy+%26+co&route=deploys"
    assert state.suffix(view="open", q="") == "?route=deploys"
    assert ListState().suffix() == ""
    assert ListState.from_params(dict(p.split("=") for p in state.params().split("&"))).view == "mine"
