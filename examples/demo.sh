#!/usr/bin/env bash
# The demo: a scripted model fixes a failing Go test in a fresh temporary
# workspace, with every step recorded in a throwaway session database.
set -euo pipefail
cd "$(dirname "$0")/.."
ws=$(mktemp -d)
db=$(mktemp -d)/sessions.db
cp -r examples/scripts/fix-test/. "$ws"
if [ "$(id -u)" = 0 ]; then
	# Sandboxed commands never run as root: as root, the workspace is
	# given to the sandbox user (nobody) so the demo's commands can work.
	chown -R 65534:65534 "$ws"
fi
echo "workspace: $ws"
code=0
go run ./cmd/agentloop run --yes --db "$db" --model script:examples/scripts/fix-test.json --dir "$ws" "Fix the failing test" || code=$?
id=$(go run ./cmd/agentloop sessions list --db "$db" --json | sed -n 's/.*"id": "\([^"]*\)".*/\1/p' | head -1)
go run ./cmd/agentloop sessions show --db "$db" "$id"
exit $code
