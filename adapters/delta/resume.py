"""Running the configured `resume_command` once an answer is in place.

The template is split like a shell would (`shlex`) and `{workspace}` / `{run_id}` are
filled in per argument, so a path with spaces or quotes stays one argument and cannot
inject anything. `shell: true` runs it through `/bin/sh -c` with quoted values instead.
The bridge's own secrets are not passed on in the environment; output is kept (last
4 KiB, stdout and stderr merged) with every secret answer replaced by `[secret]`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

OUTPUT_TAIL = 4096
EXIT_WAITING = 101
KILL_GRACE_S = 2.0
PLACEHOLDERS = ("{workspace}", "{run_id}")
# Environment variables of the bridge itself that a resumed agent must not see.
_PRIVATE_ENV_PREFIXES = ("BRIDGE_", "SLACK_", "TELEGRAM_", "HITL_")


class BadResumeCommand(ValueError):
    """The configured template cannot be used (empty, unbalanced quotes)."""


@dataclass(frozen=True)
class ResumeResult:
    """How one run of the resume command ended."""

    argv: tuple[str, ...]
    exit_code: int | None  # None when it timed out or could not start
    output: str  # scrubbed tail of stdout+stderr
    timed_out: bool = False
    error: str | None = None  # why it could not start

    @property
    def summary(self) -> str:
        if self.error:
            return f"resume command could not start: {self.error}"
        if self.timed_out:
            return "resume command timed out and was killed"
        return f"resume command exited {self.exit_code}"


def check_template(template: str) -> None:
    """Raise BadResumeCommand when `template` is not usable."""
    try:
        parts = shlex.split(template)
    except ValueError as exc:
        raise BadResumeCommand(f"cannot be split into arguments: {exc}") from None
    if not parts:
        raise BadResumeCommand("is empty")


def build_argv(template: str, *, workspace: str, run_id: str | None, shell: bool) -> list[str]:
    """The argument vector for one resume (see the module docstring)."""
    check_template(template)
    values = {"{workspace}": workspace, "{run_id}": run_id or ""}
    if shell:
        script = template
        for key, value in values.items():
            script = script.replace(key, shlex.quote(value))
        return ["/bin/sh", "-c", script]
    argv = []
    for part in shlex.split(template):
        for key, value in values.items():
            part = part.replace(key, value)
        argv.append(part)
    return argv


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each secret replaced by `[secret]` (longest first)."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, "[secret]")
        stripped = secret.strip()
        if stripped and stripped != secret:
            text = text.replace(stripped, "[secret]")
    return text


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for the resumed engine: the bridge's, minus its own secrets."""
    env = dict(os.environ if base is None else base)
    return {k: v for k, v in env.items() if not k.upper().startswith(_PRIVATE_ENV_PREFIXES)}


async def _read_tail(stream: asyncio.StreamReader, limit: int) -> bytes:
    tail = bytearray()
    while chunk := await stream.read(65536):
        tail += chunk
        if len(tail) > 2 * limit:
            del tail[:-limit]
    return bytes(tail[-limit:])


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def run_resume(
    argv: list[str],
    *,
    cwd: str,
    timeout_s: float,
    secrets: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
) -> ResumeResult:
    """Run `argv` in `cwd` with no stdin; kill its whole process group after `timeout_s`."""
    secret_list = list(secrets)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=child_env(env),
            start_new_session=True,
        )
    except OSError as exc:
        reason = scrub(f"{exc.strerror or exc}: {exc.filename or argv[0]}", secret_list)
        return ResumeResult(tuple(argv), None, "", error=reason)
    assert proc.stdout is not None
    reader = asyncio.ensure_future(_read_tail(proc.stdout, OUTPUT_TAIL))
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), timeout_s)
    except TimeoutError:
        timed_out = True
        _kill_group(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
        except TimeoutError:
            _kill_group(proc.pid, signal.SIGKILL)
            await proc.wait()
    except asyncio.CancelledError:
        _kill_group(proc.pid, signal.SIGKILL)
        reader.cancel()
        raise
    # A grandchild may keep the pipe open after the command exits: do not wait for it.
    try:
        raw = await asyncio.wait_for(asyncio.shield(reader), 1.0)
    except TimeoutError:
        _kill_group(proc.pid, signal.SIGKILL)
        raw = b""
        reader.cancel()
    output = scrub(raw.decode("utf-8", errors="replace"), secret_list)[-OUTPUT_TAIL:]
    shown = tuple(scrub(a, secret_list) for a in argv)
    if timed_out:
        return ResumeResult(shown, None, output, timed_out=True)
    return ResumeResult(shown, proc.returncode, output)
