#!/bin/sh
# Runs a command as on a fresh machine that has only Go, git and python3: pytest, mypy (for
# /usr/bin/python3), bwrap, chromium, node and npm are hidden in a private mount namespace,
# so `go test ./...` must skip, naming each install, rather than fail. Needs root (unshare -m).
#   sudo scripts/without-tools.sh go test -count=1 ./...
set -eu
if [ "${TICKETD_WITHOUT_TOOLS_INNER:-}" != 1 ]; then
  [ "$#" -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
  exec env -u TICKETD_REQUIRE_TOOLS -u TICKETD_TEST_POSTGRES TICKETD_WITHOUT_TOOLS_INNER=1 unshare -m "$0" "$@"
fi
mount --make-rprivate /
# The stand-ins live on a tmpfs only this namespace sees: nothing is left on the host.
hide=/mnt
mount -t tmpfs -o size=1m ticketd-without-tools "$hide"
for m in pytest _pytest mypy; do
  if [ -d "/usr/lib/python3/dist-packages/$m" ]; then
    mkdir -p "$hide/$m"
    echo "raise ModuleNotFoundError(\"No module named '$m'\", name='$m')" > "$hide/$m/__init__.py"
    mount --bind "$hide/$m" "/usr/lib/python3/dist-packages/$m"
  fi
done
: > "$hide/absent"
for f in /usr/bin/bwrap /usr/bin/chromium /usr/bin/node /usr/bin/npm /usr/bin/pytest /usr/bin/pytest-3 \
  /usr/bin/py.test /usr/bin/py.test-3 /usr/bin/mypy /usr/local/bin/ruff; do
  if [ -e "$f" ]; then mount --bind "$hide/absent" "$f"; fi
done
unset TICKETD_WITHOUT_TOOLS_INNER
exec "$@"
