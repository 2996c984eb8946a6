"""Request ids: `r_` + the creation millisecond in base32 (sortable) + 10 random characters."""

from __future__ import annotations

import re
from unittest import mock

from bridge import models
from bridge.models import new_request_id

ID = re.compile(r"r_[0-9a-hjkmnp-tv-z]{19}")


def test_an_id_sorts_by_its_millisecond_and_is_unguessable() -> None:
    ids = []
    for ms in (1_700_000_000_000, 1_700_000_000_001, 1_800_000_000_000, 2**45 - 1):
        with mock.patch.object(models.time, "time", return_value=ms / 1000 + 0.0004):
            ids.append(new_request_id())
    assert all(ID.fullmatch(i) for i in ids)
    assert ids == sorted(ids) and len({i[2:11] for i in ids}) == 4
    assert ids[-1][2:11] == "zzzzzzzzz"  # every bit of the millisecond counted
    assert len({new_request_id()[11:] for _ in range(1000)}) == 1000
