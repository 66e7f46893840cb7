# Two commands: `make demo` and `make test`. Both create .venv on first use and are fast on a
# second run: each install step re-runs only when pyproject.toml or constraints.txt change.
# `make demo` installs the core package only (no TensorFlow, Ray, Hugging Face or RL extras);
# `make test` adds the dev tools and every extra.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install -q --disable-pip-version-check -c constraints.txt
CORE   := $(VENV)/.gpuscope-core
FULL   := $(VENV)/.gpuscope-full

.PHONY: demo test install install-full lint typecheck bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(CORE): pyproject.toml constraints.txt setup.py | $(VENV)/bin/python
	$(PIP) -e .
	@touch $(CORE)

# The full install is a superset of the core one, so it refreshes both stamps.
$(FULL): pyproject.toml constraints.txt setup.py | $(VENV)/bin/python
	$(PIP) -e ".[dev,tf,ray,hf,rl]"
	@touch $(CORE) $(FULL)

install: $(CORE)

install-full: $(FULL)

demo: $(CORE)
	$(VENV)/bin/gpuscope demo

test: $(FULL)
	$(PY) -m pytest -q -p no:cacheprovider

lint: $(FULL)
	$(VENV)/bin/ruff check gpuscope tests benchmarks research

typecheck: $(FULL)
	$(PY) -m mypy gpuscope

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
