"""What a Delta source cannot show right now, logged once per change (not once per write).

A hostile or broken engine can rewrite the same bad file hundreds of times a second; each
write must not become a log line. A problem is logged when it appears or when its *kind*
changes (unreadable → not JSON → too big), never again while it stays the same, even if
its details (a size, a parser position) change with every write. `GET /v1/sources`,
`/metrics` and `hitl-bridge doctor` read `as_dict()`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from adapters.delta.roots import MissingRoot

log = logging.getLogger("hitl_bridge.delta")


class Problems:
    """Problems of single files (reported and cleared one by one) and groups of refusals
    found together in one look (a workspace's, the roots'), replaced as a whole."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[str, str]] = {}  # path → (kind, reason)
        self._groups: dict[str, dict[str, str]] = {}  # scope → path → reason

    def report(self, path: str, reason: str, kind: str = "") -> None:
        """`path` cannot be used because of `reason`; logged unless it was already, for the
        same kind of problem."""
        kind = kind or reason
        before = self._files.get(path)
        if before is None or before[0] != kind:
            log.warning("delta: %s: %s", path, reason)
        self._files[path] = (kind, reason)

    def clear(self, path: str) -> None:
        self._files.pop(path, None)

    def replace(self, scope: str, found: dict[str, str]) -> None:
        """Everything refused in `scope` now (what is no longer there is fixed)."""
        before = self._groups.get(scope, {})
        for path, reason in found.items():
            if before.get(path) != reason:
                log.warning("delta: %s: %s", path, reason)
        for path in before.keys() - found.keys():
            log.info("delta: %s: no longer refused", path)
        if found:
            self._groups[scope] = dict(found)
        else:
            self._groups.pop(scope, None)

    def as_dict(self) -> dict[str, str]:
        """path → why, every problem known now."""
        merged = {path: reason for path, (_, reason) in self._files.items()}
        for found in self._groups.values():
            merged.update(found)
        return merged

    def __len__(self) -> int:
        return len(self._files) + sum(len(found) for found in self._groups.values())


def stalled_reason(after_s: float) -> str:
    return (f"looking at this workspace has not returned for {after_s:g} s (a hung network filesystem?); "
            "skipped until it answers, the other workspaces go on")


def health_summary(missing: Sequence[MissingRoot], stalled: Sequence[str]) -> tuple[str, str] | None:
    """(summary, fix) for the source's health while roots are missing or workspaces hang;
    None when neither."""
    reasons = [root.describe() for root in missing]
    if stalled:
        more = f" and {len(stalled) - 3} more" if len(stalled) > 3 else ""
        reasons.append(f"{len(stalled)} workspace(s) do not answer ({', '.join(stalled[:3])}{more})")
    if not reasons:
        return None
    fixes = []
    if missing:
        fixes.append("create the folder (it is picked up at once) or correct `roots`")
    if stalled:
        fixes.append("check the filesystem those workspaces are on (a hung network mount?)")
    return "; ".join(reasons), "; ".join(fixes)
