#!/usr/bin/env bash
# CI: run the README's first command literally, as a new user would: a fresh venv, a fresh frog-gym cache,
# a copy of the checkout (its leaderboard gets written), time-bounded. Prints the wall time and the load.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cmd="$(sed -n 's/^    \(pip install -e \. && frog-gym setup .*\)$/\1/p' "$root/README.md" | head -1)"
if [ -z "$cmd" ]; then echo "ci: the README's first command (pip install -e . && frog-gym setup ...) is missing"; exit 1; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/repo"
(cd "$root" && git ls-files -z | xargs -0 cp --parents -t "$work/repo")
python3 -m venv "$work/venv"
export VIRTUAL_ENV="$work/venv" PATH="$work/venv/bin:$PATH" FROG_GYM_HOME="$work/home"
cd "$work/repo"
echo "ci: README command 1: $cmd"
start=$(date +%s)
rc=0; timeout "${FIRST_RUN_TIMEOUT:-600}" bash -c "$cmd" || rc=$?
echo "ci: README command 1 exited $rc after $(( $(date +%s) - start )) s (load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores)"
exit "$rc"
