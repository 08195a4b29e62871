# openadapt-flow — `make demo` and `make test` each do their own set-up.
PY      ?= python3
VENV    ?= .venv
VPY     := $(VENV)/bin/python
APT_PKGS := tesseract-ocr xvfb tigervnc-standalone-server tigervnc-tools xdotool x11-xserver-utils fonts-dejavu-core postgresql xrdp freerdp2-x11 openssl sqlitebrowser galculator mousepad
STAMP   := $(VENV)/.installed

.PHONY: setup system-deps venv demo test unit e2e realapps smoke bench clean

setup: system-deps $(STAMP)

# Install missing system packages with apt-get when root; otherwise print the command.
system-deps:
	@missing=""; \
	for p in $(APT_PKGS); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then echo "system packages: all present"; \
	elif [ "$$(id -u)" = "0" ]; then echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "missing system packages:$$missing"; echo "run: sudo apt-get install -y$$missing"; exit 1; fi

$(STAMP): pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: setup
	$(VENV)/bin/flow demo

# two workers, each test file on one of them (a file's module-scoped recordings are made once); every e2e server
# (Xvnc, PostgreSQL, the apps) is private to its test, on a free display and port. The crash tests go first, in
# workers of their own: they fork the CLI from the test process, which must not have run a VNC client itself (a
# forked child inherits the RFB reactor's "running" without its thread; the kit then spawns, much slower).
test: setup
	$(VENV)/bin/lint-imports
	$(VPY) -m pytest -q -n 2 --dist loadfile tests/crash
	$(VPY) -m pytest -q -n 2 --dist loadfile --ignore=tests/crash

unit: setup
	$(VPY) -m pytest -q tests/unit

e2e: setup
	$(VPY) -m pytest -q tests/e2e

# the real-app suite alone: sqlitebrowser, galculator, mousepad recorded and replayed under drift (~6 min)
realapps: setup
	$(VPY) -m pytest -q tests/realapps

# CI smoke: the recorded demo fixtures served over real RFB on loopback, replayed by `flow replay --url vnc://…`
smoke: setup
	$(VPY) -m pytest -q tests/e2e/test_fixture_smoke.py

bench: setup
	$(VPY) -m openadapt_flow.bench

clean:
	rm -rf $(VENV) runs .pytest_cache
