"""Sphinx extension: one source for the chapters, in the web book and in JupyterLab.

1. ``{eval}`` served from glue data. A chapter's prose writes a number as
   ``{eval}`f"{name:spec}"``` (or ``{eval}`f"{name}"``). In JupyterLab,
   ``jupyterlab-myst`` evaluates that expression in the kernel, where
   ``ibp_lab.teaching.lab.quote`` bound ``name``. This build executes through the cache, with
   no kernel left to ask, so this role reads the value the chapter glued under
   ``name`` and formats it as ``{glue:text}`name:spec``` did. Only those two forms
   are accepted; a name that was never glued is myst-nb's glue warning, which ``-W``
   turns into a failed build (a number that no longer exists still fails the book).
2. ``{dropdown}`` with ``:class: ibp-solution-rest``: the rest of a solution after
   its code cells. JupyterLab shows it as a closed ``<details>`` (the student opens
   it); here its body is rendered in place, inside the solution's dropdown, as before.
   Any other ``{dropdown}`` is sphinx-design's, unchanged.
3. ``IBP_LAB_BOOK_BUILD=1`` in the environment, which the kernels this build starts
   inherit: solutions run (``ibp_lab.teaching.lab.skip_solutions`` does nothing) and
   explorers render their static frames (``ibp_lab.teaching.widgets.explorer``).
"""

from __future__ import annotations

import os
import re

from docutils import nodes
from docutils.parsers.rst import directives
from myst_nb.ext.glue.roles import PasteTextRole
from myst_nb.ext.glue.utils import glue_warning

#: The only expressions allowed in prose: f"{name}", f"{name:spec}" or name.
EVAL_FORMS = re.compile(
    r'^(?:f"\{(?P<fkey>[A-Za-z_]\w*)(?::(?P<spec>[^{}"]+))?\}"|(?P<key>[A-Za-z_]\w*))$'
)


class EvalFromGlue(PasteTextRole):
    """``{eval}`` read from the glue data of the executed chapter."""

    def run(self):
        match = EVAL_FORMS.match(self.text.strip())
        if not match:
            message = (f"{{eval}} expression {self.text!r} is not one of the book's forms: "
                       'name, f"{name}" or f"{name:spec}"')
            return [], [glue_warning(message, self.document, self.line)]
        key = match["fkey"] or match["key"]
        self.text = f"{key}:{match['spec']}" if match["spec"] else key
        return super().run()


#: The class that marks a {dropdown} as the rest of a solution (tools/convert_to_lab.py).
SOLUTION_REST = "ibp-solution-rest"


def _dropdown_with_solution_rest():
    """sphinx-design's dropdown, except that a solution's rest is rendered in place."""
    from sphinx_design.dropdown import DropdownDirective

    class DropdownOrSolutionRest(DropdownDirective):
        option_spec = {**DropdownDirective.option_spec, "class": directives.class_option}

        def run(self):
            if SOLUTION_REST not in self.options.get("class", []):
                self.options.pop("class", None)
                return super().run()
            container = nodes.container(classes=[SOLUTION_REST])
            self.state.nested_parse(self.content, self.content_offset, container)
            return [container]

    return DropdownOrSolutionRest


def _register_dropdown(app):
    # after every extension's setup, so that sphinx-design's own registration is replaced
    app.add_directive("dropdown", _dropdown_with_solution_rest(), override=True)


def setup(app):
    os.environ["IBP_LAB_BOOK_BUILD"] = "1"
    app.add_role("eval", EvalFromGlue(), override=True)
    app.connect("builder-inited", _register_dropdown)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
