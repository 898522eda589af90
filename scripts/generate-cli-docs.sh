#!/usr/bin/env bash
# Regenerates the CLI's man page and shell completions from the commands themselves
# (swift-argument-parser): docs/man/herald.1 (the generate-manual plugin) and
# docs/completions/herald.{bash,zsh,fish} (`herald --generate-completion-script`). Commit what it
# writes. `scripts/generate-cli-docs.sh --check` (CI runs it) fails when the committed files are
# not what the current commands generate: a flag changed and the docs were not regenerated.
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs
if [ "${1:-}" = --check ]; then out=$(mktemp -d /tmp/herald-cli-docs.XXXXXX); fi
mkdir -p "$out/man" "$out/completions"
swift build --product herald >&2
HERALD=$(swift build --show-bin-path)/herald
# The plugin dates the page; a fixed date keeps the file the same from one run to the next.
swift package --allow-writing-to-package-directory generate-manual --configuration debug \
    --date 2026-11-24 --authors "The Herald authors" >&2
cp .build/plugins/GenerateManual/outputs/herald/herald.1 "$out/man/herald.1"
for shell in bash zsh fish; do "$HERALD" --generate-completion-script "$shell" > "$out/completions/herald.$shell"; done
if [ "${1:-}" = --check ]; then
  if ! diff -r "$out/man" docs/man || ! diff -r "$out/completions" docs/completions; then
    echo "docs/man and docs/completions are not what the commands generate: run scripts/generate-cli-docs.sh and commit" >&2
    exit 1
  fi
  echo "docs/man and docs/completions are current"
else
  echo "wrote docs/man/herald.1 and docs/completions/herald.{bash,zsh,fish}"
fi
