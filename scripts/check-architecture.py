#!/usr/bin/env python3
"""Checks docs/architecture.md against the tree: the map must name what exists.

    python3 scripts/check-architecture.py [docs/architecture.md]

- every file the page names in backticks (`Records.swift`, `HeraldStore/Records.swift`,
  `scripts/bench.sh`, `docs/device-events.schema.json`) exists: a path is looked up from the
  repository, `Sources/` and `Tests/`; a bare file name must exist somewhere under them;
- every folder of the folder walk (the code blocks: `Sources/HeraldGateway/` then its indented
  `ProviderPort/`, `Gateway.swift`) exists where the walk puts it;
- every folder inside a target (`Sources/<target>/<folder>/`) is in the walk, so that a folder
  added or renamed without the map fails CI;
- every target under `Sources/` is in the targets table.

Exits 1 naming each mismatch, 0 when the page and the tree agree.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILE_SUFFIXES = (".swift", ".py", ".sh", ".md", ".json", ".yaml", ".yml", ".mustache", ".css", ".js", ".service", ".socket")
SEARCH_ROOTS = [ROOT, ROOT / "Sources", ROOT / "Tests", ROOT / "docs"]
IGNORED_DIRS = {".build", ".git", ".swiftpm", "node_modules"}


def all_files():
    for path in ROOT.rglob("*"):
        if path.is_file() and not IGNORED_DIRS.intersection(path.relative_to(ROOT).parts):
            yield path


def named_files(text):
    """File names and paths the page writes in backticks."""
    names = set()
    for token in re.findall(r"`([^`\s]+)`", text):
        token = token.strip("()")
        if token.endswith(FILE_SUFFIXES) and not token.startswith(("http", "--", "/")) and "*" not in token and "<" not in token:
            names.add(token)
    return names


def folder_walk(text):
    """(folder or file path, line) pairs from the code blocks' walk of Sources/."""
    entries = []
    for block in re.findall(r"```\n(.*?)```", text, re.S):
        current = None
        for line in block.splitlines():
            top = re.match(r"^(Sources/[A-Za-z]+/)(\S*)", line)
            if top:
                current = top.group(1)
                entries.append((current + top.group(2), line.strip()))
                continue
            if re.match(r"^(packaging|scripts|Tests|docs)/", line):
                current = None
                entries.append((line.split()[0], line.strip()))
                continue
            nested = re.match(r"^  (\S+)", line)
            if current and nested and (nested.group(1).endswith("/") or nested.group(1).endswith(".swift")):
                # a folder or file of the current target; continuation lines of a description
                # are indented further than two spaces.
                if len(line) - len(line.lstrip(" ")) == 2:
                    entries.append((current + nested.group(1), line.strip()))
    return entries


def main():
    page = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "architecture.md"
    text = page.read_text()
    problems = []
    basenames = {}
    for path in all_files():
        basenames.setdefault(path.name, []).append(path)

    for name in sorted(named_files(text)):
        if "/" in name:
            if not any((root / name).exists() for root in SEARCH_ROOTS) and not any(
                str(p.relative_to(ROOT)).endswith("/" + name) for p in basenames.get(name.rsplit("/", 1)[-1], [])
            ):
                problems.append(f"names `{name}`, which is not in the tree")
        elif name not in basenames:
            problems.append(f"names `{name}`, which no file in the tree is called")

    walked = set()
    for path, line in folder_walk(text):
        walked.add(path.rstrip("/"))
        if not (ROOT / path).exists():
            problems.append(f"the folder walk names {path} ({line!r}), which does not exist")

    sources = ROOT / "Sources"
    for target in sorted(p for p in sources.iterdir() if p.is_dir()):
        if f"`{target.name}`" not in text:
            problems.append(f"the target {target.name} is not in the targets table")
        for folder in sorted(p for p in target.iterdir() if p.is_dir()):
            relative = str(folder.relative_to(ROOT))
            if relative not in walked and folder.name not in ("Generated", "Resources"):
                problems.append(f"{relative}/ is not in the folder walk")

    for problem in problems:
        print(f"docs/architecture.md: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"docs/architecture.md agrees with the tree ({len(named_files(text))} files named, {len(walked)} walk entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
