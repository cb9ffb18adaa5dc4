# Two entry points that work on a fresh machine (see README):
#   make demo  - set up, then run the bundled demo notebook offline
#   make test  - set up, then lint and run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

lint: setup
	$(BIN)/ruff check jupyter_memory tests benchmarks

test: lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

demo: setup
	$(BIN)/python -m jupyter_memory.demo

clean:
	rm -rf $(VENV) build dist
