#!/usr/bin/env python3
"""The package's face: how many `public` declarations each module has, and whether every public
declaration of a module that no library product names belongs to a type a product re-exports
(`@_exported import struct Module.Type`). A module no product names is internal: its API is
`package`, and the only public declarations it may hold are those of the few types a product's API
shows. Run from the repository root; CI runs it. Exit 1 with one line per stray declaration.

    python3 scripts/public-face.py             # check, and print the counts
    python3 scripts/public-face.py --markdown  # the table Docs/Architecture.md shows
"""
import re
import sys

import package_manifest

PUBLIC = re.compile(r"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*public\b")
TOP_LEVEL = re.compile(
    r"^(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|private|fileprivate|final|indirect)\s+)*"
    r"(?:struct|class|enum|protocol|extension|actor|typealias|func|let|var)\s+([A-Za-z_][A-Za-z0-9_]*)")
EXPORT = re.compile(
    r"^@_exported\s+import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?"
    r"([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?", re.MULTILINE)


def public_declarations(folder):
    """(file, line number, top-level name the declaration belongs to) for each `public` line."""
    found = []
    for file in sorted(folder.rglob("*.swift")):
        owner = None
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("//"):
                continue
            top = TOP_LEVEL.match(line)
            if top:
                owner = top.group(1)
            if PUBLIC.match(line):
                found.append((file, number, owner))
    return found


def main():
    root, package = package_manifest.load()
    targets = {t["name"]: t for t in package["targets"] if t["type"] == "regular"}
    products = {}
    for product in package["products"]:
        if "library" in product["type"]:
            for target in product["targets"]:
                products.setdefault(target, product["name"])
    folders = {name: package_manifest.folder(root, t) for name, t in targets.items()}

    # What the products re-export: whole modules, or single types of a module.
    whole, types = {}, {}
    for name, product in products.items():
        for file in folders[name].rglob("*.swift"):
            for module, symbol in EXPORT.findall(file.read_text(encoding="utf-8")):
                if symbol:
                    types.setdefault((module, symbol), set()).add(name)
                else:
                    whole.setdefault(module, set()).add(name)

    rows, problems = [], []
    for name in sorted(targets, key=lambda n: (str(folders[n].parent), n)):
        declarations = public_declarations(folders[name])
        if not any(folders[name].rglob("*.swift")):
            continue  # a C target
        layer = folders[name].parent.name
        if name in products:
            rows.append((layer, name, f"product `{products[name]}`", len(declarations), ""))
            continue
        exporters = set()
        for file, number, owner in declarations:
            by = whole.get(name, set()) | types.get((name, owner), set())
            if by:
                exporters |= by
            else:
                problems.append(f"{file.relative_to(root)}:{number}: public in {name}, which no product names "
                                f"and no product re-exports ({owner or 'top level'}); make it package")
        reexported = sorted({owner for _, _, owner in declarations})
        note = (f"{', '.join(f'`{t}`' for t in reexported)} (re-exported by {', '.join(sorted(exporters))})"
                if declarations else "")
        rows.append((layer, name, "internal", len(declarations), note))

    if "--markdown" in sys.argv:
        print("| Layer | Module | Kind | `public` declarations | Public types of an internal module |")
        print("|---|---|---|---:|---|")
        for layer, name, kind, count, note in rows:
            print(f"| {layer} | `{name}` | {kind} | {count} | {note} |")
    else:
        for layer, name, kind, count, note in rows:
            print(f"{layer:12} {name:20} {kind:28} {count:5}  {note}")
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} public declarations in internal modules that no product shows", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
