"""Lint reports bad input with file and line, and the demo workspaces are clean."""

from __future__ import annotations

from pathlib import Path

from core.engine.build import load_workspace
from core.retrieval.embedding import CachedEmbedder


def _msgs(ws_root: Path, embedder: CachedEmbedder) -> list[str]:
    return [str(p) for p in load_workspace(ws_root, embedder).problems]


def test_demo_workspaces_are_clean(embedder: CachedEmbedder) -> None:
    root = Path(__file__).resolve().parent.parent
    for ws in (root, root / "examples" / "outdoor"):
        assert not [p for p in load_workspace(ws, embedder).problems if p.severity == "error"]


def test_bad_indentation(ws_copy: Path, embedder: CachedEmbedder) -> None:
    (ws_copy / "sops" / "bad.sop").write_text(
        "---\nid: sales.bad\n---\nask user for budget\nif items found:\n"
        "    ask user for budget\n  say goodbye politely\n")
    msgs = _msgs(ws_copy, embedder)
    assert any(m.startswith("sops/bad.sop:7:3: error: unindent does not match") for m in msgs), msgs


def test_step_under_a_step(ws_copy: Path, embedder: CachedEmbedder) -> None:
    (ws_copy / "sops" / "bad.sop").write_text("ask user for budget\n    say goodbye politely\n")
    msgs = _msgs(ws_copy, embedder)
    assert any("sops/bad.sop:2:5: error: unexpected indentation" in m for m in msgs), msgs


def test_unknown_action_with_suggestion(ws_copy: Path, embedder: CachedEmbedder) -> None:
    (ws_copy / "sops" / "bad.sop").write_text("ask user for budgett please now\nlaunch the rocket\n")
    msgs = _msgs(ws_copy, embedder)
    assert any("sops/bad.sop:2: error: unknown action 'launch the rocket'" in m for m in msgs), msgs


def test_missing_gar_columns(ws_copy: Path, embedder: CachedEmbedder) -> None:
    (ws_copy / "gar.csv").write_text("action,api\nx,y\n")
    msgs = _msgs(ws_copy, embedder)
    assert any(m.startswith("gar.csv:1: error: missing column(s): action_type") for m in msgs), msgs


def test_duplicate_gar_action(ws_copy: Path, embedder: CachedEmbedder) -> None:
    text = (ws_copy / "gar.csv").read_text()
    (ws_copy / "gar.csv").write_text(text + "ask user for budget,ask_user_input,a number,,budget\n")
    msgs = _msgs(ws_copy, embedder)
    assert any("error: duplicate action 'ask user for budget'" in m for m in msgs), msgs


def test_store_yaml_unknown_and_wrong_keys(ws_copy: Path, embedder: CachedEmbedder) -> None:
    text = (ws_copy / "store.yaml").read_text()
    text = text.replace("currency: THB", "curency: THB\ncurrency: [THB]")
    (ws_copy / "store.yaml").write_text(text)
    msgs = _msgs(ws_copy, embedder)
    assert any(m.startswith("store.yaml:2: warning: unknown key 'curency'") and "did you mean 'currency'" in m
               for m in msgs), msgs
    assert any("store.yaml:3: error: store.yaml key 'currency' must be str" in m for m in msgs), msgs


def test_store_yaml_languages_must_be_ones_the_engine_reads(ws_copy: Path, embedder: CachedEmbedder) -> None:
    text = (ws_copy / "store.yaml").read_text()
    (ws_copy / "store.yaml").write_text(text.replace("currency: THB\n", "currency: THB\nlanguages: [en, tha]\n"))
    msgs = _msgs(ws_copy, embedder)
    assert any(m.startswith("store.yaml:3: error: languages: no language 'tha' here") and "did you mean 'th'" in m
               for m in msgs), msgs


def test_store_yaml_aliases_map_words_to_words(ws_copy: Path, embedder: CachedEmbedder) -> None:
    text = (ws_copy / "store.yaml").read_text()
    (ws_copy / "store.yaml").write_text(text.replace("  จอ: Monitor\n", "  จอ: Monitor\n  mouse pad: 5\n"))
    msgs = _msgs(ws_copy, embedder)
    assert any("error: aliases: 'mouse pad': 5 must map a word to a word" in m for m in msgs), msgs


def test_inventory_missing_mapped_column(ws_copy: Path, embedder: CachedEmbedder) -> None:
    lines = (ws_copy / "inventory.csv").read_text().splitlines()
    header = lines[0].replace("price", "cost")
    (ws_copy / "inventory.csv").write_text("\n".join([header, *lines[1:]]))
    msgs = _msgs(ws_copy, embedder)
    assert any(m.startswith("inventory.csv:1: error: column(s) not in the file: price -> 'price'") for m in msgs), msgs


def test_binary_sop_and_bad_json(ws_copy: Path, embedder: CachedEmbedder) -> None:
    (ws_copy / "sops" / "bin.sop").write_bytes(b"\x00\x01\x02binary")
    (ws_copy / "sops" / "bad.json").write_text('{"name": "x",\n "nodes": {,}}')
    msgs = _msgs(ws_copy, embedder)
    assert any("sops/bin.sop" in m and "binary" in m for m in msgs), msgs
    assert any(m.startswith("sops/bad.json:2:") and "JSON syntax" in m for m in msgs), msgs


def test_json_sop_missing_end_and_unknown_target(ws_copy: Path, embedder: CachedEmbedder) -> None:
    (ws_copy / "sops" / "loop.json").write_text(
        '{"id": "support.loop", "startNode": "a", "nodes": {\n'
        ' "a": {"type": "action", "messageTemplate": "hi", "nextNodes": ["b"]},\n'
        ' "b": {"type": "action", "messageTemplate": "yo", "nextNodes": ["zz"]}}}')
    msgs = _msgs(ws_copy, embedder)
    assert any("goes to unknown node 'zz'" in m for m in msgs), msgs
    assert any("missing end" in m for m in msgs), msgs
