"""Write the golden decision logs again: ``python -m tests.golden.regenerate [NAME ...]``.

Only after a change that is meant to alter decisions; the commit says which and why.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from .cases import LOGS, cases, golden_path
from .replay_case import decision_log


async def main(names: list[str]) -> None:
    LOGS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or sorted(cases()):
            log = await decision_log(name, Path(tmp))
            path = golden_path(name)
            old = path.read_bytes() if path.exists() else None
            path.write_bytes(log)
            state = "new" if old is None else "unchanged" if old == log else "CHANGED"
            print(f"{name}: {len(log.splitlines())} decisions, {state}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
