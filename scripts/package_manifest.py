"""Package.swift as data, for the scripts that check it (check-imports.py, public-face.py): the
repository root and `swift package dump-package`'s JSON, plus where a target's files are."""
import json
import subprocess
import sys
from pathlib import Path


def load():
    """(root, package): run from the repository root, else exit 2."""
    root = Path.cwd()
    if not (root / "Package.swift").exists():
        print("run from the repository root", file=sys.stderr)
        sys.exit(2)
    dump = subprocess.run(["swift", "package", "dump-package"], check=True, capture_output=True, text=True)
    return root, json.loads(dump.stdout)


def folder(root, target):
    """The folder of a target's sources (its `path:`, else SwiftPM's default)."""
    default = f"{'Tests' if target['type'] == 'test' else 'Sources'}/{target['name']}"
    return root / (target.get("path") or default)
