#!/usr/bin/env bash
# Local RabbitMQ 4 with the stream plugin, on loopback, for the tests and for trying the
# project out.
#
#   scripts/rabbitmq.sh start    build (once, cached) and start; prints the stream URL
#   scripts/rabbitmq.sh stop     stop the broker and every process of its own left in the
#                                chroot (the cluster's are left alone)
#   scripts/rabbitmq.sh status   exit 0 and print the URL when running, exit 1 otherwise
#   scripts/rabbitmq.sh url      print the stream URL the broker listens on
#   scripts/rabbitmq.sh streams ARGS...
#                                run rabbitmq-streams ARGS... against the running broker (e.g.
#                                `streams restart_stream NAME`, which the tests use); Debian
#                                installs it in the package's own bin folder, not on PATH
#
# A 3-node cluster, beside the single broker and from the same chroot:
#
#   scripts/rabbitmq.sh cluster start
#                                start the nodes that are not running (in parallel), join the
#                                new ones to rabbit-1 (stop_app, join_cluster, start_app); prints
#                                node 1's stream URL; idempotent
#   scripts/rabbitmq.sh cluster stop
#                                stop the three nodes and every process of the cluster left in
#                                the chroot (the single broker's are left alone)
#   scripts/rabbitmq.sh cluster status
#                                one line per node: name, stream URL, running|stopped; exit 0
#                                when all three run, 1 otherwise
#   scripts/rabbitmq.sh cluster url
#                                print node 1's stream URL
#   scripts/rabbitmq.sh cluster stop-node N
#                                stop node N (1-3) cleanly (rabbitmqctl stop)
#   scripts/rabbitmq.sh cluster start-node N
#                                start node N again; returns once it is booted and back in the
#                                cluster
#   scripts/rabbitmq.sh cluster streams N ARGS...
#                                run rabbitmq-streams ARGS... against node N
#   scripts/rabbitmq.sh cluster ctl N ARGS...
#                                run rabbitmqctl ARGS... against node N (e.g. `eval EXPR`, which
#                                the tests use to hold a stream member back)
#
# Node N is rabbit-N@localhost: stream port 556N (advertised as 127.0.0.1:556N, so clients
# reach each member where the Metadata query says it is), AMQP 568N, Erlang distribution
# 2568N, and the cluster's own epmd on 4371. Its config, data and log are its own:
# /etc/rabbitmq/cluster/rabbit-N.conf, /var/lib/rabbitmq/cluster/rabbit-N@localhost and
# /var/log/rabbitmq/rabbit-N@localhost.log in the chroot, its output in
# $STREAM_WINDOWS_CACHE/rabbitmq-cluster-N.log. Data survives `cluster stop`; delete
# /var/lib/rabbitmq/cluster in the chroot (after a stop) for a fresh cluster. No default
# replication factor is set: streams that should have 3 members are declared with
# x-initial-cluster-size 3.
#
# Every process started in the chroot carries STREAM_WINDOWS_INSTANCE in its environment
# (single, cluster-N, cluster-epmd, cluster-ctl; beam, epmd and erl_child_setup inherit it),
# and the stops select by it (/proc/PID/environ), so stopping one never kills the other. A
# process without it counts as the single broker's (started by an older version of this
# script).
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
# the same reason: rabbitmqctl must reach our node, not a host broker's. The cluster's ports
# are fixed (above).
#
# Requires root (debootstrap and chroot).
set -eEuo pipefail
# A step that fails or is killed names itself: bash alone says no more than "Terminated".
trap 'echo "rabbitmq.sh: line $LINENO: $BASH_COMMAND: exit code $?" >&2' ERR
# shellcheck source=lib/debian-root.sh
source "$(dirname "$0")/lib/debian-root.sh"

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
readonly CLUSTER_LOCK="$CACHE/rabbitmq-cluster.lock"
readonly CLUSTER_NODES=(1 2 3)
readonly CLUSTER_EPMD_PORT=4371
readonly CLUSTER_DATA=/var/lib/rabbitmq/cluster
readonly CLUSTER_CONFIG=/etc/rabbitmq/cluster
# The distribution listener would otherwise bind every interface. (No scheduler flags against
# busy-waiting: rabbitmq-server 4.0 passes +sbwt none +sbwtdcpu none +sbwtdio none already; an
# idle node takes about 0.4 % of a core.)
readonly DIST_ON_LOOPBACK='-kernel inet_dist_use_interface {127,0,0,1}'

die() {
  echo "rabbitmq.sh: $*" >&2
  exit 1
}

usage() {
  echo "usage: $0 start|stop|status|url|streams ARGS..." >&2
  echo "       $0 cluster start|stop|status|url|stop-node N|start-node N|streams N ARGS...|ctl N ARGS..." >&2
  exit 2
}

require_root() {
  [[ $(id -u) -eq 0 ]] ||
    die "needs root (debootstrap and chroot); run it with sudo, or set RABBITMQ_STREAM_URL to an existing broker instead"
}

# The chroot's environment is built from scratch: the broker's scripts must see the chroot's
# paths and our ports, never the host's variables.
readonly BASE_ENV=(
  HOME=/var/lib/rabbitmq
  PATH=/usr/sbin:/usr/bin:/sbin:/bin
  LANG=C.UTF-8
  ERL_EPMD_ADDRESS=127.0.0.1
)
readonly ROOT_ENV=(
  "${BASE_ENV[@]}"
  STREAM_WINDOWS_INSTANCE=single
  RABBITMQ_NODENAME=rabbit@localhost
  RABBITMQ_DIST_PORT="$DIST_PORT"
  ERL_EPMD_PORT="$EPMD_PORT"
  RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="$DIST_ON_LOOPBACK"
)

# Every chroot call carries its tag in the host environment too: between chroot(2) and the
# exec of `env -i` the process has the host's environment, and an untagged process counts as
# the single broker's (a start or stop of the other instance running at that moment would
# kill it).
in_root() {
  STREAM_WINDOWS_INSTANCE=single chroot "$ROOT" /usr/bin/env -i "${ROOT_ENV[@]}" "$@"
}

# Written at every start so that the ports follow the environment of this run.
write_config() {
  cat >"$ROOT/etc/rabbitmq/rabbitmq.conf" <<EOC
listeners.tcp.1 = 127.0.0.1:$AMQP_PORT
stream.listeners.tcp.1 = 127.0.0.1:$STREAM_PORT
EOC
}

# Pids of the broker's processes whose STREAM_WINDOWS_INSTANCE tag matches the glob $1: `single`
# for the single broker, `cluster-*` for the whole cluster, `cluster-2` for node 2's beam and
# helpers.
chroot_pids() {
  tagged_pids "$ROOT" "$1" single
}

running() {
  [[ -d $ROOT && -n $(chroot_pids single) ]] && port_answers "$STREAM_PORT"
}

build() {
  [[ -x $ROOT/usr/sbin/rabbitmq-server ]] && return 0
  echo "rabbitmq.sh: building Debian trixie with rabbitmq-server into $ROOT (once, about a minute)" >&2
  local t0=$SECONDS
  build_debian_root "$ROOT" rabbitmq-server "$MIRROR" "$CACHE/debootstrap.log" prepare_root
  echo "rabbitmq.sh: built in $((SECONDS - t0)) s" >&2
}

# The broker's set-up of the freshly built root folder $1.
prepare_root() {
  chroot "$1" /usr/bin/env -i HOME=/var/lib/rabbitmq PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    rabbitmq-plugins --offline enable rabbitmq_stream >>"$CACHE/debootstrap.log" 2>&1 ||
    die "enabling rabbitmq_stream failed; see $CACHE/debootstrap.log"
  # Debian's package starts the service through systemd, which a chroot does not have; the
  # postinst may still leave state from a node named after the build host: drop it.
  rm -rf "$1/var/lib/rabbitmq/mnesia"
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
  if [[ -n $(chroot_pids single) && -f $RUNNING_PORT_FILE && $(<"$RUNNING_PORT_FILE") != "$STREAM_PORT" ]]; then
    die "a broker from $ROOT is running with stream port $(<"$RUNNING_PORT_FILE"); stop it first ($0 stop)"
  fi
  # A broker that died half-way leaves epmd or beam behind; they would hold the ports.
  stop_pids single
  write_config
  echo "$STREAM_PORT" >"$RUNNING_PORT_FILE"
  local t0=$SECONDS
  # setsid: the broker must outlive this script and the test runner that called it. 9>&-: it
  # must not inherit the lock, or every later start or stop would wait for it forever.
  STREAM_WINDOWS_INSTANCE=single setsid chroot "$ROOT" /usr/bin/env -i "${ROOT_ENV[@]}" rabbitmq-server >"$LOG" 2>&1 </dev/null 9>&- &
  # Its pid stays the server script's (setsid, chroot and env exec). chroot_pids would miss it
  # before its chroot call, and report a broker starting as one that exited.
  local launched=$!
  until port_answers "$STREAM_PORT"; do
    ((SECONDS - t0 < START_TIMEOUT_S)) || die "no stream listener on port $STREAM_PORT after ${START_TIMEOUT_S} s; see $LOG and $ROOT/var/log/rabbitmq/"
    kill -0 "$launched" 2>/dev/null || die "rabbitmq-server exited while starting; see $LOG"
    sleep 0.5
  done
  # The port opens while plugins are still booting; await_startup returns when the node is
  # fully up, so the first client never races the boot.
  in_root rabbitmqctl -q await_startup --timeout "$START_TIMEOUT_S" >>"$LOG" 2>&1 ||
    die "rabbitmq did not finish booting; see $LOG"
  echo "rabbitmq.sh: started in $((SECONDS - t0)) s, logs in $LOG" >&2
  echo "$URL"
}

# Stops the processes chroot_pids $1 finds: TERM, then KILL what is left after 5 s.
stop_pids() {
  local pids
  pids=$(chroot_pids "$1")
  [[ -z $pids ]] && return 0
  # shellcheck disable=SC2086
  kill -TERM $pids 2>/dev/null || true
  for _ in $(seq 20); do
    [[ -z $(chroot_pids "$1") ]] && return 0
    sleep 0.25
  done
  pids=$(chroot_pids "$1")
  # shellcheck disable=SC2086
  [[ -n $pids ]] && kill -KILL $pids 2>/dev/null || true
}

stop() {
  require_root
  [[ -d $ROOT ]] || return 0
  mkdir -p "$CACHE"
  exec 9>"$LOCK"
  flock 9
  if [[ -n $(chroot_pids single) ]]; then
    in_root rabbitmqctl -q stop >>"$LOG" 2>&1 || true
  fi
  # epmd stays up after the node stops; it and anything else of the broker's left in the chroot
  # go by pid.
  stop_pids single
  rm -f "$RUNNING_PORT_FILE"
}

# rabbitmq-streams inside the chroot, with the chroot's environment so that it reaches our node.
streams() {
  require_root
  running || die "not running"
  in_root /usr/lib/rabbitmq/bin/rabbitmq-streams "$@"
}

# ---- The 3-node cluster ----

node_name() { echo "rabbit-$1@localhost"; }
node_stream_port() { echo $((5560 + $1)); }
node_url() { echo "rabbitmq-stream://guest:guest@127.0.0.1:$(node_stream_port "$1")/"; }

# The chroot environment of node $1's processes (the global array NODE_ENV).
set_node_env() {
  NODE_ENV=(
    "${BASE_ENV[@]}"
    STREAM_WINDOWS_INSTANCE="cluster-$1"
    RABBITMQ_NODENAME="$(node_name "$1")"
    RABBITMQ_DIST_PORT=$((25680 + $1))
    ERL_EPMD_PORT="$CLUSTER_EPMD_PORT"
    RABBITMQ_CONFIG_FILE="$CLUSTER_CONFIG/rabbit-$1.conf"
    RABBITMQ_MNESIA_BASE="$CLUSTER_DATA"
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="$DIST_ON_LOOPBACK"
  )
}

# Runs the command line tool $2 (rabbitmqctl, rabbitmq-streams) with arguments $3... against
# node $1; tagged cluster-ctl, so stopping a node never kills a tool that talks to another one.
in_node() {
  local n=$1 tool=$2
  shift 2
  STREAM_WINDOWS_INSTANCE=cluster-ctl chroot "$ROOT" /usr/bin/env -i "${BASE_ENV[@]}" \
    STREAM_WINDOWS_INSTANCE=cluster-ctl ERL_EPMD_PORT="$CLUSTER_EPMD_PORT" \
    "$tool" -n "$(node_name "$n")" "$@"
}

node_log() { echo "$CACHE/rabbitmq-cluster-$1.log"; }

node_running() {
  [[ -d $ROOT && -n $(chroot_pids "cluster-$1") ]] && port_answers "$(node_stream_port "$1")"
}

check_node_number() {
  [[ ${1:-} =~ ^[123]$ ]] || die "cluster: node must be 1, 2 or 3, given: '${1:-}'"
}

write_node_config() {
  local port
  port=$(node_stream_port "$1")
  mkdir -p "$ROOT$CLUSTER_CONFIG"
  cat >"$ROOT$CLUSTER_CONFIG/rabbit-$1.conf" <<EOC
listeners.tcp.1 = 127.0.0.1:$((5680 + $1))
stream.listeners.tcp.1 = 127.0.0.1:$port
stream.advertised_host = 127.0.0.1
stream.advertised_port = $port
EOC
}

# The cluster's own epmd, started before the nodes so that none of them starts one tagged as
# its own (stopping that node would take the others' name service with it).
start_cluster_epmd() {
  [[ -n $(chroot_pids cluster-epmd) ]] && port_answers "$CLUSTER_EPMD_PORT" && return 0
  port_answers "$CLUSTER_EPMD_PORT" && die "cluster: port $CLUSTER_EPMD_PORT (epmd) is taken by another process"
  STREAM_WINDOWS_INSTANCE=cluster-epmd chroot "$ROOT" /usr/bin/env -i "${BASE_ENV[@]}" \
    STREAM_WINDOWS_INSTANCE=cluster-epmd ERL_EPMD_PORT="$CLUSTER_EPMD_PORT" epmd -daemon 9>&- 8>&-
  local i
  for i in $(seq 40); do
    port_answers "$CLUSTER_EPMD_PORT" && return 0
    sleep 0.25
  done
  die "cluster: epmd did not listen on port $CLUSTER_EPMD_PORT"
}

# Starts node $1's server in the background, detached (it must outlive this script).
declare -a LAUNCHED=()
launch_node() {
  local n=$1 port
  # A node that died half-way leaves beam or helpers behind; they would hold its ports.
  stop_pids "cluster-$n"
  for port in "$(node_stream_port "$n")" $((5680 + n)) $((25680 + n)); do
    port_answers "$port" && die "cluster: port $port of node $n is taken by another process"
  done
  write_node_config "$n"
  set_node_env "$n"
  STREAM_WINDOWS_INSTANCE="cluster-$n" setsid chroot "$ROOT" /usr/bin/env -i "${NODE_ENV[@]}" \
    rabbitmq-server >"$(node_log "$n")" 2>&1 </dev/null 9>&- 8>&- &
  # Its pid stays the node's server script's (setsid, chroot and env exec): alive until the
  # node stops. (chroot_pids would miss it before the chroot call.)
  LAUNCHED[n]=$!
}

# Waits until node $1 is fully booted (stream port open, then await_startup).
await_node() {
  local n=$1 t0=$SECONDS port
  port=$(node_stream_port "$n")
  until port_answers "$port"; do
    ((SECONDS - t0 < START_TIMEOUT_S)) ||
      die "cluster: node $n: no stream listener on port $port after ${START_TIMEOUT_S} s; see $(node_log "$n")"
    kill -0 "${LAUNCHED[n]}" 2>/dev/null || die "cluster: node $n: rabbitmq-server exited while starting; see $(node_log "$n")"
    sleep 0.5
  done
  in_node "$n" rabbitmqctl -q await_startup --timeout "$START_TIMEOUT_S" >>"$(node_log "$n")" 2>&1 ||
    die "cluster: node $n did not finish booting; see $(node_log "$n")"
}

# The node names of a list ("running_nodes", "disk_nodes") in node $1's cluster_status, one a
# line.
cluster_view() {
  in_node "$1" rabbitmqctl -q cluster_status --formatter json 2>>"$(node_log "$1")" |
    grep -o "\"$2\":\[[^]]*\]" | grep -o 'rabbit-[0-9]@localhost' || true
}

# Joins node $1 to rabbit-1 unless it is a member already (a restarted member rejoins by
# itself; a new one, or one whose data was deleted, is on its own).
join_node() {
  local n=$1
  cluster_view "$n" disk_nodes | grep -qx "$(node_name 1)" && return 0
  {
    in_node "$n" rabbitmqctl -q stop_app &&
      in_node "$n" rabbitmqctl -q join_cluster "$(node_name 1)" &&
      in_node "$n" rabbitmqctl -q start_app
  } >>"$(node_log "$n")" 2>&1 ||
    die "cluster: node $n could not join $(node_name 1); see $(node_log "$n") (for a fresh cluster: $0 cluster stop, then delete $ROOT$CLUSTER_DATA)"
}

# Runs "$@" for each of the nodes in $NODES in parallel; fails if any failed (each prints why).
for_nodes() {
  local n pid failed=0
  local -a pids=()
  for n in $NODES; do
    "$@" "$n" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  return $failed
}

# Starts the nodes $@ that are not running, in parallel, and makes sure each is booted and a
# member of rabbit-1's cluster (also when all were running: an interrupted start may have left
# one unjoined).
start_nodes() {
  require_root
  mkdir -p "$CACHE"
  # Building takes the single broker's lock: both use the one chroot.
  [[ -x $ROOT/usr/sbin/rabbitmq-server ]] || (
    exec 9>"$LOCK"
    flock 9
    build
  )
  exec 8>"$CLUSTER_LOCK"
  flock 8
  local t0=$SECONDS n
  NODES=
  for n in "$@"; do node_running "$n" || NODES+="$n "; done
  local launched=$NODES
  if [[ -n $launched ]]; then
    STREAM_WINDOWS_INSTANCE=cluster-ctl chroot "$ROOT" install -d -o rabbitmq -g rabbitmq "$CLUSTER_DATA"
    start_cluster_epmd
    for n in $NODES; do launch_node "$n"; done
    for_nodes await_node || exit 1
  fi
  NODES=
  for n in "$@"; do [[ $n == 1 ]] || NODES+="$n "; done
  for_nodes join_node || exit 1
  [[ -z $launched ]] ||
    echo "rabbitmq.sh: cluster node(s) ${launched% } started in $((SECONDS - t0)) s, logs in $CACHE/rabbitmq-cluster-N.log" >&2
}

# Node $1's stop: rabbitmqctl stop waits for the node's pid to exit; what is left of its
# processes goes by pid.
stop_node() {
  local n=$1
  if [[ -n $(chroot_pids "cluster-$n") ]]; then
    in_node "$n" rabbitmqctl -q stop "$CLUSTER_DATA/$(node_name "$n").pid" >>"$(node_log "$n")" 2>&1 || true
  fi
  stop_pids "cluster-$n"
}

cluster_stop() {
  require_root
  [[ -d $ROOT ]] || return 0
  mkdir -p "$CACHE"
  exec 8>"$CLUSTER_LOCK"
  flock 8
  local t0=$SECONDS
  NODES="${CLUSTER_NODES[*]}"
  for_nodes stop_node || true
  # epmd and anything else of the cluster's.
  stop_pids 'cluster-*'
  echo "rabbitmq.sh: cluster stopped in $((SECONDS - t0)) s" >&2
}

cluster_status() {
  local n all=0
  for n in "${CLUSTER_NODES[@]}"; do
    if node_running "$n"; then
      echo "$(node_name "$n") $(node_url "$n") running"
    else
      echo "$(node_name "$n") $(node_url "$n") stopped"
      all=1
    fi
  done
  return $all
}

cluster() {
  case "${1:-}" in
    start)
      start_nodes "${CLUSTER_NODES[@]}"
      node_url 1
      ;;
    stop) cluster_stop ;;
    status) cluster_status ;;
    url) node_url 1 ;;
    stop-node)
      check_node_number "${2:-}"
      require_root
      mkdir -p "$CACHE"
      exec 8>"$CLUSTER_LOCK"
      flock 8
      local t0=$SECONDS
      stop_node "$2"
      echo "rabbitmq.sh: cluster node $2 stopped in $((SECONDS - t0)) s" >&2
      ;;
    start-node)
      check_node_number "${2:-}"
      start_nodes "$2"
      node_url "$2"
      ;;
    streams)
      check_node_number "${2:-}"
      require_root
      node_running "$2" || die "cluster: node $2 is not running"
      local n=$2
      shift 2
      in_node "$n" /usr/lib/rabbitmq/bin/rabbitmq-streams "$@"
      ;;
    ctl)
      check_node_number "${2:-}"
      require_root
      node_running "$2" || die "cluster: node $2 is not running"
      local n=$2
      shift 2
      in_node "$n" rabbitmqctl "$@"
      ;;
    *) usage ;;
  esac
}

case "${1:-}" in
  cluster)
    shift
    cluster "$@"
    ;;
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
