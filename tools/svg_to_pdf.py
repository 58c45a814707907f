"""Sphinx extension of the PDF editions: SVG figures converted to PDF by ``rsvg-convert``.

XeLaTeX cannot include an SVG file (the book has one, the teaching page's chapter map).
Sphinx's own ``sphinx.ext.imgconverter`` calls ImageMagick's ``convert``, and turns the
vector drawing into a bitmap; ``rsvg-convert`` (Debian's ``librsvg2-bin``, which ``make
tex`` installs with TeX) writes a vector PDF, so the map prints sharp. The PDF editions
turn sphinx-jupyterbook-latex's loading of ``imgconverter`` off and load this instead.

Without ``rsvg-convert`` the build fails with a message saying what to install, rather
than leave the figure out of the PDF.
"""

from __future__ import annotations

import shutil
import subprocess

from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms.images import ImageConverter

COMMAND = "rsvg-convert"


class SvgToPdf(ImageConverter):
    """SVG to vector PDF, for the LaTeX builder."""

    conversion_rules = [("image/svg+xml", "application/pdf")]

    def is_available(self) -> bool:
        if shutil.which(COMMAND) is None:
            raise ExtensionError(f"{COMMAND} is missing: `make tex` installs it "
                                 "(Debian's librsvg2-bin), the PDF needs it for SVG figures")
        return True

    def convert(self, _from: str, _to: str) -> bool:
        result = subprocess.run([COMMAND, "--format=pdf", f"--output={_to}", _from],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise ExtensionError(f"{COMMAND} failed on {_from}: {result.stderr.strip()}")
        return True


def setup(app):
    app.add_post_transform(SvgToPdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
