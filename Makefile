# Everything runs inside a local virtual environment (.venv), created on first use and
# reused afterwards (rebuilt when pyproject.toml changes).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
# Two set-ups sized to the job: `verify` needs the package alone (numpy, scipy, sympy, numba,
# matplotlib, typer, rich); the tests also need pytest, Dask, jsonschema, pdoc and the real-model
# extra (torch, transformers) their validate tests use.
CORE    = $(VENV)/.installed-core
STAMP   = $(VENV)/.installed-stamp
DOCS    = $(VENV)/.installed-docs

.PHONY: verify verify-quick test test-slow mutants bench figs docs apidocs clean

$(CORE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(CORE)

# the API reference needs pdoc only: no torch (the validate extra)
$(DOCS): $(CORE)
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $(DOCS)

$(STAMP): $(CORE)
	$(BIN)/python -m pip install --quiet -e '.[test,validate]'
	touch $(STAMP)

## set up (the package alone), then run every registered claim check and write reports/verify.{md,html,json}
verify: $(CORE)
	$(BIN)/spectheory verify $(ARGS)

verify-quick: $(CORE)
	$(BIN)/spectheory verify --quick $(ARGS)

## set up, then run the fast test tier (what CI runs): two worker processes (pytest-xdist), a test
## file's tests in one worker so its module fixtures are built once
test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" -n 2 --dist loadfile $(ARGS)

## slow statistical sweeps
test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow $(ARGS)

## seed every bug listed in tests/mutants/*.py into a temporary copy; none may survive
mutants: $(STAMP)
	$(BIN)/python tests/mutation/run_mutants.py $(ARGS)

## regenerate what the docs quote: the claim catalog (docs/claims.md) and the README's outputs
## (reruns the default verify, about a minute)
docs: $(STAMP)
	$(BIN)/python -m spectheory.sims.catalog
	$(BIN)/python -m spectheory.sims.readme_outputs

## API reference pages from the docstrings (docs/api/, not committed; tests/test_api_docs.py builds them);
## sets up pdoc alone, without torch
apidocs: $(DOCS)
	$(BIN)/python -m spectheory.cli.apidocs docs/api

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_sd_throughput.py $(ARGS)

figs: $(STAMP)
	for f in paper_figs/fig_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) reports paper_figs/out .pytest_cache
