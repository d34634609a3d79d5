#!/usr/bin/env python3
"""Lists import cycles between the modules (files) of each library crate in the workspace.

A module here is a source file: `src/a.rs` or `src/a/mod.rs` is `a`, `src/a/b.rs` is `a::b`.
An edge `m -> n` is any path `crate::n...` (or `super::...`/`self::...` resolved to `n`) written
in `m` outside its `#[cfg(test)]` module, in `use` items and in expressions alike. A module's own
children and its parent do not count (a parent declares its children; a child may name its
parent's items), so the cycles left are between siblings and cousins: the ones that mean two
files cannot be read, tested or moved apart. Exits 1 and prints each cycle when there is one.

    .ci/module-cycles.py [CRATE_DIR...]   (default: every crate with a src/lib.rs)
"""
import os
import re
import sys

PATH = re.compile(r"\b(crate|super|self)((?:::[a-z_][a-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super|self)::\{([^;]*)\}", re.S)


def modules(src):
    mods = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            if rel and rel[0] == "bin":
                continue
            mods["::".join(rel)] = path
    return mods


def strip_tests(text):
    # Drop `#[cfg(test)] mod ... { ... }` blocks (brace-matched) and comments.
    text = re.sub(r"//[^\n]*", "", text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def resolve(mod, anchor, rest, known):
    parts = mod.split("::") if mod else []
    if anchor == "crate":
        base = []
    elif anchor == "super":
        base = parts[:-1]
    else:
        base = parts
    segs = [s for s in rest.split("::") if s]
    while segs and segs[0] == "super":
        base = base[:-1]
        segs = segs[1:]
    # The longest known module the path names.
    best = None
    for k in range(len(segs), 0, -1):
        cand = "::".join(base + segs[:k])
        if cand in known:
            best = cand
            break
    return best


def edges(mods):
    graph = {m: set() for m in mods}
    for mod, path in mods.items():
        text = strip_tests(open(path, encoding="utf-8").read())
        paths = [(a, r) for a, r in PATH.findall(text)]
        for anchor, group in USE_GROUP.findall(text):
            for item in re.split(r"[,{}\s]+", group):
                item = item.strip()
                if item and item not in ("self",):
                    paths.append((anchor, "::" + item.split("::")[0]))
        for anchor, rest in paths:
            target = resolve(mod, anchor, rest, mods)
            if not target or target == mod:
                continue
            # A parent and its descendants: declared, not imported.
            if target.startswith(mod + "::") or mod.startswith(target + "::") or (mod and not target):
                continue
            if target == "":
                continue
            graph[mod].add(target)
    return graph


def cycles(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    crates = sys.argv[1:] or sorted(
        d for d in os.listdir(top) if os.path.isfile(os.path.join(top, d, "src", "lib.rs"))
    )
    found = 0
    for crate in crates:
        src = os.path.join(top, crate, "src")
        mods = modules(src)
        for comp in cycles(edges(mods)):
            found += 1
            print(f"{crate}: import cycle between {', '.join(comp)}")
    if found:
        sys.exit(1)
    print(f"module-cycles: no import cycle in {len(crates)} crates")


main()
