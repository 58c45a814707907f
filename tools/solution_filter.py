"""Sphinx extension of the student editions: the pages without any exercise solution.

Loaded only by the student builds (``tools/editions.py`` adds it to their configuration);
the book's own build never sees it. It works on the parsed pages, not on the sources, so
the chapters keep the code cells the execution cache was keyed on: the student web book
and the student PDF are rendered from the same cached execution as the book, with nothing
run again.

What it removes, right after sphinx-exercise has merged each gated
``{solution-start}`` ... ``{solution-end}`` block into one solution node (its transform
priority is 10, this one's 11):

- every solution node, with all it holds: the worked answer, its code cells and their
  outputs, the key's marking notes, the "rest of a solution" dropdown;
- any code cell tagged ``solution`` that stands outside such a block;
- a gated start or end node left over (a block sphinx-exercise could not merge), so that a
  malformed block loses its fences rather than showing its body.

sphinx-exercise's own ``hide_solutions`` option (1.2.1) does not do this for gated blocks: it
drops only the ``solution-start`` node, so the block's body and its code cells would stay on
the page, and the ``solution-end`` node left alone stops the HTML build ("departing unknown
node type: solution_end_node", tried on a two-block page).
Images inside the removed nodes are never collected (this runs before Sphinx's image
collector), so they are not copied into the site either.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx_exercise.nodes import solution_end_node, solution_node, solution_start_node

#: The class myst-nb gives the container of a code cell tagged ``solution``.
SOLUTION_CELL_CLASS = "tag_solution"
SOLUTION_NODES = (solution_node, solution_start_node, solution_end_node)


def is_solution(node: nodes.Node) -> bool:
    """True for a solution node (merged or not) and for a code cell tagged ``solution``.

    >>> is_solution(solution_node())
    True
    >>> is_solution(nodes.container(classes=["cell", "tag_solution"]))
    True
    >>> is_solution(nodes.container(classes=["cell"]))
    False
    """
    if isinstance(node, SOLUTION_NODES):
        return True
    return isinstance(node, nodes.container) and SOLUTION_CELL_CLASS in node.get("classes", [])


class DropSolutions(SphinxTransform):
    """Remove every solution from the page (see the module docstring)."""

    default_priority = 11  # after sphinx-exercise's MergeGatedSolutions (10)

    def apply(self, **kwargs) -> None:
        for node in list(self.document.findall(is_solution)):
            if node.parent is not None:  # not inside a solution removed already
                node.parent.remove(node)


def setup(app):
    app.add_transform(DropSolutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
