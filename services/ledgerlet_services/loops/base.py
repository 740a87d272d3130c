"""Dispatch by event type, checked when a loop's class is created.

A loop registers a handler per event type with ``@on(Model)``; the class is refused at
import (``TypeError``) if a handler names a type the contracts do not register, handles
a type twice, declares its data as another type than the one it will be given, or
handles events that travel on a topic the loop does not read. Handlers fold and decide;
they never block and never read a clock (the shell does all I/O).

Every loop folds the same :class:`~ledgerlet_core.cluster.view.ClusterView` around its
handlers: additions before, removals after (see that module).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import msgspec

from ledgerlet_core.cluster.view import FOLD_DECODERS, ClusterView, folds_event
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.order import rank_of
from ledgerlet_core.contracts.registry import EVENT_TYPES, decoder_for
from ledgerlet_core.contracts.topics import topic_of
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.loop.membership import Membership

F = TypeVar("F", bound=Callable[..., Any])

#: a loop's handler of one event type, bound (:meth:`Loop.handler`)
Handler = tuple[
    Callable[[Envelope, Any, Emitter], Iterator[None] | None],
    Callable[[msgspec.Raw], Any],
    Callable[[Envelope], bool] | None,
]

_MARK = "__ledgerlet_handles__"


@dataclass(frozen=True, slots=True)
class _Route:
    method: str
    decode: Callable[[msgspec.Raw], Any]
    when: Callable[[Envelope], bool] | None = None


def on(
    model: type[msgspec.Struct],
    *,
    decode: Callable[[msgspec.Raw], Any] | None = None,
    when: Callable[[Envelope], bool] | None = None,
) -> Callable[[F], F]:
    """Register the decorated method as the loop's handler of ``model`` events.

    ``decode`` replaces the registered decoder (a lazy view of a large event); the
    method's data annotation must then be what it returns. ``when`` picks the events
    the handler is for by their envelope, so the others are not even decoded (a
    fleet's hundreds of thousands of pod usage entries, to a handler of node usage)."""

    def mark(fn: F) -> F:
        setattr(fn, _MARK, (model, decode, when))
        return fn

    return mark


class RunRefused(ValueError):
    """Raised by a handler for a run this loop cannot serve as it is set up (a member of a
    split eviction manager given a run ordered by step): the shell skips the whole run and
    says why, rather than fail. The run may be one of the topics' past (members added to
    a stack that served runs before read every run there), and one being driven waits for
    the groups its driver names, which then say it is not being served."""


def for_node(env: Envelope) -> bool:
    """``when=``: events about a node (``usage.node/NAME``, not a pod's or a workload's)."""
    return env.node is not None


class Loop:
    #: stable name: consumer group, telemetry, ``ledgerlet service NAME``; its rank is in contracts/order.py
    name: ClassVar[str]
    topics: ClassVar[tuple[str, ...]]
    rank: ClassVar[int]
    #: whether several members may share the loop's work (:meth:`set_membership`)
    splittable: ClassVar[bool] = False
    #: whether it numbers its events by node in a run ordered by node (contracts/order.py),
    #: which a run must be for the loop to be split
    node_scoped: ClassVar[bool] = False
    _routes: ClassVar[dict[str, _Route]]

    def __init__(self, cluster: ClusterView | None = None) -> None:
        """``cluster``: the view this loop reads: one the loops of a process share (the
        embedded engine folds it once per event, runtime/engine.py), or one of its own
        over the decoding its runner shares (runtime/shell.py); else a view of its own
        that decodes for itself (a loop made alone, as tests do)."""
        self.cluster = cluster if cluster is not None else ClusterView()

    def set_membership(self, member: Membership) -> None:
        """Take only ``member``'s share of the work (a split service: loop/membership.py);
        only a loop that is ``splittable`` has it (the runner checks that first)."""
        raise NotImplementedError(self.name)

    @classmethod
    def keeper(cls, member: Membership) -> Callable[[str | None], bool]:
        """What ``member`` emits, by the node it concerns (None: no node); the rest
        another member emits, with the very id this one would give it."""
        return member.keeps

    def node_place(self) -> Callable[[str], int] | None:
        """Where each node stands, if this loop numbers its events by node in this run
        (``ScenarioStarted.orderScheme``, contracts/order.py); None: by the step."""
        return None

    def set_quiet_nodes(self, nodes: frozenset[str]) -> None:
        """Make no observations of ``nodes`` (a quick verified replay: nodes on which the
        recorded run decided nothing), keeping their places in the order. Only the loop
        that observes nodes has anything to leave out."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.rank = rank_of(cls.name)
        cls._routes = _routes(cls)

    def wants(self, env: Envelope) -> bool:
        """Whether :meth:`handle` would do anything with ``env`` (a batch's members are
        asked first: a fleet's pod usage entries concern one loop of six)."""
        route = self._routes.get(env.type)
        if route is not None and (route.when is None or route.when(env)):
            return True
        return folds_event(env)

    def handle(self, env: Envelope, out: Emitter, memo: dict[str, Any] | None = None) -> Iterator[None] | None:
        """Fold ``env`` into the cluster view and the loop's state; emit through ``out``.

        ``memo``: what other loops of this process decoded of the same events for the
        view, by event id (given for a batch's members, which every loop folds); only the
        view's read-only decodings (:data:`FOLD_DECODERS`) are shared through it.

        A handler with a long pass to make (every node at a housekeeping tick) may be a
        generator that yields now and then: the shell sends what it emitted so far while
        it goes on, so other loops can start on it."""
        route = self._routes.get(env.type)
        if route is not None and route.when is not None and not route.when(env):
            route = None
        folds = folds_event(env)
        if route is None and not folds:
            return None
        decode = route.decode if route is not None else fold_decoder(env.type)
        if memo is not None and decode in _SHARED_DECODERS:
            data = memo.get(env.id)
            if data is None:
                data = memo[env.id] = decode(env.data)
        else:
            data = decode(env.data)
        if folds:
            self.cluster.arrive(env, data)
        result = getattr(self, route.method)(env, data, out) if route is not None else None
        if isinstance(result, Iterator):
            return self._then_settle(result, env, data, folds)
        if folds:
            self.cluster.settle(env, data)
        return None

    @classmethod
    def handles(cls, event_type: str) -> bool:
        """Whether the loop has a handler of ``event_type`` (some take only part of them)."""
        return event_type in cls._routes

    def handler(self, event_type: str) -> Handler | None:
        """The loop's handler of ``event_type``, bound: (call it with env, data, out; the
        decoder its data is read with; which events it takes, by their envelope)."""
        route = self._routes.get(event_type)
        if route is None:
            return None
        return getattr(self, route.method), route.decode, route.when

    def react(self, env: Envelope, out: Emitter, memo: dict[Any, Any]) -> Iterator[None] | None:
        """Handle ``env`` with a cluster view someone else folds (the embedded engine,
        which folds it once for every loop before and after their handlers): no fold here.

        ``memo``: the event's data as each decoder read it (loops share what they read)."""
        route = self._routes.get(env.type)
        if route is None or (route.when is not None and not route.when(env)):
            return None
        data = memo.get(route.decode)
        if data is None:
            data = memo[route.decode] = route.decode(env.data)
        result = getattr(self, route.method)(env, data, out)
        return result if isinstance(result, Iterator) else None

    def _then_settle(self, steps: Iterator[None], env: Envelope, data: Any, folds: bool) -> Iterator[None]:
        yield from steps
        if folds:
            self.cluster.settle(env, data)


def _routes(cls: type[Loop]) -> dict[str, _Route]:
    routes: dict[str, _Route] = {}
    for klass in reversed(cls.__mro__):
        for attr, fn in vars(klass).items():
            marker = getattr(fn, _MARK, None)
            if marker is None:
                continue
            model, decode, when = marker
            name = model.__name__
            where = f"{cls.__name__}.{attr}"
            registered = EVENT_TYPES.get(name)
            if registered is None or registered.model is not model:
                raise TypeError(f"{where} handles {name}, which is not a registered event type")
            if name in routes and routes[name].method != attr:
                raise TypeError(f"{where} handles {name}, already handled by {cls.__name__}.{routes[name].method}")
            topic = topic_of(name, registered.kind)
            if topic not in cls.topics:
                raise TypeError(f"{where} handles {name}, which travels on {topic}: {cls.__name__} does not read it")
            expected = (
                _returned(decode)
                if decode is not None
                else _returned(FOLD_DECODERS[name])
                if name in FOLD_DECODERS
                else model
            )
            given = _data_annotation(fn)
            if given is not expected:
                raise TypeError(f"{where} declares its data as {given!r}; {name} gives it {expected!r}")
            routes[name] = _Route(attr, decode or fold_decoder(name), when)
    return routes


#: decodings one loop's handler may share with another's (their results are never changed)
_SHARED_DECODERS = frozenset(FOLD_DECODERS.values())


def fold_decoder(name: str) -> Callable[[msgspec.Raw], Any]:
    """How an event of type ``name`` is read for the cluster view (and so for a loop's
    handler of it, which sees the same data)."""
    return FOLD_DECODERS.get(name) or decoder_for(name)


def _data_annotation(fn: Callable[..., Any]) -> Any:
    """The annotation of a handler's ``data`` parameter: (self, env, data, out)."""
    params = list(inspect.signature(fn).parameters)
    if len(params) != 4:
        raise TypeError(f"{fn.__qualname__}: a handler takes (self, env, data, out)")
    return typing.get_type_hints(fn).get(params[2])


def _returned(fn: Callable[..., Any]) -> Any:
    return typing.get_type_hints(fn).get("return")
