"""The indented lines of a text SOP, each with its place in the tree by line number: what the canvas reads
a text step from and what its edits insert lines into, rewrite or remove."""

from __future__ import annotations

from core.sop.parse_text import ELSE, Line, build_tree, split_front_matter


class _TextIndex:
    """The indented lines of a text SOP: each line's place in the tree, by line number."""

    def __init__(self, source: str, file: str) -> None:
        self.raw = source.splitlines(keepends=True)
        self.newline = "\r\n" if "\r\n" in source else "\n"
        _meta, body, offset, _p = split_front_matter(source, file)
        self.tree, _p2 = build_tree(body, offset, file)
        self.root = Line(0, -1, "<root>", self.tree)
        self.parent: dict[int, Line] = {}
        self.line: dict[int, Line] = {}
        todo = [self.root]
        while todo:
            ln = todo.pop()
            for child in ln.children:
                self.parent[child.no] = ln
                self.line[child.no] = child
                todo.append(child)
        self.unit = self._unit()

    def _unit(self) -> str:
        for no, ln in sorted(self.line.items()):
            if ln.children:
                outer, inner = self.lead(no), self.lead(ln.children[0].no)
                if inner.startswith(outer) and len(inner) > len(outer):
                    return inner[len(outer):]
        return "    "

    def lead(self, no: int) -> str:
        text = self.raw[no - 1].rstrip("\r\n")
        return text[: len(text) - len(text.lstrip())]

    def siblings(self, no: int) -> list[Line]:
        return self.parent[no].children

    def group(self, no: int) -> list[Line]:
        """The condition lines of the decision written at line ``no`` (``if``, more ``if``s, ``else``)."""
        sibs = self.siblings(no)
        i = next(i for i, s in enumerate(sibs) if s.no == no)
        group = [sibs[i]]
        for s in sibs[i + 1 :]:
            if not s.is_condition or _is_else(group[-1]):
                break
            group.append(s)
        return group

    def end_of(self, line: Line) -> int:
        """The last line number of a line's block (the line itself for a step)."""
        while line.children:
            line = line.children[-1]
        return line.no

    def child_lead(self, line: Line) -> str:
        return self.lead(line.children[0].no) if line.children else self.lead(line.no) + self.unit

    def insert(self, after: int, lines: list[str]) -> str:
        """The source with ``lines`` (leads included) inserted after line ``after`` (0: before the body)."""
        raw = list(self.raw)
        nl = self.newline
        ends_open = bool(raw) and not raw[-1].endswith(("\n", "\r"))
        if after == len(raw) and ends_open:
            raw[-1] += nl
            new = [ln + nl for ln in lines]
            new[-1] = new[-1][: -len(nl)]
        else:
            new = [ln + nl for ln in lines]
        return "".join(raw[:after] + new + raw[after:])

    def without(self, numbers: set[int], replace: dict[int, str] | None = None) -> str:
        """The source without the lines ``numbers`` and with the lines of ``replace`` rewritten (ending kept)."""
        out: list[str] = []
        for no, text in enumerate(self.raw, start=1):
            if no in numbers:
                continue
            if replace and no in replace:
                ending = text[len(text.rstrip("\r\n")):]
                text = replace[no] + ending
            out.append(text)
        if out and self.raw and not self.raw[-1].endswith(("\n", "\r")) and len(self.raw) in numbers:
            out[-1] = out[-1].rstrip("\r\n")  # the file ended without a line break: so it still does
        return "".join(out)


def _is_else(line: Line) -> bool:
    return line.is_condition and ELSE.match(line.text) is not None
