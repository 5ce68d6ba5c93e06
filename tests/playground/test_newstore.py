"""A store started from scratch: its own settings, inventory, knowledge base and starter SOPs, nothing of the demo."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.playground import STARTERS, NewStore, Playground, create_store
from core.retrieval.embedding import CachedEmbedder
from core.shared.errors import UserInputError

ROOT = Path(__file__).resolve().parents[2]
DOC = b"# Opening hours\n\nThe shop on Harbour Lane opens every day from 8:00 to 20:00, holidays included.\n"


@pytest.fixture()
def created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SOP_WORKSPACES_DIR", str(tmp_path / "stores"))
    return tmp_path / "stores"


def test_a_new_store_has_its_own_settings_files_and_starters_and_nothing_of_the_demo(
        created: Path, embedder: CachedEmbedder) -> None:
    inventory = (ROOT / "examples" / "outdoor" / "inventory.csv").read_bytes()
    path = create_store(NewStore("Harbour Outfitters", "EUR", "IE", ["en"], "Welcome to Harbour Outfitters!",
                                 "Outdoor gear by the harbour.", list(STARTERS),
                                 ("gear.csv", inventory), [("hours.md", DOC)]))
    assert path == created / "harbour-outfitters"
    files = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file() and ".state" not in p.parts)
    assert files == ["gar.csv", "inventory.csv", "kb/hours.md", "sops/answer_question.sop", "sops/call_back.sop",
                     "sops/find_product.sop", "store.yaml"]
    demo_words = ("Gadget", "laptop", "mouse", "headset", "Dell", "battery")
    for rel in files:
        text = (path / rel).read_text(encoding="utf-8")
        if rel != "inventory.csv":
            assert not any(w.lower() in text.lower() for w in demo_words), rel
    pg = Playground(path, embedder=embedder)
    try:
        assert not [p for p in pg.problems if p.severity == "error"]
        assert pg.store.settings() == {"name": "Harbour Outfitters", "currency": "EUR", "region": "IE",
                                 "description": "Outdoor gear by the harbour.",
                                 "greeting": "Welcome to Harbour Outfitters!", "languages": ["en"],
                                 "polite_particle": ""}
        hello = pg.chat.send("h", "hello").reply
        assert hello.startswith("Welcome to Harbour Outfitters!")
        assert "device" not in hello and "find a product" in hello.lower()  # its own SOPs only
        assert "category" in pg.chat.send("p", "can you recommend something").reply.lower()
        assert "budget" in pg.chat.send("p", "a tent").reply.lower()
        assert "Coleman" in pg.chat.send("p", "5000").reply  # from the store's own inventory
        pg.wait_for_kb(60)
        assert "20:00" in pg.chat.send("k", "when does the shop open?").reply
    finally:
        pg.close()


def test_a_store_with_no_starter_and_no_files_is_empty_and_works(created: Path, embedder: CachedEmbedder) -> None:
    path = create_store(NewStore("Blank Slate"))
    pg = Playground(path, embedder=embedder)
    try:
        assert pg.workspace.sops == [] and not pg.workspace.files.kb_files()
        assert pg.chat.send("s", "hi").reply
    finally:
        pg.close()


@pytest.mark.parametrize(("spec", "message"), [
    (NewStore("Shop", starters=["find_product"]), "searches the inventory"),
    (NewStore("Shop", starters=["answer_question"]), "answers from the knowledge base"),
    (NewStore("Shop", starters=["nope"]), "unknown starter"),
    (NewStore("Shop", currency="dollars"), "currency: 'DOLLARS'"),
    (NewStore("Shop", kb=[("notes.exe", b"MZ\x00\x01")]), "notes.exe"),
])
def test_a_wrong_answer_names_what_is_wrong_and_creates_nothing(created: Path, spec: NewStore, message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        create_store(spec)
    assert not (created / "shop").exists()
