"""Put the chapters in the form JupyterLab would save them in, so that a save changes nothing.

JupyterLab opens a chapter through jupytext's contents manager and, when the notebook is
saved (by the reader, or by autosave if a reader turns it on), writes it back through the
same manager. A chapter whose source is already in that form comes back byte for byte:
the repository's jupytext settings (``[tool.jupytext]`` in ``pyproject.toml``) keep the
``mystnb`` front matter that the build reads and drop what a session adds (the results
that jupyterlab-myst stores in each Markdown cell's ``user_expressions``, the jupytext
version). This tool puts every notebook page of ``book/`` in that form:

- figure captions on one logical line (jupytext re-quotes a multi-line YAML block);
- the kernel's display name as JupyterLab's kernel reports it (``Python 3 (ipykernel)``),
  so that starting the kernel does not change the notebook's metadata;
- then one save through jupytext's contents manager, exactly as the server saves.

``tests/test_lab_files.py`` checks that every page survives that save unchanged.

Usage: ``python tools/canonical_chapters.py [--check]`` (``--check``: list the pages
that would change, exit 1 if any).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL_DISPLAY_NAME = "Python 3 (ipykernel)"


def notebook_pages() -> list[Path]:
    """The pages of book/ that JupyterLab opens as notebooks with a kernel (a jupytext header)."""
    return [p for p in sorted((ROOT / "book").glob("*.md"))
            if p.read_text().startswith("---\njupytext:")]


def contents_manager(root: Path):
    """jupytext's contents manager over ``root``, the class JupyterLab's server uses."""
    from jupyter_server.services.contents.filemanager import FileContentsManager
    from jupytext.sync_contentsmanager import build_sync_jupytext_contents_manager_class

    return build_sync_jupytext_contents_manager_class(FileContentsManager)(root_dir=str(root))


def saved_form(path: Path, *, tidy: bool = False) -> str:
    """The text the server would write for ``path`` after opening and saving it.

    With ``tidy``, captions are joined onto one line and the kernel's display name set
    first (what this tool changes); without it, the page is saved as it is (the test).
    The file itself is left as it was.
    """
    manager = contents_manager(ROOT)
    name = str(path.relative_to(ROOT))
    before = path.read_text()
    model = manager.get(name, content=True, type="notebook")
    if tidy:
        model["content"]["metadata"]["kernelspec"]["display_name"] = KERNEL_DISPLAY_NAME
        for cell in model["content"]["cells"]:
            figure = cell["metadata"].get("mystnb", {}).get("figure", {})
            if "caption" in figure:
                figure["caption"] = " ".join(figure["caption"].split())
    try:
        manager.save(model, name)
        return path.read_text()
    finally:
        path.write_text(before)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="list pages that would change")
    args = parser.parse_args(argv)
    changed = []
    for path in notebook_pages():
        text = saved_form(path, tidy=True)
        if text != path.read_text():
            changed.append(path.name)
            if not args.check:
                path.write_text(text)
    verb = "would change" if args.check else "rewrote"
    print(f"{verb}: {', '.join(changed) or 'nothing'}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
