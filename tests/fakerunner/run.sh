#!/bin/bash
# A STAND-IN for actions/runner's run.sh, for the runner supervisor's tests only (the real
# runner cannot be downloaded here): it starts bin/Runner.Listener as run.sh does, and maps its
# exit codes as the real run-helper.sh does for the ones the stand-in uses (1, terminated: 0).
DIR="$(cd -P "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$DIR"/bin/Runner.Listener run "$@"
rc=$?
[ "$rc" -eq 1 ] && exit 0
exit "$rc"
