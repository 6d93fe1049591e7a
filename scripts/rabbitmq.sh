#!/usr/bin/env bash
# Local RabbitMQ 4 with the stream plugin, on loopback, for the tests and for trying the
# project out.
#
#   scripts/rabbitmq.sh start    build (once, cached) and start; prints the stream URL
#   scripts/rabbitmq.sh stop     stop the broker and every process left in its chroot
#   scripts/rabbitmq.sh status   exit 0 and print the URL when running, exit 1 otherwise
#   scripts/rabbitmq.sh url      print the stream URL the broker listens on
#   scripts/rabbitmq.sh streams ARGS...
#                                run rabbitmq-streams ARGS... against the running broker (e.g.
#                                `streams restart_stream NAME`, which the tests use); Debian
#                                installs it in the package's own bin folder, not on PATH
#
# Why a chroot: Debian bookworm's RabbitMQ (3.10) is too old for rabbitmq-stream-js-client
# 1.0.0, and Debian trixie ships 4.0.5. debootstrap builds a trixie root folder with it in
# about a minute; the broker then runs in a chroot into that folder. Nothing is bind-mounted
# into the chroot (not even /proc; the broker does not need it), so deleting the folder can
# never reach the host's files.
#
# Environment:
#   STREAM_WINDOWS_CACHE          cache folder (default ~/.cache/stream-windows)
#   RABBITMQ_STREAM_PORT          stream protocol port (default 5552)
#   RABBITMQ_AMQP_PORT            AMQP 0-9-1 port (default 5673, off the usual 5672 so that a
#                                 broker installed on the host does not clash)
#   RABBITMQ_DEBIAN_MIRROR        Debian mirror for the one-time build (default deb.debian.org)
# The Erlang distribution port (25673) and epmd port (4370) are fixed, off their defaults for
# the same reason: rabbitmqctl must reach our node, not a host broker's.
#
# Requires root (debootstrap and chroot).
set -euo pipefail

readonly CACHE="${STREAM_WINDOWS_CACHE:-$HOME/.cache/stream-windows}"
readonly ROOT="$CACHE/rabbitmq-trixie"
readonly LOG="$CACHE/rabbitmq.log"
readonly LOCK="$CACHE/rabbitmq.lock"
# The stream port of the broker running from this cache, so that a start asking for other
# ports does not mistake it for leftovers and kill it.
readonly RUNNING_PORT_FILE="$CACHE/rabbitmq.port"
readonly STREAM_PORT="${RABBITMQ_STREAM_PORT:-5552}"
readonly AMQP_PORT="${RABBITMQ_AMQP_PORT:-5673}"
readonly DIST_PORT=25673
readonly EPMD_PORT=4370
readonly MIRROR="${RABBITMQ_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
readonly URL="rabbitmq-stream://guest:guest@127.0.0.1:${STREAM_PORT}/"
readonly START_TIMEOUT_S=120

die() {
  echo "rabbitmq.sh: $*" >&2
  exit 1
}

usage() {
  echo "usage: $0 start|stop|status|url|streams ARGS..." >&2
  exit 2
}

require_root() {
  [[ $(id -u) -eq 0 ]] ||
    die "needs root (debootstrap and chroot); run it with sudo, or set RABBITMQ_STREAM_URL to an existing broker instead"
}

# The chroot's environment is built from scratch: the broker's scripts must see the chroot's
# paths and our ports, never the host's variables.
readonly ROOT_ENV=(
  HOME=/var/lib/rabbitmq
  PATH=/usr/sbin:/usr/bin:/sbin:/bin
  LANG=C.UTF-8
  RABBITMQ_NODENAME=rabbit@localhost
  RABBITMQ_DIST_PORT="$DIST_PORT"
  ERL_EPMD_ADDRESS=127.0.0.1
  ERL_EPMD_PORT="$EPMD_PORT"
  # The distribution listener would otherwise bind every interface.
  RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
)

in_root() {
  chroot "$ROOT" /usr/bin/env -i "${ROOT_ENV[@]}" "$@"
}

# Written at every start so that the ports follow the environment of this run.
write_config() {
  cat >"$ROOT/etc/rabbitmq/rabbitmq.conf" <<EOC
listeners.tcp.1 = 127.0.0.1:$AMQP_PORT
stream.listeners.tcp.1 = 127.0.0.1:$STREAM_PORT
EOC
}

# Pids of processes whose root is our chroot: the broker, epmd and helpers. Found via
# /proc/PID/root so that a host broker is never touched.
chroot_pids() {
  local root_real pid
  root_real=$(readlink -f "$ROOT")
  for pid in /proc/[0-9]*; do
    [[ $(readlink "$pid/root" 2>/dev/null) == "$root_real" ]] && echo "${pid#/proc/}"
  done
  return 0
}

port_answers() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

running() {
  [[ -d $ROOT && -n $(chroot_pids) ]] && port_answers "$STREAM_PORT"
}

# Unmounts anything left mounted below a folder (debootstrap mounts /proc and /sys in its
# target while it runs; an interrupted build can leave them), so removing it stays on it.
unmount_below() {
  local dir mnt
  dir=$(readlink -f "$1")
  awk '{print $2}' /proc/mounts | { grep -E "^${dir}(/|$)" || true; } | sort -r | while read -r mnt; do
    umount -l "$mnt" || true
  done
}

# Removes a build folder; never crosses into a file system mounted below it.
discard() {
  unmount_below "$1"
  rm -rf --one-file-system "$1"
}

build() {
  [[ -x $ROOT/usr/sbin/rabbitmq-server ]] && return 0
  mkdir -p "$CACHE"
  if ! command -v debootstrap >/dev/null; then
    # A fresh machine has no debootstrap: install it from Debian's packages (we are root).
    echo "rabbitmq.sh: installing debootstrap (once)" >&2
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap; } \
      >"$CACHE/apt.log" 2>&1 || die "installing debootstrap failed; see $CACHE/apt.log"
  fi
  # Build beside the final folder and rename when complete, so an interrupted build never
  # looks cached.
  # Builds interrupted by a kill leave their folder behind; callers hold the lock, so none
  # of these is still being written.
  local stale
  for stale in "$CACHE"/rabbitmq-trixie.building.*; do
    [[ -d $stale ]] && discard "$stale"
  done
  BUILD_DIR=$(mktemp -d "$CACHE/rabbitmq-trixie.building.XXXXXX")
  local tmp=$BUILD_DIR
  # mktemp makes it 0700; as the chroot's /, the broker's own user must be able to enter it.
  chmod 755 "$tmp"
  trap 'discard "$BUILD_DIR"' EXIT
  echo "rabbitmq.sh: building Debian trixie with rabbitmq-server into $ROOT (once, about a minute)" >&2
  local t0=$SECONDS
  debootstrap --variant=minbase --include=rabbitmq-server trixie "$tmp" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
    die "debootstrap failed; see $CACHE/debootstrap.log"
  unmount_below "$tmp"
  printf '127.0.0.1 localhost\n::1 localhost\n' >"$tmp/etc/hosts"
  chroot "$tmp" /usr/bin/env -i HOME=/var/lib/rabbitmq PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    rabbitmq-plugins --offline enable rabbitmq_stream >>"$CACHE/debootstrap.log" 2>&1 ||
    die "enabling rabbitmq_stream failed; see $CACHE/debootstrap.log"
  # Debian's package starts the service through systemd, which a chroot does not have; the
  # postinst may still leave state from a node named after the build host: drop it.
  rm -rf "$tmp/var/lib/rabbitmq/mnesia"
  mv "$tmp" "$ROOT"
  trap - EXIT
  echo "rabbitmq.sh: built in $((SECONDS - t0)) s" >&2
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
  port_answers "$STREAM_PORT" &&
    die "port $STREAM_PORT is taken by another process; set RABBITMQ_STREAM_PORT, or RABBITMQ_STREAM_URL to use that broker"
  build
  if [[ -n $(chroot_pids) && -f $RUNNING_PORT_FILE && $(<"$RUNNING_PORT_FILE") != "$STREAM_PORT" ]]; then
    die "a broker from $ROOT is running with stream port $(<"$RUNNING_PORT_FILE"); stop it first ($0 stop)"
  fi
  # A broker that died half-way leaves epmd or beam behind; they would hold the ports.
  stop_pids
  write_config
  echo "$STREAM_PORT" >"$RUNNING_PORT_FILE"
  local t0=$SECONDS
  # setsid: the broker must outlive this script and the test runner that called it. 9>&-: it
  # must not inherit the lock, or every later start or stop would wait for it forever.
  setsid chroot "$ROOT" /usr/bin/env -i "${ROOT_ENV[@]}" rabbitmq-server >"$LOG" 2>&1 </dev/null 9>&- &
  until port_answers "$STREAM_PORT"; do
    ((SECONDS - t0 < START_TIMEOUT_S)) || die "no stream listener on port $STREAM_PORT after ${START_TIMEOUT_S} s; see $LOG and $ROOT/var/log/rabbitmq/"
    [[ -n $(chroot_pids) ]] || die "rabbitmq-server exited while starting; see $LOG"
    sleep 0.5
  done
  # The port opens while plugins are still booting; await_startup returns when the node is
  # fully up, so the first client never races the boot.
  in_root rabbitmqctl -q await_startup --timeout "$START_TIMEOUT_S" >>"$LOG" 2>&1 ||
    die "rabbitmq did not finish booting; see $LOG"
  echo "rabbitmq.sh: started in $((SECONDS - t0)) s, logs in $LOG" >&2
  echo "$URL"
}

stop_pids() {
  local pids
  pids=$(chroot_pids)
  [[ -z $pids ]] && return 0
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true
  for _ in $(seq 20); do
    [[ -z $(chroot_pids) ]] && return 0
    sleep 0.25
  done
  pids=$(chroot_pids)
  # shellcheck disable=SC2086
  [[ -n $pids ]] && kill -KILL $pids 2>/dev/null || true
}

stop() {
  require_root
  [[ -d $ROOT ]] || return 0
  mkdir -p "$CACHE"
  exec 9>"$LOCK"
  flock 9
  if [[ -n $(chroot_pids) ]]; then
    in_root rabbitmqctl -q stop >>"$LOG" 2>&1 || true
  fi
  # epmd stays up after the node stops; it and anything else left in the chroot go by pid.
  stop_pids
  rm -f "$RUNNING_PORT_FILE"
}

# rabbitmq-streams inside the chroot, with the chroot's environment so that it reaches our node.
streams() {
  require_root
  running || die "not running"
  in_root /usr/lib/rabbitmq/bin/rabbitmq-streams "$@"
}

case "${1:-}" in
  start) start ;;
  streams)
    shift
    streams "$@"
    ;;
  stop) stop ;;
  status)
    if running; then echo "$URL"; else
      echo "rabbitmq.sh: not running" >&2
      exit 1
    fi
    ;;
  url) echo "$URL" ;;
  *) usage ;;
esac
