"""The knowledge base answers with the passage that answers the question: documents are cut into
paragraphs, list items and steps with their headings kept apart, the vectors and the question's words are
weighed together, and the reply shows that passage, not the first paragraph of its article."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.evaluation.kb import evaluate_kb, read_questions
from core.language.render import render_fix, render_kb_answer
from core.retrieval.embedding import CachedEmbedder
from core.shared.errors import UserInputError
from core.tools.kb import MAX_PASSAGE, KnowledgeBase, chunk_document

ROOT = Path(__file__).resolve().parents[1]

ARTICLE = """# Bike Hire Rules

Our hire bikes are city bikes with three gears.

## Deposits
- A deposit of 50 euros is taken on your card when the bike leaves the shop.
- The deposit is released within 3 working days after the bike comes back undamaged.
  Damage is deducted from it.

## Fixing a flat tyre
1. Turn the bike upside down.
2. Take the wheel out with the quick release lever.
3. Patch the tube or fit the spare one from the saddle bag.

## Opening hours
Note:
The shop opens at 8 and closes at 19 every day except Sunday.
"""


def test_a_document_is_cut_into_paragraphs_items_and_steps_with_headings_apart() -> None:
    chunks = chunk_document("kb/bikes.md", ARTICLE)
    assert [(c.heading, c.text) for c in chunks] == [
        ("", "Our hire bikes are city bikes with three gears."),
        ("Deposits", "A deposit of 50 euros is taken on your card when the bike leaves the shop."),
        ("Deposits", "The deposit is released within 3 working days after the bike comes back undamaged.\n"
                     "Damage is deducted from it."),
        ("Fixing a flat tyre", "1. Turn the bike upside down."),
        ("Fixing a flat tyre", "2. Take the wheel out with the quick release lever."),
        ("Fixing a flat tyre", "3. Patch the tube or fit the spare one from the saddle bag."),
        ("Opening hours", "Note: The shop opens at 8 and closes at 19 every day except Sunday."),
    ]
    assert {c.title for c in chunks} == {"Bike Hire Rules"}
    assert all("#" not in c.text for c in chunks)
    steps = [c for c in chunks if c.procedure]
    assert len(steps) == 3 and all(c.procedure.count("\n") == 2 for c in steps)
    assert chunks[1].ref == "kb/bikes.md#deposits"


def test_a_short_lead_in_before_a_procedure_is_kept() -> None:
    chunks = chunk_document("kb/chain.md", "# Chain\n\n## Oiling\nDo this:\n1. Wipe the chain.\n2. Oil each link.\n")
    assert [(c.text, bool(c.procedure)) for c in chunks] == [
        ("Do this:", False), ("1. Wipe the chain.", True), ("2. Oil each link.", True)]


@pytest.mark.parametrize("intro", [
    "We wax skis for free in the shop. If you would rather wax them at home, follow these steps.",
    "We wax skis for free in the shop. Waxing at home goes like this:",
    "ร้านแว็กซ์สกีให้ฟรี ถ้าจะแว็กซ์เองที่บ้าน ทำตามขั้นตอนนี้",  # "... follow these steps", Thai cut two ways
])
def test_a_passage_leading_into_the_next_sections_steps_answers_with_them(intro: str) -> None:
    doc = f"# Waxing skis\n\n{intro}\n\n## Steps\n1. Clean the base.\n2. Melt the wax on.\n3. Scrape it thin.\n"
    chunks = chunk_document("wax.md", doc)
    assert chunks[0].text == intro and "3. Scrape it thin." in chunks[0].procedure
    hit = {"ref": "wax.md", "title": "Waxing skis", "snippet": intro, "procedure": chunks[0].procedure,
           "score": 0.7, "order": 0}
    answer = render_kb_answer([hit])
    assert answer.startswith(intro[:20]) and "2. Melt the wax on." in answer
    plain = chunk_document("wax.md", doc.replace(intro, "We wax skis for free in the shop."))
    assert plain[0].procedure == ""  # a passage that leads into nothing keeps to itself


def test_a_long_paragraph_is_cut_between_sentences_and_a_text_without_headings_is_titled_by_its_name() -> None:
    sentence = "The ferry to the island leaves from pier four and takes about forty minutes in calm weather. "
    chunks = chunk_document("kb/ferry_times.txt", sentence * 30)
    assert len(chunks) > 1 and all(len(c.text) <= MAX_PASSAGE for c in chunks)
    assert all(c.text.endswith("weather.") for c in chunks)
    assert chunks[0].title == "Ferry times" and chunks[0].heading == ""
    unbroken = chunk_document("kb/x.md", "x" * (3 * MAX_PASSAGE))
    assert "".join(c.text for c in unbroken) == "x" * (3 * MAX_PASSAGE)


@pytest.fixture(scope="module")
def bikes(tmp_path_factory: pytest.TempPathFactory, embedder: CachedEmbedder) -> KnowledgeBase:
    root = tmp_path_factory.mktemp("bikes")
    (root / "kb").mkdir()
    (root / "kb" / "bikes.md").write_text(ARTICLE, encoding="utf-8")
    return KnowledgeBase([root / "kb" / "bikes.md"], root, embedder)


def test_the_reply_is_the_passage_that_answers_not_the_first_of_its_section(bikes: KnowledgeBase) -> None:
    hits = bikes.search("when do I get my deposit back?")
    assert hits[0]["heading"] == "Deposits" and "released within 3 working days" in hits[0]["snippet"]
    assert "released within 3 working days" in render_kb_answer(hits)
    assert "50 euros" not in render_kb_answer(hits)
    assert "kb/" not in render_kb_answer(hits)


def test_a_fix_walks_the_whole_procedure_whichever_step_matched(bikes: KnowledgeBase) -> None:
    hits = bikes.search("my tyre is flat, how do I take the wheel out?")
    assert "procedure" in hits[0]
    fix = render_fix(hits)
    assert "1. Turn the bike upside down." in fix and "3. Patch the tube" in fix


def test_the_question_sets_of_two_stores_find_their_passage_nine_times_in_ten(embedder: CachedEmbedder) -> None:
    for name in ("demo", "outdoor"):
        report = evaluate_kb(ROOT / "tests" / "kb_questions" / f"{name}.yaml", embedder)
        assert report.questions >= 30
        assert report.top1_rate >= 0.9, [(m.line, m.question) for m in report.misses]


@pytest.mark.parametrize(("text", "message"), [
    ("questions: []\n", "non-empty 'questions'"),
    ("questions:\n  - q: where is the shop?\n", r"q\.yaml:2: question 1 needs"),
    ("questions: [\n", "not valid YAML"),
])
def test_a_bad_question_file_says_what_and_where(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserInputError, match=message):
        read_questions(path)
