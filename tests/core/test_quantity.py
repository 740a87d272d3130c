"""resource.Quantity parity, using the tables of upstream's quantity_test.go."""

from __future__ import annotations

import pytest

from ledgerlet_core.model.quantity import Format, Quantity, QuantityError, canonical_string, parse_quantity

D, B, E = Format.DECIMAL_SI, Format.BINARY_SI, Format.DECIMAL_EXPONENT


def dec(i: int, exponent: int) -> int:
    """Nanos of i * 10^exponent (exponent >= -9)."""
    return i * 10 ** (exponent + 9)


MAX_ALLOWED = (2**63 - 1) * 10**9

# TestQuantityParse
PARSE_TABLE: list[tuple[str, int, Format]] = [
    ("0", dec(0, 0), D),
    ("0n", dec(0, 0), D),
    ("0u", dec(0, 0), D),
    ("0m", dec(0, 0), D),
    ("0Ki", dec(0, 0), B),
    ("0k", dec(0, 0), D),
    ("0Mi", dec(0, 0), B),
    ("0M", dec(0, 0), D),
    ("0Gi", dec(0, 0), B),
    ("0G", dec(0, 0), D),
    ("0Ti", dec(0, 0), B),
    ("0T", dec(0, 0), D),
    ("1", dec(1, 0), D),
    ("1Ki", dec(1024, 0), B),
    ("8Ki", dec(8 * 1024, 0), B),
    ("7Mi", dec(7 * 1024**2, 0), B),
    ("6Gi", dec(6 * 1024**3, 0), B),
    ("5Ti", dec(5 * 1024**4, 0), B),
    ("4Pi", dec(4 * 1024**5, 0), B),
    ("3Ei", dec(3 * 1024**6, 0), B),
    ("10Ti", dec(10 * 1024**4, 0), B),
    ("100Ti", dec(100 * 1024**4, 0), B),
    ("5n", dec(5, -9), D),
    ("4u", dec(4, -6), D),
    ("3m", dec(3, -3), D),
    ("9", dec(9, 0), D),
    ("8k", dec(8, 3), D),
    ("50k", dec(5, 4), D),
    ("7M", dec(7, 6), D),
    ("6G", dec(6, 9), D),
    ("5T", dec(5, 12), D),
    ("40T", dec(4, 13), D),
    ("300T", dec(3, 14), D),
    ("2P", dec(2, 15), D),
    ("1E", dec(1, 18), D),
    ("1E-3", dec(1, -3), E),
    ("1e3", dec(1, 3), E),
    ("1E6", dec(1, 6), E),
    ("1e9", dec(1, 9), E),
    ("1E12", dec(1, 12), E),
    ("1e15", dec(1, 15), E),
    ("1E18", dec(1, 18), E),
    ("1e14", dec(1, 14), E),
    ("1e13", dec(1, 13), E),
    ("100.035k", dec(100035, 0), D),
    ("0.001", dec(1, -3), D),
    ("0.0005k", dec(5, -1), D),
    ("0.005", dec(5, -3), D),
    ("0.05", dec(5, -2), D),
    ("0.5", dec(5, -1), D),
    ("0.00050k", dec(5, -1), D),
    ("0.00500", dec(5, -3), D),
    ("0.05000", dec(5, -2), D),
    ("0.50000", dec(5, -1), D),
    ("0.5e0", dec(5, -1), E),
    ("0.5e-1", dec(5, -2), E),
    ("0.5e-2", dec(5, -3), E),
    ("10.035M", dec(10035, 3), D),
    ("1.2e3", dec(12, 2), E),
    ("1.3E+6", dec(13, 5), E),
    ("1.40e9", dec(14, 8), E),
    ("1.53E12", dec(153, 10), E),
    ("1.6e15", dec(16, 14), E),
    ("1.7E18", dec(17, 17), E),
    ("9.01", dec(901, -2), D),
    ("8.1k", dec(81, 2), D),
    ("7.123456M", dec(7123456, 0), D),
    ("6.987654321G", dec(6987654321, 0), D),
    ("5.444T", dec(5444, 9), D),
    ("40.1T", dec(401, 11), D),
    ("300.2T", dec(3002, 11), D),
    ("2.5P", dec(25, 14), D),
    ("1.01E", dec(101, 16), D),
    # things that saturate/round
    ("3.001n", dec(4, -9), D),
    ("1.1E-9", dec(2, -9), E),
    ("0.0000000001", dec(1, -9), D),
    ("0.0000000005", dec(1, -9), D),
    ("0.00000000050", dec(1, -9), D),
    ("0.5e-9", dec(1, -9), E),
    ("0.9n", dec(1, -9), D),
    ("0.00000012345", dec(124, -9), D),
    ("0.00000012354", dec(124, -9), D),
    ("9Ei", MAX_ALLOWED, B),
    ("9223372036854775807Ki", MAX_ALLOWED, B),
    ("12E", dec(12, 18), D),
    # fractional binary
    ("100.035Ki", dec(10243584, -2), B),
    ("0.5Mi", dec(524288, 0), B),
    ("0.05Gi", dec(536870912, -1), B),
    ("0.025Ti", dec(274877906944, -1), B),
    # things written by trolls
    ("0.000000000001Ki", dec(2, -9), D),
    (".001", dec(1, -3), D),
    (".0001k", dec(100, -3), D),
    ("1.", dec(1, 0), D),
    ("1.G", dec(1, 9), D),
]


@pytest.mark.parametrize(("text", "nanos", "fmt"), PARSE_TABLE)
def test_parse_table(text: str, nanos: int, fmt: Format) -> None:
    q = parse_quantity(text)
    assert q.nanos == nanos
    assert q.format == fmt
    # negative and explicit-plus versions, as upstream runs the table
    neg = parse_quantity("-" + text)
    assert neg.nanos == -nanos and neg.format == fmt
    plus = parse_quantity("+" + text)
    assert plus.nanos == nanos and plus.format == fmt


@pytest.mark.parametrize(
    "text",
    ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", "1e4294967297", " 1", "1 "],
)
def test_invalid(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_error_messages_are_upstreams() -> None:
    with pytest.raises(QuantityError, match="unable to parse quantity's suffix"):
        parse_quantity("1i")
    with pytest.raises(QuantityError, match="quantities must match the regular expression"):
        parse_quantity("1.1.M")


# TestQuantityString: (nanos, format, canonical, alternate spelling that canonicalises to it)
STRING_TABLE: list[tuple[int, Format, str, str]] = [
    (dec(1024**3, 0), B, "1Gi", "1024Mi"),
    (dec(300 * 1024**2, 0), B, "300Mi", "307200Ki"),
    (dec(6 * 1024, 0), B, "6Ki", ""),
    (dec(1001 * 1024**3, 0), B, "1001Gi", "1025024Mi"),
    (dec(1024**4, 0), B, "1Ti", "1024Gi"),
    (dec(5, 0), B, "5", "5000m"),
    (dec(500, -3), B, "500m", "0.5"),
    (dec(1, 9), D, "1G", "1000M"),
    (dec(1000, 6), D, "1G", "0.001T"),
    (dec(1000000, 3), D, "1G", ""),
    (dec(1000000000, 0), D, "1G", ""),
    (dec(1, -3), D, "1m", "1000u"),
    (dec(80, -3), D, "80m", ""),
    (dec(1080, -3), D, "1080m", "1.08"),
    (dec(108, -2), D, "1080m", "1080000000n"),
    (dec(10800, -4), D, "1080m", ""),
    (dec(300, 6), D, "300M", ""),
    (dec(1, 12), D, "1T", ""),
    (dec(1, 18), D, "1E", ""),
    (dec(1, 21), D, "1e21", "1000E"),
    (dec(5, 21), D, "5e21", "5000E"),
    (dec(1, 24), D, "1e24", "1000000E"),
    (dec(1, 70), B, "10e69", ""),
    (dec(2, 70), B, "20e69", ""),
    (dec(1, 72), B, "1e72", ""),
    (dec(1234567, 6), D, "1234567M", ""),
    (dec(1234567, -3), B, "1234567m", ""),
    (dec(3, 3), D, "3k", ""),
    (dec(1025, 0), B, "1025", ""),
    (dec(0, 0), D, "0", ""),
    (dec(0, 0), B, "0", ""),
    (dec(1, 9), E, "1e9", ".001e12"),
    (dec(1, -3), E, "1e-3", "0.001e0"),
    (dec(1, -9), E, "1e-9", "1000e-12"),
    (dec(80, -3), E, "80e-3", ""),
    (dec(300, 6), E, "300e6", ""),
    (dec(1, 12), E, "1e12", ""),
    (dec(1, 3), E, "1e3", ""),
    (dec(3, 3), E, "3e3", ""),
    (dec(3, 3), D, "3k", ""),
    (dec(0, 0), E, "0", "00"),
    (dec(1, -9), D, "1n", ""),
    (dec(80, -9), D, "80n", ""),
    (dec(1080, -9), D, "1080n", ""),
    (dec(108, -8), D, "1080n", ""),
    (dec(1, -6), D, "1u", ""),
    (dec(80, -6), D, "80u", ""),
    (dec(1080, -6), D, "1080u", ""),
]


@pytest.mark.parametrize(("nanos", "fmt", "expect", "alternate"), STRING_TABLE)
def test_canonical_string(nanos: int, fmt: Format, expect: str, alternate: str) -> None:
    assert str(Quantity(nanos, fmt)) == expect
    assert str(parse_quantity(expect)) == expect
    if alternate:
        assert str(parse_quantity(alternate)) == expect
    if nanos:
        assert str(Quantity(-nanos, fmt)) == "-" + expect


def test_binary_past_ei_round_trips() -> None:
    q = parse_quantity("1Ei") * 1024
    assert str(q) == "1180591620717411303424"
    assert parse_quantity(str(q)) == q


def test_binary_zero_exponent_string() -> None:
    assert canonical_string(dec(2000, 0), B) == "2000"
    assert canonical_string(-dec(2000, 0), B) == "-2000"


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
    ],
)
def test_parse_emit(text: str, expect: str) -> None:
    assert str(parse_quantity(text)) == expect
    assert str(parse_quantity("-" + text)) == "-" + expect


def test_canonical_input_is_kept_verbatim_where_upstream_keeps_it() -> None:
    # upstream caches the input string on the int64 fast path when it is canonical;
    # "+1k" and "01" are kept as written, which is what kubectl shows back.
    assert str(parse_quantity("+1k")) == "+1k"
    assert str(parse_quantity("01")) == "01"
    assert str(parse_quantity("1000")) == "1k"
    assert str(parse_quantity("1.5Gi")) == "1536Mi"
    assert str(parse_quantity("1.5")) == "1500m"


def test_cmp() -> None:
    assert parse_quantity("100m") > parse_quantity("50m")
    assert parse_quantity("50m") < parse_quantity("100m")
    assert parse_quantity("10000T") > parse_quantity("100Gi")
    assert parse_quantity("0").cmp(parse_quantity("0")) == 0
    assert parse_quantity("1Gi") == parse_quantity("1024Mi")


def test_value_rounds_up_away_from_zero() -> None:
    assert parse_quantity("1.2Gi").value() == 1288490189
    assert parse_quantity("9.01").value() == 10
    assert parse_quantity("-9.01").value() == -10
    assert parse_quantity("100m").milli_value() == 100
    assert parse_quantity("0.1m").milli_value() == 1  # 0.1m rounds up to 1m


def test_add_to_zero_takes_the_format_of_the_other() -> None:
    for text in ("100m", "1Gi"):
        assert str(parse_quantity("0") + parse_quantity(text)) == text
        assert str(parse_quantity(text) + parse_quantity("0")) == text
        assert str(parse_quantity(text) - parse_quantity("0")) == text


def test_neg() -> None:
    assert str(-Quantity(dec(901, -2), D)) == "-9010m"
