"""The cyclic collector tuned for what the command line does (the loader stays pure).

Reading a scenario builds millions of objects and frees few: the cyclic collector, run
every few hundred allocations, walked them again and again for nothing (40 % of reading a
5,000-node fleet). The command paths that read one pause it meanwhile
(:func:`collector_paused`); decisions do not depend on it, and what little cyclic garbage
reading leaves is collected later.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off for the block, and left as it was (on again only if it
    was on: a caller that paused it keeps it paused), an error in the block too."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
