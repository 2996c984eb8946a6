#!/usr/bin/env python3
"""A stand-in for Delta Engine's `delta run` that pauses on `ask_human` (PROTOCOLS §1).

    python tests/fakes/delta_engine.py run -y -w WS -m 'Deploy HARNESS_SCRIPT {"asks": [...]}'
        [--engine-version 1.2|1.3.0|1.4|1.10.1] [--run-id ID] [--write-pause-ms N]

The task message carries the script after `HARNESS_SCRIPT`: `{"asks": [{"prompt": …,
"input_type": …, "sensitive": …}], "record": true, "work_s": 0, "fail": null}`
(`work_s`: seconds of "work" before the first ask, to test SIGINT).
Like the real engine it writes `request.json` with a plain, non-atomic write (two
chunks with a pause between), sets the run's status to WAITING_FOR_INPUT afterwards,
exits 101; on the next start it resumes only when both `request.json` and
`response.txt` exist (reads the answer trimmed, deletes both) and either asks the next
question (101 again) or finishes (exit 0, `HARNESS_DONE {"answers": [...]}` on stdout).
Without `response.txt` it exits 101 but leaves the status RUNNING. Exit 1 on failure
(missing `-m`, `"fail"` in the script, v1.3.0 asked to resume), 130 on SIGINT.
Answers are appended to `answers.txt` (`ANSWER n: value`) when `record` is true.
File names, JSON shapes and layouts follow tests/fixtures/delta (real files of the real engine).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_WAITING, EXIT_INTERRUPTED = 0, 1, 101, 130
RESUMABLE = ("WAITING_FOR_INPUT", "INTERRUPTED")
LAYOUTS = {"1.2": "v1.2", "1.3": "v1.3", "1.3.0": "v1.3", "1.4": "v1.4", "1.9": "v1.4",
           "1.10": "v1.10", "1.10.1": "v1.10"}


def now_iso() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def dump(obj: Any) -> str:
    """JSON.stringify(obj, null, 2): two-space indent, no trailing newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False)


def write_whole(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


@dataclass
class Run:
    """Paths of one run for a given engine layout."""

    workspace: str
    layout: str
    run_id: str

    @property
    def delta(self) -> str:
        return os.path.join(self.workspace, ".delta")

    @property
    def run_dir(self) -> str:
        if self.layout == "v1.2":
            return os.path.join(self.delta, "runs", self.run_id)
        return os.path.join(self.delta, self.run_id)

    @property
    def metadata_path(self) -> str:
        if self.layout == "v1.2":
            return os.path.join(self.run_dir, "execution", "metadata.json")
        return os.path.join(self.run_dir, "metadata.json")

    @property
    def journal_path(self) -> str:
        if self.layout == "v1.2":
            return os.path.join(self.run_dir, "execution", "journal.jsonl")
        return os.path.join(self.run_dir, "journal.jsonl")

    @property
    def interaction(self) -> str:
        if self.layout in ("v1.2", "v1.3"):
            return os.path.join(self.delta, "interaction")
        return os.path.join(self.run_dir, "interaction")

    @property
    def request_path(self) -> str:
        return os.path.join(self.interaction, "request.json")

    @property
    def response_path(self) -> str:
        return os.path.join(self.interaction, "response.txt")

    # metadata / journal ------------------------------------------------------------
    def read_metadata(self) -> dict[str, Any]:
        with open(self.metadata_path, encoding="utf-8") as f:
            data: dict[str, Any] = json.load(f)
        return data

    def write_metadata(self, meta: dict[str, Any]) -> None:
        write_whole(self.metadata_path, dump(meta))

    def set_status(self, status: str, **extra: Any) -> None:
        meta = self.read_metadata()
        meta["status"] = status
        meta.update(extra)
        self.write_metadata(meta)

    def journal(self) -> list[dict[str, Any]]:
        try:
            with open(self.journal_path, encoding="utf-8") as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def log(self, kind: str, payload: dict[str, Any]) -> None:
        seq = len(self.journal()) + 1
        line = json.dumps({"seq": seq, "timestamp": now_iso(), "type": kind, "payload": payload},
                          ensure_ascii=False, separators=(",", ":"))
        os.makedirs(os.path.dirname(self.journal_path), exist_ok=True)
        with open(self.journal_path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def answers(self) -> list[str]:
        """Answers given so far: ACTION_RESULTs of ask_human calls (kept in clear, like the engine)."""
        asks = {e["payload"]["action_id"] for e in self.journal()
                if e["type"] == "ACTION_REQUEST" and e["payload"].get("tool_name") == "ask_human"}
        return [e["payload"]["observation_content"] for e in self.journal()
                if e["type"] == "ACTION_RESULT" and e["payload"].get("action_id") in asks]

    def open_action(self) -> str | None:
        done = {e["payload"]["action_id"] for e in self.journal() if e["type"] == "ACTION_RESULT"}
        for e in self.journal():
            if (e["type"] == "ACTION_REQUEST" and e["payload"].get("tool_name") == "ask_human"
                    and e["payload"]["action_id"] not in done):
                return str(e["payload"]["action_id"])
        return None


def latest_path(workspace: str, layout: str) -> str | None:
    if layout == "v1.2":
        return os.path.join(workspace, ".delta", "runs", "LATEST")
    if layout in ("v1.3", "v1.4"):
        return os.path.join(workspace, ".delta", "LATEST")
    return None


def find_resumable(workspace: str, layout: str) -> Run | None:
    """The run that waits for input, found the way each engine version finds it."""
    latest = latest_path(workspace, layout)
    if latest is not None:
        try:
            with open(latest, encoding="utf-8") as f:
                run_id = f.read().strip()
        except FileNotFoundError:
            return None
        run = Run(workspace, layout, run_id)
        try:
            status = run.read_metadata().get("status")
        except (FileNotFoundError, ValueError):
            return run if layout == "v1.3" else None
        return run if status in RESUMABLE else None
    delta = os.path.join(workspace, ".delta")
    best: tuple[str, Run] | None = None
    for name in sorted(os.listdir(delta)) if os.path.isdir(delta) else []:
        if name.startswith(".") or name == "VERSION":
            continue
        run = Run(workspace, layout, name)
        try:
            meta = run.read_metadata()
        except (FileNotFoundError, NotADirectoryError, ValueError):
            continue
        if meta.get("status") in RESUMABLE and (best is None or meta["start_time"] > best[0]):
            best = (meta["start_time"], run)
    return best[1] if best else None


def parse_script(task: str) -> dict[str, Any]:
    marker = "HARNESS_SCRIPT"
    if marker not in task:
        return {"asks": []}
    script: dict[str, Any] = json.loads(task.split(marker, 1)[1].strip())
    return script


def new_run(workspace: str, layout: str, run_id: str | None, task: str, agent: str) -> Run:
    started = datetime.now(UTC)
    rid = run_id or started.strftime("%Y%m%d_%H%M%S_") + secrets.token_hex(3)
    run = Run(workspace, layout, rid)
    os.makedirs(run.run_dir, exist_ok=True)
    meta: dict[str, Any] = {"run_id": rid, "start_time": now_iso(), "agent_ref": agent, "task": task,
                            "status": "RUNNING", "iterations_completed": 0}
    if layout != "v1.3":  # v1.3.0 writes no pid/hostname/process fields
        meta.update({"pid": os.getpid(), "hostname": socket.gethostname(),
                     "start_time_unix": int(started.timestamp() * 1000), "process_name": "node"})
    run.write_metadata(meta)
    latest = latest_path(workspace, layout)
    if latest is not None:
        write_whole(latest, rid)  # no newline, like the engine
    run.log("RUN_START", {"run_id": rid, "task": task, "agent_ref": agent})
    run.log("USER_MESSAGE", {"content": task})
    return run


def write_request_non_atomically(path: str, body: dict[str, Any], pause_s: float) -> None:
    """A plain write in two chunks: a reader can see (and must survive) the first half."""
    text = dump(body).encode("utf-8")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    half = len(text) // 2
    with open(path, "wb") as f:
        f.write(text[:half])
        f.flush()
        os.fsync(f.fileno())
        if pause_s > 0:
            time.sleep(pause_s)
        f.write(text[half:])


def ask(run: Run, spec: dict[str, Any], pause_s: float) -> None:
    call_id = "call_" + uuid.uuid4().hex[:24]
    args = {"prompt": spec["prompt"], "input_type": spec.get("input_type", "text")}
    if "sensitive" in spec:
        args["sensitive"] = spec["sensitive"]
    invocation = uuid.uuid4()
    run.log("THOUGHT", {"content": "", "llm_invocation_ref": str(invocation), "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": "ask_human", "arguments": json.dumps(args)}}]})
    # LLM call logs: also named request.json, but never a mailbox.
    inv_dir = os.path.join(run.run_dir, "io", "invocations", str(invocation))
    write_whole(os.path.join(inv_dir, "request.json"), dump({"messages": [{"role": "user", "content": "…"}]}))
    write_whole(os.path.join(inv_dir, "response.json"), dump({"tool_calls": [args]}))
    write_whole(os.path.join(inv_dir, "metadata.json"), dump({"model": "stand-in", "duration_ms": 1}))
    with open(os.path.join(run.run_dir, "engine.log"), "a", encoding="utf-8") as log:
        log.write(f"{now_iso()} INFO ask_human {spec['prompt']}\n")
    run.log("ACTION_REQUEST", {"action_id": call_id, "tool_name": "ask_human", "tool_args": args,
                               "resolved_command": f"ask_human {spec['prompt']}"})
    body = {"request_id": str(uuid.uuid4()), "timestamp": now_iso(), "prompt": spec["prompt"],
            "input_type": spec.get("input_type", "text"), "sensitive": bool(spec.get("sensitive", False))}
    write_request_non_atomically(run.request_path, body, pause_s)
    run.log("SYSTEM_MESSAGE", {"level": "INFO", "content": "Agent pausing for human input"})
    run.set_status("WAITING_FOR_INPUT")
    print(f"Agent is waiting for input. Write your answer to {run.response_path} and run again.")


def cmd_run(opts: argparse.Namespace) -> int:
    workspace = os.path.abspath(opts.workspace)
    layout = LAYOUTS.get(opts.engine_version)
    if layout is None:
        print(f"error: unknown engine version {opts.engine_version}", file=sys.stderr)
        return EXIT_FAILED
    if not opts.message:
        print("error: required option '-m, --message <message>' not specified", file=sys.stderr)
        return EXIT_FAILED
    write_whole(os.path.join(workspace, ".delta", "VERSION"), "1.2\n")
    run = find_resumable(workspace, layout)
    if run is not None and layout == "v1.3":
        # v1.3.0 looks for the spec's v1.2 metadata path, which it never writes.
        missing = os.path.join(workspace, ".delta", "runs", run.run_id, "execution", "metadata.json")
        print(f"Error: run metadata not found: {missing}", file=sys.stderr)
        return EXIT_FAILED
    answer: str | None = None
    fresh = run is None
    if run is not None:
        has_request, has_response = os.path.exists(run.request_path), os.path.exists(run.response_path)
        if has_request and not has_response:
            run.set_status("RUNNING")  # the real engine leaves it RUNNING, then asks again
            print(f"Agent is waiting for input. Write your answer to {run.response_path} and run again.")
            return EXIT_WAITING
        if has_request and has_response:
            with open(run.response_path, encoding="utf-8") as f:
                answer = f.read().strip()
            os.unlink(run.request_path)
            os.unlink(run.response_path)
        run.set_status("RUNNING")
    else:
        run = new_run(workspace, layout, opts.run_id, opts.message, opts.agent)
    meta = run.read_metadata()
    script = parse_script(meta.get("task", ""))
    try:
        if answer is not None:
            action = run.open_action()
            if action is not None:
                run.log("ACTION_RESULT", {"action_id": action, "status": "SUCCESS",
                                          "observation_content": answer, "execution_ref": action})
            given = run.answers()
            if script.get("record", False):
                with open(os.path.join(workspace, "answers.txt"), "a", encoding="utf-8") as f:
                    f.write(f"ANSWER {len(given)}: {answer}\n")
            run.set_status("RUNNING", iterations_completed=len(given))
        asks: list[dict[str, Any]] = script.get("asks", [])
        done = len(run.answers())
        if fresh and float(script.get("work_s", 0)) > 0:  # "thinking" before the first ask
            time.sleep(float(script["work_s"]))
        if done < len(asks):
            ask(run, asks[done], opts.write_pause_ms / 1000)
            return EXIT_WAITING
        if script.get("fail"):
            run.set_status("FAILED", error=str(script["fail"]), end_time=now_iso())
            run.log("RUN_END", {"status": "FAILED"})
            print(f"Error: {script['fail']}", file=sys.stderr)
            return EXIT_FAILED
        answers = run.answers()
        run.log("THOUGHT", {"content": "HARNESS_DONE " + json.dumps({"answers": answers})})
        run.log("RUN_END", {"status": "COMPLETED"})
        run.set_status("COMPLETED", iterations_completed=len(answers), end_time=now_iso())
        print("HARNESS_DONE " + json.dumps({"answers": answers}))
        return EXIT_OK
    except KeyboardInterrupt:
        run.set_status("INTERRUPTED")
        return EXIT_INTERRUPTED


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="delta", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("-w", "--workspace", default=".")
    run.add_argument("-m", "--message", default=None)
    run.add_argument("-y", "--yes", action="store_true")
    run.add_argument("--run-id", default=None)
    run.add_argument("--agent", default="/srv/agents/stand-in/agent")
    run.add_argument("--engine-version", default=os.environ.get("DELTA_FAKE_VERSION", "1.10.1"))
    run.add_argument("--write-pause-ms", type=float, default=5.0)
    opts = parser.parse_args(argv)
    return cmd_run(opts)


if __name__ == "__main__":
    sys.exit(main())
