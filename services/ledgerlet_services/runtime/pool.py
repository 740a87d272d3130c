"""A pool of processes sharing a split service's members, which move between them as
processes come and go.

A split service has a fixed number of members (loop/membership.py): each owns a share of
the nodes and has its own consumer group, lease and snapshot, and the virtual clock
waits for every member's group. A process started with ``--pool N`` hosts as many of
the N members as its fair share, ``ceil(N / live processes)``, the way a Kafka consumer
group shares out partitions; the member is the unit that moves, as a partition is in
Kafka, and its snapshot is what the next host loads.

* **Who is live.** Each process holds an advisory lock on ``(pool, a number of its own)``
  on a session of its own, so PostgreSQL counts the live processes (``pg_locks``) and
  forgets a killed one the moment its session ends (ledgerlet_store/presence.py).
* **Taking.** A process below its share takes free members at its next look, by their
  leases (the same lease a static member's standby waits on): one taken is served as a
  fresh runner, which loads the member's newest snapshot and folds what its group
  committed after it.
* **Handing over.** A process above its share (another joined) hands over the member it
  took last, one at a time and once the live count has settled (``settle``): the runner
  finishes its batch, goes on to a point where its state reflects exactly what it
  committed, checkpoints there and stops, and the lease goes, so the next host folds
  only what came after (runtime/shell.py ``ServiceRunner.hand_over``). A process that
  dies (SIGKILL) frees its leases with its sessions; the others, whose share has grown,
  take them.

Nothing is decided twice or lost by a move, for the reasons a standby's take-over is safe
(ledgerlet_store/leases.py): a member's decisions do not depend on which process makes them, and
what it had not committed is handled again under the same ids. While a member has no
host the clock waits for its group.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from ledgerlet_core.loop.membership import Membership
from ledgerlet_services.runtime import stopping
from ledgerlet_store.contract import StoreUnavailable
from ledgerlet_store.leases import PING_PATIENCE, Lease, lock_id
from ledgerlet_store.presence import Presence

log = logging.getLogger(__name__)

#: seconds between a pool process's looks at who is live
POOL_EVERY = 1.0


def fair_share(members: int, live: int) -> int:
    """How many of ``members`` one of ``live`` processes hosts: rounded up, so the live
    processes can host every member between them."""
    return -(-members // max(live, 1))


#: serves one member while its lease is held: (member, lease, hand over when set) ->
#: returns once the member is handed over, its runner ended or its lease lost
ServeMember = Callable[[Membership, Lease, asyncio.Event], Coroutine[Any, Any, None]]


@dataclass
class _Hosted:
    member: Membership
    lease: Lease
    hand_over: asyncio.Event
    task: asyncio.Task[None]


class Pool:
    """One process of a service's pool: hosts its fair share of ``count`` members."""

    def __init__(
        self,
        name: str,
        count: int,
        presence: Presence,
        lease_for: Callable[[Membership], Lease],
        serve_member: ServeMember,
        *,
        every: float = POOL_EVERY,
        settle: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """``settle``: how long the number of live processes must stay the same before
        this process hands a member over (default five looks), so that processes that
        rejoin together after a database restart do not send members back and forth.
        Free members are taken at once (up to the share at the count seen now): a
        member without a host holds the clock up. ``clock``: what ``settle`` is measured
        by (seconds; the event loop's clock unless a test gives one of its own)."""
        if count < 2:
            raise ValueError(f"a pool shares 2 or more members, got {count}")
        self.name = name
        self.count = count
        self.presence = presence
        self.lease_for = lease_for
        self.serve_member = serve_member
        self.every = every
        self.settle = settle if settle is not None else 5 * every
        self._clock = clock
        #: the number of live processes last seen, and since when (the event loop's clock)
        self._live: tuple[int, float] | None = None
        #: the members hosted now, in the order they were taken (those being handed over
        #: too, until their runner has stopped)
        self.hosted: list[_Hosted] = []
        #: (taken, handed over) so far: what a test or an operator can read off
        self.moves: list[tuple[str, int]] = []

    @property
    def indexes(self) -> list[int]:
        """The members hosted now (from 0)."""
        return sorted(h.member.index for h in self.hosted)

    async def run(self, stop: asyncio.Event, heartbeat: Callable[[], None] | None = None) -> None:
        """Host a fair share of the members until ``stop``; then hand every one over."""
        try:
            while not stop.is_set():
                if heartbeat is not None:
                    heartbeat()
                await self._reap()  # (a member's failure fails the process from here)
                try:
                    await self._turn()
                except (StoreUnavailable, TimeoutError) as exc:
                    log.warning("%s: the pool's database is not answering (%s)", self.name, exc)
                    await self.presence.leave()
                    self._live = None
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.every):
                        await stop.wait()
        finally:
            try:  # all at once: each may take a while to reach a point it can checkpoint
                for hosted in self.hosted:
                    self._ask_hand_over(hosted)
                with stopping.step(f"{self.name}: handing over members {self.indexes} (checkpoints, leases)"):
                    await asyncio.gather(*(h.task for h in self.hosted), return_exceptions=True)
                    await self._reap(raising=False)
            finally:
                with stopping.step(f"{self.name}: leaving the pool"):
                    await self.presence.leave()

    async def _turn(self) -> None:
        """One look at the pool: take free members if this process hosts fewer than its
        share; once the number of live processes has settled, start handing one member
        over if it hosts more (the hand-over goes on while the pool looks again)."""
        if not self.presence.joined:
            async with asyncio.timeout(PING_PATIENCE + 10):
                await self.presence.join()
            log.info("%s: joined the pool as %s", self.name, self.presence.number)
        live = await self.presence.live()
        now = self._clock() if self._clock is not None else asyncio.get_running_loop().time()
        if self._live is None or self._live[0] != live:
            self._live = (live, now)
        share = fair_share(self.count, live)
        keeping = [h for h in self.hosted if not h.hand_over.is_set()]
        if len(self.hosted) < share:
            await self._take(share - len(self.hosted))
        elif len(keeping) > share and len(keeping) == len(self.hosted) and now - self._live[1] >= self.settle:
            self._ask_hand_over(keeping[-1])  # (one at a time: the share is looked at again)

    def _ask_hand_over(self, hosted: _Hosted) -> None:
        if not hosted.hand_over.is_set():
            log.info("%s: handing member %d of %d over", self.name, hosted.member.index + 1, self.count)
            hosted.hand_over.set()

    async def _reap(self, *, raising: bool = True) -> None:
        """Let go the members whose runner has stopped: handed over, or ended by itself
        (its lease lost: another may take it); a runner that failed fails the process, as
        a single member's does (``raising``; else it is logged)."""
        for hosted in [h for h in self.hosted if h.task.done()]:
            self.hosted.remove(hosted)
            await hosted.lease.release()
            number = f"member {hosted.member.index + 1} of {self.count}"
            failure = None if hosted.task.cancelled() else hosted.task.exception()
            if failure is not None:
                if raising:
                    raise failure
                log.error("%s: %s failed as it was handed over: %r", self.name, number, failure)
            elif hosted.hand_over.is_set():
                self.moves.append(("handed over", hosted.member.index))
                log.info("%s: handed %s over", self.name, number)
            else:
                log.info("%s: %s ended here", self.name, number)

    async def _take(self, wanted: int) -> None:
        """Take up to ``wanted`` free members, trying them from a place of this process's
        own so that processes joining together do not all reach for the same one."""
        mine = set(self.indexes)
        held = await self.presence.leases_held()
        start = (self.presence.number or 0) % self.count
        for step in range(self.count):
            if wanted == 0:
                return
            index = (start + step) % self.count
            if index in mine:
                continue
            member = Membership(index, self.count)
            lease = self.lease_for(member)
            if lock_id(lease.key) in held or not await lease.try_once():
                continue
            hand_over = asyncio.Event()
            task = asyncio.create_task(self.serve_member(member, lease, hand_over), name=f"{self.name} {index + 1}")
            self.hosted.append(_Hosted(member, lease, hand_over, task))
            self.moves.append(("taken", index))
            log.info("%s: took member %d of %d", self.name, index + 1, self.count)
            wanted -= 1
