"""What the book's other editions share: a configuration, the cache check, one Sphinx run.

The student web book (``tools/build_student_web.py``) and the PDFs (``tools/build_pdf.py``)
are the book rendered again from the execution cache that ``make book`` filled
(``_build/.jupyter_cache``): nothing is executed. Each edition builds in a folder of its own
(``_build/editions/<name>/``, with its own Sphinx environment and ``jupyter_execute``), so
that it never touches what the book's build and its tests read (``_build/.doctrees``,
``_build/jupyter_execute``, ``_build/html``).

An edition's configuration is ``_config.yml`` with a few keys changed
(:func:`edition_config`), written into that folder and passed by ``--config``:

- ``execute``: the book's cache, by absolute path; or ``execute_notebooks: "off"`` for a
  render without outputs (``--no-execute``: to work on the layout while the cache is stale;
  every ``{eval}`` is then a warning and every output is missing);
- the local extensions by absolute path (they are resolved against the configuration's
  folder), plus ``tools/solution_filter.py`` for a student edition and
  ``tools/svg_to_pdf.py`` for a PDF;
- the title, and for a PDF the LaTeX file's name.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (the tests)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from chapter_settings import BUILD, CACHE, ROOT, chapters_in_toc  # noqa: E402

TOOLS = ROOT / "tools"
EDITIONS = BUILD / "editions"
#: ``tools/solution_filter.py``, loaded as a Sphinx extension by the student editions.
SOLUTION_FILTER = "solution_filter"
#: ``tools/svg_to_pdf.py``, loaded by the PDF editions.
SVG_TO_PDF = "svg_to_pdf"
STUDENT_TITLE = " (student edition)"
#: Warnings tolerated with ``--no-execute`` only, the consequences of having no outputs:
#: every ``{eval}`` misses its glue data, every reference to a figure a cell draws misses
#: its target.
WITHOUT_OUTPUTS = [r"in glue data for this document", r"\[myst\.xref_missing\]"]


def edition_config(*, student: bool, execute: bool, title_suffix: str = "",
                   latex_name: str | None = None) -> dict:
    """``_config.yml`` as an edition builds with it.

    Parameters
    ----------
    student : bool
        Leave every solution out (``tools/solution_filter.py``).
    execute : bool
        Render from the book's execution cache (True), or without outputs (False).
    title_suffix : str
        Appended to the book's title.
    latex_name : str or None
        The LaTeX file's name without suffix, for a PDF; None for a web edition.

    Returns
    -------
    dict
        The configuration, ready for ``yaml.safe_dump``.

    Examples
    --------
    >>> config = edition_config(student=True, execute=True, latex_name="book")
    >>> config["execute"]["execute_notebooks"], config["latex"]["latex_documents"]
    ('cache', {'targetname': 'book.tex'})
    >>> "solution_filter" in config["sphinx"]["local_extensions"]
    True
    """
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["title"] = f"{config['title']}{title_suffix}"
    config["execute"] = {**(config.get("execute") or {}), "cache": str(CACHE),
                         "execute_notebooks": "cache" if execute else "off"}
    sphinx = config.setdefault("sphinx", {})
    extensions = {name: str((ROOT / path).resolve())
                  for name, path in (sphinx.get("local_extensions") or {}).items()}
    if student:
        extensions[SOLUTION_FILTER] = str(TOOLS)
    sphinx["local_extensions"] = extensions
    if latex_name is not None:
        # sphinx-jupyterbook-latex (use_jupyterbook_latex) sets xelatex and its class
        config["latex"] = {"latex_engine": "xelatex", "use_jupyterbook_latex": True,
                           "latex_documents": {"targetname": f"{latex_name}.tex"}}
        extensions[SVG_TO_PDF] = str(TOOLS)
        settings = sphinx.setdefault("config", {})
        settings.update({
            # the index through makeindex (texlive-binaries), not xindy (one package more)
            "latex_use_xindy": False,
            # SVG figures by tools/svg_to_pdf.py, not ImageMagick (a bitmap)
            "jblatex_load_imgconverter": False,
            # an output's plain text before its LaTeX: myst-nb puts text/latex in a math
            # block, and IPython's Code display (chapter 05 shows a function's source) gives
            # a Pygments Verbatim environment as its LaTeX, which TeX cannot set as math
            "nb_mime_priority_overrides": [*settings.get("nb_mime_priority_overrides", []),
                                           ["latex", "text/latex", 70]],
        })
    return config


def require_cached_chapters() -> None:
    """Stop, saying what to run, unless every chapter's current text is in the cache and
    the cache belongs to the current ``ibp_lab`` (what ``make book`` checks and fills).

    An edition must not execute anything: a chapter missing from the cache would run in
    the middle of the edition's build, with none of the book build's checks.
    """
    from build_book import STAMP, package_hash
    from execute_chapters import stale
    from jupyter_cache import get_cache

    if not CACHE.exists():
        sys.exit(f"no execution cache at {CACHE}: run `make book` first")
    if not STAMP.exists() or STAMP.read_text().strip() != package_hash():
        sys.exit("ibp_lab or book/_ext changed since the cache was filled: run `make book` first")
    missing = stale(chapters_in_toc(), get_cache(str(CACHE)))
    if missing:
        sys.exit(f"not in the execution cache: {', '.join(missing)}: run `make book` first")


def run_jupyter_book(config: dict, out: Path, builder: str, *,
                     warnings_are_errors: bool) -> tuple[int, str]:
    """Write ``config`` into ``out`` and build the book there with ``builder``.

    The output goes to ``out/_build/<html or latex>``; the build's output is shown as it
    comes and returned with the exit status (the caller judges the warnings).
    """
    import yaml

    out.mkdir(parents=True, exist_ok=True)
    path_config = out / "_config.yml"
    path_config.write_text(yaml.safe_dump(config, sort_keys=False))
    command = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT),
               "--config", str(path_config), "--path-output", str(out),
               "--builder", builder, "--keep-going"]
    if warnings_are_errors:
        command.append("-W")
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in process.stdout:
        sys.stdout.write(line)
        lines.append(line)
    return process.wait(), "".join(lines)


def sphinx_warnings(log: str) -> list[str]:
    """The warning lines of a Sphinx run's output, colour codes removed.

    >>> sphinx_warnings("\\x1b[91m/b/x.md:3: WARNING: oops [a.b]\\x1b[39;49;00m\\nok\\n")
    ['/b/x.md:3: WARNING: oops [a.b]']
    """
    plain = re.sub(r"\x1b\[[0-9;]*m", "", log)
    return [line for line in plain.splitlines() if "WARNING:" in line]


def failing_warnings(log: str, allowed: list[str]) -> list[str]:
    """The warnings of a Sphinx run that match none of the ``allowed`` patterns.

    >>> log = "a.md:1: WARNING: No key 'x' found in glue data for this document.\\n"
    >>> failing_warnings(log, WITHOUT_OUTPUTS), len(failing_warnings(log, []))
    ([], 1)
    """
    return [w for w in sphinx_warnings(log) if not any(re.search(p, w) for p in allowed)]
