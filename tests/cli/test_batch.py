"""`answer --all` and `away` as a person runs them, against a daemon started elsewhere."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from tests.cli.helpers import LEAD, Served, cli, create, env_for


def test_twenty_alike_requests_answered_at_once_but_one(daemon: Served, elsewhere: Path) -> None:
    tool = f"fs.delete-{secrets.token_hex(4)}"  # this test's own requests, whatever others made
    ids = [create(daemon, title=f"Delete 'f{n}.txt'", tool=tool) for n in range(20)]
    env = env_for(daemon)
    refused = cli("answer", "--all", "--filter", f"tool={tool}", "yes", cwd=elsewhere, env=env)
    assert refused.code == 2 and "--yes" in refused.err  # no terminal to confirm in: nothing sent
    bad = cli("answer", "--all", "--filter", f"tool={tool}", "--except", "21", "--yes", "yes", cwd=elsewhere, env=env)
    assert bad.code == 2 and "items 1 to 20" in bad.err
    done = cli("answer", "--all", "--filter", f"tool={tool}", "--except", "3", "--yes", "--json", "yes",
               cwd=elsewhere, env=env)
    assert done.code == 0, done.err
    result = json.loads(done.out)
    assert result["counts"] == {"answered": 19} and len(result["results"]) == 19
    assert "20 open request(s)" in done.err and "skip" in done.err  # the preview, before sending
    with daemon.client() as client:
        states = {i: client.get(i)["state"] for i in ids}
    assert sum(state != "posted" for state in states.values()) == 19  # answered (or delivered already)
    listed_third = next(line for line in done.err.splitlines() if line.strip().startswith("3."))
    skipped = next(i for i in ids if i in listed_third)
    assert states[skipped] == "posted"


def test_away_sets_lists_refuses_and_ends_a_window(daemon: Served, elsewhere: Path) -> None:
    env = env_for(daemon, token=LEAD)
    set_ = cli("away", "bo", "--for", "ana", "--until", "2099-01-01T00:00:00Z", cwd=elsewhere, env=env)
    assert set_.code == 1 and "at most a year" in set_.err
    set_ = cli("away", "bo", "--for", "ana", "--until", "2030-13-01", cwd=elsewhere, env=env)
    assert set_.code == 2 and "ISO 8601" in set_.err
    loop = cli("away", "ana", "--for", "ana", "--until", "2099-01-01T00:00:00Z", cwd=elsewhere, env=env)
    assert loop.code == 1 and "themselves" in loop.err
    from datetime import UTC, datetime, timedelta

    until = (datetime.now(UTC) + timedelta(days=2)).isoformat()
    ok = cli("away", "bo", "--for", "ana", "--until", until, cwd=elsewhere, env=env)
    assert ok.code == 0, ok.err
    assert "ana away until" in ok.out and "bo stands in" in ok.out
    back_loop = cli("away", "ana", "--for", "bo", "--until", until, cwd=elsewhere, env=env)
    assert back_loop.code == 1 and "loop" in back_loop.err
    listed = cli("away", "--list", cwd=elsewhere, env=env)
    assert "ana away" in listed.out
    ended = cli("away", "--end", "--for", "ana", cwd=elsewhere, env=env)
    assert ended.code == 0 and "ana: back" in ended.out
    assert "nobody is away" in cli("away", "--list", cwd=elsewhere, env=env).out


def test_a_batch_secret_comes_from_stdin_only_and_is_never_shown(daemon: Served, elsewhere: Path) -> None:
    tool = f"vault.unlock-{secrets.token_hex(4)}"
    asked = [{"id": "pw", "kind": "secret", "prompt": "Vault password?"}]
    ids = [create(daemon, title=f"Unlock vault {n}", tool=tool, questions=asked) for n in range(2)]
    env = env_for(daemon)
    argv = cli("answer", "--all", "--filter", f"tool={tool}", "--values", '{"pw": "hunter2-argv"}', "--yes",
               cwd=elsewhere, env=env)
    assert argv.code == 2 and "stays in `ps`" in argv.err
    piped = cli("answer", "--all", "--filter", f"tool={tool}", "--values", "-", "--yes", cwd=elsewhere, env=env,
                stdin='{"pw": "hunter2-stdin"}')
    assert piped.code == 0, piped.err
    assert "hunter2" not in piped.out + piped.err and "[secret]" in piped.err
    with daemon.client() as client:
        assert [client.get(i)["state"] != "posted" for i in ids] == [True, True]
