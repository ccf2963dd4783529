"""Kafka's ConfigDef parsing and validators, for config values sent through the admin APIs
(ring: drivers — pure).

`ConfigDef.parseType@2.5.1` (ConfigDef.java L633-729): every value is trimmed; BOOLEAN is "true" or
"false" in any case; INT/SHORT/LONG are Java integers of that width; DOUBLE a Java double; LIST a
comma list (empty ⇒ []); STRING/PASSWORD the trimmed text; CLASS a class name (the reference
loads no classes: any name of Java identifiers separated by dots is accepted). Failures raise
`ConfigException` with Kafka's message: "Invalid value <v> for configuration <name>: <reason>".
`parse(defs, props)` is `ConfigDef.parse`: every defined key in definition order, the value from
`props` or the default, then its validator.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

INT_BITS = {"INT": 32, "SHORT": 16, "LONG": 64}
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)|(0[xX][0-9a-fA-F]*\.?[0-9a-fA-F]*[pP][+-]?\d+))[fFdD]?"
)
_JAVA_CLASS = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*")
_COMMA = re.compile(r"\s*,\s*")


class ConfigException(ValueError):
    """Kafka's `org.apache.kafka.common.config.ConfigException` (its message is Kafka's)."""

    @staticmethod
    def invalid(name: str, value: object, reason: str | None = None) -> ConfigException:
        text = java_string(value)
        return ConfigException(
            f"Invalid value {text} for configuration {name}" + (f": {reason}" if reason else "")
        )


Validator = Callable[[str, Any], None]


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: str  # ConfigDef.Type name: BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD
    default: Any = None  # a parsed value (None = Kafka's null default)
    validator: Validator | None = None


def java_string(value: object) -> str:
    """`String.valueOf` of a parsed value, as Kafka's messages print it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(java_string(v) for v in value) + "]"
    if isinstance(value, float):
        return java_double(value)
    return str(value)


def java_double(value: float) -> str:
    """`Double.toString`: plain between 10^-3 and 10^7, else scientific (0.5, 1.0, 1.0E10, 1.5E-4)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text or "e" in text else text + ".0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    scientific = len(digits) - 1 + exponent
    mantissa = "".join(str(d) for d in digits[1:]) or "0"
    return f"{'-' if sign else ''}{digits[0]}.{mantissa}E{scientific}"


def parse_type(name: str, value: str | None, kind: str) -> Any:
    """`ConfigDef.parseType` of a string value (None stays None)."""
    if value is None:
        return None
    trimmed = value.strip()
    match kind:
        case "BOOLEAN":
            if trimmed.lower() in ("true", "false"):
                return trimmed.lower() == "true"
            raise ConfigException.invalid(name, value, "Expected value to be either true or false")
        case "STRING" | "PASSWORD":
            return trimmed
        case "INT" | "SHORT" | "LONG":
            return _java_integer(name, value, trimmed, kind)
        case "DOUBLE":
            if not _JAVA_DOUBLE.fullmatch(trimmed):
                raise ConfigException.invalid(name, value, "Not a number of type DOUBLE")
            return _to_float(trimmed)
        case "LIST":
            return [] if not trimmed else _COMMA.split(trimmed)
        case "CLASS":
            if not _JAVA_CLASS.fullmatch(trimmed):
                raise ConfigException.invalid(name, value, f"Class {value} could not be found.")
            return trimmed
        case _:
            raise ValueError(f"unknown ConfigDef type {kind}")


def _java_integer(name: str, value: str, trimmed: str, kind: str) -> int:
    bits = INT_BITS[kind]
    if _JAVA_INT.fullmatch(trimmed):
        number = int(trimmed)
        if -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            return number
    raise ConfigException.invalid(name, value, f"Not a number of type {kind}")


def _to_float(text: str) -> float:
    body = text.rstrip("fFdD")
    if "x" in body.lower():
        return float.fromhex(body)
    return float(body.replace("Infinity", "inf"))


def parse(defs: Sequence[ConfigKey], props: Mapping[str, str | None]) -> dict[str, Any]:
    """`ConfigDef.parse`: every defined key, parsed or defaulted, then validated, in order."""
    values: dict[str, Any] = {}
    for key in defs:
        value = parse_type(key.name, props[key.name], key.type) if key.name in props else key.default
        if key.validator is not None:
            key.validator(key.name, value)
        values[key.name] = value
    return values


def convert_to_string(value: Any, kind: str | None) -> str | None:
    """`ConfigDef.convertToString`: LIST joined with commas, numbers and booleans as Java prints them."""
    if value is None:
        return None
    if kind == "LIST" and isinstance(value, list):
        return ",".join(str(v) for v in value)
    return java_string(value)


# ---- validators ------------------------------------------------------------------------------
def at_least(minimum: int) -> Validator:
    return between(minimum, None)


def between(minimum: int | None, maximum: int | None) -> Validator:
    """`ConfigDef.Range`."""

    def check(name: str, value: Any) -> None:
        if value is None:
            raise ConfigException.invalid(name, None, "Value must be non-null")
        if minimum is not None and value < minimum:
            raise ConfigException.invalid(name, value, f"Value must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise ConfigException.invalid(name, value, f"Value must be no more than {maximum}")

    return check


def one_of(*allowed: str) -> Validator:
    """`ConfigDef.ValidString.in`."""

    def check(name: str, value: Any) -> None:
        if value not in allowed:
            raise ConfigException.invalid(name, value, f"String must be one of: {', '.join(allowed)}")

    return check


def list_of(*allowed: str) -> Validator:
    """`ConfigDef.ValidList.in`: every element one of `allowed`."""
    element = one_of(*allowed)

    def check(name: str, value: Any) -> None:
        for item in value:
            element(name, item)

    return check
