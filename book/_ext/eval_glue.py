"""Sphinx extension: one source for the chapters, in the web book and in JupyterLab.

1. ``{eval}`` served from glue data. A chapter's prose writes a number as
   ``{eval}`f"{name:spec}"``` (or ``{eval}`f"{name}"``). In JupyterLab,
   ``jupyterlab-myst`` evaluates that expression in the kernel, where
   ``ibp_lab.lab.quote`` bound ``name``. This build executes through the cache, with
   no kernel left to ask, so this role reads the value the chapter glued under
   ``name`` and formats it as ``{glue:text}`name:spec``` did. Only those two forms
   are accepted; a name that was never glued is myst-nb's glue warning, which ``-W``
   turns into a failed build (a number that no longer exists still fails the book).
2. ``{details}``: the rest of a solution after its code cells. JupyterLab shows
   the directive as a closed ``<details>`` (the student opens it); here its body is
   rendered in place, inside the solution's dropdown, as before.
3. ``IBP_LAB_BOOK_BUILD=1`` in the environment, which the kernels this build starts
   inherit: solutions run (``ibp_lab.lab.skip_solutions`` does nothing) and
   explorers render their static frames (``ibp_lab.widgets.explorer``).
"""

from __future__ import annotations

import os
import re

from docutils import nodes
from docutils.parsers.rst import Directive, directives
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


class DetailsInPlace(Directive):
    """``{details}``: its body, rendered where it stands (a closed block in JupyterLab)."""

    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = {"class": directives.class_option, "open": directives.flag}

    def run(self):
        container = nodes.container(classes=["ibp-details"])
        self.state.nested_parse(self.content, self.content_offset, container)
        return [container]


def setup(app):
    os.environ["IBP_LAB_BOOK_BUILD"] = "1"
    app.add_role("eval", EvalFromGlue(), override=True)
    app.add_directive("details", DetailsInPlace, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
