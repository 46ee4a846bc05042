# Quire: `make run` (demo server) and `make test` (the whole suite) set everything
# up; `make help` lists every target.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
NODE22 := .node22
PORT ?= 8000
DATA ?= ../shared/data/scifact
PYTHON_VERSION := $(shell cat .python-version)
BOOTSTRAP_PYTHON := $(firstword $(wildcard $(HOME)/.pyenv/versions/$(PYTHON_VERSION)/bin/python) $(shell command -v python$(basename $(PYTHON_VERSION)) 2>/dev/null) $(shell command -v python3 2>/dev/null))

# Settings refuse to start with DEBUG off and no DJANGO_SECRET_KEY. These targets
# run on this machine with DEBUG off, as a deployment does, and sign with a
# development key kept in the data folder; a deployment sets its own key.
ifndef DJANGO_SECRET_KEY
DEV_DATA_DIR := $(or $(QUIRE_DATA_DIR),.data)
DJANGO_SECRET_KEY := $(shell mkdir -p $(DEV_DATA_DIR) && { test -s $(DEV_DATA_DIR)/secret_key || head -c 48 /dev/urandom | base64 -w0 > $(DEV_DATA_DIR)/secret_key; } && cat $(DEV_DATA_DIR)/secret_key)
export DJANGO_SECRET_KEY
endif

.DEFAULT_GOAL := help
.PHONY: help install run test test-fast format lint check check-migrations check-deploy chromium tesseract nginx node bench bench-scifact bench-scale bench-ingest bench-ocr bench-answers bench-load bench-faults bench-abuse bench-sync bench-halfvec

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/\1\t\2/' | expand -t 18

install: $(VENV)/.installed ## create .venv and install the pinned requirements

$(VENV)/.installed: requirements.txt requirements-nodeps.txt requirements-dev.txt
	test -x $(PY) || $(BOOTSTRAP_PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -r requirements-nodeps.txt
	touch $@

node: $(NODE22)/node_modules/.bin/node ## install Node 22 into .node22/ (Inspector, conformance suite)

$(NODE22)/node_modules/.bin/node:
	mkdir -p $(NODE22)
	cd $(NODE22) && (test -f package.json || echo '{"name": "quire-node22", "private": true}' > package.json) && npm install --no-audit --no-fund node@22 >/dev/null

run: install tesseract ## start the demo server on http://127.0.0.1:8000 (PORT= for another)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py runquire --demo --port $(PORT)

test: install node chromium tesseract nginx ## run the whole test suite (PYTEST_ARGS= for a part)
	$(PY) -m pytest $(PYTEST_ARGS)

# The inner loop: no browser (tests_browser/), no Node clients (Inspector,
# conformance suite, live SDK clients, the client docs' snippets), no OCR or
# shared-corpus ingestion, nothing marked slow.
FAST_SKIP := --ignore=tests_browser \
	--ignore=mcp_endpoint/tests/test_live_clients.py \
	--ignore=mcp_endpoint/tests/test_live_conformance.py \
	--ignore=mcp_endpoint/tests/test_client_docs.py \
	--ignore=documents/tests/test_reader.py \
	--ignore=documents/tests/test_ingestion_pdfs.py \
	--ignore=documents/tests/test_ingestion_office.py \
	-m "not slow"
test-fast: install ## the suite without browser, Node, OCR and slow tests
	$(PY) -m pytest $(FAST_SKIP) $(PYTEST_ARGS)

format: install ## rewrite the code in ruff's format and apply ruff's safe fixes
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

check: lint check-migrations check-deploy ## lint, missing migrations, Django's deployment checks

check-migrations: ## fail when a model change has no migration
	$(PY) manage.py makemigrations --check --dry-run

# The environment a deployment behind a TLS proxy sets (docs/production.md), with
# a throwaway key: every warning of `check --deploy` then fails the target.
check-deploy: ## Django's deployment checks, with production settings
	DJANGO_DEBUG=false \
	DJANGO_SECRET_KEY="$$(head -c 48 /dev/urandom | base64 -w0)" \
	DJANGO_ALLOWED_HOSTS=quire.example.org \
	DJANGO_CSRF_TRUSTED_ORIGINS=https://quire.example.org \
	MCP_ALLOWED_ORIGINS=https://quire.example.org \
	PROXY_TRUSTED_HOPS=1 \
	PROXY_TRUSTED_ADDRESSES=127.0.0.1 \
	DJANGO_BEHIND_TLS_PROXY=true \
	DJANGO_SECURE_COOKIES=true \
	DJANGO_SECURE_SSL_REDIRECT=true \
	DJANGO_HSTS_SECONDS=31536000 \
	$(PY) manage.py check --deploy --fail-level WARNING

# The browser tests drive Debian's Chromium (Playwright never downloads one).
chromium: ## install Debian's Chromium when /usr/bin/chromium is missing
	@test -x /usr/bin/chromium || { \
		SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
		$$SUDO apt-get update -q && $$SUDO apt-get install -y -q chromium; }

# The reverse-proxy test (mcp_endpoint/tests/test_proxy.py) runs Debian's nginx
# with deploy/nginx/quire.conf, the site file an operator installs.
nginx: ## install Debian's nginx when /usr/sbin/nginx is missing
	@test -x /usr/sbin/nginx || { \
		SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
		$$SUDO apt-get update -q && $$SUDO apt-get install -y -q nginx; }

# OCR reads scanned pages with Debian's Tesseract and the language data named in
# OCR_LANGUAGES (Tesseract codes joined by "+", e.g. eng+deu+fra); osd is its
# orientation model.
OCR_LANGUAGES ?= eng
tesseract: ## install Tesseract and the OCR_LANGUAGES data when missing
	@missing=""; \
	command -v tesseract >/dev/null || missing="tesseract-ocr"; \
	installed=$$(tesseract --list-langs 2>/dev/null | tail -n +2); \
	for lang in osd $$(echo "$(OCR_LANGUAGES)" | tr '+' ' '); do \
		echo "$$installed" | grep -qx "$$lang" || missing="$$missing tesseract-ocr-$$lang"; \
	done; \
	if [ -n "$$missing" ]; then \
		SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
		$$SUDO apt-get update -q && $$SUDO apt-get install -y -q $$missing; \
	fi

lint: install ## ruff check and ruff format --check
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

bench: install ## Quire beside its peers: MCP overhead, LangChain PGVector, memory
	$(PY) benchmarks/bench.py --data $(DATA)

bench-scifact: install ## SciFact retrieval quality and latency (DATA=)
	$(PY) benchmarks/scifact.py --data $(DATA)

bench-scale: install ## retrieval latency over 1,000,000 synthetic chunks
	$(PY) benchmarks/scale.py

bench-ingest: install tesseract ## ingestion throughput per format, OCR, limits
	$(PY) benchmarks/ingest.py

bench-ocr: install tesseract ## OCR error rates against the ground truth
	$(PY) benchmarks/ocr.py

bench-answers: install ## rag_search answer quality and latency
	$(PY) benchmarks/answers.py

bench-load: install ## 64 MCP clients against 4 uvicorn workers
	$(PY) benchmarks/load.py

bench-faults: install ## a killed worker and a PostgreSQL restart
	$(PY) benchmarks/faults/worker_kill.py
	$(PY) benchmarks/faults/postgres_restart.py

bench-abuse: install ## the trust review's attacks against a live server
	$(PY) benchmarks/abuse.py

bench-sync: install ## syncing a 1,000-object S3 bucket and a folder
	$(PY) benchmarks/sync.py

bench-halfvec: install ## SciFact quality with vectors as halfvec (DATA=)
	$(PY) benchmarks/halfvec.py --data $(DATA)
