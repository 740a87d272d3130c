"""What a scenario file may be before it is read: its size, its encoding, how deeply it
nests and how much its YAML aliases may add.

A hostile or broken file must end with an input error (exit 2) before anything is
written, never with a parser crash, a traceback or a process growing without bound:
libyaml recurses on block nesting (30,000 levels ended in a segmentation fault), and a
few hundred bytes of aliases (``&a [*b, *b, ...]`` nested eight times) expand to
billions of values wherever the document is walked, copied or printed.
"""

from __future__ import annotations

import re
from typing import Any, Final

from ledgerlet_core.model.duration import format_duration
from ledgerlet_core.model.errors import InputError

#: the largest scenario file read (the 5,000-node fleet of the benchmarks is ~200 MB)
MAX_SCENARIO_BYTES: Final = 1 << 30
#: the deepest block nesting libyaml is given (each level takes a column at least);
#: libyaml itself stops flow nesting (``[[[...``) at 1,000 levels
MAX_BLOCK_INDENT: Final = 1000
#: how many values YAML aliases may add to a document when expanded
ALIAS_BUDGET: Final = 100_000
#: the longest scenario run unless the command says otherwise (``--max-duration``): a year
#: of virtual time. Go's longest duration (292 years) was accepted, and its run never
#: ended while the store grew 230 MB a minute.
MAX_DURATION: Final = 365 * 24 * 3600 * 1_000_000_000

#: a line opening with that many columns of indentation or compact ``- `` / ``? `` / ``: ``
#: indicators (a run of dashes with no space after them, a rule in a text, is not one)
_DEEP_LINE: Final = re.compile(r"^(?:[ \t]|[-?:][ \t]){" + str(MAX_BLOCK_INDENT) + ",}", re.MULTILINE)


def check_size(size: int, source: str, limit: int = MAX_SCENARIO_BYTES) -> None:
    """Refuse a file larger than ``limit`` (asked before it is read)."""
    if size > limit:
        raise InputError(f"file is {size:,} bytes; scenarios of at most {limit:,} bytes are read", file=source)


def decode_text(data: bytes, source: str) -> str:
    """A scenario file's bytes as text: within the size limit and valid UTF-8."""
    check_size(len(data), source)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start} ({exc.reason})",
            file=source,
            field=f"line {line}",
        ) from None


def check_block_depth(text: str, source: str) -> None:
    """Refuse YAML indented (or nested with ``- - -``) deeper than libyaml is given."""
    deep = _DEEP_LINE.search(text)
    if deep is not None:
        line = text.count("\n", 0, deep.start()) + 1
        raise InputError(f"nested deeper than {MAX_BLOCK_INDENT} levels", file=source, obj="YAML", field=f"line {line}")


def check_aliases(doc: Any, source: str) -> None:
    """Refuse a document whose aliases would expand it by more than :data:`ALIAS_BUDGET`
    values, or that contains itself. The walk visits each list and mapping once
    (aliases are shared objects after loading), so it costs what the document holds."""
    expanded: dict[int, int] = {}
    on_path: set[int] = set()
    own = 1
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, finished = stack.pop()
        if not isinstance(node, list | dict):
            continue
        key = id(node)
        children = list(node.values()) if isinstance(node, dict) else node
        if finished:
            expanded[key] = 1 + sum(expanded.get(id(c), 1) for c in children)
            on_path.discard(key)
            continue
        if key in expanded:
            continue
        if key in on_path:
            raise InputError("a YAML alias refers to a node that contains it", file=source, obj="YAML")
        on_path.add(key)
        own += len(children)
        stack.append((node, True))
        stack.extend((c, False) for c in children)
    total = expanded.get(id(doc), 1)
    if total - own > ALIAS_BUDGET:
        raise InputError(
            f"YAML aliases would expand the document by {total - own:,} values; at most {ALIAS_BUDGET:,} are allowed",
            file=source,
            obj="YAML",
        )


def check_duration(duration: int, limit: int, source: str, *, option: str = "--max-duration") -> None:
    """Refuse a scenario whose virtual time is longer than ``limit`` (nanoseconds): its
    run could not end in any time a user waits for, and would fill the store meanwhile."""
    if duration > limit:
        days = duration / (24 * 3600 * 1_000_000_000)
        raise InputError(
            f"{format_duration(duration)} ({days:,.0f} days) is longer than {option} {format_duration(limit)} "
            f"({limit / (24 * 3600 * 1_000_000_000):,.0f} days of virtual time); give a longer {option} "
            "to run it anyway",
            file=source,
            obj="spec",
            field="duration",
        )
