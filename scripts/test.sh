#!/usr/bin/env bash
# The test command: installs what the tests need where it is missing (Debian's pytest and
# mypy for /usr/bin/python3, bubblewrap for the sandbox), then runs the checks CI runs.
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
if ! bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-net --unshare-ipc --die-with-parent --new-session true; then
  echo "bwrap is installed but cannot create namespaces here; the sandbox tests will skip (run as root, or allow unprivileged user namespaces)" >&2
fi

echo "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2; echo "$unformatted" >&2; exit 1
fi
echo "go vet"
go vet ./...
echo "go test -race"
go test -race -count=1 -timeout 20m ./...
