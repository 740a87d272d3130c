#!/usr/bin/env bash
# A Docker engine for the compose test (tests/compose), on a machine that has none running:
# Debian's docker.io started by hand (no systemd), its state kept outside the checkout so
# that images built once (stand-in base images, pip layers) serve every later run and
# every fresh clone on the same machine.
#
#   engine.sh preflight        exit 3 with the reason on stdout if no engine can start here
#   engine.sh start OWNER_PID  install docker.io + debootstrap if missing, start dockerd, build
#                              the Debian base image once; dockerd is stopped by its PID when
#                              OWNER_PID exits, whatever happened (a watchdog), or by `stop`
#   engine.sh stop             stop dockerd by its PID and wait for it
#
# LEDGERLET_DOCKER_HOME (default /var/lib/ledgerlet-docker) holds dockerd's data and the
# lock that keeps two runs on one machine from sharing an engine; /run/ledgerlet-docker
# its socket, PID file and exec root. Only one such engine runs on a machine at a time.
set -euo pipefail

HOME_DIR=${LEDGERLET_DOCKER_HOME:-/var/lib/ledgerlet-docker}
RUN_DIR=${LEDGERLET_DOCKER_RUN:-/run/ledgerlet-docker}
SOCK="$RUN_DIR/docker.sock"
PIDFILE="$RUN_DIR/dockerd.pid"
LOG="$HOME_DIR/dockerd.log"
BASE_IMAGE=${LEDGERLET_BASE_IMAGE:-localhost/ledgerlet-standin/debian:bookworm}
export DOCKER_HOST="unix://$SOCK"

say() { printf 'engine: %s\n' "$*" >&2; }

preflight() {
  [ "$(uname -s)" = Linux ] || { echo "not Linux: Debian's docker.io engine is started by hand here"; exit 3; }
  [ "$(id -u)" = 0 ] || { echo "not root: starting a Docker engine by hand needs root"; exit 3; }
  [ -r /etc/debian_version ] && command -v apt-get >/dev/null \
    || { echo "not Debian: the engine and base images come from Debian's packages (docker.io, debootstrap)"; exit 3; }
  grep -qw overlay /proc/filesystems \
    || modprobe overlay 2>/dev/null \
    || { echo "the kernel has no overlay filesystem for the engine's images"; exit 3; }
  [ -d /sys/fs/cgroup ] || { echo "no cgroup filesystem at /sys/fs/cgroup for containers"; exit 3; }
  local caps; caps=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
  (( (16#${caps:-0} >> 21) & 1 )) || { echo "no CAP_SYS_ADMIN (an unprivileged container?): the engine cannot create containers"; exit 3; }
}

install() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing ${missing[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

alive() { [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

stop() {
  alive || { rm -f "$PIDFILE"; return 0; }
  local pid; pid=$(cat "$PIDFILE")
  # only ever a dockerd of ours: its command line names our socket
  if ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$SOCK"; then
    say "PID $pid is not our dockerd (a stale PID file): left alone"; rm -f "$PIDFILE"; return 0
  fi
  kill "$pid"
  for _ in $(seq 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  if kill -0 "$pid" 2>/dev/null; then say "dockerd $pid did not stop in 30s: SIGKILL"; kill -9 "$pid"; fi
  rm -f "$PIDFILE"
  say "dockerd ($pid) stopped"
}

start() {
  local owner=${1:?owner PID}
  ( preflight ) >/dev/null || { preflight; exit 3; }  # (a subshell: preflight exits where it fails)
  install
  mkdir -p "$HOME_DIR/data" "$RUN_DIR"
  stop  # a dockerd a killed run left behind
  # published ports without an address bind to 127.0.0.1, never to every interface
  setsid dockerd \
    --host "unix://$SOCK" --pidfile "$PIDFILE" \
    --data-root "$HOME_DIR/data" --exec-root "$RUN_DIR/exec" \
    --exec-opt native.cgroupdriver=cgroupfs --ip 127.0.0.1 \
    >>"$LOG" 2>&1 </dev/null &
  local pid=$!
  for _ in $(seq 120); do
    docker version >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { say "dockerd exited at start; its log ends:"; tail -20 "$LOG" >&2; exit 1; }
    sleep 0.25
  done
  docker version >/dev/null 2>&1 || { say "dockerd did not answer in 30s"; tail -20 "$LOG" >&2; kill "$pid"; exit 1; }
  # whatever happens to the caller (even SIGKILL), the engine does not outlive it
  # (it kills only a process whose command line still names our socket: never a reused PID)
  setsid bash -c 'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done
                  tr "\0" " " <"/proc/$2/cmdline" 2>/dev/null | grep -q -- "$3" && kill "$2"' \
    watchdog "$owner" "$pid" "$SOCK" >/dev/null 2>&1 </dev/null &
  say "dockerd ($pid) answers on $SOCK"
  prune_if_large
  base_image
}

prune_if_large() {
  # every rebuild after a change leaves its old layers behind as build cache; past a
  # bound, start afresh (the next build is a cold one) rather than fill the disk
  local gib; gib=$(du -s -BG "$HOME_DIR/data" 2>/dev/null | cut -f1 | tr -d G)
  if [ "${gib:-0}" -gt "${LEDGERLET_DOCKER_MAX_GIB:-20}" ]; then
    say "engine data is ${gib} GiB: removing every image and build cache"
    docker system prune --all --force >/dev/null
  fi
}

base_image() {
  # a minimal Debian bookworm, from the mirror apt already uses: every stand-in starts from it
  docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 && return 0
  local mirror security rootfs
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$mirror" ] || { say "no Debian mirror in apt's sources"; exit 1; }
  security=$(awk '/^URIs:/{print $2}' /etc/apt/sources.list.d/debian.sources 2>/dev/null | grep security | head -1 || true)
  rootfs=$(mktemp -d "$HOME_DIR/rootfs.XXXXXX")
  say "building $BASE_IMAGE with debootstrap from $mirror (once per machine)"
  if ! debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$HOME_DIR/debootstrap.log" 2>&1; then
    say "debootstrap failed; its log ends:"; tail -20 "$HOME_DIR/debootstrap.log" >&2; rm -rf "$rootfs"; exit 1
  fi
  { echo "deb $mirror bookworm main"
    echo "deb $mirror bookworm-updates main"
    [ -z "$security" ] || echo "deb $security bookworm-security main"; } >"$rootfs/etc/apt/sources.list"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import -c 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$rootfs"
}

case "${1:-}" in
  preflight) preflight ;;
  start) start "${2:-}" ;;
  stop) stop ;;
  *) echo "usage: $0 preflight | start OWNER_PID | stop" >&2; exit 2 ;;
esac
