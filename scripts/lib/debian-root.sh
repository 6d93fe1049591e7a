# Shared by scripts/rabbitmq.sh and scripts/postgres.sh (sourced, not run): a Debian trixie
# root folder built once with debootstrap, servers run in a chroot into it, and the processes
# of one server found by the root they run in and the STREAM_WINDOWS_INSTANCE tag in their
# environment. The sourcing script defines die().

# Whether something accepts TCP connections on 127.0.0.1:$1.
port_answers() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Pids of processes whose root is the folder $1 (found via /proc/PID/root, so that a server
# installed on the host is never touched) and whose STREAM_WINDOWS_INSTANCE tag matches the
# glob $2; a process without the tag counts as tagged $3.
tagged_pids() {
  local pid var tag
  local -a env
  for pid in /proc/[0-9]*; do
    [[ $pid/root -ef $1 ]] || continue
    # A process may exit between the listing and the read: the shell's redirection error too.
    { mapfile -d '' env <"$pid/environ"; } 2>/dev/null || continue
    tag=$3
    for var in "${env[@]}"; do
      [[ $var == STREAM_WINDOWS_INSTANCE=* ]] && tag=${var#*=}
    done
    # shellcheck disable=SC2053 # $2 is a glob
    [[ $tag == $2 ]] && echo "${pid#/proc/}"
  done
  return 0
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

# Builds the root folder $1: Debian trixie (minbase) with the packages $2 (comma-separated)
# from the mirror $3, debootstrap's output in the log $4, then the function $5 run with the
# build folder as argument (the server's own set-up). Built beside $1 and renamed when
# complete, so an interrupted build never looks cached. The caller holds a lock, so no other
# build of $1 is running.
build_debian_root() {
  local root=$1 packages=$2 mirror=$3 log=$4 prepare=$5 cache
  cache=$(dirname "$root")
  mkdir -p "$cache"
  if ! command -v debootstrap >/dev/null; then
    # A fresh machine has no debootstrap: install it from Debian's packages (we are root). The
    # broker's and the database's builds run at once on a fresh machine: one installs, the
    # other waits for it (apt-get refuses to run twice).
    (
      flock 7
      command -v debootstrap >/dev/null && exit 0
      echo "installing debootstrap (once)" >&2
      { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap; } \
        >"$cache/apt.log" 2>&1 || die "installing debootstrap failed; see $cache/apt.log"
    ) 7>"$cache/apt.lock" || exit 1
  fi
  # Builds interrupted by a kill leave their folder behind; none is still being written.
  local stale
  for stale in "$root".building.*; do
    [[ -d $stale ]] && discard "$stale"
  done
  BUILD_DIR=$(mktemp -d "$root.building.XXXXXX")
  # mktemp makes it 0700; as the chroot's /, the server's own user must be able to enter it.
  chmod 755 "$BUILD_DIR"
  trap 'discard "$BUILD_DIR"' EXIT
  debootstrap --variant=minbase --include="$packages" trixie "$BUILD_DIR" "$mirror" >"$log" 2>&1 ||
    die "debootstrap failed; see $log"
  unmount_below "$BUILD_DIR"
  printf '127.0.0.1 localhost\n::1 localhost\n' >"$BUILD_DIR/etc/hosts"
  "$prepare" "$BUILD_DIR"
  mv "$BUILD_DIR" "$root"
  trap - EXIT
}
