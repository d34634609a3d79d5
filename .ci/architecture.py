#!/usr/bin/env python3
"""The architecture is described once, in mcp-proto's crate docs (mcp-proto/src/lib.rs): its
two tables name every module of the crate and every part of `operation/`. This check fails
when a named module does not exist, or a module exists that the map does not name, so the map
cannot drift from the code. It also holds two bounds that keep the crate readable: its root
re-exports at most ROOT_NAMES names (the rest have one path, under a module), and no file of
mcp-proto/src is over FILE_LINES lines."""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "mcp-proto" / "src"
ROOT_NAMES = 45
FILE_LINES = 600
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


def root_names(text):
    """The names the crate root re-exports (`pub use a::b;` and `pub use a::{b, c};`)."""
    names = []
    for used in re.findall(r"^pub use ([^;]+);", text, re.M | re.S):
        inner = used[used.index("{") + 1 : used.rindex("}")] if "{" in used else used
        names += [name for name in inner.split(",") if name.strip()]
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
    names = root_names((ROOT / "lib.rs").read_text())
    if len(names) > ROOT_NAMES:
        problems.append(f"lib.rs re-exports {len(names)} names at the root (at most {ROOT_NAMES})")
    for path in sorted(ROOT.rglob("*.rs")):
        lines = len(path.read_text().splitlines())
        if lines > FILE_LINES:
            problems.append(f"{path.relative_to(ROOT)} has {lines} lines (at most {FILE_LINES})")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print(
        f"the map names {len(crate)} modules and {len(parts)} parts of operation/, as they are;"
        f" the root re-exports {len(names)} names; no file is over {FILE_LINES} lines"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
