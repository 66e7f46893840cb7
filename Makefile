# Two commands: `make demo` and `make test`. Both create .venv on first use and are
# fast on a second run (the install step re-runs only when pyproject.toml or constraints.txt change).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.gpuscope-installed

.PHONY: demo test install lint bench clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[dev,tf,ray,hf,rl]"
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/gpuscope demo

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(VENV)/bin/ruff check gpuscope tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
