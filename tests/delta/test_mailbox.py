"""Mailbox discovery, request parsing and answer writing, on the real engine's files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from adapters.delta.layout import Layout, escaped_mailboxes, find_mailboxes, watch_dirs
from adapters.delta.mailbox import (
    MAX_REQUEST_BYTES,
    MailboxError,
    MailboxGone,
    parse_request,
    read_metadata,
    read_request,
    write_response,
)
from adapters.delta.translate import question_kind, response_text, to_request_in
from bridge.models import Answer, QuestionKind, Responder, utcnow
from tests.delta.helpers import (
    FIXTURES,
    make_v1_2_workspace,
    make_v1_3_workspace,
    make_v1_10_workspace,
    read_only,
)


def test_v1_10_mailbox_found_and_llm_logs_ignored(tmp_path: Path) -> None:
    mailbox_dir = make_v1_10_workspace(tmp_path)
    boxes = find_mailboxes(str(tmp_path))
    assert [b.directory for b in boxes] == [str(mailbox_dir)]
    box = boxes[0]
    assert box.layout is Layout.v1_10
    assert box.run_id == "20261122_012445_4242f7"
    run_id, meta = read_metadata(box)
    assert run_id == "20261122_012445_4242f7"
    assert meta["status"] == "WAITING_FOR_INPUT"
    assert meta["agent_ref"] == "/work/steering/harness/delta-agent"


def test_v1_4_layout_is_per_run_with_latest(tmp_path: Path) -> None:
    make_v1_10_workspace(tmp_path)
    (tmp_path / ".delta" / "LATEST").write_text("20261122_012445_4242f7")
    (box,) = find_mailboxes(str(tmp_path))
    assert box.layout is Layout.v1_4


def test_v1_3_shared_mailbox_reads_latest(tmp_path: Path) -> None:
    make_v1_3_workspace(tmp_path)
    (box,) = find_mailboxes(str(tmp_path))
    assert box.layout is Layout.v1_3
    run_id, meta = read_metadata(box)
    assert run_id == "20261122_012448_729864"
    assert meta["task"].startswith("Deploy HARNESS_SCRIPT")
    assert "pid" not in meta  # v1.3.0 writes none


def test_v1_2_spec_layout(tmp_path: Path) -> None:
    make_v1_2_workspace(tmp_path, run_id="20251017_142233_a1b2c3")
    (box,) = find_mailboxes(str(tmp_path))
    assert box.layout is Layout.v1_2
    run_id, meta = read_metadata(box)
    assert run_id == "20251017_142233_a1b2c3"
    assert meta["status"] == "WAITING_FOR_INPUT"


def test_hostile_latest_is_not_followed(tmp_path: Path) -> None:
    make_v1_3_workspace(tmp_path)
    (tmp_path / ".delta" / "LATEST").write_text("../../../etc")
    (box,) = find_mailboxes(str(tmp_path))
    assert read_metadata(box) == (None, {})


def test_no_delta_folder_means_no_mailbox(tmp_path: Path) -> None:
    assert find_mailboxes(str(tmp_path)) == []
    assert watch_dirs(str(tmp_path)) == [str(tmp_path)]


def test_watch_dirs_cover_workspace_delta_and_mailboxes(tmp_path: Path) -> None:
    mailbox_dir = make_v1_10_workspace(tmp_path)
    (tmp_path / ".delta" / "20261122_999999_ffffff").mkdir()  # a run without a mailbox yet
    dirs = watch_dirs(str(tmp_path))
    assert str(tmp_path) in dirs
    assert str(tmp_path / ".delta") in dirs
    assert str(mailbox_dir) in dirs
    assert str(tmp_path / ".delta" / "20261122_999999_ffffff") in dirs
    assert not any("invocations" in d for d in dirs)


def test_symlinked_mailbox_outside_workspace_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "request.json").write_text((FIXTURES / "v1.10.1" / "request.text.json").read_text())
    ws = tmp_path / "ws"
    run = ws / ".delta" / "20261122_012445_4242f7"
    run.mkdir(parents=True)
    (run / "interaction").symlink_to(outside)
    assert find_mailboxes(str(ws)) == []
    assert escaped_mailboxes(str(ws)) == [str(run / "interaction")]


def test_symlinked_request_file_outside_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    mailbox_dir = make_v1_10_workspace(ws)
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"request_id": "x", "prompt": "leaked"}))
    (mailbox_dir / "request.json").unlink()
    (mailbox_dir / "request.json").symlink_to(secret)
    (box,) = find_mailboxes(str(ws))
    with pytest.raises(MailboxError, match="outside the workspace") as err:
        read_request(box)
    assert not err.value.retryable


@pytest.mark.parametrize(
    ("fixture", "kind"),
    [
        ("v1.10.1/request.text.json", QuestionKind.text),
        ("v1.10.1/request.confirmation.json", QuestionKind.confirm),
        ("v1.10.1/request.password.json", QuestionKind.secret),
        ("v1.3.0/request.confirmation.json", QuestionKind.confirm),
        ("v1.3.0/request.password.json", QuestionKind.secret),
    ],
)
def test_real_requests_parse_to_the_right_kind(fixture: str, kind: QuestionKind) -> None:
    data = (FIXTURES / fixture).read_bytes()
    request = parse_request(data, fixture)
    assert request.request_id == json.loads(data)["request_id"]
    assert question_kind(request) is kind


def test_sensitive_text_and_unknown_types() -> None:
    sensitive = parse_request(b'{"request_id": "a", "prompt": "Token?", "sensitive": true}', "p")
    assert question_kind(sensitive) is QuestionKind.secret
    odd = parse_request(b'{"request_id": "b", "prompt": "Pick", "input_type": "choice"}', "p")
    assert question_kind(odd) is QuestionKind.text
    sensitive_confirm = parse_request(
        b'{"request_id": "c", "prompt": "ok?", "input_type": "confirmation", "sensitive": true}', "p"
    )
    assert question_kind(sensitive_confirm) is QuestionKind.secret


def test_every_prefix_of_a_partial_write_is_retryable() -> None:
    data = (FIXTURES / "v1.10.1" / "request.text.json").read_bytes()
    for cut in range(len(data)):
        with pytest.raises(MailboxError) as err:
            parse_request(data[:cut], "request.json")
        assert err.value.retryable, cut


def test_cut_inside_a_multibyte_character_is_retryable() -> None:
    data = json.dumps({"request_id": "u", "prompt": "Déployer ✓?"}, ensure_ascii=False).encode()
    cut = data.index("✓".encode()) + 1
    with pytest.raises(MailboxError, match="not UTF-8") as err:
        parse_request(data[:cut], "request.json")
    assert err.value.retryable


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"[1, 2]", "JSON object"),
        (b'{"prompt": "no id"}', "request_id"),
        (b'{"request_id": 7, "prompt": "x"}', "request_id"),
        (b'{"request_id": "a"}', "prompt"),
        (b'{"request_id": "a", "prompt": ["x"]}', "prompt"),
        (b'{"request_id": "a", "prompt": "x", "input_type": 3}', "input_type"),
        (b'{"request_id": "a", "prompt": "x", "sensitive": "yes"}', "sensitive"),
        (b'{"request_id": "a", "prompt": "x", "timestamp": 5}', "timestamp"),
    ],
)
def test_missing_or_mistyped_fields_fail_for_good(body: bytes, reason: str) -> None:
    with pytest.raises(MailboxError, match=reason) as err:
        parse_request(body, "request.json")
    assert not err.value.retryable


def test_oversized_request_fails_for_good(tmp_path: Path) -> None:
    mailbox_dir = make_v1_10_workspace(tmp_path)
    (mailbox_dir / "request.json").write_bytes(b" " * (MAX_REQUEST_BYTES + 1))
    (box,) = find_mailboxes(str(tmp_path))
    with pytest.raises(MailboxError, match="limit") as err:
        read_request(box)
    assert not err.value.retryable


def test_fifo_is_not_read(tmp_path: Path) -> None:
    mailbox_dir = make_v1_10_workspace(tmp_path)
    (mailbox_dir / "request.json").unlink()
    os.mkfifo(mailbox_dir / "request.json")
    (box,) = find_mailboxes(str(tmp_path))
    with pytest.raises(MailboxError, match="regular file"):
        read_request(box)


def test_missing_request_is_gone(tmp_path: Path) -> None:
    mailbox_dir = make_v1_10_workspace(tmp_path)
    (box,) = find_mailboxes(str(tmp_path))
    (mailbox_dir / "request.json").unlink()
    with pytest.raises(MailboxGone):
        read_request(box)


def test_request_carries_workspace_run_agent_and_task(tmp_path: Path) -> None:
    make_v1_10_workspace(tmp_path, request="request.confirmation.json")
    (box,) = find_mailboxes(str(tmp_path))
    request = read_request(box)
    run_id, meta = read_metadata(box)
    req = to_request_in(box, request, run_id, meta, version="1.2")
    assert req.external_id == "62277f92-6abd-41ca-a44f-06c6000c6e1a"
    assert req.engine == "delta"
    assert req.workspace == str(tmp_path)
    assert req.run_id == "20261122_012445_4242f7"
    assert req.agent == "/work/steering/harness/delta-agent"
    assert req.title == "Approve deploy to prod?"
    assert req.context["task"].startswith("Deploy HARNESS_SCRIPT")
    assert req.context["status"] == "WAITING_FOR_INPUT"
    assert req.questions[0].kind is QuestionKind.confirm
    assert req.questions[0].validate_answer("Approve") == "yes"


def test_huge_prompt_is_clipped_not_rejected(tmp_path: Path) -> None:
    mailbox_dir = make_v1_10_workspace(tmp_path)
    body = {"request_id": "big", "prompt": "line one\n" + "x" * 50_000}
    (mailbox_dir / "request.json").write_text(json.dumps(body))
    (box,) = find_mailboxes(str(tmp_path))
    req = to_request_in(box, read_request(box), None, {})
    assert req.title == "line one"
    assert len(req.questions[0].prompt) == 20_000


def _answer(value: object) -> Answer:
    return Answer(values={"answer": value}, responder=Responder(platform="cli", user_id="u"),
                  via="cli", answered_at=utcnow())


def test_response_is_written_atomically_with_mode_0600(tmp_path: Path) -> None:
    mailbox_dir = make_v1_10_workspace(tmp_path)
    (box,) = find_mailboxes(str(tmp_path))
    before = os.stat(mailbox_dir / "request.json")
    path = write_response(box, "05877c30-33c6-4835-bc3b-b5062d358174", response_text(_answer("staging")))
    st = os.stat(path)
    assert Path(path).read_text() == "staging"
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert (st.st_uid, st.st_gid) == (before.st_uid, before.st_gid)
    assert sorted(p.name for p in mailbox_dir.iterdir()) == ["request.json", "response.txt"]


def test_response_owner_follows_the_mailbox_when_root(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    mailbox_dir = make_v1_10_workspace(tmp_path)
    os.chown(mailbox_dir / "request.json", 4242, 4343)
    (box,) = find_mailboxes(str(tmp_path))
    path = write_response(box, "05877c30-33c6-4835-bc3b-b5062d358174", "x")
    st = os.stat(path)
    assert (st.st_uid, st.st_gid) == (4242, 4343)


def test_symlinked_response_is_replaced_not_followed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    mailbox_dir = make_v1_10_workspace(ws)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (mailbox_dir / "response.txt").symlink_to(victim)
    (box,) = find_mailboxes(str(ws))
    write_response(box, "05877c30-33c6-4835-bc3b-b5062d358174", "prod")
    assert victim.read_text() == "keep me"
    assert not (mailbox_dir / "response.txt").is_symlink()
    assert (mailbox_dir / "response.txt").read_text() == "prod"


def test_response_refused_when_the_run_moved_on(tmp_path: Path) -> None:
    mailbox_dir = make_v1_10_workspace(tmp_path)
    (box,) = find_mailboxes(str(tmp_path))
    with pytest.raises(MailboxError, match="moved on"):
        write_response(box, "some-older-request", "yes")
    (mailbox_dir / "request.json").unlink()
    with pytest.raises(MailboxGone):
        write_response(box, "05877c30-33c6-4835-bc3b-b5062d358174", "yes")
    assert not (mailbox_dir / "response.txt").exists()


def test_read_only_mailbox_raises_oserror_and_leaves_nothing(tmp_path: Path) -> None:
    mailbox_dir = make_v1_10_workspace(tmp_path)
    (box,) = find_mailboxes(str(tmp_path))
    with read_only(mailbox_dir) as possible:
        if not possible:
            pytest.skip("cannot make a folder read-only here")
        with pytest.raises(OSError):
            write_response(box, "05877c30-33c6-4835-bc3b-b5062d358174", "yes")
    assert sorted(p.name for p in mailbox_dir.iterdir()) == ["request.json"]
