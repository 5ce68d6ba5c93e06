"""Text from data is shown as text: an inventory cell or a tool's answer never becomes a link or HTML in a
reply (replies are shown as Markdown in the playground)."""

from __future__ import annotations

from core.language.render import item_line, render_record
from core.understanding import fill_template

CELL = "[Free upgrade](javascript:alert(1)) <img src=x onerror=alert(2)>"


def test_an_inventory_cell_with_a_link_is_shown_as_written() -> None:
    line = item_line({"name": CELL, "brand": "<b>Acme</b>", "price": 10, "stock": 2}, "USD")
    assert "](" not in line.replace("\\](", "") and "<img" not in line.replace("\\<img", "")
    assert line.startswith("\\[Free upgrade\\](javascript:alert(1))")


def test_a_tool_answer_in_a_template_and_a_record_is_shown_as_written() -> None:
    said = fill_template("Your order is {status}.", {"status": CELL})
    assert said == "Your order is \\[Free upgrade\\](javascript:alert(1)) \\<img src=x onerror=alert(2)\\>."
    assert "\\[Free upgrade\\]" in render_record({"note": CELL, "user_name": "a_b"})
    assert "a_b" in render_record({"user_name": "a_b"})  # ordinary characters are left alone
