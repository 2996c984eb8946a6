"""Looking at workspaces: which mailboxes changed since last time, and what they hold.

Runs in a worker thread (blocking file I/O). It only observes; `DeltaSource` decides
what to submit, withdraw or report, so this stays easy to test on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from adapters.delta.layout import Mailbox, survey
from adapters.delta.mailbox import (
    DeltaRequest,
    FileStamp,
    MailboxError,
    MailboxGone,
    MetadataUnreadable,
    engine_version,
    read_metadata,
    read_request,
    stamp,
)
from adapters.delta.translate import source_ref, to_request_in
from bridge.models import RequestIn

_UNKNOWN: Any = object()


@dataclass(frozen=True)
class Sighting:
    """One mailbox whose `request.json` differs from what was last settled."""

    key: str  # the mailbox folder (roots are de-duplicated by real path: one key per folder)
    mailbox: Mailbox
    stamp: FileStamp | None  # None: no request.json any more
    request: DeltaRequest | None = None
    request_in: RequestIn | None = None
    ref: dict[str, Any] | None = None
    error: MailboxError | None = None  # with request_in set: usable, but retry for a better read


@dataclass
class WorkspaceView:
    """What one look at a workspace found."""

    workspace: str
    sightings: list[Sighting] = field(default_factory=list)
    present: set[str] = field(default_factory=set)  # keys of every mailbox folder there
    watch: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # path → why it is not looked at


def mailbox_key(mailbox: Mailbox) -> str:
    # Roots are de-duplicated by real path already, so the path as found is unique.
    return mailbox.directory


def look(mailbox: Mailbox, key: str, current: FileStamp | None) -> Sighting:
    """Read one mailbox fully: request, run metadata, and the bridge request it makes."""
    if current is None:
        return Sighting(key, mailbox, None)
    provisional: MailboxError | None = None
    try:
        request = read_request(mailbox)
        try:
            run_id, metadata = read_metadata(mailbox)
        except MetadataUnreadable as exc:
            # Usable without it, but better with it: retried like a partial request first.
            run_id, metadata = mailbox.run_id, {}
            provisional = MailboxError(str(exc), "run metadata is unreadable (being rewritten?)", retryable=True)
        request_in = to_request_in(mailbox, request, run_id, metadata, engine_version(mailbox.workspace))
    except MailboxGone:
        return Sighting(key, mailbox, None)
    except MailboxError as exc:
        return Sighting(key, mailbox, current, error=exc)
    except ValueError as exc:  # pydantic: a field the bridge model refuses
        return Sighting(key, mailbox, current, error=MailboxError(mailbox.request_path, str(exc)))
    return Sighting(key, mailbox, current, request, request_in, source_ref(mailbox, request, run_id),
                    error=provisional)


def scan_workspace(workspace: str, settled: Mapping[str, FileStamp | None],
                   root: str | None = None) -> WorkspaceView:
    """Mailboxes of `workspace` whose request file's stamp differs from `settled[key]`.

    A key missing from `settled` counts as "no request known"; a settled key whose
    folder is gone (run or workspace deleted) is reported with stamp None. A mailbox
    that cannot be looked into is refused and left as it was (not taken as gone).
    """
    view = WorkspaceView(workspace)
    found = survey(workspace, root)
    view.refused.update(found.refused)
    for mailbox in found.mailboxes:
        key = mailbox_key(mailbox)
        if key in view.present:
            continue
        view.present.add(key)
        try:
            current = stamp(mailbox.request_path)
        except MailboxError as exc:
            view.refused[mailbox.directory] = exc.reason
            continue
        known = settled.get(key, _UNKNOWN)  # one read: the loop may change `settled` meanwhile
        if current is not None and known == current:
            continue
        if current is None and (known is None or known is _UNKNOWN):
            if known is not _UNKNOWN:
                view.sightings.append(Sighting(key, mailbox, None))
            continue
        view.sightings.append(look(mailbox, key, current))
    view.watch = found.watch
    return view
