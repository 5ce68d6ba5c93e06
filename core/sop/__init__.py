"""SOP compilers: indented text and JSON nodes compile to one graph."""

from core.sop.graph import Branch, Node, Sop
from core.sop.load import compile_sop, load_sops

__all__ = ["Branch", "Node", "Sop", "compile_sop", "load_sops"]
