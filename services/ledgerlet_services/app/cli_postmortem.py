"""The post-mortem commands: serve, kubeconfig, replay, whatif, explain, report, import."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.markup import escape

from ledgerlet_core.model.errors import InputError
from ledgerlet_services.app import messages, progress
from ledgerlet_services.app.cli_export import add_parser as add_export_parser
from ledgerlet_services.app.cli_export import run_export
from ledgerlet_services.app.inputs import read_bounded
from ledgerlet_services.app.messages import error
from ledgerlet_services.app.outputs import Output, OutputFailed, OutputRefused, check_output, store_files, write_output
from ledgerlet_services.app.progress import add_progress_arg
from ledgerlet_store.dsn import DEFAULT_DSN, BadAddress, check_address, describe
from ledgerlet_store.read_only import read_only_url
from ledgerlet_store.sql_store import SqlEventStore
from ledgerlet_store.store import open_store

EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT = 0, 1, 2
COMMANDS = ("serve", "kubeconfig", "runs", "replay", "whatif", "explain", "report", "import", "collect", "export")


def _store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        default=os.environ.get("LEDGERLET_STORE", DEFAULT_DSN),
        help=f"event store DSN (default {DEFAULT_DSN}, or LEDGERLET_STORE)",
    )
    p.add_argument("--run", help="run id (default: the newest completed run in the store)")


def _output_arg(p: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    """kubectl's ``-o``; ``--json`` stays as the short form of ``-o json``."""
    p.add_argument("-o", "--output", choices=formats, default=formats[0], help=f"default {formats[0]}")
    p.add_argument("--json", dest="output", action="store_const", const="json", help="-o json")


def _print_data(data: Any, output: str, file: Any = None) -> None:
    """Objects as JSON or YAML on stdout (the answer, nothing else), or on ``file``."""
    if output == "yaml":
        print(yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True), end="", file=file)
    else:
        print(json.dumps(data, indent=2), file=file)


def add_parsers(sub: Any) -> None:
    serve = sub.add_parser("serve", help="the decision audit API (read-only HTTP, OpenAPI at /docs)")
    serve.add_argument("--store", default=os.environ.get("LEDGERLET_STORE", DEFAULT_DSN), help="event store DSN")
    serve.add_argument(
        "--host", default=os.environ.get("LEDGERLET_API_HOST", "127.0.0.1"), help="the address to listen on"
    )
    serve.add_argument(
        "--port", type=int, default=int(os.environ.get("LEDGERLET_API_PORT", "8080")), help="the port to listen on"
    )
    serve.add_argument(
        "--token-file", type=Path, help="require this bearer token (also LEDGERLET_API_TOKEN; none: open)"
    )
    serve.add_argument(
        "--tls-cert-file",
        type=Path,
        default=os.environ.get("LEDGERLET_API_TLS_CERT_FILE") or None,
        help="serve HTTPS with this certificate (PEM; kubectl sends a bearer token only over TLS)",
    )
    serve.add_argument(
        "--tls-private-key-file",
        type=Path,
        default=os.environ.get("LEDGERLET_API_TLS_PRIVATE_KEY_FILE") or None,
        help="the certificate's private key (PEM)",
    )
    serve.add_argument(
        "--publish-docs",
        action="store_true",
        help="serve /docs and /openapi.json without the token (with a token they are behind it by default)",
    )

    kube = sub.add_parser(
        "kubeconfig",
        help="a kubeconfig for kubectl against a stored run at one instant (served by ledgerlet serve)",
        description="Prints a kubeconfig whose current context is RUN at AT on the audit API at --server: "
        "kubectl get/describe/watch then read the run as the API server held it then.",
    )
    kube.add_argument("--server", required=True, help="the audit API, e.g. http://127.0.0.1:8080")
    kube.add_argument("--run", help="run id or a prefix of one (default: the newest completed run)")
    kube.add_argument(
        "--at",
        default="end",
        help="the instant: end (default), an offset into the run (5m, 90s), a time of day on the run's day "
        "(09:05, 09:05:30; UTC unless +hh:mm is given) or RFC 3339 (2026-01-29T09:05:00Z)",
    )
    kube.add_argument(
        "--clock",
        choices=("now", "recorded"),
        default="now",
        help="now (default): timestamps moved so that the instant reads as the moment of each request, and "
        "kubectl's own ages (describe, events) agree with get's; recorded: the recorded timestamps",
    )
    kube.add_argument("--token-file", type=Path, help="the bearer token the server wants (referred to, not copied)")
    kube.add_argument(
        "--certificate-authority",
        type=Path,
        help="the CA (PEM) that signed the https server's certificate",
    )

    runs = sub.add_parser("runs", help="the runs in a store, newest first, with how each ended")
    runs.add_argument("--store", default=os.environ.get("LEDGERLET_STORE", DEFAULT_DSN), help="event store DSN")
    _output_arg(runs, ("table", "wide", "json", "yaml", "name"))

    replay = sub.add_parser("replay", help="re-derive a stored run's decisions from its stored inputs")
    _store_arg(replay)
    replay.add_argument("--verify", action="store_true", help="compare with what is stored; exit 1 on any mismatch")
    replay.add_argument(
        "--quick",
        action="store_true",
        help="make no observations of the nodes on which the run decided nothing (every stored decision is "
        "still re-derived; that those nodes would decide nothing is taken from the record)",
    )
    replay.add_argument("--decisions", type=Path, help="write the re-derived decision log here")
    replay.add_argument("--max-shown", type=int, default=50, help="mismatches printed (default 50)")
    _output_arg(replay, ("text", "json", "yaml"))
    add_progress_arg(replay)

    whatif = sub.add_parser("whatif", help="re-run a stored run's inputs under another configuration")
    _store_arg(whatif)
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
    _output_arg(whatif, ("table", "json", "yaml"))
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

    explain = sub.add_parser("explain", help="why a pod was evicted, preempted, killed or rejected")
    explain.add_argument("pod", help="NAME (any namespace, if only one has it), or NAMESPACE/NAME")
    explain.add_argument("-n", "--namespace", help="the pod's namespace")
    _store_arg(explain)
    _output_arg(explain, ("text", "json", "yaml"))
    explain.add_argument("--compare", metavar="RUN", help="the same pod in another run (a saved what-if), side by side")

    report = sub.add_parser("report", help="a self-contained HTML post-mortem of a run")
    _store_arg(report)
    report.add_argument("--out", type=Path, required=True, help="where to write the HTML (-: standard output)")
    report.add_argument("--compare", metavar="RUN", help="another run (a saved what-if): its pod endings beside these")
    _output_arg(report, ("text", "json", "yaml"))
    add_progress_arg(report)

    imp = sub.add_parser(
        "import",
        help="a scenario from recorded kubectl objects, kubelet /pods, /stats/summary and /configz",
        description="Files are YAML or JSON; each given as INPUT is sorted by what it holds "
        "(summaries, a kubelet configuration, objects). - reads standard input.",
    )
    imp.add_argument("inputs", nargs="*", metavar="INPUT", help="recorded files of any of those kinds, or -")
    imp.add_argument(
        "--objects", action="append", default=[], help="kubectl get ... -o yaml|json output, or the kubelet's /pods"
    )
    imp.add_argument("--stats", action="append", default=[], help="a kubelet /stats/summary document (repeatable)")
    imp.add_argument("--kubelet-config", help="the kubelet's configz or a KubeletConfiguration")
    imp.add_argument("--name", default="imported", help="scenario name")
    imp.add_argument("--out", type=Path, required=True, help="scenario YAML to write (-: standard output)")
    imp.add_argument(
        "--allow-gaps",
        action="store_true",
        help="take recordings more than an hour apart (refused by default: files of two incidents mixed up)",
    )
    _add_collect(sub)
    add_export_parser(sub)


def _add_collect(sub: Any) -> None:
    collect = sub.add_parser(
        "collect",
        help="record a live cluster (objects, configz, /stats/summary per node) for import",
        description="Reads through the API server (kubectl's kubeconfig): the objects once, then each "
        "node's /stats/summary via the node proxy every --interval for --rounds rounds.",
    )
    collect.add_argument(
        "--kubeconfig",
        help="a file or a :-separated list, merged as kubectl does (default: $KUBECONFIG or ~/.kube/config)",
    )
    collect.add_argument("--context", help="default: the kubeconfig's current context")
    collect.add_argument("--token", help="a bearer token, instead of the kubeconfig user's credentials")
    collect.add_argument("--interval", default="10s", help="between rounds of summaries (default 10s)")
    collect.add_argument("--rounds", type=int, default=6, help="rounds of summaries (default 6)")
    collect.add_argument("--out", type=Path, required=True, help="directory to write (import reads it)")


def dispatch(args: argparse.Namespace, console: Console) -> int:
    if args.command == "serve":
        return _serve(args, console)
    if args.command == "kubeconfig":
        return _kubeconfig(args)
    if args.command == "import":
        return _import(args, console)
    if args.command == "collect":
        return _collect(args, console)
    if args.command == "export":
        return asyncio.run(run_export(args, console, _open))
    runner = {"runs": _runs, "replay": _replay, "whatif": _whatif, "explain": _explain, "report": _report}[args.command]
    return asyncio.run(runner(args, console))


def _serve(args: argparse.Namespace, console: Console) -> int:
    import uvicorn

    from ledgerlet_services.audit.http_api import create_app

    if address_error(args.store, existing=True):
        return EXIT_BAD_INPUT
    token = os.environ.get("LEDGERLET_API_TOKEN") or None
    if args.token_file is not None:
        try:  # (a token is a line: a megabyte is plenty, /dev/zero is not read for ever)
            token = read_bounded(args.token_file, str(args.token_file), 1 << 20).decode().strip() or None
        except (OSError, InputError, UnicodeDecodeError) as exc:
            error(f"--token-file {args.token_file}: {getattr(exc, 'strerror', None) or exc}")
            return EXIT_BAD_INPUT
    tls = tls_files(args.tls_cert_file, args.tls_private_key_file)
    if isinstance(tls, str):
        error(tls)
        return EXIT_BAD_INPUT
    docs = "OpenAPI: /docs" if not token or args.publish_docs else "OpenAPI: /openapi.json, with the token"
    scheme = "https" if tls else "http"
    console.print(f"audit API on {scheme}://{args.host}:{args.port} ({docs}){'' if token else ', no token'}")
    console.print(f"kubectl: ledgerlet kubeconfig --server {scheme}://{args.host}:{args.port} > kubeconfig")
    app = create_app(args.store, token=token, publish_docs=args.publish_docs)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="info",
        ssl_certfile=str(tls[0]) if tls else None,
        ssl_keyfile=str(tls[1]) if tls else None,
    )
    return EXIT_OK


def tls_files(cert: Path | None, key: Path | None) -> tuple[Path, Path] | str | None:
    """Both files (HTTPS), neither (HTTP), or what is wrong with them."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        return "--tls-cert-file and --tls-private-key-file go together"
    for path in (cert, key):
        if not path.is_file():
            return f"no file {path}"
    return cert, key


def _kubeconfig(args: argparse.Namespace) -> int:
    from ledgerlet_services.app.kube_context import Unreachable, kubeconfig_and_note

    try:
        text, note = kubeconfig_and_note(
            args.server,
            run=args.run,
            at=args.at,
            clock=args.clock,
            token_file=args.token_file,
            certificate_authority=args.certificate_authority,
        )
        print(text, end="")
        messages.warning(note, label="kubeconfig")
    except InputError as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    except Unreachable as exc:
        error(str(exc))
        return EXIT_MISMATCH
    return EXIT_OK


def _warn(warning: str | None) -> None:
    """On stderr, so that ``--json`` output stays JSON."""
    if warning is not None:
        messages.warning(warning)


async def _warn_if_incomplete(store: SqlEventStore, run: str) -> None:
    from ledgerlet_services.app.replay import NoSuchRun, incomplete_warning, run_state

    with contextlib.suppress(NoSuchRun):
        _warn(incomplete_warning(await run_state(store, run)))


def _output(path: Path, option: str, dsn: str) -> Output | bool:
    """An output path checked before the store is read (False: refused, said why)."""
    try:
        return check_output(path, option, reads=[("the store's own file", f) for f in store_files(dsn)])
    except OutputRefused as exc:
        error(str(exc))
        return False


def address_error(dsn: str, *, existing: bool) -> bool:
    """Say what is wrong with a store address (True), before anything is read or run."""
    try:
        check_address(dsn, existing=existing)
    except BadAddress as exc:
        error(str(exc))
        return True
    return False


def store_reason(exc: BaseException) -> str:
    """What a store's failure comes to, in a line: the database's own words (SQLAlchemy
    wraps them in a paragraph with a link)."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def open_failure(dsn: str, exc: BaseException) -> str:
    """The message for a store that would not open."""
    unwritable = " (it cannot be written: a read-only file or filesystem)" if read_only_url(dsn) else ""
    return f"cannot open store {describe(dsn)}: {store_reason(exc)}{unwritable}"


async def _open(args: argparse.Namespace, console: Console) -> SqlEventStore | None:
    """The store a read command reads: never created here (a mistyped path would
    otherwise become an empty store that has no runs)."""
    if address_error(args.store, existing=True):
        return None
    try:  # (only a what-if saved as a run writes)
        return await open_store(args.store, reading=not getattr(args, "save_as", None))
    except Exception as exc:  # a store we cannot open or migrate
        error(open_failure(args.store, exc))
        return None


async def _runs(args: argparse.Namespace, console: Console) -> int:
    """Every run with its state: a run that did not complete is plain to see."""
    from rich.table import Table

    from ledgerlet_services.audit.queries import Audit

    store = await _open(args, console)
    if store is None:
        return EXIT_BAD_INPUT
    try:
        runs = await Audit(store).runs()
    finally:
        await store.close()
    if args.output == "name":  # one id a line, as kubectl's -o name (shell completion reads it)
        sys.stdout.write("".join(f"{r.run}\n" for r in runs))
        return EXIT_OK
    if args.output in ("json", "yaml"):
        rows = [
            {
                "run": r.run,
                "name": r.name,
                "status": r.status,
                **({"statusReason": r.status_reason} if r.status_reason else {}),
                "recordedAt": r.recorded_at.isoformat(),
                "durationSeconds": r.duration_seconds,
            }
            for r in runs
        ]
        _print_data(rows, args.output)
        return EXIT_OK
    wide = args.output == "wide"
    table = Table(title=f"Runs in {store.describe()}")
    table.add_column("run", no_wrap=True, min_width=32)  # ids are copied from here: never cut
    for name in ("scenario", "status", "recorded at", *(("virtual duration", "why it ended so") if wide else ())):
        table.add_column(name)
    colour = {"completed": "green", "failed": "red", "abandoned": "yellow", "running": "cyan"}
    for r in runs:
        status = f"[{colour.get(r.status, 'white')}]{r.status}[/]"
        row = [r.run, escape(r.name), status, r.recorded_at.strftime("%Y-%m-%d %H:%M:%S UTC")]
        if wide:
            row += [f"{r.duration_seconds:g}s", escape(r.status_reason)]
        elif r.status_reason:
            row[2] += f" ({escape(r.status_reason)})"
        table.add_row(*row)
    console.print(table)
    return EXIT_OK


async def _replay(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_core.contracts.decision_log import encode_records, to_records
    from ledgerlet_core.contracts.registry import DECISION
    from ledgerlet_core.model.timefmt import parse_rfc3339
    from ledgerlet_services.app.replay import NoSuchRun, incomplete_warning, replay_run, run_state

    out = _output(args.decisions, "--decisions", args.store) if args.decisions is not None else None
    if out is False:
        return EXIT_BAD_INPUT
    store = await _open(args, console)
    if store is None:
        return EXIT_BAD_INPUT
    try:
        state = await run_state(store, args.run)
        warning = incomplete_warning(state)
        if warning is not None and args.verify:
            # its stored decisions stop part way: a re-derivation cannot match them
            if args.output != "text":
                _print_data({"run": state.run, "verified": False, "incomplete": warning}, args.output)
            else:
                console.print(f"[red]incomplete run:[/red] {escape(warning)}", highlight=False)
            return EXIT_MISMATCH
        _warn(warning)
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
        _print_data(_replay_data(replay, args.verify, args.quick, mismatches), args.output)
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


async def _whatif(args: argparse.Namespace, console: Console) -> int:
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
    store = await _open(args, console)
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
        _print_data(_diff_json(report), args.output)
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


async def _pod_key(store: SqlEventStore, run: str, pod: str, namespace: str | None) -> str:
    """``namespace/name`` for what the user typed: as given, with ``-n``, or a bare name
    that one namespace of the run has (a post-mortem starts from a pod's name)."""
    from ledgerlet_services.audit.queries import NotFound

    if "/" in pod:
        return pod
    if namespace:
        return f"{namespace}/{pod}"
    found = await store.pods_named(run, pod)
    if len(found) == 1:
        return found[0]
    if not found:
        raise NotFound(f"no pod named {pod!r} in run {run} (give -n NAMESPACE or NAMESPACE/NAME)")
    raise NotFound(f"pods named {pod!r} in {len(found)} namespaces of run {run}: {', '.join(found)}; give -n")


async def _explain(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_services.audit.pod_runs import hint, runs_holding
    from ledgerlet_services.audit.queries import Audit, NotFound

    if args.pod.count("/") > 1 or (args.namespace and "/" in args.pod) or args.pod.strip("/") != args.pod:
        error(f"expected NAME with -n NAMESPACE, or NAMESPACE/NAME, got {args.pod!r}")
        return EXIT_BAD_INPUT
    store = await _open(args, console)
    if store is None:
        return EXIT_BAD_INPUT
    try:
        audit = Audit(store)
        try:
            run = await audit.resolve(args.run)
            try:
                pod = await _pod_key(store, run, args.pod, args.namespace)
                exp = await audit.explain(run, pod)
            except NotFound as exc:  # the pod is not in the chosen run: which runs hold it?
                wanted = f"{args.namespace}/{args.pod}" if args.namespace else args.pod
                holders = await runs_holding(audit, wanted, besides=run)
                raise NotFound(f"{exc}{hint(wanted, holders, 'explain')}") from None
            await _warn_if_incomplete(store, run)
            other = await audit.explain(await audit.resolve(args.compare), pod) if args.compare else None
            sources = {r.run: r.source for r in await audit.runs()} if other is not None else {}
        except NotFound as exc:
            error(str(exc))
            return EXIT_BAD_INPUT
    finally:
        await store.close()
    if other is not None:
        if args.output == "text":
            console.print(_side_by_side(exp, other, sources))
        else:
            _print_data({"runs": [exp.to_dict(), other.to_dict()]}, args.output)
        return EXIT_OK
    if args.output == "text":
        print(exp.render_text(), end="")
    else:
        _print_data(exp.to_dict(), args.output)
    return EXIT_OK if exp.outcome is not None else EXIT_MISMATCH


def _side_by_side(a: Any, b: Any, sources: dict[str, str]) -> Any:
    """One pod in two runs, column by column: outcome, verdict, rank, grace."""
    from rich.table import Table

    def rank(exp: Any) -> str:
        place = next((r for r in exp.ranking if r.get("this")), None)
        return f"{place['position']} of {len(exp.ranking)}" if place else "-"

    def outcome(exp: Any) -> str:
        o = exp.outcome
        return f"{o['type']} at {o['time'][11:19]} UTC (+{o['t']:g}s)" if o else "not ended"

    table = Table(title=f"{a.pod}, side by side", show_lines=True)
    table.add_column("")
    for exp in (a, b):
        table.add_column(f"run {exp.run}" + (f"\n{sources[exp.run]}" if sources.get(exp.run) else ""), ratio=1)
    for label, value in (
        ("outcome", outcome),
        ("why", lambda e: e.verdict),
        ("rank", rank),
        ("grace", lambda e: e.grace),
    ):
        table.add_row(label, escape(value(a) or "-"), escape(value(b) or "-"))
    return table


async def _report(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_services.audit.queries import NotFound
    from ledgerlet_services.audit.report import write_report

    out = _output(args.out, "--out", args.store)
    if out is False:
        return EXIT_BAD_INPUT
    assert isinstance(out, Output)
    store = await _open(args, console)
    if store is None:
        return EXIT_BAD_INPUT
    try:
        with progress.steps(args, "report") as update:
            summary = await write_report(
                store,
                args.run,
                args.out,
                compare=args.compare,
                progress=update,
                write=lambda data: write_output(out, data),
            )
        if args.run not in (None, "", "latest"):
            await _warn_if_incomplete(store, args.run)
    except NotFound as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    except OutputFailed as exc:
        error(f"the report was not written: {exc}")
        return EXIT_MISMATCH
    finally:
        await store.close()
    to_stdout = str(args.out) == "-"  # the report is standard output: the summary goes to standard error
    if args.output != "text":
        _print_data(summary.to_dict(), args.output, file=sys.stderr if to_stdout else None)
    else:
        (Console(stderr=True) if to_stdout else console).print(escape(summary.text()), highlight=False)
    return EXIT_OK


def _collect(args: argparse.Namespace, console: Console) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ledgerlet_core.model.duration import DurationError, parse_duration
    from ledgerlet_services.app.collect import ApiError, Client, collect
    from ledgerlet_services.app.kubeconfig import load_kubeconfig

    try:
        interval = parse_duration(args.interval) / 1e9
        if interval < 0:
            raise InputError("must not be negative", field="--interval")
        if args.rounds < 1:
            raise InputError("at least one round", field="--rounds")
        api = load_kubeconfig(args.kubeconfig, args.context, token=args.token)
    except (InputError, DurationError) as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    columns = (TextColumn("summaries"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("collect", total=None)
        try:
            done = collect(
                Client(api),
                args.out,
                interval=interval,
                rounds=args.rounds,
                progress=lambda n, total: bar.update(task, completed=n, total=total),
            )
        except ApiError as exc:
            error(f"{api.server}: {exc}")
            return EXIT_MISMATCH  # (1: the cluster failed us, not the input)
    console.print(escape(done.text()), highlight=False)
    return EXIT_OK


def _import(args: argparse.Namespace, console: Console) -> int:
    from ledgerlet_services.app.recording_import import import_files

    given = [*args.inputs, *args.objects, *args.stats, *([args.kubelet_config] if args.kubelet_config else [])]
    try:
        out = check_output(args.out, "--out", reads=[("a recording read", Path(p)) for p in given if p != "-"])
        summary = import_files(
            inputs=args.inputs,
            objects=args.objects,
            stats=args.stats,
            kubelet_config=args.kubelet_config,
            name=args.name,
            out=args.out,
            allow_gaps=args.allow_gaps,
            write=lambda data: write_output(out, data),
        )
    except (InputError, OutputRefused) as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    except OutputFailed as exc:
        error(f"the scenario was not written: {exc}")
        return EXIT_MISMATCH
    (Console(stderr=True) if str(args.out) == "-" else console).print(escape(summary), highlight=False)
    return EXIT_OK
