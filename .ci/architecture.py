#!/usr/bin/env python3
"""The architecture is described once, in mcp-proto's crate docs (mcp-proto/src/lib.rs): its
two tables name every module of the crate and every part of `operation/`. This check fails
when a named module does not exist, or a module exists that the map does not name, so the map
cannot drift from the code."""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "mcp-proto" / "src"
ROW = re.compile(r"^//! \| \[?`([a-z_]+)`\]?")


def table(lines, heading):
    """The module names in the first column of the table under `heading`."""
    names, inside = [], False
    for line in lines:
        if line.startswith("//! ##"):
            inside = line.strip() == f"//! ## {heading}"
            continue
        match = ROW.match(line) if inside else None
        if match:
            names.append(match.group(1))
    return names


def main():
    lines = (ROOT / "lib.rs").read_text().splitlines()
    crate = table(lines, "The crate, by module")
    parts = table(lines, "The operation's parts (`operation/`)")
    problems = []
    if not crate or not parts:
        problems.append("lib.rs: the two tables of the architecture were not found")
    modules = {p.stem for p in ROOT.glob("*.rs") if p.stem != "lib"}
    modules |= {p.parent.name for p in ROOT.glob("*/mod.rs")}
    operation = {p.stem for p in (ROOT / "operation").glob("*.rs") if p.stem != "mod"}
    for name in crate:
        if name not in modules:
            problems.append(f"the map names module `{name}`, which mcp-proto/src does not have")
    for name in parts:
        if name not in operation:
            problems.append(f"the map names part `{name}`, which operation/ does not have")
    for name in sorted(modules - set(crate)):
        problems.append(f"module `{name}` of mcp-proto/src is not in the crate docs' map")
    for name in sorted(operation - set(parts)):
        problems.append(f"part `{name}` of operation/ is not in the crate docs' map")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print(f"the map names {len(crate)} modules and {len(parts)} parts of operation/, as they are")
    return 0


if __name__ == "__main__":
    sys.exit(main())
