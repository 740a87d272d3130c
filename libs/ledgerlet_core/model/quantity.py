"""Kubernetes resource quantities, as apimachinery's ``resource.Quantity`` has them.

Upstream: ``staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go``
(``ParseQuantity``, ``parseQuantityString``, ``CanonicalizeBytes``), ``suffix.go`` and
``amount.go``. A quantity is exact: parsing rounds non-zero values *up* (away from zero)
to nano precision, so the value is held here as an integer number of nano-units.
The suffix family (binary, decimal, exponent) is remembered for printing, and an input
string that is already canonical is kept verbatim, exactly where upstream keeps it.
"""

from __future__ import annotations

import enum
from fractions import Fraction
from functools import lru_cache
from typing import Final

__all__ = ["Format", "Quantity", "QuantityError", "parse_quantity"]

NANO: Final = 10**9
MAX_INT64: Final = 2**63 - 1
# Exponents far outside anything a resource can mean would make exact integer
# arithmetic explode; upstream keeps them symbolically. Refused with a clear error.
_MAX_EXPONENT: Final = 10_000


class Format(enum.StrEnum):
    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6
    BINARY_SI = "BinarySI"  # 12Mi
    DECIMAL_SI = "DecimalSI"  # 12M


class QuantityError(ValueError):
    """A string that ``resource.ParseQuantity`` would refuse; the message is upstream's."""


_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG: Final = f"quantities must match the regular expression '{_SPLIT_RE}'"
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"

_DECIMAL_SUFFIXES: Final[dict[str, int]] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: Final[dict[str, int]] = {
    "Ki": 10,
    "Mi": 20,
    "Gi": 30,
    "Ti": 40,
    "Pi": 50,
    "Ei": 60,
}
_DECIMAL_BY_EXP: Final = {v: k for k, v in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXP: Final = {v: k for k, v in _BINARY_SUFFIXES.items()}
_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")
_DIGITS: Final = frozenset("0123456789")


def _float32_exponent_precision(exponent: int) -> int:
    # int32(float32(exponent)*3/10): exact for the small exponents binary suffixes use.
    return int(exponent * 3 / 10)


class Quantity:
    """An exact quantity: ``nanos`` nano-units, printed in ``format``.

    Immutable; arithmetic returns new quantities (``+``, ``-``, ``*`` by an int) with
    upstream's rule that a zero left operand takes the right operand's format.
    """

    __slots__ = ("_cached", "format", "nanos")

    nanos: int
    format: Format
    _cached: str | None

    def __init__(self, nanos: int, fmt: Format = Format.DECIMAL_SI, cached: str | None = None) -> None:
        object.__setattr__(self, "nanos", nanos)
        object.__setattr__(self, "format", fmt)
        object.__setattr__(self, "_cached", cached)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Quantity is immutable")

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled through the constructor (a service's snapshot holds quantities)."""
        return (Quantity, (self.nanos, self.format, self._cached))

    # -- constructors -------------------------------------------------------------
    @classmethod
    def from_int(cls, value: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """``resource.NewQuantity(value, format)``."""
        return cls(value * NANO, fmt)

    @classmethod
    def from_milli(cls, milli: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """``resource.NewMilliQuantity(value, format)``."""
        return cls(milli * 10**6, fmt)

    @classmethod
    def bytes(cls, value: int) -> Quantity:
        """A byte count, printed in BinarySI as the kubelet prints memory and storage."""
        return cls(value * NANO, Format.BINARY_SI)

    # -- values ----------------------------------------------------------------------
    def value(self) -> int:
        """``Value()``: the integer value rounded up, away from zero."""
        return _ceil_away(self.nanos, NANO)

    def milli_value(self) -> int:
        """``MilliValue()``: ceil(q * 1000), away from zero."""
        return _ceil_away(self.nanos, 10**6)

    def is_zero(self) -> bool:
        return self.nanos == 0

    def sign(self) -> int:
        return (self.nanos > 0) - (self.nanos < 0)

    def as_fraction(self) -> Fraction:
        return Fraction(self.nanos, NANO)

    # -- arithmetic ------------------------------------------------------------------
    def __add__(self, other: Quantity) -> Quantity:
        fmt = other.format if self.nanos == 0 else self.format
        return Quantity(self.nanos + other.nanos, fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        fmt = other.format if self.nanos == 0 else self.format
        return Quantity(self.nanos - other.nanos, fmt)

    def __mul__(self, factor: int) -> Quantity:
        return Quantity(self.nanos * factor, self.format)

    def __neg__(self) -> Quantity:
        return Quantity(-self.nanos, self.format)

    # -- comparison (by value only, as Quantity.Cmp) -----------------------------------
    def cmp(self, other: Quantity) -> int:
        return (self.nanos > other.nanos) - (self.nanos < other.nanos)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.nanos == other.nanos

    def __hash__(self) -> int:
        return hash(self.nanos)

    def __lt__(self, other: Quantity) -> bool:
        return self.nanos < other.nanos

    def __le__(self, other: Quantity) -> bool:
        return self.nanos <= other.nanos

    def __gt__(self, other: Quantity) -> bool:
        return self.nanos > other.nanos

    def __ge__(self, other: Quantity) -> bool:
        return self.nanos >= other.nanos

    # -- printing --------------------------------------------------------------------
    def __str__(self) -> str:
        if self._cached is not None:
            return self._cached
        return canonical_string(self.nanos, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


def _ceil_away(numerator: int, denominator: int) -> int:
    q, r = divmod(abs(numerator), denominator)
    if r:
        q += 1
    return q if numerator >= 0 else -q


def _strip_factors(value: int, factor: int) -> tuple[int, int]:
    times = 0
    while value != 0 and value % factor == 0:
        value //= factor
        times += 1
    return value, times


def _decimal_parts(magnitude_nanos: int) -> tuple[int, int]:
    """``AsCanonicalBytes``: mantissa and a base-10 exponent that is a multiple of 3."""
    mantissa, times = _strip_factors(magnitude_nanos, 10)
    exponent = times - 9
    while exponent % 3 != 0:
        mantissa *= 10
        exponent -= 1
    return mantissa, exponent


def _decimal_string(magnitude_nanos: int, fmt: Format) -> str:
    mantissa, exponent = _decimal_parts(magnitude_nanos)
    if fmt == Format.DECIMAL_SI and exponent in _DECIMAL_BY_EXP:
        return f"{mantissa}{_DECIMAL_BY_EXP[exponent]}"
    # DecimalExponent, and DecimalSI beyond "E" or below "n" (upstream falls back to
    # exponent notation rather than lose the magnitude).
    return f"{mantissa}" if exponent == 0 else f"{mantissa}e{exponent}"


@lru_cache(maxsize=4096)  # (a fleet prints the same few quantities a million times)
def canonical_string(nanos: int, fmt: Format) -> str:
    """``Quantity.String()`` without a cached input string (``CanonicalizeBytes``)."""
    if nanos == 0:
        return "0"
    sign = "-" if nanos < 0 else ""
    magnitude = abs(nanos)
    if fmt == Format.BINARY_SI:
        if magnitude < 1024 * NANO or magnitude % NANO != 0:
            # Between -1024 and 1024, or fractional: shown as DecimalSI to avoid rounding.
            return sign + _decimal_string(magnitude, Format.DECIMAL_SI)
        amount, times = _strip_factors(magnitude // NANO, 1024)
        if times * 10 in _BINARY_BY_EXP:
            return f"{sign}{amount}{_BINARY_BY_EXP[times * 10]}"
        if times == 0:
            return f"{sign}{amount}"
        # Past "Ei" there is no binary suffix: exact decimal exponent form instead.
        return sign + _decimal_string(magnitude, Format.DECIMAL_EXPONENT)
    return sign + _decimal_string(magnitude, fmt)


def _scan(text: str) -> tuple[bool, str, str, str, str]:
    """``parseQuantityString``: sign, value text, numerator, denominator, suffix."""
    positive = True
    pos = 0
    end = len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    # strip leading zeros
    while True:
        if pos >= end:
            return positive, "0", "0", "", ""
        if text[pos] == "0":
            pos += 1
        else:
            break
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos]
    if pos >= end:
        return positive, text, num or "0", "", ""
    if not num:
        num = "0"
    denom = ""
    if text[pos] == ".":
        pos += 1
        dstart = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[dstart:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT_WRONG)
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, Format]:
    """``quantitySuffixer.interpret``: base, exponent and format of a suffix."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], Format.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], Format.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        rest = suffix[1:]
        body = rest[1:] if rest[:1] in "+-" else rest
        if not body or not body.isdigit() or not body.isascii():
            raise QuantityError(ERR_SUFFIX)
        exponent = int(rest)
        if not -(2**31 - 1) <= exponent <= 2**31 - 1:
            raise QuantityError(ERR_SUFFIX)
        return 10, exponent, Format.DECIMAL_EXPONENT
    raise QuantityError(ERR_SUFFIX)


def parse_quantity(text: str) -> Quantity:
    """``resource.ParseQuantity``: exact value, remembered format, upstream errors."""
    if not text:
        raise QuantityError(ERR_FORMAT_WRONG)
    if text == "0":
        return Quantity(0, Format.DECIMAL_SI, "0")
    positive, value, num, denom, suffix = _scan(text)
    base, exponent, fmt = _interpret(suffix)
    if abs(exponent) > _MAX_EXPONENT:
        raise QuantityError(f"quantity exponent {exponent} is outside the range ledgerlet supports")

    # The int64 fast path, which is also where upstream keeps a canonical input verbatim.
    precision = -1
    scale = 0
    mantissa = 1
    if fmt in (Format.DECIMAL_EXPONENT, Format.DECIMAL_SI):
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = 1 << exponent
        precision = 15 - len(num) - _float32_exponent_precision(exponent) - 1
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            shifted = num + denom
            result = int(shifted) * mantissa
            if result <= MAX_INT64:
                if not positive:
                    result = -result
                cached: str | None = None
                if fmt == Format.BINARY_SI:
                    if exponent % 10 == 0 and int(shifted) & 0x07 != 0:
                        cached = text
                elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
                    cached = text
                return Quantity(result * 10 ** (scale + 9), fmt, cached)

    # The exact (inf.Dec) path.
    try:
        amount = _exact_decimal(value)
    except ValueError:
        raise QuantityError(ERR_NUMERIC) from None
    amount = amount * 10**exponent if base == 10 else amount * 2**exponent
    negative = amount < 0
    amount = abs(amount)
    nanos = -((-amount * NANO).__floor__())  # round up to nano precision
    if fmt == Format.BINARY_SI and nanos > MAX_INT64 * NANO:
        nanos = MAX_INT64 * NANO
    if fmt == Format.BINARY_SI and 0 < nanos < NANO:
        fmt = Format.DECIMAL_SI
    return Quantity(-nanos if negative else nanos, fmt)


def _exact_decimal(text: str) -> Fraction:
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    whole, _, frac = body.partition(".")
    if not (whole or frac) or not (whole + frac).isdigit():
        raise ValueError(text)
    return sign * Fraction(int((whole or "0") + frac), 10 ** len(frac))


def must_parse(text: str) -> Quantity:
    """``resource.MustParse``, for constants in code and tests."""
    return parse_quantity(text)
