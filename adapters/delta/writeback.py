"""Writing an answer back to a Delta mailbox and resuming the run (PROTOCOLS §1).

The answer goes to `response.txt` (atomic, 0600) only while `request.json` still holds
the same request; then `resume_command` runs once. Its exit code decides: 0 done, 101
fine when the run asked something new, anything else a failure kept for
`hitl-bridge redeliver`. A long agent run is not waited for: once the engine has taken
the answer, the command is followed in the background and its end recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from adapters.delta.layout import Mailbox
from adapters.delta.mailbox import MailboxError, MailboxGone, MovedOn, read_request, write_response
from adapters.delta.offload import in_thread
from adapters.delta.resume import EXIT_WAITING, ResumeResult, build_argv, run_resume
from adapters.delta.translate import mailbox_from_ref, response_text
from bridge.ports import DeliveryError, Outcome

log = logging.getLogger("hitl_bridge.delta")

POLL_S = 0.05
TAKEN_GRACE_S = 2.0
Note = Callable[[str, str, dict[str, Any]], Awaitable[None]]
WroteBefore = Callable[[str], Awaitable[bool]]


class AnswerWriter:
    """Delivers outcomes for one `delta` source; `note(request_id, kind, data)` audits;
    `wrote_before(request_id)` says whether an earlier attempt wrote that request's answer."""

    def __init__(self, name: str, resume_command: str | None, *, resume_shell: bool, resume_timeout_s: float,
                 deliver_window_s: float, note: Note, wrote_before: WroteBefore,
                 reason_line: str | None = None) -> None:
        self.name = name
        self.reason_line = reason_line
        self.resume_command = resume_command
        self.resume_shell = resume_shell
        self.resume_timeout_s = resume_timeout_s
        self.deliver_window_s = deliver_window_s  # stay inside the outbox's delivery timeout
        self._note = note
        self._wrote_before = wrote_before
        self._background: set[asyncio.Task[Any]] = set()

    async def close(self) -> None:
        """Stop following resume commands (they are stopped too)."""
        for task in list(self._background):
            task.cancel()
        for task in list(self._background):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def deliver(self, outcome: Outcome) -> None:
        """Write the answer to `response.txt`, then run `resume_command` once if set."""
        if outcome.answer is None or outcome.state == "cancelled":
            return  # nothing the engine could read: a withdrawn or unanswered request
        request = outcome.request
        try:
            mailbox = mailbox_from_ref(request.source_ref)
        except (KeyError, ValueError, TypeError):
            raise DeliveryError("the request has no Delta mailbox reference", permanent=True) from None
        request_id = str(request.source_ref.get("request_id") or request.external_id or "")
        value = response_text(outcome.answer, request, self.reason_line)
        try:
            path = await in_thread(write_response, mailbox, request_id, value, outcome.receipt)
        except (MailboxGone, MovedOn) as exc:
            if await self._wrote_before(request.id):
                # an earlier attempt (cut short by a stop) wrote this answer and the run took it
                await self._note(request.id, "response_taken", {"path": mailbox.response_path,
                                                                "mailbox": exc.reason})
                return
            if isinstance(exc, MovedOn):
                raise DeliveryError(str(exc), permanent=True) from None
            raise DeliveryError(f"{mailbox.request_path} is gone: the run no longer waits for this "
                                "answer (answered by hand, or the run was removed)", permanent=True) from None
        except MailboxError as exc:
            raise DeliveryError(str(exc), permanent=True) from None
        except OSError as exc:
            raise DeliveryError(f"cannot write {mailbox.response_path}: {exc.strerror or exc} "
                                "(read-only or full?); will retry") from None
        await self._note(request.id, "response_written", {"path": path})
        if self.resume_command:
            secrets = [str(v) for k, v in outcome.answer.values.items() if k in request.secret_question_ids]
            await self._resume(mailbox, request.id, request_id, request.run_id, secrets)

    # resuming -------------------------------------------------------------------------------
    async def _resume(self, mailbox: Mailbox, bridge_id: str, request_id: str, run_id: str | None,
                      secrets: list[str]) -> None:
        """Start the resume command; judge it by its exit code if it ends within the delivery
        window, else as soon as the engine has taken the answer (it then runs on, supervised)."""
        assert self.resume_command is not None
        argv = build_argv(self.resume_command, workspace=mailbox.workspace, run_id=run_id,
                          shell=self.resume_shell)
        if not await in_thread(os.path.isdir, mailbox.workspace):
            raise DeliveryError(f"workspace {mailbox.workspace} is gone; cannot resume", permanent=True)
        running = asyncio.create_task(run_resume(
            argv, cwd=mailbox.workspace, timeout_s=self.resume_timeout_s, secrets=secrets,
        ), name=f"{self.name}:resume:{bridge_id}")
        self._background.add(running)
        running.add_done_callback(self._background.discard)
        taken = asyncio.create_task(self._answer_taken(mailbox, request_id))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.deliver_window_s
        try:
            await asyncio.wait({running, taken}, timeout=self.deliver_window_s,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            taken.cancel()
        if not running.done():
            # Taken: a quick run (one more question, or done) still gets judged by its exit code.
            grace = min(TAKEN_GRACE_S, deadline - loop.time())
            if grace > 0:
                await asyncio.wait({running}, timeout=grace)
        if not running.done():
            # A long agent run: the answer is in place (and usually already read). Follow it.
            follow = asyncio.create_task(self._follow(running, bridge_id))
            self._background.add(follow)
            follow.add_done_callback(self._background.discard)
            return
        await self._judge(running.result(), mailbox, bridge_id, request_id)

    async def _answer_taken(self, mailbox: Mailbox, request_id: str) -> None:
        """Returns once the mailbox no longer holds `request_id` (the engine read the answer)."""
        while True:
            try:
                current = await in_thread(read_request, mailbox)
            except MailboxGone:
                return
            except MailboxError:
                current = None
            if current is not None and current.request_id != request_id:
                return
            await asyncio.sleep(POLL_S)

    async def _follow(self, running: asyncio.Task[ResumeResult], bridge_id: str) -> None:
        result = await running
        await self._record_resume(bridge_id, result)
        if result.exit_code not in (0, EXIT_WAITING):
            log.warning("delta: request %s: %s after the answer was taken", bridge_id, result.summary)
            await self._note(bridge_id, "resume_failed", {"error": result.summary})

    async def _record_resume(self, bridge_id: str, result: ResumeResult) -> None:
        await self._note(bridge_id, "resume", {
            "command": list(result.argv), "exit_code": result.exit_code, "timed_out": result.timed_out,
            "error": result.error, "output": result.output,
        })

    async def _judge(self, result: ResumeResult, mailbox: Mailbox, bridge_id: str, request_id: str) -> None:
        """Exit 0: done. 101: fine if the run asked something new. Anything else: a failure
        kept for `hitl-bridge redeliver` (the answer stays in response.txt)."""
        await self._record_resume(bridge_id, result)
        if result.exit_code == 0:
            return
        if result.exit_code == EXIT_WAITING:
            try:
                current = await in_thread(read_request, mailbox)
            except MailboxError:
                return  # the answer was taken; nothing new is asked here
            if current.request_id != request_id:
                return  # asked again: the watcher picks the new request up
            raise DeliveryError("resume command exited 101 but the run still waits for the same "
                                "request: the answer was not taken (failed resume); "
                                "fix it and run `hitl-bridge redeliver`", permanent=True)
        tail = result.output.strip().splitlines()[-5:]
        detail = (": " + " | ".join(tail)) if tail else ""
        raise DeliveryError(f"{result.summary}{detail}. The answer is in {mailbox.response_path}; "
                            "re-run with `hitl-bridge redeliver`", permanent=True)
