"""The exported model keeps its token table out of the graph, and rows read from it are the model's own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from safetensors.numpy import load_file

from core.retrieval.embedding import model_path
from core.retrieval.onnx_minilm import exported, table_file
from core.retrieval.token_rows import INPUT, TABLE, TokenRows, split_table


@pytest.fixture(scope="module")
def graph() -> Path:
    return exported(Path(model_path()))


def test_the_graph_takes_rows_instead_of_holding_the_table(graph: Path) -> None:
    model = onnx.load(str(graph), load_external_data=False)
    assert INPUT in [i.name for i in model.graph.input] and "input_ids" in [i.name for i in model.graph.input]
    assert TABLE not in {t.name for t in model.graph.initializer}
    assert not any(n.op_type == "Gather" and TABLE in n.input for n in model.graph.node)
    assert table_file(graph).stat().st_size > 30_522 * 384 * 4 and graph.stat().st_size < 60_000_000  # not 90 MB


def test_rows_are_the_packaged_models_own(graph: Path) -> None:
    weights = load_file(str(Path(model_path()) / "model.safetensors"))["embeddings.word_embeddings.weight"]
    table = TokenRows(table_file(graph))
    ids = np.array([[101, 7592, 2088, 102, 0], [101, 0, 0, 0, 0]], dtype=np.int64)
    found = table.rows(ids)
    assert found.shape == (2, 5, 384) and found.dtype == np.float32
    assert np.array_equal(found, weights[ids])
    assert (table.tokens, table.dim) == weights.shape
    with pytest.raises(ValueError, match="outside"):
        table.rows(np.array([[weights.shape[0]]]))
    table.close()


def test_a_table_cut_short_or_of_another_shape_is_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "three.npy", np.zeros((2, 3, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="not a token table"):
        TokenRows(tmp_path / "three.npy")
    np.save(tmp_path / "short.npy", np.zeros((10, 4), dtype=np.float32))
    data = (tmp_path / "short.npy").read_bytes()
    (tmp_path / "short.npy").write_bytes(data[:-8])
    with pytest.raises(ValueError, match="cut short"):
        TokenRows(tmp_path / "short.npy")


def test_a_graph_without_the_table_is_not_split(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    node = helper.make_node("Identity", ["input_ids"], ["out"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1])],
                              [helper.make_tensor_value_info("out", TensorProto.INT64, [1])])
    onnx.save(helper.make_model(graph), str(tmp_path / "g.onnx"))
    with pytest.raises(ValueError, match="does not look tokens up"):
        split_table(tmp_path / "g.onnx", tmp_path / "g.tokens.npy")
    assert not (tmp_path / "g.tokens.npy").exists()
