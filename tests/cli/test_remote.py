"""The CLI as a client of a daemon started elsewhere: its own folder, a port the OS picked,
API tokens. Each verb's output and exit code, run as a person runs it, from another folder."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli.helpers import HITL, LEAD, OPS, Served, clean_env, cli, create, env_for

HOSTILE = "ok\x1b[2K\rapproved by security\u202e"


def test_list_and_show_render_what_is_being_approved(daemon: Served, elsewhere: Path) -> None:
    rid = create(daemon, title="Restart the api deployment", description="The release agent wants to run this.\n"
                 "Checks passed.", agent="release-bot", tool="shell", labels={"env": "prod", "team": "api"},
                 timeout_s=3600, context={"function": "run", "arguments": {"command": "kubectl rollout restart "
                                                                                      "deploy/api"},
                                          "note": HOSTILE},
                 questions=[{"id": "approve", "kind": "confirm", "prompt": "Allow this call to run?"},
                            {"id": "env", "kind": "choice", "prompt": "Where?", "options": ["staging", "prod"]},
                            {"id": "vars", "kind": "edit", "prompt": "Check the variables",
                             "default": {"replicas": 6, "image": "api:2.14"}}])
    forged = create(daemon, title=f"{HOSTILE}\n{rid}  answered  0s")  # a title that draws its own lines
    listed = cli("list", cwd=elsewhere, env=env_for(daemon))
    assert listed.code == 0, listed.err
    assert "\x1b" not in listed.out and "\r" not in listed.out and "\u202e" not in listed.out
    (line,) = [x for x in listed.out.splitlines() if x.startswith(forged)]
    assert "ok\\x1b[2K\\x0dapproved by" in line
    assert sum(x.startswith(rid) for x in listed.out.splitlines()) == 1  # the forged line stayed in its title
    assert listed.out.splitlines()[0].split() == ["ID", "STATE", "AGE", "SOURCE", "ROUTE", "TITLE"]
    assert any(line.startswith(rid) and "Restart the api deployment" in line for line in listed.out.splitlines())
    assert os.listdir(elsewhere) == []  # no stray .hitl-bridge/ from a store nobody asked for
    shown = cli("show", rid, "--url", daemon.url, "--token", OPS, cwd=elsewhere)
    assert shown.code == 0, shown.err
    out = shown.out
    for expected in ("Restart the api deployment", "The release agent wants to run this.\n  Checks passed.",
                     "command: kubectl rollout restart deploy/api", "labels     env=prod, team=api",
                     "from       webhook · agent release-bot · tool shell", "deadline   ", "(in 59m)",
                     "[approve] confirm: Allow this call to run?", "[env] choice: Where?", "1) staging", "2) prod",
                     "[vars] edit: Check the variables", "proposed:", "replicas: 6", "image: api:2.14",
                     "route      default → web", "copy       web web: ok", "timeline", " created "):
        assert expected in out, (expected, out)
    assert "\x1b" not in out and "\u202e" not in out and "\r" not in out  # shown, never obeyed
    assert 'note: "ok\\e[2K\\rapproved by security<U+202E>"' in out, out  # YAML's escapes, then ours
    as_json = cli("show", rid, "--json", cwd=elsewhere, env=env_for(daemon))
    view = json.loads(as_json.out)
    assert view["id"] == rid and view["context"]["note"] == HOSTILE
    assert [e["kind"] for e in view["events"]][:2] == ["created", "posted"] and view["quorum"] == 1
    listed = json.loads(cli("list", "--json", "--open", "--limit", "5", cwd=elsewhere, env=env_for(daemon)).out)
    assert rid in [v["id"] for v in listed] and all(v["state"] in ("pending", "posted") for v in listed)
    missing = cli("show", "r_missing", cwd=elsewhere, env=env_for(daemon))
    assert (missing.code, missing.out, missing.err.strip()) == (1, "", "no request 'r_missing'")


def test_answer_checks_the_value_and_says_whose_answer_it_is(daemon: Served, elsewhere: Path) -> None:
    rid = create(daemon, title="Pick", questions=[{"id": "env", "kind": "choice", "prompt": "Where?",
                                                   "options": ["staging", "prod"]}])
    env = env_for(daemon)
    bad = cli("answer", rid, "moon", cwd=elsewhere, env=env)
    assert bad.code == 2 and bad.err.strip() == "invalid answer: question 'env': expected one of ['staging', 'prod']"
    done = cli("answer", rid, "2", "--as", "Ana", cwd=elsewhere, env=env)  # option 2, as `show` numbers them
    assert done.code == 0, done.err
    first, note = done.out.splitlines()
    assert first.endswith("env=prod by Ana (api:ops)")
    assert note.startswith("note: counted as api:ops, this token's identity; 'Ana' is only the name shown")
    assert "http.api_tokens.ops.act_for_others" in note and "httpx" not in done.err and done.err == ""
    again = cli("answer", rid, "staging", cwd=elsewhere, env=env)
    assert again.code == 1 and "env=prod by Ana (api:ops) via api" in again.err and "(nothing sent)" in again.err
    with daemon.client() as client:
        assert client.get(rid)["answer"]["values"] == {"env": "prod"}


def test_a_token_that_acts_for_others_votes_as_the_person_named(daemon: Served, elsewhere: Path) -> None:
    rid = create(daemon, title="Two keys", labels={"team": "two"})
    vote = cli("answer", rid, "yes", "--as", "bo", cwd=elsewhere, env=env_for(daemon, LEAD))
    assert vote.code == 0, vote.err
    assert vote.out.strip() == f"{rid} still posted: vote recorded as person:bo (1 of 2 approvals: bo)"
    shown = cli("show", rid, "--no-timeline", cwd=elsewhere, env=env_for(daemon)).out
    assert "votes      1 of 2 approvals: bo" in shown and "bo (person:bo): ok=yes" in shown
    assert "timeline" not in shown


def test_rejection_reason_secrets_and_several_questions(daemon: Served, elsewhere: Path) -> None:
    env = env_for(daemon)
    rid = create(daemon, title="Rotate")
    rejected = cli("answer", rid, "no", "--reason", "not during the sale", cwd=elsewhere, env=env)
    assert rejected.code == 0 and rejected.out.strip().endswith("ok=no by api:ops — not during the sale")
    with daemon.client() as client:
        assert client.get(rid)["answer"]["reason"] == "not during the sale"
    rid = create(daemon, title="Password", questions=[{"id": "pw", "kind": "secret", "prompt": "Password?"}])
    on_argv = cli("answer", rid, "hunter2-never-shown", cwd=elsewhere, env=env)
    assert on_argv.code == 2 and "a secret on the command line stays in `ps`" in on_argv.err
    on_stdin = cli("answer", rid, "-", cwd=elsewhere, env=env, stdin="hunter2-never-shown\n")
    assert on_stdin.code == 0, on_stdin.err
    assert "pw=[secret]" in on_stdin.out and "hunter2" not in on_stdin.out + on_stdin.err
    rid = create(daemon, title="Both", questions=[{"id": "ok", "kind": "confirm", "prompt": "Go?"},
                                                   {"id": "note", "kind": "text", "prompt": "Why?"}])
    several = cli("answer", rid, "yes", cwd=elsewhere, env=env)
    assert several.code == 2 and "several questions (ok, note): pass --question QID, or --values JSON" in several.err
    both = cli("answer", rid, "--values", '{"ok": "yes", "note": "tested"}', "--json", cwd=elsewhere, env=env)
    assert both.code == 0 and json.loads(both.out)["answer"]["values"] == {"ok": "yes", "note": "tested"}


def test_cancel_and_redeliver(daemon: Served, elsewhere: Path) -> None:
    env = env_for(daemon)
    rid = create(daemon, title="Cancel me")
    early = cli("redeliver", rid, cwd=elsewhere, env=env)
    assert (early.code, early.err.strip()) == (1, "refused: the request is still open: there is nothing to deliver yet")
    cancelled = cli("cancel", rid, "--reason", "duplicate", cwd=elsewhere, env=env)
    assert (cancelled.code, cancelled.out.strip()) == (0, f"{rid} cancelled: duplicate")
    again = cli("cancel", rid, "--json", cwd=elsewhere, env=env)
    assert again.code == 1 and again.out == "" and again.err.startswith("already cancelled")
    redone = cli("redeliver", rid, cwd=elsewhere, env=env)
    assert (redone.code, redone.out.strip()) == (0, f"{rid} cancelled: delivery queued again")


def test_unreachable_unauthorized_and_wrong_urls(daemon: Served, elsewhere: Path) -> None:
    down = cli("list", "--url", "http://127.0.0.1:1", cwd=elsewhere)
    assert down.code == 3 and down.out == ""
    assert down.err.strip() == ("no hitl-bridge daemon answers at http://127.0.0.1:1 (--url): Connection refused. "
                                "Check the URL; --offline reads the store directly.")
    no_token = cli("list", cwd=elsewhere, env=clean_env(HITL_BRIDGE_URL=daemon.url))
    assert no_token.code == 4 and "answered 401: it wants a token. Pass --token or set HITL_BRIDGE_TOKEN" in \
        no_token.err
    wrong = cli("--url", daemon.url, "--token", "not-the-token-at-all", "answer", "r_x", "yes", cwd=elsewhere)
    assert wrong.code == 4 and "the token was refused" in wrong.err
    page = cli("list", "--url", f"{daemon.url}/inbox", cwd=elsewhere, env=env_for(daemon))
    assert page.code == 3 and "answers, but not like a hitl-bridge daemon" in page.err
    scheme = cli("list", "--url", "ftp://example.com", cwd=elsewhere)
    assert scheme.code == 2 and "must start with http:// or https://" in scheme.err


def test_the_configs_token_goes_only_to_the_configs_own_address(daemon: Served, elsewhere: Path) -> None:
    config = elsewhere.parent / "client.yaml"
    port = daemon.url.rsplit(":", 1)[1]
    config.write_text(f"http: {{listen: '127.0.0.1:{port}', api_tokens: {{ops: {OPS}}}}}\n")
    own = cli("-c", str(config), "list", "--limit", "1", cwd=elsewhere)
    assert own.code == 0, own.err
    typed = cli("-c", str(config), "list", "--url", daemon.url, cwd=elsewhere)
    assert typed.code == 4 and "it wants a token" in typed.err


def test_output_cut_short_by_the_reader_is_quiet(daemon: Served, elsewhere: Path) -> None:
    for n in range(3):
        create(daemon, title=f"Filler {n}")
    read, write = os.pipe()
    os.close(read)  # `| head` that has already gone
    try:
        done = subprocess.run([HITL, "list"], cwd=elsewhere, env=env_for(daemon), stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")
