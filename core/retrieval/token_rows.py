"""The exported model's token table, kept out of the ONNX graph and read a row at a time.

MiniLM's token embedding table (30,522 tokens x 384 floats, 47 MB) is a third of the model, and a text
uses a few dozen of its rows. Inside the graph the runtime keeps all of it resident (with copies made while
loading: about 80 MB); here it is a ``.npy`` file beside the graph, and each run reads the rows of its
tokens with ``os.pread`` (the page cache keeps the file; the process holds nothing of it). The graph takes
the rows in place of its first step, a plain lookup, so the vectors are the same, bit for bit.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path

import numpy as np

TABLE = "base.embeddings.word_embeddings.weight"  # the exported transformer's token embedding table
INPUT = "token_rows"  # the graph's input in its place: each token's row of the table
KEPT = 4096  # rows kept in memory once read (1.5 kB each: 6 MB at most, against 47 MB for the whole table)


def split_table(graph_file: Path, table_file: Path) -> None:
    """Move the token table out of the ONNX graph at ``graph_file`` into ``table_file`` (a ``.npy``): the
    lookup that read it becomes the graph's input :data:`INPUT`, each token's row (batch x tokens x dim).

    Raises:
        ValueError: the graph has no such table, or does not look tokens up in it from ``input_ids``.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(graph_file))
    graph = model.graph
    table = next((t for t in graph.initializer if t.name == TABLE), None)
    lookup = next((n for n in graph.node if n.op_type == "Gather" and n.input[0] == TABLE), None)
    if table is None or lookup is None or lookup.input[1] != "input_ids":
        raise ValueError(f"the exported graph does not look tokens up in {TABLE!r} from input_ids")
    rows = numpy_helper.to_array(table).astype("<f4")
    looked_up = lookup.output[0]
    graph.node.remove(lookup)
    graph.initializer.remove(table)
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == looked_up:
                node.input[i] = INPUT
    for info in list(graph.value_info):
        if info.name == looked_up:
            graph.value_info.remove(info)
    graph.input.append(helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, ["batch", "tokens", rows.shape[1]]))
    onnx.save(model, str(graph_file))
    with open(table_file, "wb") as out:
        np.save(out, rows)


class TokenRows:
    """Rows of a token table in a ``.npy`` file, read when a text needs them."""

    def __init__(self, path: Path) -> None:
        fmt = np.lib.format
        with open(path, "rb") as head:
            major, _ = fmt.read_magic(head)
            shape, fortran, dtype = (fmt.read_array_header_1_0 if major == 1 else fmt.read_array_header_2_0)(head)
            self._start = head.tell()
        if len(shape) != 2 or fortran or dtype != np.dtype("<f4"):
            raise ValueError(f"{path}: not a token table (shape {shape}, {dtype}, Fortran order {fortran})")
        self.tokens, self.dim = int(shape[0]), int(shape[1])
        self._row = 4 * self.dim
        if path.stat().st_size < self._start + self.tokens * self._row:
            raise ValueError(f"{path}: the token table is cut short")
        self._kept: dict[int, bytes] = {}
        self._fd = os.open(path, os.O_RDONLY)
        self._closed = weakref.finalize(self, os.close, self._fd)  # closed with the model, or at exit

    def rows(self, ids: np.ndarray) -> np.ndarray:
        """Each id's row: shape ``ids.shape + (dim,)``, float32. A row read is kept, up to KEPT rows: the
        words of a store's messages recur, and a message then costs no read of the file at all."""
        flat = ids.ravel().tolist()
        kept, fd, start, size = self._kept, self._fd, self._start, self._row
        for token in flat:
            if token not in kept:
                if not 0 <= token < self.tokens:
                    raise ValueError(f"token id {token} is outside the table's {self.tokens} rows")
                row = os.pread(fd, size, start + token * size)
                if len(kept) < KEPT:
                    kept[token] = row
                else:
                    return self._read(flat, ids.shape)
        return np.frombuffer(b"".join([kept[token] for token in flat]), dtype="<f4").reshape(*ids.shape, self.dim)

    def _read(self, flat: list[int], shape: tuple[int, ...]) -> np.ndarray:
        """The rows of ``flat`` (ids) read from the kept ones and the file."""
        kept, fd, start, size = self._kept, self._fd, self._start, self._row
        rows = [kept.get(token) or os.pread(fd, size, start + token * size) for token in flat]
        return np.frombuffer(b"".join(rows), dtype="<f4").reshape(*shape, self.dim)

    def close(self) -> None:
        self._closed()
