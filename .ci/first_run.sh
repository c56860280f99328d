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
git init -q && git add -A && git -c user.name=ci -c user.email=ci@localhost commit -qm "the checkout as CI got it"
echo "ci: README command 1: $cmd"
start=$(date +%s)
rc=0; timeout "${FIRST_RUN_TIMEOUT:-600}" bash -c "$cmd" || rc=$?
echo "ci: README command 1 exited $rc after $(( $(date +%s) - start )) s (load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores)"
# It may write its run folder and the leaderboard it is documented to write; it may delete or touch nothing else.
others="$(git status --porcelain | grep -v -E '^\?\? runs/|^ M leaderboard/(README\.md|index\.html|plots/)|^\?\? leaderboard/(results|plots)/' || true)"
if [ -n "$others" ]; then echo "ci: README command 1 changed files it does not document:"; echo "$others"; rc=1; fi
exit "$rc"
