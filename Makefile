# The two set-up commands of the README: `make demo` (the main job) and `make test`.
# Each creates .venv if missing and installs the project with the extras it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TEST_EXTRAS ?= dev,bench,gp,nas,optuna,ray,torch,docs
DOCS_EXTRAS ?= docs
DEMO_EXTRAS ?= bench,gp,optuna,torch,viz
PYTEST_ARGS ?=

.PHONY: demo quickstart simulate test test-slow fuzz lint bench docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-test-$(TEST_EXTRAS): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[$(TEST_EXTRAS)]"
	touch $@

$(VENV)/.installed-demo-$(DEMO_EXTRAS): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[$(DEMO_EXTRAS)]"
	touch $@

$(VENV)/.installed-docs-$(DOCS_EXTRAS): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[$(DOCS_EXTRAS)]"
	touch $@

## demo: the main job (neural-architecture search on PyTorch with Optuna, MFSampler + MFPruner, SQLite; under a minute once installed)
demo: $(VENV)/.installed-demo-$(DEMO_EXTRAS)
	$(BIN)/python -m examples.nas.optuna_nas

## quickstart: the former main job (a linear classifier on scikit-learn's digits, MFSampler + MFPruner)
quickstart: $(VENV)/.installed-demo-$(DEMO_EXTRAS)
	$(BIN)/python examples/optuna_quickstart.py

## simulate: the simulated best-arm identification comparing the policies (the former main job)
simulate: $(VENV)/.installed-demo-$(DEMO_EXTRAS)
	$(BIN)/python examples/simulated_bai.py

## test: lint + format check + the docs build (strict, ~15 s) + the fast test suite (< 10 min); long tests are `slow`
test: $(VENV)/.installed-test-$(TEST_EXTRAS)
	$(BIN)/python -m ruff check mf_sched integrations tests benchmarks examples scripts
	$(BIN)/python -m ruff format --check --quiet mf_sched integrations tests benchmarks examples scripts
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	MF_SCHED_DOCS_SITE=build/site $(BIN)/python -m pytest $(PYTEST_ARGS)

## test-slow: only the tests marked slow
test-slow: $(VENV)/.installed-test-$(TEST_EXTRAS)
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

## fuzz: the property and fuzz tests with fresh random draws, FUZZ_RUNS times (the default run repeats fixed draws)
FUZZ_RUNS ?= 5
fuzz: $(VENV)/.installed-test-$(TEST_EXTRAS)
	for i in $$(seq $(FUZZ_RUNS)); do \
	  HYPOTHESIS_PROFILE=explore $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_fuzz.py \
	    tests/test_properties.py tests/test_race.py tests/policies/test_mf_ucb.py $(PYTEST_ARGS) || exit 1; \
	done

lint: $(VENV)/.installed-test-$(TEST_EXTRAS)
	$(BIN)/python -m ruff check mf_sched integrations tests benchmarks examples scripts
	$(BIN)/python -m ruff format --check mf_sched integrations tests benchmarks examples

## bench: per-pull overhead benchmark (prints a table, writes benchmarks/results/overhead.json)
bench: $(VENV)/.installed-test-$(TEST_EXTRAS)
	$(BIN)/python -m benchmarks.overhead

## docs: the manual (docs/*.md + API pages from the docstrings) into build/site; any warning fails the build
docs: $(VENV)/.installed-docs-$(DOCS_EXTRAS)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) build dist *.egg-info results .pytest_cache .hypothesis
