#!/usr/bin/env bash
# `make check-core` (issue 26): the core install alone works, in a fresh virtual environment.
#
#   1. `pip install -c constraints.txt .` of a copy of this tree: no extra, not editable;
#   2. `import torch` (and sentence_transformers, litellm) fails: the core pulls none of them;
#   3. the score-file starter (`audit init --design score_file`) compiles, runs signed with fresh keys
#      (`audit keygen --key-dir`) and `audit verify` exits 0;
#   4. the template starter's `audit validate` exits 2 with the embedding extra's hint, no traceback.
#
# Each step prints its seconds; the whole must stay under 3 minutes (the CI allowance).
# PY names the interpreter (default python3). The temporary folder is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
PY=${PY:-python3}
export LITELLM_LOCAL_MODEL_COST_MAP=True HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONHASHSEED=0 COLUMNS=200

HINT="systems[0].kind: the embedding matcher needs the embedding extra: pip install 'audit-compiler[embedding]'"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/check-core.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
VENV="$WORK/venv"
BIN="$VENV/bin"

t_all=$SECONDS
t_step=$SECONDS
step() {  # step WHAT: print what the step does and start its clock
  echo "check-core: $1"
  t_step=$SECONDS
}
done_step() {  # print the step's seconds
  echo "check-core:   ok ($(( SECONDS - t_step )) s)"
}
fail() {
  echo "check-core: FAIL: $*" >&2
  exit 1
}

step "fresh venv, pip install -c constraints.txt . (core only, not editable)"
# a copy of the sources, so the build writes nothing into the working tree (build/, *.egg-info)
mkdir -p "$WORK/src"
tar -c --exclude=__pycache__ pyproject.toml README.md constraints.txt compiler runtime | tar -x -C "$WORK/src"
"$PY" -m venv "$VENV"
# --no-compile: byte-compiling every dependency took half of this step; the commands below compile
# only the modules they import
"$BIN/pip" install -q --no-compile -c "$REPO/constraints.txt" "$WORK/src"
done_step

step "the core pulls no extra: import torch / sentence_transformers / litellm fail"
for mod in torch sentence_transformers litellm; do
  if "$BIN/python" -c "import $mod" >/dev/null 2>&1; then
    fail "'import $mod' succeeds in the core install; it belongs to an extra"
  fi
done
done_step

step "score-file starter: audit init, keygen, compile, execute (signed), verify"
cd "$WORK"
"$BIN/audit" init --design score_file "$WORK/score_file"
"$BIN/audit" keygen --key-dir "$WORK/keys" --signer "check-core (self-signed)" >/dev/null
"$BIN/audit" compile "$WORK/score_file/audit.yaml" --key-dir "$WORK/keys"
"$BIN/audit" execute "$WORK/score_file/audit.yaml" --key-dir "$WORK/keys" --out "$WORK/reports" --quiet
RUN_DIR=$(ls -d "$WORK"/reports/*/*/ | tail -n 1)
[ -f "$RUN_DIR/manifest.dsse.json" ] || fail "the run $RUN_DIR is not signed (no manifest.dsse.json)"
"$BIN/audit" verify "$RUN_DIR" --key-dir "$WORK/keys" || fail "audit verify $RUN_DIR exited $?"
done_step

step "template starter: audit validate exits 2 with the embedding extra's hint"
"$BIN/audit" init --design template "$WORK/template"
set +e
out=$("$BIN/audit" validate "$WORK/template/audit.yaml" 2>&1)
rc=$?
set -e
echo "$out"
[ "$rc" -eq 2 ] || fail "audit validate of the template starter exited $rc, expected 2"
case "$out" in
  *Traceback*) fail "audit validate printed a traceback" ;;
esac
grep -qF "$HINT" <<<"$out" || fail "audit validate did not print the hint: $HINT"
[ ! -e "$WORK/template/audit.lock.json" ] || fail "a lock was written for the refused spec"
done_step

echo "check-core: passed in $(( SECONDS - t_all )) s"
