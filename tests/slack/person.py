"""A simulated person in Slack: sends what Slack sends when someone clicks, submits a modal
or replies in a thread — signed with the app's signing secret — to the bridge's
`/slack/events`, and builds the same payloads for Socket Mode envelopes.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from typing import Any
from urllib.parse import urlencode

import httpx

from tests.fakes.slack_api import FakeSlack

_event_ids = itertools.count(1)


def sign(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def find_element(blocks: list[dict[str, Any]], action_id: str) -> tuple[str, dict[str, Any]]:
    """(block_id, element) of the control with `action_id` in a message."""
    for block in blocks:
        elements = block.get("elements", []) if block.get("type") == "actions" else []
        if block.get("accessory"):
            elements = [block["accessory"]]
        for element in elements:
            if element.get("action_id") == action_id:
                return str(block.get("block_id", "")), element
    raise LookupError(f"no control {action_id!r} in the message")


class Person:
    """One Slack user. `url` is the bridge's `/slack/events` endpoint."""

    def __init__(
        self,
        fake: FakeSlack,
        client: httpx.AsyncClient,
        url: str,
        signing_secret: str,
        user_id: str = "U0ALICE",
    ) -> None:
        self.fake = fake
        self.client = client
        self.url = url
        self.signing_secret = signing_secret
        self.user_id = user_id
        self.last_trigger_id = ""

    def as_user(self, user_id: str) -> Person:
        return Person(self.fake, self.client, self.url, self.signing_secret, user_id)

    @property
    def user(self) -> dict[str, Any]:
        name = self.fake.users.get(self.user_id, "someone")
        return {"id": self.user_id, "username": name, "name": name, "team_id": "T0FAKE"}

    # payloads ----------------------------------------------------------------------------------
    def block_actions(
        self, message: dict[str, Any], action_id: str, *, option: str | None = None
    ) -> dict[str, Any]:
        """A click on the control `action_id` of `message` (an option label for selects)."""
        block_id, element = find_element(message["blocks"], action_id)
        action: dict[str, Any] = {"action_id": action_id, "block_id": block_id,
                                  "type": element["type"], "action_ts": f"{time.time():.6f}"}
        if element["type"] == "button":
            action["value"] = element.get("value", "")
            action["text"] = element["text"]
        else:
            chosen = next(o for o in element["options"] if o["text"]["text"] == option)
            action["selected_option"] = chosen
        self.last_trigger_id = self.fake.new_trigger_id()
        channel = message["channel"]
        return {
            "type": "block_actions", "user": self.user, "api_app_id": "A0FAKE",
            "team": {"id": "T0FAKE", "domain": "fake"}, "trigger_id": self.last_trigger_id,
            "channel": {"id": channel, "name": channel},
            "container": {"type": "message", "message_ts": message["ts"], "channel_id": channel,
                          "is_ephemeral": False},
            "message": message, "response_url": "http://127.0.0.1:9/response",
            "actions": [action],
        }

    def view_submission(self, view: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
        """Submitting `view` with `inputs` (block_id → text, option label, or list of labels)."""
        values: dict[str, Any] = {}
        for block in view.get("blocks", []):
            if block.get("type") != "input" or block["block_id"] not in inputs:
                continue
            element = block["element"]
            given = inputs[block["block_id"]]
            state: dict[str, Any] = {"type": element["type"]}
            options = {o["text"]["text"]: o for o in element.get("options", [])}
            if element["type"] == "plain_text_input":
                state["value"] = given
            elif element["type"] in ("checkboxes", "multi_static_select"):
                state["selected_options"] = [options[label] for label in given]
            else:
                state["selected_option"] = options[given] if given is not None else None
            values[block["block_id"]] = {element["action_id"]: state}
        submitted = dict(view, state={"values": values})
        return {"type": "view_submission", "user": self.user, "api_app_id": "A0FAKE",
                "team": {"id": "T0FAKE", "domain": "fake"}, "trigger_id": self.fake.new_trigger_id(),
                "view": submitted}

    def home_opened(self) -> dict[str, Any]:
        """The `event_callback` Slack sends when someone opens the app's Home tab."""
        now = time.time()
        return {
            "token": "unused", "team_id": "T0FAKE", "api_app_id": "A0FAKE", "type": "event_callback",
            "event_id": f"Ev{next(_event_ids):08d}", "event_time": int(now),
            "event": {"type": "app_home_opened", "user": self.user_id, "channel": "D" + self.user_id[1:],
                      "tab": "home", "event_ts": f"{now:.6f}"},
        }

    def home_click(self, block_id: str) -> dict[str, Any]:
        """A click on the button of section `block_id` in their published Home tab."""
        view = self.fake.homes[self.user_id]
        block = next(b for b in view["blocks"] if b.get("block_id") == block_id)
        button = block["accessory"]
        return {
            "type": "block_actions", "user": self.user, "api_app_id": "A0FAKE",
            "team": {"id": "T0FAKE", "domain": "fake"}, "trigger_id": self.fake.new_trigger_id(),
            "container": {"type": "view", "view_id": view["id"]}, "view": view,
            "actions": [{"action_id": button["action_id"], "block_id": block_id, "type": "button",
                         "value": button["value"], "text": button["text"],
                         "action_ts": f"{time.time():.6f}"}],
        }

    def thread_reply(self, message: dict[str, Any], text: str) -> dict[str, Any]:
        """The `event_callback` Slack sends when someone replies in a message's thread."""
        now = time.time()
        return {
            "token": "unused", "team_id": "T0FAKE", "api_app_id": "A0FAKE", "type": "event_callback",
            "event_id": f"Ev{next(_event_ids):08d}", "event_time": int(now),
            "event": {"type": "message", "channel": message["channel"], "user": self.user_id,
                      "text": text, "ts": f"{now:.6f}", "thread_ts": message["ts"],
                      "channel_type": "channel", "event_ts": f"{now:.6f}"},
        }

    # sending ------------------------------------------------------------------------------------
    async def send(
        self,
        payload: dict[str, Any],
        *,
        secret: str | None = None,
        timestamp: int | None = None,
    ) -> httpx.Response:
        """POST `payload` as Slack does: interactions form-encoded, events as JSON, signed."""
        if payload.get("type") == "event_callback":
            body = json.dumps(payload).encode()
            ctype = "application/json"
        else:
            body = urlencode({"payload": json.dumps(payload)}).encode()
            ctype = "application/x-www-form-urlencoded"
        return await self.send_raw(body, ctype, secret=secret, timestamp=timestamp)

    async def send_raw(
        self,
        body: bytes,
        content_type: str = "application/x-www-form-urlencoded",
        *,
        secret: str | None = None,
        timestamp: int | None = None,
        signature: str | None = None,
    ) -> httpx.Response:
        ts = str(int(time.time()) if timestamp is None else timestamp)
        headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": signature or sign(secret or self.signing_secret, ts, body),
        }
        return await self.client.post(self.url, content=body, headers=headers)

    async def click(
        self, message: dict[str, Any], action_id: str, *, option: str | None = None
    ) -> httpx.Response:
        return await self.send(self.block_actions(message, action_id, option=option))

    async def submit(self, view: dict[str, Any], inputs: dict[str, Any]) -> httpx.Response:
        return await self.send(self.view_submission(view, inputs))

    async def reply(self, message: dict[str, Any], text: str) -> httpx.Response:
        return await self.send(self.thread_reply(message, text))
