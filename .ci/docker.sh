#!/usr/bin/env bash
# Start or stop a private Docker engine for the docker backend's tests.
#
#   bash .ci/docker.sh start   # installs docker.io if missing, starts dockerd, waits, builds the base image;
#                              # prints `export DOCKER_HOST=...` (also written to $FROG_DOCKER_DIR/env)
#   bash .ci/docker.sh stop    # stops that dockerd by its PID and unmounts what it left mounted
#
# No registry is reachable here, so images are built locally (frog-gym docker build). The engine runs
# without a bridge or iptables (task containers have no network anyway). Storage: overlay2, else vfs.
set -euo pipefail

DIR=${FROG_DOCKER_DIR:-/var/lib/frog-gym-docker}
EXEC=${FROG_DOCKER_EXEC:-/run/frog-gym-docker}
SOCK="$EXEC/docker.sock"
PIDFILE="$EXEC/dockerd.pid"
LOG="$DIR/dockerd.log"
HOST="unix://$SOCK"

answers() { DOCKER_HOST="$HOST" timeout 5 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start_with() {  # storage driver
  mkdir -p "$DIR/data" "$EXEC"
  # A new session: dockerd's own setsid keeps it alive after this script, and it never holds our stdout.
  setsid dockerd --data-root "$DIR/data" --exec-root "$EXEC/exec" -H "$HOST" --pidfile "$PIDFILE" \
    --storage-driver="$1" --iptables=false --ip-forward=false --bridge=none >>"$LOG" 2>&1 </dev/null &
  for _ in $(seq 1 120); do
    answers && return 0
    kill -0 "$!" 2>/dev/null || return 1
    sleep 0.25
  done
  return 1
}

stop() {
  if [[ -f "$PIDFILE" ]]; then
    pid=$(cat "$PIDFILE")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 80); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
  fi
  # Mounts the engine left behind (overlay layers, shm, netns), deepest first.
  awk -v d="$DIR/data" -v e="$EXEC" '$2 ~ "^"d || $2 ~ "^"e {print $2}' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
}

case "${1:-}" in
  start)
    mkdir -p "$DIR"
    if ! answers; then
      if ! command -v dockerd >/dev/null; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
          docker.io containerd runc) >"${TMPDIR:-/tmp}/frog-docker-apt.log" 2>&1 ||
          { echo "docker.sh: could not install docker.io (see ${TMPDIR:-/tmp}/frog-docker-apt.log)" >&2; exit 1; }
      fi
      stop
      if ! start_with overlay2; then
        echo "docker.sh: dockerd did not start with overlay2; trying vfs (see $LOG)" >&2
        stop
        start_with vfs || { echo "docker.sh: dockerd did not start (last lines of $LOG):" >&2; tail -n 20 "$LOG" >&2; exit 1; }
      fi
    fi
    echo "export DOCKER_HOST=$HOST" >"$DIR/env"
    # Built here once, so tests find a cache hit; frog-gym builds it on first use otherwise.
    DOCKER_HOST="$HOST" python -m frog_gym.cli docker build --base >&2 ||
      echo "docker.sh: the base image was not built now (frog-gym or its docker extra missing?); tests build it" >&2
    echo "export DOCKER_HOST=$HOST"
    ;;
  stop)
    stop
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
