"""Slot types are declared by the author (gar.csv ``name:type``, an SOP's ``slots:``) and used as written;
a type the engine had to infer is shown by lint as an info line saying what from; a wrong type is an error
with file:line. Written on a library help desk of our own."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.engine.build import build_orchestrator, load_workspace
from core.retrieval.embedding import CachedEmbedder
from core.understanding.extract import extract

GAR = """action,action_type,user_interaction_metadata,api,params
ask the member for their name or card number,ask_user_input,your full name or library card ID,,{member}
ask the member for the card number,ask_user_input,the 16-digit number on the card,,card_number{card}
ask the member which format they want,ask_user_input,"the format you would like",,format
tell the member the hold is placed,message_to_user,"Thanks {{member}}, your {{format}} hold is placed.",,
"""
SOP = """---
id: library.place_hold
title: Place a hold on a book
triggers:
  - I want to reserve a book
  - place a hold for me
{slots}---
ask the member for their name or card number
ask the member for the card number
ask the member which format they want
tell the member the hold is placed
"""
STORE = "name: Riverside Library\ncurrency: USD\nregion: US\nagents:\n  desk:\n    goals: library.*\n    tools: []\n"


def desk(root: Path, member: str = "", card: str = "", slots: str = "") -> Path:
    (root / "sops").mkdir(parents=True)
    (root / "store.yaml").write_text(STORE, encoding="utf-8")
    (root / "gar.csv").write_text(GAR.format(member=f"member{member}", card=card), encoding="utf-8")
    (root / "sops" / "hold.sop").write_text(SOP.format(slots=slots), encoding="utf-8")
    return root


def lint(root: Path, embedder: CachedEmbedder) -> list[str]:
    return [str(p) for p in load_workspace(root, embedder).problems]


def test_an_inferred_type_is_an_info_line_naming_the_words_it_came_from(tmp_path: Path,
                                                                         embedder: CachedEmbedder) -> None:
    found = lint(desk(tmp_path / "ws"), embedder)
    # the hint offers a name or an id: the slot takes either, as text (kinds weighed from all the evidence)
    assert ("sops/hold.sop:8: info: slot 'member' is read as text (inferred from its hint, which offers more than "
            "one kind ('your full name or library card ID')); declare it to change that: member:<type> in gar.csv "
            "params or slots: {member: <type>} in the SOP") in found
    assert not [p for p in found if ": error: " in p or ": warning: " in p]


def test_a_declared_type_is_used_as_written_and_needs_no_info_line(tmp_path: Path, embedder: CachedEmbedder) -> None:
    root = desk(tmp_path / "ws", member=":name", card=":code(16)")
    loaded = load_workspace(root, embedder)
    types = loaded.types["library.place_hold"]
    assert types["member"].person and types["member"].origin == "declared in gar.csv:2"
    assert types["card_number"].kind == "digits" and types["card_number"].digits == 16
    assert not [p for p in loaded.problems if "'member'" in p.message or "'card_number'" in p.message]
    assert extract(types["member"], "it's Maria Lopez", asked=True) == "Maria Lopez"
    assert extract(types["card_number"], "4111 1111 1111 1111", asked=True) == "4111111111111111"

    orch = build_orchestrator(root, loaded=loaded, state_url="sqlite:///:memory:")
    orch.handle_message("m1", "I want to reserve a book")
    orch.handle_message("m1", "Maria Lopez")
    state = orch.load_state("m1")
    assert state is not None and state.active_goal is not None
    assert state.active_goal.slots["member"] == "Maria Lopez"  # a name, not rejected as a malformed id


def test_an_sops_slots_outrank_the_gar_and_list_the_values(tmp_path: Path, embedder: CachedEmbedder) -> None:
    root = desk(tmp_path / "ws", member=":name", slots="slots:\n  member: username\n  format: one_of(print, "
                                                        "ebook, audiobook)\n")
    loaded = load_workspace(root, embedder)
    types = loaded.types["library.place_hold"]
    assert types["member"].handle and types["member"].origin == "declared in sops/hold.sop:7"
    assert types["format"].kind == "option" and types["format"].vocab == ["print", "ebook", "audiobook"]
    assert extract(types["format"], "the ebook please", asked=True) == "ebook"


@pytest.mark.parametrize(("member", "slots", "expected"), [
    (":pet_name", "", "gar.csv:2: error: action 'ask the member for their name or card number': slot 'member': "
                      "unknown slot type 'pet_name'; use one of text, free_text, name"),
    (":one_of(print)", "", "gar.csv:2: error: action 'ask the member for their name or card number': slot 'member': "
                           "'one_of(print)': one_of needs two or more values"),
    ("", "slots:\n  format: colour\n", "sops/hold.sop:7: error: slots: 'format': unknown slot type 'colour'"),
    ("", "slots: [member]\n", "sops/hold.sop:7: error: slots must map names to texts"),
    (":column(Genre)", "", "gar.csv:2: error: action 'ask the member for their name or card number': slot 'member': "
                           "'column(Genre)': the inventory has no column 'Genre' (its columns: none"),
])
def test_a_wrong_type_is_an_error_with_its_line(tmp_path: Path, embedder: CachedEmbedder, member: str, slots: str,
                                                expected: str) -> None:
    found = lint(desk(tmp_path / "ws", member=member, slots=slots), embedder)
    assert any(p.startswith(expected) for p in found), found


def test_one_of_a_columns_values(tmp_path: Path, embedder: CachedEmbedder) -> None:
    root = desk(tmp_path / "ws")
    (root / "books.csv").write_text("Title,Genre,Price\nDune,Science fiction,10\nEmma,Romance,8\n", encoding="utf-8")
    (root / "store.yaml").write_text(STORE + "inventory:\n  source: books.csv\n  columns: {name: Title, price: Price, "
                                             "category: Genre}\n", encoding="utf-8")
    gar = (root / "gar.csv").read_text(encoding="utf-8").replace(",,format\n", ",,format:column(Genre)\n")
    (root / "gar.csv").write_text(gar, encoding="utf-8")
    loaded = load_workspace(root, embedder)
    assert not [p for p in loaded.problems if p.severity == "error"], [str(p) for p in loaded.problems]
    st = loaded.types["library.place_hold"]["format"]
    assert st.kind == "option" and st.vocab == ["Romance", "Science fiction"]
    assert extract(st, "something in science fiction", asked=True) == "Science fiction"


def test_the_demo_lints_with_no_errors_and_says_how_it_reads_its_slots(embedder: CachedEmbedder) -> None:
    loaded = load_workspace(Path(__file__).resolve().parents[1], embedder)
    infos = [p for p in loaded.problems if p.severity == "info"]
    assert infos and all("is read as" in p.message and p.line > 0 for p in infos)
    assert not [p for p in loaded.problems if p.severity == "error"]
