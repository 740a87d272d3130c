"""Instants as people write them: offsets, RFC 3339 and times of day on the run's day
(``ledgerlet_core.postmortem.instants``), and the facade's clock moved to now
(``kube_api/clock.py``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.postmortem.instants import InstantError, parse_instant, within_run
from ledgerlet_services.audit.kube_api.clock import shift_times, shift_to_now, split_clock
from ledgerlet_services.audit.kube_api.meta import Instant, rfc3339

START = datetime(2026, 1, 29, 9, 0, 0, tzinfo=UTC)
RUN = 25 * 60 * SECOND


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("end", 1500), ("start", 0), ("5m", 300), ("1h2m3s", 3723), ("-30s", -30), ("90", 90), ("12.5", 12.5),
        ("1e2", 100), ("2026-01-29T09:05:00Z", 300), ("2026-01-29T10:05:00+01:00", 300),
        ("2026-01-29t09:05:00.5z", 300.5), ("09:05", 300), ("9:05", 300), ("09:05:30", 330),
        ("09:05:30.25", 330.25), ("09:05Z", 300), ("10:05+01:00", 300), ("04:05-05:00", 300), ("08:59", -60),
        (" 09:05 ", 300),
    ],
)  # fmt: skip
def test_every_form_names_the_same_clock(text: str, seconds: float) -> None:
    assert parse_instant(text, START, RUN) == round(seconds * SECOND)


def test_a_time_of_day_is_on_the_next_day_for_a_run_that_crosses_midnight() -> None:
    late = datetime(2026, 1, 29, 23, 50, tzinfo=UTC)
    hour = 3600 * SECOND
    assert parse_instant("00:10", late, hour) == 20 * 60 * SECOND  # reached only after midnight
    assert parse_instant("23:55", late, hour) == 5 * 60 * SECOND
    assert parse_instant("00:10", late, 5 * 60 * SECOND) < 0  # a short run never reaches it: before its start


@pytest.mark.parametrize(
    "bad", ["soon", "", "25:00", "09:61", "09:05:61", "2026-01-29T09:05:00", "2026-13-01T00:00:00Z", "nan", "inf"]
)
def test_what_is_no_instant_is_refused_naming_the_forms(bad: str) -> None:
    with pytest.raises(InstantError) as caught:
        parse_instant(bad, START, RUN)
    assert repr(bad) in str(caught.value)


def test_beyond_the_clock_and_outside_the_run() -> None:
    for huge in ("1e12", "-1e300", "9999-01-01T00:00:00Z"):
        with pytest.raises(InstantError, match="beyond the virtual clock"):
            parse_instant(huge, START, RUN)
    with pytest.raises(InstantError, match="is none of"):  # an invalid duration, as Go's ParseDuration says
        parse_instant("3000000h", START, RUN)
    with pytest.raises(InstantError, match=r"outside the run \(2026-01-29T09:00:00Z to 2026-01-29T09:25:00Z, 0s to"):
        within_run("09:30", START, RUN)
    assert within_run("09:25", START, RUN) == RUN


def test_served_as_now_every_timestamp_moves_by_the_same_whole_seconds() -> None:
    assert split_clock("5m0s@now") == ("5m0s", True) and split_clock("5m0s") == ("5m0s", False)
    instant = Instant("r", START, 300 * SECOND, RUN)
    now = datetime(2026, 11, 28, 12, 0, 0, 700_000, tzinfo=UTC).timestamp()
    seconds = shift_to_now(instant, now)
    assert seconds == int(now) - int(datetime(2026, 1, 29, 9, 5, tzinfo=UTC).timestamp())
    obj = {
        "metadata": {"creationTimestamp": rfc3339(START, 0), "name": "2026-01-29T09:00:00Z-not-a-time"},
        "status": {"conditions": [{"lastTransitionTime": "2026-01-29T09:04:00Z"}]},
        "eventTime": "2026-01-29T09:04:59.123456Z",
    }
    moved = shift_times(obj, seconds)
    assert moved["metadata"] == {"creationTimestamp": "2026-11-28T11:55:00Z", "name": obj["metadata"]["name"]}
    assert moved["status"]["conditions"][0]["lastTransitionTime"] == "2026-11-28T11:59:00Z"
    assert moved["eventTime"] == "2026-11-28T11:59:59.123456Z"
    assert obj["eventTime"] == "2026-01-29T09:04:59.123456Z"  # the original is left as it was
