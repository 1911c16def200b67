#!/usr/bin/env bash
# A throw-away PostgreSQL server for the tests, in a temporary data directory, listening on
# 127.0.0.1 only, with trust authentication for local connections.
#
#   eval "$(scripts/pgtest.sh start)"   # installs Debian's postgresql where missing, starts
#                                       # a server, prints the exports the tests read
#   scripts/pgtest.sh stop              # stops it and removes its data directory
#
# PostgreSQL refuses to run as root: as root the server runs as the postgres user (created
# by the Debian package), otherwise as the calling user.
set -euo pipefail

find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

as_server_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local bin
  if ! bin=$(find_bin); then
    echo "installing postgresql (Debian package) for the PostgreSQL tests" >&2
    local sudo=""
    [ "$(id -u)" != 0 ] && sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
    # The package starts a cluster of its own; the tests use theirs.
    bin=$(find_bin)
  fi
  local dir port
  dir=$(mktemp -d /tmp/ticketd-pgtest.XXXXXX)
  chmod 755 "$dir"
  [ "$(id -u)" = 0 ] && chown postgres: "$dir"
  as_server_user "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000)))
  as_server_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200" start >&2 ||
    { cat "$dir/server.log" >&2; exit 1; }
  echo "export TICKETD_TEST_POSTGRES=postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  echo "export TICKETD_PGTEST_DIR=$dir"
}

stop() {
  local dir=${1:-${TICKETD_PGTEST_DIR:-}}
  [ -n "$dir" ] && [ -d "$dir/data" ] || { echo "pgtest.sh stop: no server directory (TICKETD_PGTEST_DIR)" >&2; exit 1; }
  local bin
  bin=$(find_bin)
  as_server_user "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
  rm -rf "$dir"
}

case "${1:-}" in
start) start ;;
stop) shift; stop "$@" ;;
*) echo "usage: scripts/pgtest.sh start|stop [dir]" >&2; exit 2 ;;
esac
