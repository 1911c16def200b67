#!/usr/bin/env bash
# The test command: installs what the tests need where it is missing (Debian's pytest and
# mypy for /usr/bin/python3, bubblewrap for the sandbox, chromium, Ruff's engine, postgresql
# for the store's second engine), then runs the checks CI runs, with every test that needs
# one of them required to run.
# Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

need_python_tool() { # module package
  if ! /usr/bin/python3 -c "import $1" >/dev/null 2>&1; then
    missing+=("$2")
  fi
}
missing=()
need_python_tool pytest python3-pytest
need_python_tool mypy python3-mypy
# Environment recipes (pipeline/envsetup): a virtualenv with pip made offline, and an
# editable install built without an index.
need_python_tool ensurepip python3-venv
need_python_tool pip python3-pip
need_python_tool setuptools python3-setuptools
need_python_tool wheel python3-wheel
# A recipe's setuptools-scm build without .git (pipeline/envsetup's diagnosis of it).
need_python_tool setuptools_scm python3-setuptools-scm
# The validators' sandbox (pipeline/sandbox) and its tests need bubblewrap.
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# Headless Chromium renders the status page in daemon/status's test.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} (Debian packages the tests need)"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v git >/dev/null || { echo "git is required" >&2; exit 1; }
# Tests that need a tool this script installs fail instead of skipping (scripts/testenv):
# CI must not pass by skipping. Only a bwrap that cannot create namespaces here, which no
# package fixes, lets the sandbox tests skip.
export TICKETD_REQUIRE_TOOLS=1
if ! bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-net --unshare-ipc --die-with-parent --new-session true; then
  echo "bwrap is installed but cannot create namespaces here; the sandbox tests will skip (run as root, or allow unprivileged user namespaces)" >&2
  export TICKETD_REQUIRE_TOOLS=pytest,mypy,ruff,chromium,postgres,venv
fi

# Ruff's engine for the ruff checks' integration tests, where no ruff binary exists: the npm
# packages of scripts/ruff-wasm/package-lock.json (the engine, a TOML parser for the
# project's configuration, gitignore matching) in the shim's own folder, where
# scripts/ruff-wasm/ruff.js looks first (the checks' sandbox has a private, empty $HOME, so
# a cache under ~ is not visible to it). The shim's own tests (scripts/ruff-wasm/shim_test.go) need them
# even where a ruff binary exists.
ruff_wasm_dir="scripts/ruff-wasm"
for pkg in @astral-sh/ruff-wasm-nodejs smol-toml ignore; do
  if [ ! -f "$ruff_wasm_dir/node_modules/$pkg/package.json" ]; then
    command -v npm >/dev/null || { echo "npm is required to install Ruff's engine for scripts/ruff-wasm" >&2; exit 1; }
    echo "installing scripts/ruff-wasm's npm packages (npm ci --prefix $ruff_wasm_dir)"
    npm ci --silent --no-audit --no-fund --prefix "$ruff_wasm_dir" >/dev/null
    break
  fi
done

# A throw-away PostgreSQL server (installing Debian's postgresql where missing) for the
# store's conformance suite on its PostgreSQL engine and the multi-node night; stopped on
# exit. Without one those tests skip, unless TICKETD_REQUIRE_TOOLS=1 makes them fail.
if [ -z "${TICKETD_TEST_POSTGRES:-}" ]; then
  if pg_exports=$(scripts/pgtest.sh start); then
    eval "$pg_exports"
    trap 'scripts/pgtest.sh stop "$TICKETD_PGTEST_DIR"' EXIT
    echo "PostgreSQL for the tests: ${TICKETD_TEST_POSTGRES}"
  else
    echo "could not start a PostgreSQL server; its tests will skip (or fail with TICKETD_REQUIRE_TOOLS=1)" >&2
  fi
fi

echo "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2; echo "$unformatted" >&2; exit 1
fi
echo "go vet"
go vet ./...
# scripts/peerbench is a module of its own (so goqite and River never enter ticketd's
# dependencies), which ./... does not reach: build and vet it, so a change to the store's API
# or to go.mod that breaks it fails here. A build, not a benchmark run: its dependencies come
# from the Go module proxy (CI reaches it; once in the module cache the build needs no
# network), pinned by its go.sum, which -mod=readonly keeps from being rewritten. No
# `go mod download`: that fetches the whole module graph, more than the build reads.
# About 3 s when cached.
echo "go build, go vet: scripts/peerbench"
if ! (cd scripts/peerbench && go build -mod=readonly -o /dev/null ./... && go vet -mod=readonly ./...); then
  echo "scripts/peerbench does not build or vet (above). If a module could not be fetched: it needs the Go module proxy ($(go env GOPROXY)) once, or GOPROXY set to a mirror of it" >&2
  exit 1
fi
echo "go test -race"
# The race detector instruments every Go package of the test binaries but one:
# modernc.org/sqlite/lib, SQLite's C source translated to Go. Instrumented, every SQLite call
# (the parser, the VDBE, the pager: each statement prepared, each migration of each test's
# fresh database) paid a race check and a checkptr check per memory access, which made it
# the largest single cost of the store, pipeline and daemon tests' own CPU. Built from C with
# cgo it would not be instrumented either: its threads are SQLite's business (it serializes
# a connection with its own mutexes, which go through modernc.org/libc and sync, both still
# instrumented). What the detector is here for stays covered: ticketd's code, database/sql,
# the driver (modernc.org/sqlite), libc, and every other dependency are instrumented, so a
# race in how ticketd shares a store, a connection or a row is still reported, and the
# uninstrumented package reports nothing false (its accesses are not recorded at all).
# To reproduce CI's run of one package: go test -race "$race_gcflags" ./daemon/
race_gcflags='-gcflags=modernc.org/sqlite/lib=-race=false'
# -timeout bounds a hang, not a slow run: the daemon package takes about 6 min on an idle
# 2-core machine and more than 20 min at load 30 (several suites at once).
go test -race "$race_gcflags" -count=1 -timeout 35m ./...
