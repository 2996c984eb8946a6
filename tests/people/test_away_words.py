"""The words of "away" (bridge.away_words), as every chat command reads them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bridge.away_words import AwayWordsError, parse_away

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def test_until_for_and_from() -> None:
    said = parse_away(["bo", "until", "2026-12-24T18:00+01:00"], NOW)
    assert (said.delegate, said.until.isoformat(), said.starts) == ("bo", "2026-12-24T18:00:00+01:00", None)
    assert parse_away(["bo", "for", "3d"], NOW).until == NOW + timedelta(days=3)
    later = parse_away(["bo", "from", "2026-12-02T00:00Z", "for", "1d"], NOW)
    assert later.starts == datetime(2026, 12, 2, tzinfo=UTC) and later.until == datetime(2026, 12, 3, tzinfo=UTC)


@pytest.mark.parametrize(("words", "why"), [
    ([], "away <person>"),
    (["bo"], "away <person>"),
    (["bo", "until"], "away <person>"),
    (["bo", "until", "friday"], "is not a time"),
    (["bo", "until", "2026-12-24T18:00"], "no UTC offset"),
    (["bo", "for", "ever"], "cannot read"),
    (["bo", "until", "2026-12-24T18:00Z", "for", "1d"], "away <person>"),
    (["bo", "since", "2026-12-24T18:00Z"], "away <person>"),
    (["bo", "for", "-1d"], "cannot read"),
])
def test_words_that_do_not_say_who_and_when_are_refused(words: list[str], why: str) -> None:
    with pytest.raises(AwayWordsError, match=why):
        parse_away(words, NOW)
