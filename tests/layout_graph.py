"""The package's import graph, read from its source (nothing imported): for the layout tests."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ibp_lab"
#: the wings, lowest first: a module imports the root and its own wing or wings below
WINGS = ("models", "inference", "evaluation", "teaching")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _target(importer: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module
    base = importer.split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(name: str, path: Path, known: dict[str, Path]):
    """Yield (module imported, private name taken or None, line) for every ibp_lab import.

    A private name is one with a single leading underscore that the importer takes from
    another module: by ``from m import _x`` or as ``m._x`` on a module it imported.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ibp_lab"):
                    aliases[a.asname or a.name] = a.name
                    yield a.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = _target(name, path, node)
            if not target or not target.startswith("ibp_lab"):
                continue
            for a in node.names:
                full = f"{target}.{a.name}"
                if full in known:
                    aliases[a.asname or a.name] = full
                    yield full, None, node.lineno
                else:
                    private = a.name if _is_private(a.name) else None
                    yield target, private, node.lineno
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _is_private(node.attr)
                and isinstance(node.value, ast.Name) and node.value.id in aliases):
            yield aliases[node.value.id], node.attr, node.lineno


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def graph():
    """Return (edges: importer -> set of modules, crossings: list of private names taken)."""
    known = modules()
    edges: dict[str, set[str]] = {m: set() for m in known}
    crossings = []
    for name, path in known.items():
        for target, private, line in imports(name, path, known):
            if target == name:
                continue
            # an import of a package's name reaches the package's __init__
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            edges[name].add(target)
            if private:
                crossings.append((name, target, private, line))
    return edges, crossings


def wing(module: str) -> int:
    """The floor of a module: 0 for the root (private core, datasets), 1.. for the wings."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in WINGS:
        return 1 + WINGS.index(parts[1])
    return 0


def circles(edges) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


#: short names the tests' specs keep (the campaign's ``gibbs.gibbs_sweep``) that moved
#: somewhere their wing alone does not say
_RENAMED = {"streaming.recovery": "evaluation.recovery"}


def full_module(short: str) -> str:
    """``ibp_lab``'s module for a short name: ``gibbs`` -> ``ibp_lab.inference.gibbs``."""
    short = _RENAMED.get(short, short)
    known = modules()
    for candidate in [f"ibp_lab.{short}"] + [f"ibp_lab.{w}.{short}" for w in WINGS]:
        if candidate in known:
            return candidate
    raise LookupError(f"no module of ibp_lab is called {short!r}")
