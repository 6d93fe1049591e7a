#!/usr/bin/env bash
# Local PostgreSQL on loopback, for the database sink's tests and for trying it out.
#
#   scripts/postgres.sh start    build (once, cached) and start; prints the URL
#                                postgres://stream_windows:stream_windows@127.0.0.1:5433/stream_windows
#   scripts/postgres.sh stop     stop the server (fast shutdown: open sessions are ended, what
#                                they committed stays) and anything of its own left behind
#   scripts/postgres.sh stop immediate
#                                the same with an immediate shutdown: every process quits at
#                                once, as in a crash (the next start recovers from the WAL)
#   scripts/postgres.sh status   exit 0 and print the URL when running, exit 1 otherwise
#   scripts/postgres.sh url      print the URL the server listens on
#
# The user stream_windows (password stream_windows) is the server's superuser, so tests can
# create a database per file and end other sessions; the database stream_windows is made with
# the data folder. Each port is its own server with its own data folder
# (/var/lib/postgresql/stream-windows/PORT in the chroot, kept across stop and start; delete
# it after a stop for a fresh one) and log ($STREAM_WINDOWS_CACHE/postgres-PORT.log), so a
# test can run a second server on another port and stop it without disturbing the first.
#
# Why a chroot, and its own: Debian's `postgresql` package (PostgreSQL 17 in trixie; PGlite
# 0.5 embeds 18, and the sink's SQL is the same on both) is installed by debootstrap into a
# trixie root folder of its own, as scripts/rabbitmq.sh does for the broker, so nothing is
# installed on the host and no system database is touched. Not into the broker's root
# folder: apt there could upgrade libraries under a running broker, and `rabbitmq.sh stop`
# stops every process in its root that carries no tag of the cluster's. The server runs as
# the chroot's `postgres` user with no Unix socket and System V dynamic shared memory, so it
# needs nothing mounted in the chroot (not /proc, not /dev/shm).
#
# Every process of a server carries STREAM_WINDOWS_INSTANCE=postgres-PORT in its environment
# (the postmaster's children inherit it); stop selects by it.
#
# Environment:
#   STREAM_WINDOWS_CACHE     cache folder (default ~/.cache/stream-windows)
#   POSTGRES_PORT            the port (default 5433, off the usual 5432 so that a server
#                            installed on the host does not clash)
#   POSTGRES_DEBIAN_MIRROR   Debian mirror for the one-time build (default deb.debian.org)
#
# Requires root (debootstrap and chroot).
set -eEuo pipefail
# A step that fails or is killed names itself: bash alone says no more than "Terminated".
trap 'echo "postgres.sh: line $LINENO: $BASH_COMMAND: exit code $?" >&2' ERR
# shellcheck source=lib/debian-root.sh
source "$(dirname "$0")/lib/debian-root.sh"

readonly CACHE="${STREAM_WINDOWS_CACHE:-$HOME/.cache/stream-windows}"
readonly ROOT="$CACHE/postgres-trixie"
readonly PORT="${POSTGRES_PORT:-5433}"
readonly LOG="$CACHE/postgres-$PORT.log"
readonly LOCK="$CACHE/postgres-$PORT.lock"
readonly BUILD_LOCK="$CACHE/postgres-build.lock"
readonly MIRROR="${POSTGRES_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
readonly NAME=stream_windows
readonly URL="postgres://$NAME:$NAME@127.0.0.1:$PORT/$NAME"
readonly DATA="/var/lib/postgresql/stream-windows/$PORT"
readonly TAG="postgres-$PORT"
readonly START_TIMEOUT_S=120
readonly STOP_TIMEOUT_S=60

die() {
  echo "postgres.sh: $*" >&2
  exit 1
}

usage() {
  echo "usage: $0 start|stop [fast|immediate]|status|url" >&2
  exit 2
}

require_root() {
  [[ $(id -u) -eq 0 ]] ||
    die "needs root (debootstrap and chroot); run it with sudo, or set POSTGRES_URL to an existing server instead"
}

# The server's binaries (initdb, postgres, pg_isready), in the chroot.
bin_dir() {
  local dir
  for dir in "$ROOT"/usr/lib/postgresql/*/bin; do
    [[ -x $dir/postgres ]] && echo "${dir#"$ROOT"}" && return 0
  done
  return 1
}

# Runs "$@" in the chroot as its postgres user, with an environment built from scratch (the
# host's variables must not reach the server) and the instance tag (also in the host
# environment: between chroot(2) and the exec of env -i the process has the host's).
as_postgres() {
  local bin ids
  bin=$(bin_dir)
  ids=$(awk -F: '$1 == "postgres" { print $3 ":" $4 }' "$ROOT/etc/passwd")
  STREAM_WINDOWS_INSTANCE=$TAG chroot --userspec="$ids" "$ROOT" /usr/bin/env -i \
    HOME=/var/lib/postgresql PATH="$bin:/usr/bin:/bin" LANG=C.UTF-8 \
    STREAM_WINDOWS_INSTANCE="$TAG" "$@"
}

running() {
  [[ -d $ROOT && -n $(tagged_pids "$ROOT" "$TAG" none) ]] && ready
}

ready() {
  as_postgres pg_isready -q -h 127.0.0.1 -p "$PORT" -U "$NAME" -d "$NAME"
}

build() {
  bin_dir >/dev/null && return 0
  exec 8>"$BUILD_LOCK"
  flock 8
  bin_dir >/dev/null && return 0
  echo "postgres.sh: building Debian trixie with postgresql into $ROOT (once, about a minute)" >&2
  local t0=$SECONDS
  build_debian_root "$ROOT" postgresql "$MIRROR" "$CACHE/postgres-debootstrap.log" prepare_root
  echo "postgres.sh: built in $((SECONDS - t0)) s" >&2
  exec 8>&-
}

# The package's own cluster (made by its postinst, started through systemd) is not ours: each
# port gets its data folder at its first start.
prepare_root() {
  rm -rf "$1"/var/lib/postgresql/*/main "$1"/etc/postgresql/*/main
}

# A data folder for this port, when it has none: initdb with our user as superuser (password
# logins over TCP, the only way in), then our database, made in single-user mode. Both into
# DATA.new, renamed to DATA only once the database exists: a start killed half-way leaves no
# DATA that later starts would take for complete (a server without our database).
init_data() {
  [[ -f $ROOT$DATA/PG_VERSION ]] && return 0
  local partial=$DATA.new
  rm -rf "$ROOT$DATA" "$ROOT$partial"
  chroot "$ROOT" install -d -o postgres -g postgres -m 700 "$partial"
  local pwfile=/var/lib/postgresql/stream-windows/.pw-$PORT
  echo "$NAME" >"$ROOT$pwfile"
  chroot "$ROOT" chown postgres:postgres "$pwfile"
  as_postgres initdb -D "$partial" -U "$NAME" --pwfile="$pwfile" --auth-host=scram-sha-256 \
    --auth-local=peer --no-locale -E UTF8 --no-instructions >>"$LOG" 2>&1 ||
    die "initdb failed; see $LOG"
  rm -f "$ROOT$pwfile"
  echo "CREATE DATABASE $NAME" | as_postgres postgres --single -D "$partial" postgres >>"$LOG" 2>&1 ||
    die "creating database $NAME failed; see $LOG"
  mv "$ROOT$partial" "$ROOT$DATA"
}

# Stops this port's processes: a fast shutdown of the postmaster (SIGINT; SIGQUIT, immediate,
# with 'immediate'), then KILL of whatever of ours is left after STOP_TIMEOUT_S.
stop_server() {
  local signal=INT pids pid
  [[ ${1:-fast} == immediate ]] && signal=QUIT
  pids=$(tagged_pids "$ROOT" "$TAG" none)
  [[ -z $pids ]] && return 0
  pid=$(head -1 "$ROOT$DATA/postmaster.pid" 2>/dev/null || true)
  if [[ -n $pid ]] && grep -qx "$pid" <<<"$pids"; then
    kill -"$signal" "$pid" 2>/dev/null || true
  else
    # shellcheck disable=SC2086
    kill -"$signal" $pids 2>/dev/null || true
  fi
  for _ in $(seq $((STOP_TIMEOUT_S * 4))); do
    [[ -z $(tagged_pids "$ROOT" "$TAG" none) ]] && return 0
    sleep 0.25
  done
  pids=$(tagged_pids "$ROOT" "$TAG" none)
  # shellcheck disable=SC2086
  [[ -n $pids ]] && kill -KILL $pids 2>/dev/null || true
}

start() {
  require_root
  mkdir -p "$CACHE"
  exec 9>"$LOCK"
  flock 9
  if running; then
    echo "$URL"
    return 0
  fi
  port_answers "$PORT" && [[ -z $(tagged_pids "$ROOT" "$TAG" none) ]] &&
    die "port $PORT is taken by another process; set POSTGRES_PORT, or POSTGRES_URL to use that server"
  build
  # A server that died half-way, or one still starting, is stopped first: one start at a time.
  stop_server
  init_data
  local t0=$SECONDS
  # setsid: the server must outlive this script and the test runner that called it. 9>&-: it
  # must not inherit the lock, or every later start or stop would wait for it forever.
  as_postgres setsid postgres -D "$DATA" -c listen_addresses=127.0.0.1 -c port="$PORT" \
    -c unix_socket_directories= -c dynamic_shared_memory_type=sysv \
    >>"$LOG" 2>&1 </dev/null 9>&- &
  local launched=$!
  until ready; do
    ((SECONDS - t0 < START_TIMEOUT_S)) || die "not accepting connections on port $PORT after ${START_TIMEOUT_S} s; see $LOG"
    kill -0 "$launched" 2>/dev/null || die "postgres exited while starting; see $LOG"
    sleep 0.25
  done
  echo "postgres.sh: started in $((SECONDS - t0)) s, logs in $LOG" >&2
  echo "$URL"
}

stop() {
  require_root
  [[ ${1:-fast} == @(fast|immediate) ]] || usage
  [[ -d $ROOT ]] || return 0
  mkdir -p "$CACHE"
  exec 9>"$LOCK"
  flock 9
  stop_server "${1:-fast}"
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  status)
    if running; then echo "$URL"; else
      echo "postgres.sh: not running" >&2
      exit 1
    fi
    ;;
  url) echo "$URL" ;;
  *) usage ;;
esac
