"""Name-based ids are exactly Python's uuid5 (ids are derived, so they are forever)."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from ledgerlet_core.contracts.envelope import EVENT_ID_NAMESPACE, event_id
from ledgerlet_core.contracts.observed import member_id, member_ids
from ledgerlet_core.model.ids import uuid5_text, uuid5_texts
from ledgerlet_core.scenario.load import UID_NAMESPACE, default_uid


@given(st.text(), st.sampled_from([EVENT_ID_NAMESPACE, UID_NAMESPACE, uuid.NAMESPACE_DNS]))
def test_uuid5_text_is_uuid5(name: str, namespace: uuid.UUID) -> None:
    assert uuid5_text(namespace, name) == str(uuid.uuid5(namespace, name))


@given(st.text(min_size=1), st.integers(0, 2**62), st.lists(st.integers(0, 10**7), min_size=1, max_size=6))
def test_event_ids_and_default_uids_are_what_they_always_were(run: str, t: int, order: list[int]) -> None:
    path = ".".join(str(i) for i in order)
    assert event_id(run, t, order, "PodEvicted") == str(uuid.uuid5(EVENT_ID_NAMESPACE, f"{run}/{t}/{path}/PodEvicted"))
    assert default_uid("Pod", "ns", run) == str(uuid.uuid5(UID_NAMESPACE, f"Pod/ns/{run}/0"))


@given(
    st.text(min_size=1),
    st.integers(0, 2**62),
    st.lists(st.integers(0, 10**7), min_size=1, max_size=5),
    st.lists(st.integers(0, 10**7), max_size=20),
)
def test_a_batchs_member_ids_are_each_members_own(run: str, t: int, prefix: list[int], places: list[int]) -> None:
    """The ids hashed from a shared head are the ids each member would have alone."""
    assert member_ids(run, t, prefix, places) == [member_id(run, t, [*prefix, p]) for p in places]
    assert uuid5_texts(uuid.NAMESPACE_DNS, run, ["a", ""]) == [
        str(uuid.uuid5(uuid.NAMESPACE_DNS, run + "a")),
        str(uuid.uuid5(uuid.NAMESPACE_DNS, run)),
    ]
