"""What a Delta source cannot show right now, logged once per change (not once per write).

A hostile or broken engine can rewrite the same bad file hundreds of times a second; each
write must not become a log line. A problem is logged when it appears or when its *kind*
changes (unreadable → not JSON → too big), never again while it stays the same, even if
its details (a size, a parser position) change with every write. `GET /v1/sources`,
`/metrics` and `hitl-bridge doctor` read `as_dict()`.
"""

from __future__ import annotations

import logging

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
