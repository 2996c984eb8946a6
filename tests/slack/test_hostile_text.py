"""Engine-supplied text cannot ping a channel or fake a link: the notification `text`, every
mrkdwn block and every ephemeral note escape it, through the real client and the Slack fake."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from adapters.slack.interactions import refusal_text
from bridge.models import InvalidAnswer, Question, QuestionKind
from tests.fakes.slack_api import FakeSlack
from tests.harness import wait_for
from tests.slack.conftest import slack_bridge

MARKUP = "<!channel> <!here|here> <http://evil.example/|the real dashboard> <@U0ALICE> <#C0DEPLOYS>"
# What the bridge itself may put in angle brackets: mentions of verified Slack users and dates.
OURS = re.compile(r"<(@U0[A-Z0-9]+|!date\^[^>]*)>")


def mrkdwn_texts(message: dict[str, Any]) -> list[str]:
    """The message's notification text and every mrkdwn string of its blocks."""
    found = [str(message.get("text", ""))]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn":
                found.append(str(node.get("text", "")))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(message.get("blocks", []))
    return found


def unescaped(texts: list[str]) -> list[str]:
    """Markup left live: any `<…>` that is not one of ours."""
    return [m for text in texts for m in re.findall(r"<[^>]*>", OURS.sub("", text))]


async def test_engine_markup_is_escaped_in_the_notification_text_blocks_and_notes(
        tmp_path: Path, fake: FakeSlack) -> None:
    body = {"title": f"Deploy {MARKUP}", "description": MARKUP, "engine": "delta", "tool": MARKUP,
            "workspace": MARKUP, "run_id": "<!channel>", "agent": "<!everyone>",
            "context": {MARKUP: MARKUP},
            "questions": [{"id": "ok", "kind": "confirm", "prompt": MARKUP, "help_text": MARKUP}]}
    async with slack_bridge(tmp_path, fake) as b:
        rid = await b.create(body)
        message = await b.message_of(rid)
        assert message["text"].startswith("Input needed: Deploy &lt;!channel&gt; &lt;!here|here&gt; "
                                          "&lt;http://evil.example/|the real dashboard&gt;")
        assert unescaped(mrkdwn_texts(message)) == []

        # answered elsewhere by someone whose typed name and reason are markup too
        answered = await b.http.post(f"{b.daemon.base_url}/v1/requests/{rid}/answer",
                                     json={"value": "no", "responder": "<!channel>", "reason": MARKUP})
        assert answered.status_code == 200, answered.text
        await b.closed(rid)

        def updated() -> dict[str, Any] | None:
            live = next(m for m in fake.channel_messages(message["channel"]) if m["ts"] == message["ts"])
            return live if "edited" in live and "Rejected" in str(live["blocks"]) else None

        live = await wait_for(updated, 5)
        assert "&lt;!channel&gt;" in str(live["blocks"])
        assert unescaped(mrkdwn_texts(live)) == []

        # a late click on the stale copy is told who answered, escaped
        await b.person.as_user("U0BOB").click(message, "hitl:approve")
        note = await wait_for(lambda: next((e for e in fake.ephemerals if e["user"] == "U0BOB"), None), 5)
        assert "&lt;!channel&gt;" in note["text"] and unescaped([note["text"]]) == []


def test_a_refusal_names_engine_options_escaped() -> None:
    """The note for a refused answer quotes the question's options, which the engine wrote."""
    question = Question(id="env", kind=QuestionKind.choice, prompt="Where?", options=["<!channel>", "prod"])
    with pytest.raises(InvalidAnswer) as refused:
        question.validate_answer("staging")
    text = refusal_text(refused.value)
    assert "&lt;!channel&gt;" in text and unescaped([text]) == []
