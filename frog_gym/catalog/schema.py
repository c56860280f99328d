"""A small schema checker for TOML and JSON records: types, required fields, refused unknown keys.

Errors name the file and the dotted field, say what was expected, and suggest the nearest known key.

Example:
    >>> s = {"name": Field(str), "tests": Field(int, required=False, default=0)}
    >>> check({"name": "x"}, s, "spec.toml")
    {'name': 'x', 'tests': 0}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from frog_gym.errors import SpecError, did_you_mean

_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list",
               dict: "a table"}


@dataclass(frozen=True)
class Field:
    """One field of a record.

    Attributes:
        type: the Python type the value must have (``float`` also accepts integers).
        required: whether a missing field is an error.
        default: the value used when the field is missing and not required.
        items: for lists, the type of each item.
        schema: for tables, the schema of the nested table (unknown keys refused there too);
            None for a free-form table.
        check: an extra validator returning an error message or None.
        doc: what the field means (rendered into the spec documentation).
    """

    type: type
    required: bool = True
    default: Any = None
    items: type | None = None
    schema: dict[str, Field] | None = None
    check: Callable[[Any], str | None] | None = None
    doc: str = ""


def _type_ok(value: Any, want: type) -> bool:
    if want is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if want is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, want)


def check(record: Any, schema: dict[str, Field], file: str, prefix: str = "") -> dict[str, Any]:
    """Validate ``record`` against ``schema``; return it with defaults filled in.

    Raises:
        SpecError: naming ``file`` and the dotted field that is missing, of the wrong type, or unknown.
    """
    if not isinstance(record, dict):
        raise SpecError(file, prefix or "<top>", f"expected a table, got {type(record).__name__}")
    for key in record:
        if key not in schema:
            known = ", ".join(sorted(schema))
            raise SpecError(file, prefix + key, f"unknown key.{did_you_mean(key, schema)} Known keys: {known}")
    out: dict[str, Any] = {}
    for key, field in schema.items():
        name = prefix + key
        if key not in record:
            if field.required:
                raise SpecError(file, name, f"missing; expected {_TYPE_NAMES.get(field.type, field.type)}"
                                + (f" ({field.doc})" if field.doc else ""))
            default = field.default
            if field.schema is not None and default is None:
                default = check({}, field.schema, file, name + ".")
            out[key] = default() if callable(default) else default
            continue
        value = record[key]
        if not _type_ok(value, field.type):
            raise SpecError(file, name, f"expected {_TYPE_NAMES.get(field.type, field.type)}, "
                            f"got {type(value).__name__} {value!r}")
        if field.items is not None:
            for i, item in enumerate(value):
                if not _type_ok(item, field.items):
                    raise SpecError(file, f"{name}[{i}]", f"expected {_TYPE_NAMES.get(field.items)}, "
                                    f"got {type(item).__name__} {item!r}")
        if field.schema is not None:
            value = check(value, field.schema, file, name + ".")
        if field.check is not None and (problem := field.check(value)):
            raise SpecError(file, name, problem)
        out[key] = value
    return out
