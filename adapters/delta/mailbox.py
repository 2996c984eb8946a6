"""Reading `request.json` and run metadata, and writing `response.txt` (PROTOCOLS §1).

Plain blocking functions (callers use `offload.in_thread`). Reading tolerates the
engine's non-atomic writes: an incomplete file raises `MailboxError(retryable=True)`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
from dataclasses import dataclass
from typing import Any

from adapters.delta.files import MailboxError, MailboxGone, OutsideWorkspace, confined, read_bytes, unreadable
from adapters.delta.layout import (
    DELTA_DIR,
    RECEIPT_FILE,
    REQUEST_FILE,
    RESPONSE_FILE,
    VERSION_FILE,
    Mailbox,
    latest_run,
    read_small,
)

__all__ = ["MailboxError", "MailboxGone", "read_bytes"]

MAX_REQUEST_BYTES = 1024 * 1024
MAX_METADATA_BYTES = 1024 * 1024
METADATA_TEXT_MAX = 4000  # per field: a task can be long, but not a chat message
RUN_STATUSES = frozenset({"RUNNING", "WAITING_FOR_INPUT", "COMPLETED", "FAILED", "INTERRUPTED"})


class MovedOn(MailboxError):
    """`request.json` now holds another question: the run went past the one answered."""


@dataclass(frozen=True)
class DeltaRequest:
    """The content of one `request.json`."""

    request_id: str
    prompt: str
    input_type: str
    sensitive: bool
    timestamp: str | None

    @property
    def is_secret(self) -> bool:
        return self.sensitive or self.input_type == "password"

    @property
    def is_confirmation(self) -> bool:
        return self.input_type == "confirmation" and not self.is_secret


@dataclass(frozen=True)
class FileStamp:
    """What identifies one version of a file without reading it (the change time too: a
    `chmod` that makes an unreadable file readable is a change worth another look)."""

    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int = 0


def stamp(path: str) -> FileStamp | None:
    """The file's stamp, or None when it does not exist; MailboxError when it cannot be
    looked at (a folder on the way with mode 000...)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        error = unreadable(path, exc)
        if isinstance(error, MailboxGone) or exc.errno == errno.ELOOP:
            return None
        raise error from None
    return FileStamp(st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def parse_request(data: bytes, path: str) -> DeltaRequest:
    """Validate the bytes of a `request.json`.

    Empty, undecodable or unparsable content is `retryable` (the engine may be halfway
    through writing it); valid JSON with missing or mistyped fields is not.
    """
    if not data.strip():
        raise MailboxError(path, "is empty (still being written?)", retryable=True, kind="empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MailboxError(path, f"is not UTF-8 ({exc.reason} at byte {exc.start})", retryable=True,
                           kind="not_utf8") from None
    try:
        body = json.loads(text)
    except RecursionError:
        raise MailboxError(path, "is not valid JSON (nested too deeply)", kind="too_deep") from None
    except ValueError as exc:
        raise MailboxError(path, f"is not valid JSON ({exc})", retryable=True, kind="not_json") from None
    if not isinstance(body, dict):
        raise MailboxError(path, f"must hold a JSON object, not {type(body).__name__}", kind="not_object")
    request_id = body.get("request_id")
    if not isinstance(request_id, str) or not request_id.strip() or len(request_id) > 200:
        raise MailboxError(path, "field 'request_id' must be a non-empty string (≤ 200 characters)",
                           kind="field:request_id")
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise MailboxError(path, "field 'prompt' must be a non-empty string", kind="field:prompt")
    input_type = body.get("input_type", "text")
    if input_type is None:
        input_type = "text"
    if not isinstance(input_type, str):
        raise MailboxError(path, "field 'input_type' must be a string", kind="field:input_type")
    sensitive = body.get("sensitive", False)
    if sensitive is None:
        sensitive = False
    if not isinstance(sensitive, bool):
        raise MailboxError(path, "field 'sensitive' must be true or false", kind="field:sensitive")
    timestamp = body.get("timestamp")
    if timestamp is not None and not isinstance(timestamp, str):
        raise MailboxError(path, "field 'timestamp' must be a string", kind="field:timestamp")
    return DeltaRequest(request_id.strip(), prompt, input_type.strip().lower(), sensitive, timestamp)


def read_request(mailbox: Mailbox) -> DeltaRequest:
    """Read and validate the mailbox's `request.json` (MailboxGone when there is none)."""
    path = mailbox.request_path
    return parse_request(read_bytes(path, mailbox.workspace, MAX_REQUEST_BYTES), path)


class MetadataUnreadable(Exception):
    """`metadata.json` exists but does not parse (yet): the engine may be rewriting it."""


def read_metadata(mailbox: Mailbox) -> tuple[str | None, dict[str, Any]]:
    """The run id and the usable fields of the run's `metadata.json` ({} when there is none).

    For a shared mailbox, LATEST is read again now: the latest run changes between asks.
    Raises MetadataUnreadable when the file is there but cannot be parsed.
    """
    run_id, meta_path = mailbox.run_id, mailbox.metadata_path
    if mailbox.layout in ("v1.2", "v1.3"):
        _, run_id, meta_path = latest_run(mailbox.workspace)
    if meta_path is None:
        return run_id, {}
    try:
        raw = json.loads(read_bytes(meta_path, mailbox.workspace, MAX_METADATA_BYTES).decode("utf-8"))
    except MailboxGone:
        return run_id, {}
    except (MailboxError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise MetadataUnreadable(f"{meta_path}: {exc}") from None
    if not isinstance(raw, dict):
        raise MetadataUnreadable(f"{meta_path}: not a JSON object")
    meta: dict[str, Any] = {}
    for key in ("run_id", "agent_ref", "task", "status", "start_time", "hostname", "error"):
        value = raw.get(key)
        if isinstance(value, str):
            meta[key] = value[:METADATA_TEXT_MAX]
    for key in ("iterations_completed", "pid"):
        value = raw.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            meta[key] = value
    if meta.get("status") not in RUN_STATUSES:
        meta.pop("status", None)
    return (run_id or meta.get("run_id")), meta


def engine_version(workspace: str) -> str | None:
    """The content of `.delta/VERSION` (the engine's data format version), if any."""
    return read_small(os.path.join(workspace, DELTA_DIR, VERSION_FILE), workspace)


def write_response(mailbox: Mailbox, request_id: str, value: str, receipt: str | None = None) -> str:
    """Write `value` to the mailbox's `response.txt` atomically; return its path.

    Only when `request.json` still holds `request_id` (MailboxGone / MailboxError
    otherwise: the run moved on and a stray answer would be read by its next question).
    Temp file in the same folder, mode 0600, fsync, rename over `response.txt` (a
    symlink there is replaced, never followed). When the bridge runs as root the file
    is given to the owner of `request.json`, so the engine's user can read it.
    `receipt` (the signed receipt of the decision) goes to `response.receipt.jws` the same
    way, first: whoever reads `response.txt` finds its receipt beside it.
    Raises OSError when the folder cannot be written (read-only, full): retry later.
    """
    current = read_request(mailbox)
    if current.request_id != request_id:
        raise MovedOn(
            mailbox.request_path,
            f"now holds request {current.request_id!r}, not {request_id!r}: the run moved on",
        )
    try:
        directory = confined(mailbox.directory, mailbox.workspace)
        if mailbox.root is not None:  # the workspace itself may have become a link elsewhere
            directory = confined(mailbox.directory, mailbox.root)
    except OutsideWorkspace as exc:
        raise MailboxError(mailbox.directory, f"leads outside {exc.workspace} (symlink); refused",
                           kind="outside") from exc
    owner = os.stat(os.path.join(directory, REQUEST_FILE))
    if receipt is not None:
        _replace_file(directory, RECEIPT_FILE, receipt + "\n", owner)
    _replace_file(directory, RESPONSE_FILE, value, owner)
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return os.path.join(mailbox.directory, RESPONSE_FILE)


def _replace_file(directory: str, name: str, value: str, owner: os.stat_result) -> None:
    """`directory/name` replaced atomically by `value` (0600, fsynced, given to `owner` as root)."""
    tmp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)
            if os.geteuid() == 0 and (owner.st_uid, owner.st_gid) != (0, 0):
                os.fchown(fd, owner.st_uid, owner.st_gid)
            data = value.encode("utf-8")
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
