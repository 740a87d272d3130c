"""The facade's pure parts: selectors as apimachinery parses them, kubectl's ages, instants."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ledgerlet_core.model.duration import SECOND
from ledgerlet_services.audit.kube_api.meta import ApiError, human_duration, parse_at
from ledgerlet_services.audit.kube_api.selectors import POD_FIELDS, parse_field_selector, parse_label_selector


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ("app=web", {"app": "web"}, True),
        ("app==web,tier!=db", {"app": "web", "tier": "fe"}, True),
        ("app!=web", {}, True),
        ("app in (web, api),!canary", {"app": "api"}, True),
        ("app in (web, api),!canary", {"app": "api", "canary": ""}, False),
        ("app notin (web)", {"app": "web"}, False),
        ("app", {"app": ""}, True),
        ("replicas>2", {"replicas": "3"}, True),
        ("replicas<2", {"replicas": "x"}, False),
        ("example.com/role=db", {"example.com/role": "db"}, True),
    ],
)
def test_label_selectors_match_as_upstream(selector: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_label_selector(selector).matches(labels) is matches


@pytest.mark.parametrize("bad", ["a in (b", "a=b=c", "a>b", "-a=b", "a=" + "x" * 64, ",", "a in (b,,c) d"])
def test_a_label_selector_that_does_not_parse_is_a_400(bad: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_label_selector(bad)
    assert caught.value.code == 400 and caught.value.reason == "BadRequest"


def test_field_selectors_escape_and_refuse_unknown_fields() -> None:
    sel = parse_field_selector(r"spec.nodeName=a\,b,status.phase!=Failed", POD_FIELDS)
    assert sel.wanted("spec.nodeName") == "a,b"
    assert sel.matches({"spec.nodeName": "a,b", "status.phase": "Running"})
    assert not sel.matches({"spec.nodeName": "a,b", "status.phase": "Failed"})
    with pytest.raises(ApiError, match=r"field label not supported: spec\.foo"):
        parse_field_selector("spec.foo=1", POD_FIELDS)
    with pytest.raises(ApiError, match="invalid selector"):
        parse_field_selector("spec.nodeName", POD_FIELDS)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (299, "4m59s"), (600, "10m"),
     (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (7 * 3600 + 60, "7h1m"), (47 * 3600, "47h"), (2 * 86400, "2d"),
     (50 * 3600, "2d2h"), (300 * 86400, "300d"), (3 * 365 * 86400, "3y0d"), (9 * 365 * 86400, "9y")],
)  # fmt: skip
def test_ages_read_as_kubectls(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_instants_are_end_a_duration_or_a_clock_time_within_the_run() -> None:
    run, start = 1500 * SECOND, datetime(2026, 1, 29, 9, 0, tzinfo=UTC)
    assert parse_at("end", start, run) == run
    assert parse_at("5m", start, run) == 300 * SECOND
    assert parse_at("1m30s", start, run) == 90 * SECOND
    assert parse_at("09:05", start, run) == parse_at("2026-01-29T09:05:00Z", start, run) == 300 * SECOND
    for bad in ("26m", "-1s", "soon", "", "09:26", "2026-01-28T09:05:00Z"):
        with pytest.raises(ApiError) as caught:
            parse_at(bad, start, run)
        assert caught.value.code == 404
