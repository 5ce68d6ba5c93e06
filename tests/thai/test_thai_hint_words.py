"""A question put in Thai uses the author's own Thai words for what is asked when the hint is written in
Thai, and "... ล่ะ" ends a question ("what about ...?")."""

from __future__ import annotations

from core.language import text as T
from core.understanding.brains.questions import asked_in


def test_a_thai_hint_names_what_is_asked_in_the_question() -> None:
    q = asked_in("th", "ask customer for device colour", "สีของเครื่อง เช่น ดำ หรือ ขาว")
    assert "สีของเครื่อง" in q and "device colour" not in q
    assert "ดำ" in q  # the example follows


def test_an_english_hint_keeps_the_words_table_or_the_action() -> None:
    q = asked_in("th", "ask customer for device colour", "the colour, e.g. black")
    assert "device colour" in q or "colour" in q


def test_la_ends_a_question_in_thai() -> None:
    assert T.is_question("แล้วเครื่องของคุณแม่ TK-55310 ล่ะคะ")
    assert not T.is_question("ของน้องอีกเครื่องค่ะ")
