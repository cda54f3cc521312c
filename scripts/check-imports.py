#!/usr/bin/env python3
"""Package.swift's dependency lists against the modules' imports: every module of this package that
a target's Swift files import is among its dependencies, and every dependency is imported by at
least one of its files (or is one of the few listed below, with the reason). Run from the repository
root; CI runs it. Exit 1 with one line per mismatch.

    python3 scripts/check-imports.py
"""
import re
import sys

import package_manifest

# Dependencies that no file imports, on purpose.
NOT_IMPORTED = {
    # The CLI tests run these executables as child processes; listed so that they are built.
    ("CLITests", "CrashSafetyChild"): "built for CrashSafetyTests' child process",
    ("CLITests", "KernelCheckChild"): "built for InfoCommandTests' child process",
}

IMPORT = re.compile(
    r"^\s*(?:@testable\s+|@_exported\s+|package\s+|public\s+|internal\s+|@preconcurrency\s+)*import\s+"
    r"(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
    re.MULTILINE)


def main():
    root, package = package_manifest.load()
    targets = {t["name"]: t for t in package["targets"]}
    problems = []
    for name, target in sorted(targets.items()):
        if target["type"] == "system":
            continue
        folder = package_manifest.folder(root, target)
        sources = sorted(folder.rglob("*.swift"))
        if not sources:
            continue  # a C target
        declared = set()
        for dependency in target.get("dependencies", []):
            for kind in ("byName", "target"):
                if kind in dependency:
                    declared.add(dependency[kind][0])
        imported = {}
        for file in sources:
            text = file.read_text(encoding="utf-8")
            # Comments are not imports.
            text = re.sub(r"//[^\n]*", "", text)
            for module in IMPORT.findall(text):
                if module in targets and module != name:
                    imported.setdefault(module, file.relative_to(root))
        for module, file in sorted(imported.items()):
            if module not in declared:
                problems.append(f"{name}: {file} imports {module}, which is not among its dependencies")
        for module in sorted(declared - set(imported)):
            if (name, module) not in NOT_IMPORTED:
                problems.append(f"{name}: depends on {module}, which none of its files imports")
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} mismatches between Package.swift and the imports", file=sys.stderr)
        return 1
    print(f"Package.swift's dependencies match the imports of {len(targets)} targets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
