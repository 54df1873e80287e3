#!/usr/bin/env bash
# tests/cli/flags.sh — every command's flag set against the record in tests/cli/flags.txt: adding or removing a flag is a
# deliberate change, made in that record and in docs/usage.md together.
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
RECORD=$(dirname "$0")/flags.txt
# The commands, from the binary's own list; then "COMMAND --flag" for every flag line of each --help.
"$BIN" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]+ / { print $1 } on && /^$/ { exit }' > "$W/commands"
check "ringgpt --help lists the commands" test "$(wc -l < "$W/commands")" -ge 10
# A command with subcommands (tokenizer) lists them as "  NAME  what"; each has its own --help.
"$BIN" tokenizer --help | awk '/^  [a-z]+ / { print "tokenizer " $1 }' >> "$W/commands"
while read -r c; do
  "$BIN" $c --help | grep -oE '^  --[a-z0-9-]+' | sed "s/^  /$c /" | grep -v -- ' --help$'
done < "$W/commands" > "$W/flags"
if diff -u "$RECORD" "$W/flags" > "$W/diff"; then ok "the flag sets are the recorded ones ($(wc -l < "$RECORD") flags)"
else
  cat "$W/diff"
  bad "the flag sets differ from tests/cli/flags.txt (+ added, - removed): if meant, update that file and docs/usage.md"
fi
check "every flag appears once per command" test -z "$(sort "$W/flags" | uniq -d)"
finish
