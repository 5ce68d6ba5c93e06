# Set-up is two commands: `make run` (the playground on the demo store) and `make test`.
# Each creates the project-local environment .venv on first use (torch's CPU build first, then
# requirements.txt, then the embedding model exported for ONNX Runtime) and reuses it afterwards; it is rebuilt
# only when requirements.txt changes.
.PHONY: run test layers e2e chat lint bench serve venv clean-venv

PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH := torch==2.13.0
# Where torch's CPU-only wheels live; a plain `pip install torch` on Linux pulls several GB of GPU ones.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

# `make run PORT=8600` serves the playground on another port (Streamlit's 8501 otherwise); STREAMLIT_ARGS adds
# options (--server.address 0.0.0.0, --server.headless true).
run: $(VENV)/.model
	$(PY) -m streamlit run app.py $(if $(filter command line environment,$(origin PORT)),--server.port $(PORT)) $(STREAMLIT_ARGS)

test: $(VENV)/.model
	@scripts/need-chromium
	@scripts/need-postgres
	$(MAKE) --no-print-directory layers
	$(PY) -m pytest

# The parts of core/ import only the parts below them (.importlinter; docs/architecture.md).
layers: $(VENV)/.ready
	$(VENV)/bin/lint-imports --no-cache

e2e: $(VENV)/.model
	@scripts/need-chromium
	$(PY) -m pytest tests/ui

chat: $(VENV)/.model
	$(PY) -m core chat --trace

# The HTTP API on the demo workspace: WORKERS processes on PORT (SOP_STATE_URL / SOP_API_TOKEN from the environment).
WORKERS ?= 2
PORT ?= 8000
serve: $(VENV)/.model
	$(PY) -m core serve --workers $(WORKERS) --port $(PORT)

lint: $(VENV)/.model
	$(PY) -m core lint

bench: $(VENV)/.model
	$(PY) -m core bench

venv: $(VENV)/.model

$(VENV)/.ready: requirements.txt
	@scripts/make-venv "$(PYTHON)" "$(VENV)" "$(TORCH)" "$(TORCH_INDEX)"
	@touch $@

# The embedding model exported for ONNX Runtime at install time, into the environment (share/sop-playground/models):
# a first run, even with an empty .state/, starts without exporting it (torch and transformers load only for this).
$(VENV)/.model: $(VENV)/.ready
	@$(PY) -m core models || echo "make: note: the embedding model was not exported now; its first use exports it (or runs it on torch)." >&2
	@touch $@

clean-venv:
	rm -rf $(VENV)
