"""Tests for the safe arithmetic evaluator."""

from __future__ import annotations

import pytest

from core.shared.errors import ToolError
from core.tools.mathexpr import evaluate


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2", 3),
        ("7 - 10", -3),
        ("6 * 7", 42),
        ("7 / 2", 3.5),
        ("6 / 2", 3),
        ("10 // 3", 3),
        ("-7 // 2", -4),
        ("10 % 3", 1),
        ("2 ** 10", 1024),
        ("2 ** -2", 0.25),
        ("4 ** 0.5", 2),
        ("(-2) ** 3", -8),
        ("-3 ** 2", -9),
        ("+5", 5),
        ("--5", 5),
        ("(1 + 2) * 3", 9),
        ("1 + 2 * 3", 7),
        ("2.5 * 4", 10),
        ("0.1 + 0.2", 0.3),
        ("35000 * 0.07", 2450),
        ("1e3", 1000),
        ("1_000 + 1", 1001),
        ("10 ** 18", 10**18),
        ("-10 ** 18", -(10**18)),
        ("  12  ", 12),
    ],
)
def test_arithmetic(expression: str, expected: float) -> None:
    result = evaluate(expression)
    assert result == expected
    assert type(result) is type(expected)


def test_fractions_stay_floats() -> None:
    assert evaluate("1 / 3") == pytest.approx(1 / 3)
    assert isinstance(evaluate("1 / 4"), float)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1,500", 1500),
        ("1,500 + 250", 1750),
        ("1,234,567", 1234567),
        ("12,345.50 * 2", 24691),
        ("35k", 35000),
        ("35K - 5k", 30000),
        ("1.5k", 1500),
        ("1.1k", 1100),
        ("1.5k * 2", 3000),
        ("2m", 2_000_000),
        ("2.5M / 5", 500_000),
        (".5k", 500),
        ("฿35k", 35000),
        ("฿ 1,500", 1500),
        ("$1,234.50", 1234.5),
        ("€10 + £5", 15),
        ("1200 baht", 1200),
        ("35,000 THB * 1.07", 37450),
        ("35k baht", 35000),
        ("100 บาท * 3", 300),
        ("3 × 4 ÷ 2 − 1", 5),
    ],
)
def test_money_notation(expression: str, expected: float) -> None:
    result = evaluate(expression)
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("x", "names are not allowed: 'x'"),
        ("x + 1", "names are not allowed: 'x'"),
        ("abs(-1)", "function calls are not allowed"),
        ("__import__('os')", "strings are not allowed"),
        ("(1).real", "attributes are not allowed"),
        ("(1, 2)[0]", "subscripts are not allowed"),
        ("'abc'", "strings are not allowed"),
        ('"\\d"', "strings are not allowed"),
        ("1 < 2", "comparisons are not allowed"),
        ("1 and 2", "boolean operators are not allowed"),
        ("True", "bool values are not allowed"),
        ("None", "NoneType values are not allowed"),
        ("1j", "complex values are not allowed"),
        ("[1]", "lists are not allowed"),
        ("lambda: 1", "lambdas are not allowed"),
        ("1 if 1 else 2", "IfExp is not allowed"),
        ("1,5", "unexpected ','"),
        ("1 & 2", "operator '&' is not allowed"),
        ("1 << 2", "operator '<<' is not allowed"),
        ("~1", "operator '~' is not allowed"),
        ("not 1", "operator 'not' is not allowed"),
        ("1 / 0", "division by zero"),
        ("1 // 0", "division by zero"),
        ("1 % 0", "division by zero"),
        ("1 / (2 - 2)", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("2 ** 101", "exponent too large"),
        ("2 ** -101", "exponent too large"),
        ("2 ** 2 ** 2 ** 2 ** 2", "exponent too large"),
        ("9 ** 99", "result too large"),
        ("10 ** 18 + 1", "number too large: 1000000000000000001"),
        ("1e19", "number too large"),
        ("10 ** 10 * 10 ** 10", "number too large"),
        ("9" * 400, "number too large: a 400-digit number"),
        ("2m * 1m * 1m", "number too large"),
        ("(-8) ** 0.5", "fractional power of a negative number"),
        ("1 +", "not a valid arithmetic expression"),
        ("(" * 240 + "1" + ")" * 240, "not a valid arithmetic expression"),
        ("1 = 1", "not a valid arithmetic expression"),
        ("", "expression is empty"),
        ("   ", "expression is empty"),
        ("฿", "not a valid arithmetic expression"),
        ("1" * 501, "expression too long: 501 characters"),
    ],
)
def test_rejections(expression: str, message: str) -> None:
    with pytest.raises(ToolError) as info:
        evaluate(expression)
    assert info.value.kind == "invalid_input"
    assert message in str(info.value)


def test_length_limit_is_inclusive() -> None:
    expression = "1+" * 249 + "1"  # 499 characters
    assert evaluate(expression + "1") == 260  # exactly 500 characters: allowed


def test_non_string_is_rejected() -> None:
    with pytest.raises(ToolError, match="must be a string") as info:
        evaluate(42)  # type: ignore[arg-type]
    assert info.value.kind == "invalid_input"


def test_never_executes_code(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    def boom(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("eval must not be used")

    monkeypatch.setattr(builtins, "eval", boom)
    monkeypatch.setattr(builtins, "exec", boom)
    assert evaluate("2 * (3 + 4)") == 14
