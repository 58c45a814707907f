"""Rewrite chapters so that they read in JupyterLab (jupyterlab-myst) as in the web book.

Mechanical, idempotent (a second run changes nothing), and strict: a construct it
cannot convert stops it with the file and line, and nothing is written.

1. Quoted numbers: ``from myst_nb import glue`` -> ``from ibp_lab.lab import quote,
   skip_solutions`` (plus ``skip_solutions()``), ``glue(`` -> ``quote(``, and in prose
   (and figure captions) ``{glue:text}`name:spec``` -> ``{eval}`f"{name:spec}"```.
   ``book/_ext/eval_glue.py`` serves those from the glue data in the web build; in
   JupyterLab the kernel evaluates them (``quote`` binds the name).
2. Solutions: every code cell inside ``{solution-start}``..``{solution-end}`` (or
   tagged ``solution``) starts with ``ibp_lab.lab.SOLUTION_MARKER`` (the kernel skips
   it in JupyterLab; the build runs it) and gets ``jupyter.source_hidden``; prose
   after a solution's code cell is wrapped in a ``{dropdown}`` of class
   ``ibp-solution-rest`` (closed in JupyterLab, in place in the web page). The gated syntax stays, so ``tools/student_edition.py``
   works unchanged.
3. Explorers: the default-figure cell, the ``live_explorer`` cell and the
   ``static_explorer`` cell of a place (and the prose between them that says which
   one runs where) become one ``explorer(...)`` cell with the figure's caption.

Usage: ``python tools/convert_to_lab.py book/01_buffet.md [...]`` (rewrites in place;
``--check`` only reports what would change, exit 1 if anything would).
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from ibp_lab.lab import SOLUTION_MARKER  # noqa: E402

GLUE_IMPORT = "from myst_nb import glue"
LAB_IMPORT = "from ibp_lab.lab import quote, skip_solutions"
WIDGET_IMPORT = re.compile(r"^from ibp_lab\.widgets import live_explorer, static_explorer$", re.M)
GLUE_TEXT = re.compile(r"\{glue:text\}`(?P<key>[^`:]*)(?::(?P<spec>[^`]*))?`")
EXPLORER_NOTE = ("In JupyterLab or Binder the sliders below recompute the figure in the kernel, "
                 "on a finer grid;\nthe web page shows frames precomputed on the coarser grid.")
#: prose between an explorer's cells that only says where each one shows
WHERE_WORDS = re.compile(r"JupyterLab|Binder|web page|web book|precomputed|next cell", re.I)
DETAILS_OPEN = "````{dropdown} Solution, continued\n:class: ibp-solution-rest"


class Refused(Exception):
    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")


@dataclass
class Cell:
    kind: str                      # "markdown" or "code"
    line: int                      # 1-based line of its first line in the source
    header: list[str] = field(default_factory=list)   # code: fence line + metadata lines
    body: list[str] = field(default_factory=list)     # markdown text or code source

    def text(self) -> str:
        if self.kind == "markdown":
            return "".join(self.body)
        return "".join(self.header + self.body) + "```\n"


def parse(text: str) -> tuple[str, list[Cell]]:
    """Front matter and cells (code cells are ```{code-cell} fences)."""
    lines = text.splitlines(keepends=True)
    front_end = 0
    if lines and lines[0].strip() == "---":
        front_end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---") + 1
    cells, i, markdown = [], front_end, Cell("markdown", front_end + 1)
    while i < len(lines):
        if lines[i].startswith("```{code-cell}"):
            cells.append(markdown)
            code = Cell("code", i + 1, header=[lines[i]])
            i += 1
            if i < len(lines) and lines[i].strip() == "---":
                end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "---")
                code.header += lines[i:end + 1]
                i = end + 1
            while i < len(lines) and lines[i].startswith(":") and re.match(r"^:\w[\w-]*:", lines[i]):
                code.header.append(lines[i])
                i += 1
            while i < len(lines) and lines[i].rstrip("\n") != "```":
                code.body.append(lines[i])
                i += 1
            if i == len(lines):
                raise Refused(code.line, "code cell without a closing ``` fence")
            cells.append(code)
            markdown = Cell("markdown", i + 2)
            i += 1
            continue
        markdown.body.append(lines[i])
        i += 1
    cells.append(markdown)
    return "".join(lines[:front_end]), cells


def convert_roles(cell: Cell, lines: list[str]) -> list[str]:
    out = []
    for offset, line in enumerate(lines):
        def to_eval(match):
            key, spec = match["key"], match["spec"]
            if not key.isidentifier():
                raise Refused(cell.line + offset, f"glue key {key!r} is not a Python identifier")
            if spec is not None and re.search(r'["{}]', spec):
                raise Refused(cell.line + offset, f"format {spec!r} cannot go in an f-string")
            return '{eval}`f"{' + key + (f":{spec}" if spec else "") + '}"`'
        line = GLUE_TEXT.sub(to_eval, line)
        if "{glue" in line:
            raise Refused(cell.line + offset, "a glue role other than {glue:text}`name:spec`")
        out.append(line)
    return out


def convert_code(cell: Cell, assigned: set[str]) -> None:
    body = []
    for offset, line in enumerate(cell.body):
        if line.rstrip("\n") == GLUE_IMPORT:
            body += [LAB_IMPORT + "\n", "skip_solutions()  # Run All in JupyterLab skips solutions\n"]
            continue
        line = re.sub(r"\bglue\(", "quote(", line)
        if re.search(r"\bglue\b|myst_nb", line):
            raise Refused(cell.line + len(cell.header) + offset, f"glue used otherwise: {line.strip()}")
        for match in re.finditer(r"""\bquote\(\s*(f?)(['"])(.*?)\2\s*,?\s*(\w*)""", line):
            key = re.sub(r"\{[^{}]*\}", "x", match[3]) if match[1] else match[3]
            if not key.isidentifier():
                raise Refused(cell.line + len(cell.header) + offset,
                              f"quoted name {match[3]!r} is not a Python identifier")
            # binding the name to another value would change the chapter's variable
            if not match[1] and match[3] in assigned and match[4] != match[3]:
                raise Refused(cell.line + len(cell.header) + offset,
                              f"quoted name {match[3]!r} is also a variable of the chapter")
        body.append(line)
    cell.body = body
    cell.header = convert_roles(cell, cell.header)  # figure captions


def assigned_names(cells: list[Cell]) -> set[str]:
    names = set()
    for cell in cells:
        if cell.kind != "code":
            continue
        try:
            tree = ast.parse("".join(l for l in cell.body if not l.startswith(("%", "!"))))
        except SyntaxError:
            continue
        names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return names


def header_with_hidden_source(cell: Cell) -> list[str]:
    """The cell's fence and metadata with ``jupyter: {source_hidden: true}`` added."""
    if any("source_hidden" in line for line in cell.header):
        return cell.header
    fence, rest = cell.header[0], cell.header[1:]
    if rest and rest[0].strip() == "---":
        return [fence] + rest[:-1] + ["jupyter:\n", "  source_hidden: true\n", "---\n"]
    short = []
    for line in rest:
        match = re.match(r"^:(\w[\w-]*):\s*(.*)$", line.rstrip("\n"))
        short.append(f"{match[1]}: {match[2]}\n")
    return [fence, "---"+"\n"] + short + ["jupyter:\n", "  source_hidden: true\n", "---\n"]


def mark_solutions(cells: list[Cell]) -> None:
    inside = False
    for index, cell in enumerate(cells):
        if cell.kind == "markdown":
            text = cell.text()
            starts, ends = text.count("{solution-start}"), text.count("{solution-end}")
            if inside and index > 0 and cells[index - 1].kind == "code":
                wrap_tail(cell)
            if starts > ends:
                inside = True
            elif ends > starts:
                inside = False
            continue
        tagged = any(re.search(r"\bsolution\b", line) for line in cell.header[1:])
        if inside or tagged:
            if not cell.body or cell.body[0].rstrip("\n") != SOLUTION_MARKER:
                cell.body = [SOLUTION_MARKER + "\n"] + cell.body
            cell.header = header_with_hidden_source(cell)


def wrap_tail(cell: Cell) -> None:
    """Wrap the solution prose before ``{solution-end}`` (or the next code cell) in a dropdown."""
    text = cell.text()
    end = text.find("```{solution-end}")
    tail, rest = (text, "") if end < 0 else (text[:end], text[end:])
    if not tail.strip() or tail.lstrip().startswith(DETAILS_OPEN):
        return
    if "````" in tail:
        raise Refused(cell.line, "solution prose with a ```` fence: cannot wrap it in a dropdown")
    cell.body = [f"\n{DETAILS_OPEN}\n{tail.strip()}\n````\n\n{rest}"]


def add_pending(cells: list[Cell]) -> None:
    """List the names solutions' prose quotes in the ``skip_solutions(...)`` call."""
    inside, names = False, set()
    for cell in cells:
        if cell.kind != "markdown":
            continue
        text = cell.text()
        for part in re.split(r"(\{solution-start\}|\{solution-end\})", text):
            if part == "{solution-start}":
                inside = True
            elif part == "{solution-end}":
                inside = False
            elif inside:
                names |= set(re.findall(r'\{eval\}`f"\{([A-Za-z_]\w*)', part))
    note = "  # Run All in JupyterLab skips solutions"
    if names:
        items = textwrap.fill(", ".join(repr(n) for n in sorted(names)), 70,
                              initial_indent="    ", subsequent_indent="    ")
        call = [f"skip_solutions(pending=[{note}\n", items + "])\n"]
    else:
        call = [f"skip_solutions(){note}\n"]
    for cell in cells:
        for i, line in enumerate(cell.body):
            if line.startswith("skip_solutions("):
                end = i
                if line.rstrip().endswith("[" + note) or "pending=[" in line:
                    end = next(j for j in range(i, len(cell.body)) if cell.body[j].rstrip().endswith("])"))
                cell.body[i:end + 1] = call
                return


def call_name(cell: Cell) -> str | None:
    source = "".join(cell.body)
    for name in ("static_explorer", "live_explorer"):
        if re.search(rf"\b{name}\(", source):
            return name
    return None


def merge_explorers(cells: list[Cell]) -> list[Cell]:
    code = [i for i, c in enumerate(cells) if c.kind == "code"]
    out, skip = list(cells), set()
    for position, index in enumerate(code):
        if call_name(cells[index]) != "live_explorer":
            if call_name(cells[index]) == "static_explorer" and index not in skip:
                raise Refused(cells[index].line, "static_explorer without a live_explorer cell before it")
            continue
        live = cells[index]
        if position + 1 >= len(code) or call_name(cells[code[position + 1]]) != "static_explorer":
            raise Refused(live.line, "live_explorer not followed by its static_explorer cell")
        static_index = code[position + 1]
        static = cells[static_index]
        try:
            live_tree = ast.parse("".join(live.body))
            static_tree = ast.parse("".join(static.body))
        except SyntaxError as error:
            raise Refused(live.line, f"explorer cells do not parse: {error}") from error
        last = live_tree.body[-1]
        if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
                and getattr(last.value.func, "id", "") == "live_explorer"):
            raise Refused(live.line, "the live cell must end with its live_explorer(...) call")
        if not (len(static_tree.body) == 1 and isinstance(static_tree.body[0], ast.Expr)
                and getattr(static_tree.body[0].value.func, "id", "") == "static_explorer"):
            raise Refused(static.line, "the static cell must be one static_explorer(...) call")
        setup = live.body[:last.lineno - 1]
        call = re.sub(r"\bstatic_explorer\(", "explorer(", "".join(static.body))
        between = [i for i in range(index + 1, static_index)]
        header = ["```{code-cell} ipython3\n"]
        previous = code[position - 1] if position > 0 else None
        figure_cell = None
        if previous is not None and any("figure:" in line for line in cells[previous].header):
            gap = range(previous + 1, index)
            if all(not WHERE_WORDS.sub("", cells[i].text()).strip() or _only_where(cells[i]) for i in gap):
                figure_cell = previous
                between = list(gap) + between
        if figure_cell is not None:
            header = cells[figure_cell].header
            skip.add(figure_cell)
        for i in between:
            if not _only_where(cells[i]):
                raise Refused(cells[i].line, "prose between an explorer's cells that is not about "
                              "where each one shows: move it before or after the explorer")
            skip.add(i)
        before = index - 1 if figure_cell is None else figure_cell - 1
        if before >= 0 and cells[before].kind == "markdown":
            cells[before].body = [_drop_where_paragraph(cells[before].text()).rstrip("\n")
                                  + f"\n\n{EXPLORER_NOTE}\n\n"]
        live.header, live.body = header, setup + [call]
        skip.add(static_index)
    return [c for i, c in enumerate(out) if i not in skip]


def _only_where(cell: Cell) -> bool:
    """A markdown cell whose every paragraph only says where the explorer shows."""
    paragraphs = [p for p in re.split(r"\n\s*\n", cell.text()) if p.strip()]
    return cell.kind == "markdown" and all(WHERE_WORDS.search(p) for p in paragraphs)


def _drop_where_paragraph(text: str) -> str:
    """Drop the last paragraph if it tells the reader to run the next cell."""
    paragraphs = re.split(r"(\n\s*\n)", text.rstrip())
    if paragraphs and re.search(r"run the next cell|next cell for live", paragraphs[-1], re.I):
        paragraphs = paragraphs[:-2]
    return "".join(paragraphs)


def convert(text: str) -> str:
    front, cells = parse(text)
    assigned = assigned_names(cells)
    for cell in cells:
        if cell.kind == "markdown":
            cell.body = convert_roles(cell, cell.body)
        else:
            convert_code(cell, assigned)
            cell.body = [WIDGET_IMPORT.sub("from ibp_lab.widgets import explorer", l) for l in cell.body]
    mark_solutions(cells)
    cells = merge_explorers(cells)
    add_pending(cells)
    result = front + "".join(c.text() for c in cells)
    for needle in ("live_explorer", "static_explorer", "{glue"):
        if needle in result:
            line = result[:result.index(needle)].count("\n") + 1
            raise Refused(line, f"{needle!r} left after conversion (an unexpected form)")
    return result


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"]
    if not paths:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    new, failed = {}, False
    for path in paths:
        try:
            new[path] = convert(path.read_text())
        except Refused as refusal:
            print(f"{path}: {refusal}", file=sys.stderr)
            failed = True
    if failed:
        return 1
    changed = [p for p in paths if new[p] != p.read_text()]
    if check:
        print("\n".join(f"would convert {p}" for p in changed) or "nothing to convert")
        return 1 if changed else 0
    for path in changed:
        path.write_text(new[path])
        print(f"converted {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
