#!/usr/bin/env python3
"""Seed corpora for the fuzz targets over text from outside the process (scripts/fuzz.sh calls it):

    python3 scripts/fuzz-seeds.py jinja|jsonreader|jsonschema|guidedpattern|bytepair FOLDER

Seeds come from the project's own fixtures (real chat templates, the Jinja snippets, tokenizer
texts) plus a few hand-written inputs for the features each parser has; one file per seed, named
by its SHA-1 as libFuzzer names its own, so that writing them again changes nothing.
"""
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GENERATION = ROOT / "Fixtures" / "generation"


def jinja():
    sources = json.loads((GENERATION / "chat-template-sources.json").read_text())
    for template in sources["templates"]:
        yield template["source"]
    for snippet in json.loads((GENERATION / "chat-templates-jinja.json").read_text())["snippets"]:
        yield snippet["source"]
    # What hostile templates try: long loops, deep recursion, huge strings.
    yield "{% for i in range(1000000000) %}x{% endfor %}"
    yield "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"
    yield "{{ 'a' * 1000000000 }}"
    yield "{% set ns = namespace(s='a') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}"


def jsonreader():
    yield from [
        '{"a": [1, -2.5e+3, true, false, null, "\\u00e9\\ud83d\\ude00\\n"], "b": {"c": {}}, "a": 0}',
        "[[[[[[[[[[]]]]]]]]]]",
        '"\\"\\\\\\/\\b\\f\\n\\r\\t"',
        "  -0.0e-0  ",
        '{"k": "\u2028\u2029"}',
    ]
    for name in ("tool-formats.json", "tiny-qwen2.json"):
        text = (GENERATION / name).read_text()
        if len(text.encode()) <= 65536:
            yield text


def jsonschema():
    yield from [
        '{"type": "object", "properties": {"city": {"type": "string", "description": "A city"}, '
        '"days": {"type": "integer", "minimum": 1, "maximum": 14}}, "required": ["city"], '
        '"additionalProperties": false}',
        '{"type": "array", "items": {"type": "number", "exclusiveMinimum": 0}, "minItems": 1, "maxItems": 3}',
        '{"type": "string", "enum": ["a", "b", "c"]}',
        '{"type": "string", "pattern": "^[A-Z][a-z]{2,10}$"}',
        '{"anyOf": [{"type": "string"}, {"type": "null"}]}',
        '{"$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}, '
        '"$ref": "#/$defs/Node"}',
        '{"type": "object", "properties": {"kind": {"const": "x"}, "tags": {"type": "array", '
        '"items": {"type": "string"}}}, "required": ["kind", "tags"]}',
        '{"type": "boolean"}',
    ]


def guidedpattern():
    pairs = [
        ("[A-Z][a-z]{2,10}", "Paris"),
        ("\\d{3}-\\d{4}", "555-1234"),
        ("(?:ab|cd)*e?", "abcdab"),
        ("[^\\s,]+(,[^\\s,]+)*", "a,b,c"),
        ("\\u00e9+|\\x41{2,}", "éé"),
        ("(?<year>\\d{4})-(0[1-9]|1[0-2])", "2026-12"),
        ("^.{0,40}$", "any line at all"),
        ("a{1000}", "a"),
    ]
    for pattern, text in pairs:
        yield pattern + "\0" + text


def bytepair():
    tokenizer = json.loads((GENERATION / "tokenizer.json").read_text())
    for case in tokenizer["cases"]:
        if case["text"]:
            yield case["text"]


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("jinja", "jsonreader", "jsonschema", "guidedpattern", "bytepair"):
        print(__doc__, file=sys.stderr)
        return 2
    folder = Path(sys.argv[2])
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for seed in globals()[sys.argv[1]]():
        data = seed.encode("utf-8")
        (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
        count += 1
    print(f"{count} seeds for {sys.argv[1]} in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
