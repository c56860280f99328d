#!/usr/bin/env bash
# Re-pin one repository's training snapshot before its oldest FrogLive fix and rebuild its training pool
# on it (the time split of docs/froglive.md): spec, generated tasks, oracles, graded verdicts.
#   .ci/repin.sh REPO [VERSION]    (resumable: each step skips what is already done)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$1; version=${2:-}
# The re-pin itself runs once: after it the pool file is gone until generation writes it again.
if [ -z "${SKIP_REPIN:-}" ]; then python -m frog_gym.generators.repin "$repo" $version --write; fi
frog-gym generate "$repo" --max-tasks "${MAX_TASKS:-60}" --workers "${WORKERS:-2}" --no-progress
frog-gym oracle record --repo "$repo"
ids=$(python -c "import json,sys; print(' '.join(json.loads(l)['instance_id'] for l in open('registry/tasks/$repo.jsonl')))")
python .ci/sample_tasks.py --graded --record docs/revalidation-v4.jsonl --ids $ids || true
# A bug that grading cannot score honestly (e.g. one that makes the package start a process) leaves the pool.
python -m frog_gym.generators.repin "$repo" --drop-failed docs/revalidation-v4.jsonl
