"""The process's own resources as OpenTelemetry instruments (semantic conventions'
``process.*`` names), for the OTLP and console exporters: resident memory, CPU time and
open file descriptors, read from ``/proc`` and ``os.times`` at each collection.

The Prometheus exporter's registry carries prometheus_client's ``process_*`` collector
(``process_resident_memory_bytes``, ``process_cpu_seconds_total``, ``process_open_fds``),
which Prometheus dashboards expect, so these are not added there (telemetry.py).
"""

from __future__ import annotations

import os
import resource

from opentelemetry.metrics import CallbackOptions, Meter, Observation


def rss_bytes() -> int:
    """Resident set size now (``/proc/self/statm``'s second field, in pages)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):  # (not Linux: the peak is what there is)
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def observe_process(meter: Meter) -> None:
    def memory(_options: CallbackOptions) -> list[Observation]:
        return [Observation(rss_bytes())]

    def cpu(_options: CallbackOptions) -> list[Observation]:
        t = os.times()
        return [Observation(t.user, {"cpu.mode": "user"}), Observation(t.system, {"cpu.mode": "system"})]

    def fds(_options: CallbackOptions) -> list[Observation]:
        return [Observation(open_fds())]

    meter.create_observable_gauge(
        "process.memory.usage", callbacks=[memory], unit="By", description="resident memory of the process"
    )
    meter.create_observable_counter("process.cpu.time", callbacks=[cpu], unit="s", description="CPU time used")
    meter.create_observable_up_down_counter(
        "process.open_file_descriptor.count", callbacks=[fds], unit="{file_descriptor}", description="open files"
    )
