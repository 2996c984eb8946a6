"""What the deployment sources (GitHub, GitLab) share, with no I/O: a deploy waiting for
approval as the bridge shows it, and the decision written back.

A deploy reads as one: "Deploy payments-api@3f2c1a9 to production — 4 commits by ana, bo",
with one Approve / Reject question, the commits since the environment's last deployment,
links, and the labels routes match on (`repo`, `environment`). Whoever triggered it is
`requested_by` (`github:<login>`, `gitlab:<username>`), so a route's
`forbid_self_approval` keeps them from approving their own deploy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bridge.models import Answer, RequestIn
from bridge.ports import Outcome

#: the one question of a deploy request
QUESTION_ID = "deploy"
#: commits listed on the request (the count says how many there are in all)
MAX_COMMITS_SHOWN = 20
MAX_AUTHORS_NAMED = 3
#: a platform's comment field (GitHub's and GitLab's accept more; people read less)
MAX_COMMENT = 1000


@dataclass(frozen=True)
class Commit:
    """One commit since the last deployment: its sha, who wrote it, its first line."""

    sha: str
    author: str
    title: str


@dataclass(frozen=True)
class Deploy:
    """A deploy waiting for approval, as read from its platform."""

    platform: str  # "github" | "gitlab": the handle prefix and the engine name
    external_id: str  # one per (run or deployment, environment): the idempotency key
    project: str  # owner/name, group/project
    environment: str
    ref: str
    sha: str
    triggered_by: str | None = None  # the platform login of who started it
    run_id: str | None = None
    #: commits since the last deployment to the environment; None when unknown
    commits: Sequence[Commit] | None = None
    commits_total: int | None = None
    links: dict[str, str] = field(default_factory=dict)
    #: what else a person may want to see (the workflow's name, the job, the approvals needed)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def short_name(self) -> str:
        return self.project.rsplit("/", 1)[-1]

    @property
    def requester(self) -> str | None:
        return f"{self.platform}:{self.triggered_by}" if self.triggered_by else None


def authors_of(commits: Sequence[Commit]) -> list[str]:
    """Each author once, in the order they first appear."""
    return list(dict.fromkeys(c.author for c in commits if c.author))


def deploy_title(deploy: Deploy) -> str:
    """`Deploy payments-api@3f2c1a9 to production — 4 commits by ana, bo`."""
    title = f"Deploy {deploy.short_name}@{deploy.sha[:7]} to {deploy.environment}"
    if deploy.commits is not None:
        total = deploy.commits_total if deploy.commits_total is not None else len(deploy.commits)
        authors = authors_of(deploy.commits)
        named = ", ".join(authors[:MAX_AUTHORS_NAMED])
        if len(authors) > MAX_AUTHORS_NAMED:
            named += f" and {len(authors) - MAX_AUTHORS_NAMED} more"
        title += f" — {total} commit{'s' if total != 1 else ''}" + (f" by {named}" if named else "")
    return title[:500]


def _description(deploy: Deploy) -> str:
    lines = [f"**{deploy.project}** `{deploy.ref}` at `{deploy.sha[:12]}` → **{deploy.environment}**"]
    if deploy.triggered_by:
        lines.append(f"Triggered by {deploy.triggered_by}")
    if deploy.commits:
        lines.append("")
        lines += [f"- `{c.sha[:7]}` {c.title[:120]} ({c.author or 'unknown'})"
                  for c in deploy.commits[:MAX_COMMITS_SHOWN]]
        total = deploy.commits_total or len(deploy.commits)
        if total > MAX_COMMITS_SHOWN:
            lines.append(f"- … and {total - MAX_COMMITS_SHOWN} more")
    elif deploy.commits is None:
        lines.append("(the commits since the last deployment could not be read)")
    if deploy.links:
        lines.append("")
        lines += [f"[{name}]({url})" for name, url in deploy.links.items()]
    return "\n".join(lines)[:8000]


def deploy_request(deploy: Deploy) -> RequestIn:
    """The bridge request for `deploy`: one confirm question, labels `repo` and `environment`."""
    context: dict[str, Any] = {
        "repository": deploy.project, "environment": deploy.environment, "ref": deploy.ref,
        "sha": deploy.sha, "triggered_by": deploy.triggered_by, "links": dict(deploy.links), **deploy.details,
    }
    if deploy.commits is not None:
        context["commits"] = [{"sha": c.sha, "author": c.author, "title": c.title[:200]}
                              for c in deploy.commits[:MAX_COMMITS_SHOWN]]
        context["commits_total"] = deploy.commits_total if deploy.commits_total is not None else len(deploy.commits)
    return RequestIn.model_validate({
        "external_id": deploy.external_id[:200],
        "title": deploy_title(deploy),
        "description": _description(deploy),
        "engine": deploy.platform,
        "run_id": deploy.run_id,
        "context": context,
        "labels": {"repo": deploy.project[:500], "environment": deploy.environment[:500]},
        "questions": [{"id": QUESTION_ID, "kind": "confirm", "prompt": f"Deploy to {deploy.environment[:200]}?"}],
        "requested_by": deploy.requester,
    })


@dataclass(frozen=True)
class Decision:
    """What goes back to the platform: approved or rejected, with the person's comment."""

    approved: bool
    comment: str


def _who(answer: Answer) -> str:
    if answer.via == "timeout":
        return "the bridge, as the deadline passed"
    return f"{answer.responder.display} via {answer.via}"


def decision_of(outcome: Outcome) -> Decision | None:
    """The decision to write back, or None when there is none (the request was withdrawn
    or cancelled: the deploy keeps waiting in its platform, where it can still be decided).
    Anything but an explicit "yes" is a rejection: the bridge never approves by doubt."""
    answer = outcome.answer
    if outcome.state not in ("answered", "expired") or answer is None:
        return None
    approved = answer.values.get(QUESTION_ID) == "yes"
    comment = f"{'Approved' if approved else 'Rejected'} by {_who(answer)} (hitl-bridge {outcome.request.id})"
    if answer.reason:
        comment += f": {answer.reason}"
    return Decision(approved, comment[:MAX_COMMENT])

