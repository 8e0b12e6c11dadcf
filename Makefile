# Two commands on a fresh Debian machine: `make run` and `make test` (see README.md).
SHELL := /bin/bash
PORT ?= 8000
VENV := .venv
PY := $(VENV)/bin/python
TEST_DATABASE_URL ?= postgis://platform:platform@127.0.0.1:5432/platform
TEST_BROKER_URL ?= redis://127.0.0.1:6379/0
PYTEST_ARGS ?=
# The slowest tests of each phase, at the end of its output (the whole run must stay well under CI's 30 minutes).
DURATIONS ?= --durations=15

.PHONY: run test test-postgis test-embedded test-postgis-phase test-embedded-phase lint format bench install system-run system-test system-services migrate clean

# `make install INSTALL_EXTRAS=` in production: without the test tools (pytest, selenium, ruff). One stamp per choice
# (`.installed-dev`, `.installed`): the other choice installs again (it adds the test tools, never removes them).
INSTALL_EXTRAS ?= [dev]
INSTALLED := $(VENV)/.installed$(subst ],,$(subst [,-,$(INSTALL_EXTRAS)))

$(INSTALLED): pyproject.toml constraints.txt
	@py=$$(scripts/find-python.sh) || { echo "No Python >= 3.11 able to load SQLite extensions (install python3 python3-venv)"; exit 1; }; \
	echo "Using $$py"; \
	[ -x $(PY) ] || $$py -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -c constraints.txt -e '.$(INSTALL_EXTRAS)'
	@touch $@

install: $(INSTALLED)

system-run:
	@scripts/system-deps.sh run

system-test: system-services
	@scripts/system-deps.sh browser

system-services:
	@scripts/system-deps.sh test

migrate: system-run install
	@mkdir -p "$${VAR_DIR:-var}"
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v 0

# The embedded default: SpatiaLite under var/, tasks in-process, no server to set up.
run: migrate
	$(PY) manage.py ensuredemoowner
	WEBHOOK_ALLOW_PRIVATE_URLS=$${WEBHOOK_ALLOW_PRIVATE_URLS:-true} DEBUG=$${DEBUG:-true} \
		PUBLIC_BASE_URL=$${PUBLIC_BASE_URL:-http://127.0.0.1:$(PORT)} $(PY) manage.py serve 127.0.0.1:$(PORT)

# The whole suite on PostGIS + Redis and the embedded subset on SpatiaLite, side by side (they share
# nothing: own database, broker, media directory); the embedded phase's output follows the PostGIS
# one. TEST_SERIAL=1 runs them one after the other.
test: system-test install
	@scripts/test-services.sh
	@scripts/test-phases.sh "$(MAKE) --no-print-directory test-postgis-phase" "$(MAKE) --no-print-directory test-embedded-phase"

# What `make test` runs in one phase only, being the same in both (the two phases share two cores):
# - the tests that start `make run`'s embedded server themselves (their own SpatiaLite, whatever DATABASE_URL says):
#   in the embedded phase;
# - the readers' tests (files in, point tables out: no database): in the PostGIS phase.
EMBEDDED_SERVER_TESTS := tests/api/test_embedded_server.py tests/api/test_embedded_restart.py \
	tests/api/test_embedded_read_timeout.py tests/magiclinks/test_logs.py
POSTGIS_PHASE_SKIP := $(addprefix --ignore=,$(EMBEDDED_SERVER_TESTS))
EMBEDDED_PHASE_SKIP := --ignore=tests/conversion/readers
PHASE_ARGS ?=

test-postgis-phase:
	@$(MAKE) --no-print-directory test-postgis PHASE_ARGS="$(POSTGIS_PHASE_SKIP)"

test-embedded-phase:
	@$(MAKE) --no-print-directory test-embedded PHASE_ARGS="$(EMBEDDED_PHASE_SKIP)"

test-postgis:
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) $(VENV)/bin/pytest $(DURATIONS) $(PHASE_ARGS) $(PYTEST_ARGS)

test-embedded:
	env -u DATABASE_URL -u CELERY_BROKER_URL VAR_DIR=$$(mktemp -d) $(VENV)/bin/pytest -m embedded $(DURATIONS) $(PHASE_ARGS) $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# (PostgreSQL and Redis as for the tests, not the browser: no benchmark drives one)
bench: system-services install
	@scripts/test-services.sh
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_BROKER_URL) $(PY) bench/run.py $(BENCH)

clean:
	rm -rf $(VENV) var .pytest_cache
