#!/usr/bin/env bash
# Regenerates the provider API's Swift code from its spec, Sources/HeraldProviderAPI/openapi.yaml
# (the source of truth). Run it after editing the spec and commit what it writes:
#   Sources/HeraldProviderAPI/Generated/Types.swift, Server.swift   (swift-openapi-generator)
#   Sources/HeraldProviderAPI/Generated/OpenAPIDocument.swift        (the spec itself, as YAML and as JSON,
#                                                                     the server checks requests against)
# The generator is built once into .build/openapi-generator (about 2 minutes the first time).
# The build does not run the generator: the generated code is committed, so building Herald does
# not pay for it. `scripts/generate-openapi.sh --check` (CI runs it) generates into a temporary
# directory and fails when the committed code differs: someone edited the spec and forgot.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
api=Sources/HeraldProviderAPI
version=1.14.3
tool=.build/openapi-generator
if [ ! -x "$tool/.build/release/swift-openapi-generator" ]; then
  mkdir -p "$tool"
  cat > "$tool/Package.swift" <<SWIFT
// swift-tools-version: 6.0
import PackageDescription
let package = Package(name: "openapi-generator-tool", dependencies: [
    .package(url: "https://github.com/apple/swift-openapi-generator.git", exact: "$version"),
], targets: [])
SWIFT
  (cd "$tool" && swift build -c release --product swift-openapi-generator)
fi
python3 -c 'import yaml' 2>/dev/null || python3 -m pip install -q --disable-pip-version-check pyyaml
out="$api/Generated"
[ "${1:-}" = --check ] && out=$(mktemp -d /tmp/herald-openapi.XXXXXX)
"$tool/.build/release/swift-openapi-generator" generate "$api/openapi.yaml" \
  --config "$api/openapi-generator-config.yaml" --output-directory "$out" >/dev/null
# The generator writes `public import` for every module each file might need; a file that does not
# use one gets a warning from Swift 6.3 (the generator's `@diagnose(..., as: ignored)` only applies
# from 6.4). A plain `import` is what Swift 6 mode treats as public anyway, and it does not warn,
# so the imports are rewritten here (the check below rewrites its copy the same way) instead of
# silencing the compiler for the whole target.
sed -i -E 's/^(@_spi\(Generated\) )?public import /\1import /' "$out"/*.swift
python3 "$root/scripts/openapi-document.py" "$api/openapi.yaml" > "$out/OpenAPIDocument.swift"
if [ "${1:-}" = --check ]; then
  if ! diff -r "$out" "$api/Generated"; then
    echo "the committed $api/Generated is not what $api/openapi.yaml generates: run scripts/generate-openapi.sh and commit" >&2
    exit 1
  fi
  echo "$api/Generated is current with $api/openapi.yaml"
else
  echo "generated $api/Generated from $api/openapi.yaml"
fi
