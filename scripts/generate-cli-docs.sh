#!/usr/bin/env bash
# Regenerates the CLI's man page and shell completions from the commands themselves
# (swift-argument-parser): docs/man/herald.1 (the generate-manual plugin),
# docs/completions/herald.{bash,zsh,fish} (`herald --generate-completion-script`) and the
# configuration reference docs/configuration.md (scripts/configuration-reference.py). Commit what it
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
# The configuration reference: the long-running commands' keys, variables and defaults.
python3 scripts/configuration-reference.py "$HERALD" "$out/configuration.md"
if [ "${1:-}" = --check ]; then
  if ! diff -r "$out/man" docs/man || ! diff -r "$out/completions" docs/completions || ! diff "$out/configuration.md" docs/configuration.md; then
    echo "docs/man, docs/completions and docs/configuration.md are not what the commands generate: run scripts/generate-cli-docs.sh and commit" >&2
    exit 1
  fi
  echo "docs/man, docs/completions and docs/configuration.md are current"
else
  echo "wrote docs/man/herald.1, docs/completions/herald.{bash,zsh,fish} and docs/configuration.md"
fi
