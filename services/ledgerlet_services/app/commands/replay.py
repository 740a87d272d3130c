"""``ledgerlet replay`` and ``ledgerlet whatif``: a stored run's decisions derived again from
its stored inputs, as recorded or under another configuration."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.markup import escape

from ledgerlet_core.model.errors import InputError
from ledgerlet_services.app import messages, progress
from ledgerlet_services.app.commands.stored import (
    EXIT_BAD_INPUT,
    EXIT_MISMATCH,
    EXIT_OK,
    checked_output,
    open_reading,
    output_option,
    print_data,
    store_option,
    warn,
)
from ledgerlet_services.app.inputs import read_bounded
from ledgerlet_services.app.messages import error
from ledgerlet_services.app.outputs import Output, OutputFailed, write_output
from ledgerlet_services.app.progress import add_progress_arg
from ledgerlet_store.sql_store import SqlEventStore


def add_parser(sub: Any) -> None:
    """``replay``'s and ``whatif``'s options."""
    replay = sub.add_parser("replay", help="re-derive a stored run's decisions from its stored inputs")
    store_option(replay)
    replay.add_argument("--verify", action="store_true", help="compare with what is stored; exit 1 on any mismatch")
    replay.add_argument(
        "--quick",
        action="store_true",
        help="make no observations of the nodes on which the run decided nothing (every stored decision is "
        "still re-derived; that those nodes would decide nothing is taken from the record)",
    )
    replay.add_argument("--decisions", type=Path, help="write the re-derived decision log here")
    replay.add_argument("--max-shown", type=int, default=50, help="mismatches printed (default 50)")
    output_option(replay, ("text", "json", "yaml"))
    add_progress_arg(replay)

    whatif = sub.add_parser("whatif", help="re-run a stored run's inputs under another configuration")
    store_option(whatif)
    whatif.add_argument(
        "--set",
        dest="assignments",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="e.g. evictionHard.memory.available=500Mi, evictionPressureTransitionPeriod=1m, "
        "scheduler.disablePreemption=true (repeatable)",
    )
    whatif.add_argument("--config", type=Path, help="YAML: kubelet fields, or kubeletConfig/schedulerConfig/...")
    output_option(whatif, ("table", "json", "yaml"))
    add_progress_arg(whatif)
    whatif.add_argument(
        "--save-as",
        metavar="RUN_ID",
        help="store the what-if as a run of its own (report and explain show it, and beside the recorded run "
        "with --compare)",
    )
    whatif.add_argument(
        "--accept-unmodelled",
        action="store_true",
        help="run it although the scenario holds fields upstream decides by that ledgerlet does not model "
        "(refused otherwise: the answer may be wrong where they matter)",
    )


async def replay(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_core.contracts.decision_log import encode_records, to_records
    from ledgerlet_core.contracts.registry import DECISION
    from ledgerlet_core.model.timefmt import parse_rfc3339
    from ledgerlet_services.app.replay import NoSuchRun, incomplete_warning, replay_run, run_state

    out = checked_output(args.decisions, "--decisions", args.store) if args.decisions is not None else None
    if out is False:
        return EXIT_BAD_INPUT
    store = await open_reading(args, console)
    if store is None:
        return EXIT_BAD_INPUT
    try:
        state = await run_state(store, args.run)
        warning = incomplete_warning(state)
        if warning is not None and args.verify:
            # its stored decisions stop part way: a re-derivation cannot match them
            if args.output != "text":
                print_data({"run": state.run, "verified": False, "incomplete": warning}, args.output)
            else:
                console.print(f"[red]incomplete run:[/red] {escape(warning)}", highlight=False)
            return EXIT_MISMATCH
        warn(warning)
        with progress.virtual_time(args, "replay", await _duration(store, state.run)) as update:
            replay = await replay_run(store, state.run, verify=args.verify, quick=args.quick, progress=update)
    except NoSuchRun as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    finally:
        await store.close()
    recorded = replay.recorded
    if isinstance(out, Output):
        decisions = [e for e in replay.derived.values() if e.kind == DECISION]
        data = encode_records(to_records(decisions, parse_rfc3339(recorded.started.start)))
        try:
            write_output(out, data)
        except OutputFailed as exc:
            error(f"the re-derived decision log was not written: {exc}")
            return EXIT_MISMATCH
    if args.output != "text":
        mismatches = replay.mismatches() if args.verify else []
        print_data(_replay_data(replay, args.verify, args.quick, mismatches), args.output)
        return EXIT_MISMATCH if mismatches else EXIT_OK
    took = f"{recorded.read_seconds + replay.derive_seconds:.2f}s ({replay.events_per_second:,.0f} events/s)"
    if not args.quick:
        console.print(
            f"run {recorded.run}: {replay.stored_events:,} stored events read and re-derived in {took}", highlight=False
        )
    else:
        quiet = f"--quick: {replay.quiet_count:,} nodes decided nothing and were not observed again"
        if args.verify:
            quiet += f", {replay.left_out:,} stored observations of theirs not compared"
        checked = replay.stored_events - replay.left_out
        console.print(
            f"run {recorded.run}: {checked:,} stored events read and re-derived in {took}; {quiet}", highlight=False
        )
    if not args.verify:
        return EXIT_OK
    mismatches = replay.mismatches()
    if not mismatches:
        n = replay.compared
        console.print(f"[green]verified:[/green] all {n:,} decisions and internal events re-derived identically")
        return EXIT_OK
    for m in mismatches[: args.max_shown]:
        console.print(m.describe(), highlight=False, markup=False)
    more = len(mismatches) - args.max_shown
    if more > 0:
        console.print(f"... and {more} more", highlight=False)
    by_kind = {k: sum(m.kind == k for m in mismatches) for k in ("changed", "missing", "unexpected")}
    console.print(
        f"[red]{len(mismatches)} mismatches[/red] ({', '.join(f'{v} {k}' for k, v in by_kind.items() if v)}): "
        "the stored decisions do not follow from the stored inputs",
        highlight=False,
    )
    return EXIT_MISMATCH


async def whatif(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_services.app.replay import NoSuchRun, whatif_run
    from ledgerlet_services.app.report_console import whatif_table
    from ledgerlet_services.runtime.embedded import ServiceFailed

    file_config: dict[str, Any] | None = None
    if args.config is not None:
        try:
            file_config = yaml.safe_load(read_bounded(args.config, str(args.config)).decode()) or {}
        except (OSError, yaml.YAMLError, InputError, UnicodeDecodeError) as exc:
            error(f"{args.config}: {exc}")
            return EXIT_BAD_INPUT
        if not isinstance(file_config, dict):
            error(f"{args.config}: expected a mapping of settings")
            return EXIT_BAD_INPUT
    if not args.assignments and file_config is None:
        error("whatif needs --set FIELD=VALUE or --config FILE")
        return EXIT_BAD_INPUT
    if args.save_as is not None:
        from ledgerlet_store.run_ids import BadRunId, check_run_id

        try:
            check_run_id(args.save_as, "--save-as")
        except BadRunId as exc:
            error(str(exc))
            return EXIT_BAD_INPUT
    store = await open_reading(args, console)
    if store is None:
        return EXIT_BAD_INPUT
    try:
        with progress.virtual_time(args, "whatif", await _duration(store, args.run)) as update:
            report = await whatif_run(
                store,
                args.run,
                args.assignments,
                file_config,
                save_as=args.save_as,
                progress=update,
                accept_unmodelled=args.accept_unmodelled,
            )
    except (NoSuchRun, InputError) as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    except ServiceFailed as exc:
        error(f"the what-if failed: {exc}" + (f" (run {args.save_as} is stored as failed)" if args.save_as else ""))
        return EXIT_MISMATCH
    finally:
        await store.close()
    if args.output in ("json", "yaml"):
        print_data(_diff_json(report), args.output)
        return EXIT_OK
    if report.open_loop_nodes:
        messages.warning(
            f"{', '.join(report.open_loop_nodes)} replayed recorded stats (open loop): "
            "their usage is the recording's and cannot react to a changed decision (a pod evicted earlier "
            "or not at all leaves the recorded usage as it was). Decisions on them are the changed "
            "configuration applied to the recorded usage; give those nodes a `usage` model for a closed loop.",
            label="note",
        )
    for table in whatif_table(report):
        console.print(table)
    if report.diff.same:
        console.print("no decision changes: the run decides the same under the new configuration")
    if args.save_as:
        messages.warning(
            f"saved as run {args.save_as}: ledgerlet report --run {args.save_as} --compare {report.run} --out FILE; "
            f"ledgerlet explain POD --run {args.save_as} --compare {report.run}",
            label="saved",
        )
    return EXIT_OK


async def _duration(store: SqlEventStore, run: str | None) -> int:
    """The run's virtual duration (ns) for a progress bar; 0 if it cannot be read (the
    command itself then says what is wrong)."""
    from ledgerlet_services.audit.queries import Audit, NotFound

    audit = Audit(store)
    try:
        started, _ = await audit.started(await audit.resolve(run))
    except NotFound:
        return 0
    return started.duration


def _replay_data(replay: Any, verify: bool, quick: bool, mismatches: list[Any]) -> dict[str, Any]:
    """``replay -o json|yaml``: what was read and re-derived and, verifying, what differed."""
    recorded = replay.recorded
    out: dict[str, Any] = {
        "run": recorded.run,
        "storedEvents": replay.stored_events,
        "seconds": round(recorded.read_seconds + replay.derive_seconds, 3),
        "eventsPerSecond": round(replay.events_per_second),
        "decisionsDerived": sum(1 for e in replay.derived.values() if e.kind == "decision"),
    }
    if quick:
        out["quick"] = {"quietNodes": replay.quiet_count, "observationsNotCompared": replay.left_out}
    if verify:
        out["verified"] = not mismatches
        out["compared"] = replay.compared
        out["mismatches"] = [
            {
                "kind": m.kind,
                "id": m.id,
                "type": m.type,
                "t": m.t / 1e9,
                **({"node": m.node} if m.node else {}),
                **({"pod": m.pod} if m.pod else {}),
                **({"fields": list(m.fields)} if m.fields else {}),
                "description": m.describe(),
            }
            for m in mismatches
        ]
    return out


def _secs(t: int | None) -> float | None:
    return None if t is None else t / 1e9


def _diff_json(report: Any) -> dict[str, Any]:
    d = report.diff
    return {
        "run": report.run,
        "configs": report.configs,
        "openLoopNodes": report.open_loop_nodes,
        "same": d.same,
        "counts": {k: {"recorded": a, "whatif": b} for k, (a, b) in d.counts.items()},
        "firstPressure": [
            {"node": n, "condition": c, "recorded": _secs(a), "whatif": _secs(b)}
            for (n, c), (a, b) in d.first_pressure.items()
        ],
        "changes": [
            {
                "change": c.change,
                "type": c.type,
                "pod": c.pod,
                "node": c.node,
                "recorded": _secs(c.recorded_t),
                "whatif": _secs(c.whatif_t),
                "detail": c.detail,
            }
            for c in d.changes
        ],
    }
