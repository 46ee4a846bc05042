# Quire: `make run` (demo server) and `make test` (the whole suite) set everything up.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
NODE22 := .node22
PORT ?= 8000
DATA ?= ../shared/data/scifact
PYTHON_VERSION := $(shell cat .python-version)
BOOTSTRAP_PYTHON := $(firstword $(wildcard $(HOME)/.pyenv/versions/$(PYTHON_VERSION)/bin/python) $(shell command -v python$(basename $(PYTHON_VERSION)) 2>/dev/null) $(shell command -v python3 2>/dev/null))

.PHONY: install run test chromium tesseract bench bench-scifact bench-scale bench-ingest bench-ocr bench-answers lint node

install: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-nodeps.txt requirements-dev.txt
	test -x $(PY) || $(BOOTSTRAP_PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -r requirements-nodeps.txt
	touch $@

node: $(NODE22)/node_modules/.bin/node

$(NODE22)/node_modules/.bin/node:
	mkdir -p $(NODE22)
	cd $(NODE22) && (test -f package.json || echo '{"name": "quire-node22", "private": true}' > package.json) && npm install --no-audit --no-fund node@22 >/dev/null

run: install tesseract
	$(PY) manage.py migrate --noinput
	$(PY) manage.py runquire --demo --port $(PORT)

test: install node chromium tesseract
	$(PY) -m pytest $(PYTEST_ARGS)

# The browser tests drive Debian's Chromium (Playwright never downloads one).
chromium:
	@test -x /usr/bin/chromium || { \
		SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
		$$SUDO apt-get update -q && $$SUDO apt-get install -y -q chromium; }

# OCR reads scanned pages with Debian's Tesseract and the language data named in
# OCR_LANGUAGES (Tesseract codes joined by "+", e.g. eng+deu+fra); osd is its
# orientation model.
OCR_LANGUAGES ?= eng
tesseract:
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

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

bench: install
	$(PY) benchmarks/bench.py --data $(DATA)

bench-scifact: install
	$(PY) benchmarks/scifact.py --data $(DATA)

bench-scale: install
	$(PY) benchmarks/scale.py

bench-ingest: install tesseract
	$(PY) benchmarks/ingest.py

bench-ocr: install tesseract
	$(PY) benchmarks/ocr.py

bench-answers: install
	$(PY) benchmarks/answers.py

.PHONY: bench-load bench-faults bench-abuse
bench-load: install
	$(PY) benchmarks/load.py

bench-faults: install
	$(PY) benchmarks/faults/worker_kill.py
	$(PY) benchmarks/faults/postgres_restart.py

bench-abuse: install
	$(PY) benchmarks/abuse.py
