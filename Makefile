# ledgerlet: `make run` runs an example on the embedded default; `make check` is the quick tier
# a developer runs every few minutes; `make test` runs every check (CI runs it: .ci/run).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OUT := out

.PHONY: run check test lint typecheck imports contracts browser promtool bench golden up compose-test clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

## run: a memory-pressure scenario, then the fluentd DiskPressure post-mortem, on the embedded default.
## Both are stored where every read command looks by default (LEDGERLET_STORE, else ledgerlet.db
## here), the fluentd incident last: it is the newest run, the one `ledgerlet explain/replay/report`
## read when no --run is given, as the README's post-mortem section does.
run: $(STAMP)
	mkdir -p $(OUT)
	$(BIN)/ledgerlet run examples/memory-pressure.yaml --decisions $(OUT)/memory-pressure.jsonl
	$(BIN)/ledgerlet run examples/disk-pressure-fluentd.yaml --decisions $(OUT)/disk-pressure-fluentd.jsonl
	@echo "next: . $(BIN)/activate (puts ledgerlet on PATH), then the README's 'After an incident': ledgerlet runs"

## check: lint, format, types, import contracts, schema drift, then every test but the slow,
## distributed and compose ones (pytest markers, pyproject.toml): under 2 minutes on a 2-core
## machine (README, "Tests")
TEST_WORKERS ?= 2
QUICK := not slow and not distributed and not compose
check: lint typecheck imports contracts
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile -m "$(QUICK)"

## test: lint, format, types, import contracts, schema drift, then the whole test suite
## (in TEST_WORKERS processes, each test file whole in one: its module fixtures, such as
## the compose stack, are made once; 2 fits this project's 2-core machine), and the
## slowest tests named at the end (--durations)
test: lint typecheck imports contracts browser promtool
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=20 --durations-min=1.0

## golden: write the frozen decision logs (tests/golden) again, after a change meant to alter decisions
golden: $(STAMP)
	$(BIN)/python -m tests.golden.regenerate

## browser: Debian's Chromium, which the HTML report's test renders in (installed once, as root)
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	  || { echo "install Debian's chromium package (the report test renders in it)"; exit 1; }

## promtool: Debian's prometheus package (promtool and the server), which the OpenMetrics export's test backfills and queries with
promtool:
	@command -v promtool >/dev/null && command -v prometheus >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } \
	  || { echo "install Debian's prometheus package (the export test backfills with its promtool)"; exit 1; }

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

imports: $(STAMP)
	$(BIN)/lint-imports --no-cache

contracts: $(STAMP)
	$(BIN)/ledgerlet contracts --check

## bench: store appends/s, one eviction decision, the embedded run's rate, keeping up with 5,000 nodes, end to end on Kafka + PostgreSQL, the per-node services split 1/2/4 ways, members moving between a pool's processes, restarts with and without snapshots, post-mortems on 10M events, scheduling and shutdown, the fleet, the fleet table (every row of the array-speed targets, both usage shapes)
bench: $(STAMP)
	mkdir -p $(OUT)
	$(BIN)/python bench/bench_store.py --out $(OUT)
	$(BIN)/python bench/bench_decision.py
	$(BIN)/python bench/bench_run.py --out $(OUT)
	$(BIN)/python bench/bench_keepup.py --out $(OUT)
	$(BIN)/python bench/bench_distributed.py --out $(OUT)
	$(BIN)/python bench/bench_members.py --out $(OUT)
	$(BIN)/python bench/bench_pool.py --out $(OUT)
	$(BIN)/python bench/bench_restart.py --out $(OUT)
	$(BIN)/python bench/bench_snapshot.py --out $(OUT)
	$(BIN)/python bench/bench_postmortem.py --out $(OUT)
	$(BIN)/python bench/bench_scheduling.py --out $(OUT)
	$(BIN)/python bench/bench_fleet.py --out $(OUT)
	$(BIN)/python bench/bench_fleet_table.py --out $(OUT)

## up: the local stack (needs Docker with Compose v2 and internet access for the public images)
up:
	mkdir -p $(OUT)
	docker compose up --build

## compose-test: compose.yaml run for real here: a Docker engine started by hand (deploy/compose-test/engine.sh),
## stand-ins for the public images, the example fed in, faults; skipped with the reason where no engine can start.
## `make test` runs it too.
compose-test: $(STAMP)
	$(BIN)/pytest -q tests/compose

## clean: the decision logs and caches (never a store: ledgerlet.db keeps its runs; delete it yourself)
clean:
	rm -rf $(OUT) .pytest_cache .mypy_cache .ruff_cache
