"""The package's layout (issue 49): wings stacked as floors, no private name crossing a
module wall, no import circle, and one map of the modules that the docs agree with.

The graph is read from the source (``tests/layout_graph.py``): nothing is imported, and a
function-level import counts like one at the top of a file.
"""

from __future__ import annotations

import re
from pathlib import Path

from layout_graph import ROOT, WINGS, circles, graph, modules, wing

PUBLIC = sorted(m for m in modules()
                if m != "ibp_lab" and not any(p.startswith("_") for p in m.split(".")))


def test_no_private_name_crosses_a_module_boundary():
    _, crossings = graph()
    assert not crossings, "private names taken from another module:\n" + "\n".join(
        f"{importer}:{line} takes {name} from {source}"
        for importer, source, name, line in crossings)


def test_a_module_imports_only_its_own_wing_and_the_floors_below():
    edges, _ = graph()
    upward = [(a, b) for a, targets in edges.items() for b in targets if wing(b) > wing(a)]
    assert not upward, f"imports that run up a floor: {upward}"


def test_a_wings_private_modules_stay_inside_the_wing():
    edges, _ = graph()
    leaks = []
    for importer, targets in edges.items():
        for target in targets:
            parts = target.split(".")
            private_at = [i for i, p in enumerate(parts) if p.startswith("_")]
            # the root's private core (ibp_lab._x) is shared by every wing; a wing's
            # private modules (ibp_lab.inference._x, ...split_merge._y) by that wing alone
            if private_at and private_at[0] >= 2:
                owner = ".".join(parts[:2])
                if not (importer == owner or importer.startswith(owner + ".")):
                    leaks.append((importer, target))
    assert not leaks, f"private modules imported from outside their wing: {leaks}"


def test_the_package_has_no_import_circle():
    edges, _ = graph()
    assert circles(edges) == []


def test_the_tools_have_no_import_circle():
    tools = {p.stem: p for p in (ROOT / "tools").glob("*.py")}
    edges = {name: set() for name in tools}
    for name, path in tools.items():
        for match in re.finditer(r"^\s*(?:from|import) (\w+)", path.read_text(), re.M):
            if match.group(1) in tools and match.group(1) != name:
                edges[name].add(match.group(1))
    assert circles(edges) == []


def test_the_root_holds_only_the_private_core_the_data_and_the_wings():
    top = sorted(p.stem if p.is_file() else p.name for p in (ROOT / "ibp_lab").iterdir()
                 if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.name != "__init__.py")
    public = [name for name in top if not name.startswith("_")]
    assert sorted(public) == sorted(["datasets", *WINGS])


def _named(text: str) -> set[str]:
    return set(re.findall(r"ibp_lab(?:\.\w+)+", text))


def test_each_wing_docstring_names_its_modules():
    for name in WINGS:
        package = f"ibp_lab.{name}"
        doc = (ROOT / "ibp_lab" / name / "__init__.py").read_text()
        own = [m for m in PUBLIC if m.startswith(package + ".") and m.count(".") == 2]
        missing = [m for m in own if m not in _named(doc)]
        assert not missing, f"{package}'s docstring does not name {missing}"


def test_the_api_page_documents_every_public_module_and_no_other():
    page = (ROOT / "book" / "api.md").read_text()
    documented = set(re.findall(r"automodule:: (\S+)", page))
    assert set(PUBLIC) <= documented, sorted(set(PUBLIC) - documented)
    assert documented <= set(modules()), sorted(documented - set(modules()))


def test_the_design_document_names_only_modules_that_exist():
    text = (ROOT / "docs" / "design.md").read_text() + (ROOT / "ibp_lab" / "__init__.py").read_text()
    known = set(modules())
    named = {n for n in _named(text) if n.split(".")[1] in (*WINGS, "datasets")
             or n.split(".")[1].startswith("_")}
    # a dotted name may continue into a function or class: its longest module prefix counts
    unknown = []
    for n in sorted(named):
        parts = n.split(".")
        if not any(".".join(parts[:i]) in known for i in range(len(parts), 1, -1)):
            unknown.append(n)
    assert not unknown, f"names of modules that do not exist: {unknown}"
    for name in WINGS:
        assert f"ibp_lab/{name}/" in text or f"ibp_lab.{name}" in text
