# openadapt-flow — `make demo` and `make test` each do their own set-up.
#
# Each install step prints one line; what apt-get and pip print goes to $(LOG). A step that fails names the log
# and shows its last lines. `make demo` installs only what the demo needs (Tesseract, the package); `make test`
# installs everything the suite drives (Xvnc, PostgreSQL, xrdp/FreeRDP, the real apps, headless Chromium, …).
PY        ?= python3
VENV      ?= .venv
VPY       := $(VENV)/bin/python
LOG       ?= $(VENV)/setup.log
# the demo replays a recorded fixture over loopback RFB: no X, no VNC server; its bundle checks text with OCR
DEMO_PKGS := python3-venv tesseract-ocr
# `flow demo --record` drives the real demo app (Tk) on a private Xvnc, for the viewer you bring
RECORD_PKGS := $(DEMO_PKGS) tigervnc-standalone-server python3-tk
# everything the test suite runs (tests/unit/test_system_packages.py checks every program used comes from these)
APT_PKGS := make python3-venv tesseract-ocr xvfb tigervnc-standalone-server tigervnc-tools tigervnc-viewer python3-tk xdotool x11-xserver-utils fonts-dejavu-core postgresql xrdp freerdp2-x11 openssl sqlitebrowser galculator mousepad chromium chromium-driver x11-apps xfonts-base nedit zenity featherpad python3-pyqt6 openjdk-17-jre openjdk-17-jdk-headless poedit xfe flpsed fluid libreoffice-calc gnome-text-editor
# the test suite drives every extra (console, phone lane, PostgreSQL store, fleet); the demo installs none of them
TEST_EXTRAS ?= dev,console,phone,postgres,fleet
DEMO_STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-$(TEST_EXTRAS)

# `$(STEP) "what" command args…`: one line for the step; its output to $(LOG); on failure the log's tail.
STEP = sh -c 'what="$$1"; shift; mkdir -p "$$(dirname "$(LOG)")"; printf "%s ... " "$$what"; \
  if "$$@" >>"$(LOG)" 2>&1; then echo ok; else rc=$$?; echo "failed (exit $$rc)"; \
  echo "  last lines of $(LOG):"; tail -n 20 "$(LOG)" | sed "s/^/  | /"; exit $$rc; fi' step

# `$(call apt,PACKAGES,LABEL)`: install the missing ones with apt-get when root; otherwise print the command.
define apt
	@missing=""; \
	for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then echo "system packages for $(2): all $(words $(1)) present"; \
	elif [ "$$(id -u)" = "0" ]; then \
	  $(STEP) "system packages for $(2): apt-get update" apt-get update && \
	  $(STEP) "system packages for $(2): installing$$missing" \
	    env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	else echo "missing system packages for $(2):$$missing"; echo "run: sudo apt-get install -y$$missing"; exit 1; fi
endef

.PHONY: setup demo-setup record-setup system-deps demo-system-deps venv bytecode demo demo-record lint format test unit e2e realapps smoke bench soak clean

setup: system-deps $(TEST_STAMP)

demo-setup: demo-system-deps $(DEMO_STAMP)

system-deps:
	$(call apt,$(APT_PKGS),the tests)

demo-system-deps:
	$(call apt,$(DEMO_PKGS),the demo)

record-setup: $(DEMO_STAMP)
	$(call apt,$(RECORD_PKGS),the recording tutorial)

$(DEMO_STAMP): pyproject.toml
	@test -x $(VPY) || $(STEP) "venv: creating $(VENV)" $(PY) -m venv $(VENV)
	@$(STEP) "venv: upgrading pip" $(VPY) -m pip install --upgrade pip
	@$(STEP) "venv: installing openadapt-flow (editable)" $(VPY) -m pip install -e .
	@touch $@

$(TEST_STAMP): $(DEMO_STAMP)
	@$(STEP) "venv: installing the test tools ($(TEST_EXTRAS) extras)" $(VPY) -m pip install -e '.[$(TEST_EXTRAS)]'
	@touch $@

venv: $(TEST_STAMP)

# The suite starts the CLI as a new process thousands of times; where PYTHONDONTWRITEBYTECODE is set (it is on the
# machines we test on) each one compiled every module it imports from source again: ~0.5 CPU s a process. compileall
# writes the .pyc files whatever that variable says (only stale ones: ~1 s when nothing changed); measured on
# tests/unit/cli + test_durable_cli.py with -n 2: 76 s -> 48 s.
bytecode: setup
	@$(STEP) "bytecode: compiling openadapt_flow, tests, scripts" $(VPY) -m compileall -q -j 0 openadapt_flow tests scripts

demo: demo-setup
	@$(VENV)/bin/flow demo

# the recording tutorial (docs/record.md): you record the demo app through your VNC viewer, it compiles and replays
demo-record: demo-setup record-setup
	@$(VENV)/bin/flow demo --record

# each test file on one worker (a file's module-scoped recordings are made once); every e2e server (Xvnc, PostgreSQL,
# the apps) is private to its test, on a free display and port. Three workers for the rest on two cores: most of its
# time is waiting on servers, apps and subprocesses (measured: 989 s at -n 2, 811 s at -n 3); the crash tests are
# CPU-bound, two workers. The crash tests go first, in workers of their own: they fork the CLI from the test process, which must not have run a VNC client itself (a
# forked child inherits the RFB reactor's "running" without its thread; the kit then spawns, much slower).

# the lint step: the import contracts, imports sorted and the code formatted (`make format` fixes the last two)
lint: $(TEST_STAMP)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check openadapt_flow tests scripts
	$(VENV)/bin/ruff format --check openadapt_flow tests scripts

format: $(TEST_STAMP)
	$(VENV)/bin/ruff check --fix openadapt_flow tests scripts
	$(VENV)/bin/ruff format openadapt_flow tests scripts

test: bytecode lint
	$(VPY) -m pytest -q -n 2 --dist loadfile --durations=10 tests/crash
	$(VPY) -m pytest -q -n 3 --dist loadfile --durations=25 --ignore=tests/crash -m "not corpus_full"

unit: bytecode
	$(VPY) -m pytest -q tests/unit

e2e: bytecode
	$(VPY) -m pytest -q tests/e2e

# the whole real-app corpus (tests/realapps: 15 apps, 13 toolkits), every app recorded once and replayed with other
# values, moved, dark, at scale 1.25 and from a dirty start; prints the figure per app and in total (~3 min, 3 workers)
realapps: bytecode
	$(VPY) -m pytest -q -n 3 --dist loadfile tests/realapps

# CI smoke: the recorded fixtures (fixtures/) served over real RFB on loopback, replayed by `flow replay --url vnc://…`
smoke: bytecode
	$(VPY) -m pytest -q tests/e2e/test_fixture_smoke.py

# make bench BENCH_ARGS='--skip fleet --fleet-drain 100': options as in `python -m openadapt_flow.bench --help`; its
# `weight` part builds a demo venv from this checkout in bench/.work (pip may fetch from the package index) and prints
# its install size and `flow --help`'s wall time in it
bench: setup
	$(VPY) -m openadapt_flow.bench $(BENCH_ARGS)

# issue 34's soak: 8 runs on 2 fleet workers, PostgreSQL restarted twice mid-drain (fast, then immediate); one figure
# line: every run terminal or paused, no worker gone, 0 double rows, 0 wrong rows (~1 min; not part of `make test`,
# whose tests/attack/test_pg_restart.py restarts PostgreSQL under a writer and under workers)
soak: setup
	$(VPY) -m openadapt_flow.bench.pgsoak $(SOAK_ARGS)

# the runs root stays (runs/README.md); the runs in it go
clean:
	rm -rf $(VENV) .pytest_cache
	find runs -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +
