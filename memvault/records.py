"""Typed immutable records for the prompt path: `class X(Record)` is a `typing.NamedTuple` without importing typing.

A prompt hook is a fresh process on every prompt, and `typing` costs it about 5 ms of imports (dataclasses
about 8 more, through inspect). Type checkers see `Record` as `typing.NamedTuple`; at run time the class
body's annotated fields, defaults, methods and properties become a `collections.namedtuple` subclass, the
same thing typing builds (fields, defaults, `_asdict`, `_replace`, tuple equality and hashing).
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:
    from typing import NamedTuple as Record
else:

    class _RecordType(type):
        def __new__(mcs, name: str, bases: tuple, namespace: dict) -> type:
            if not bases:  # Record itself
                return super().__new__(mcs, name, bases, namespace)
            fields = list(namespace.get("__annotations__", {}))
            defaults = [namespace[f] for f in fields if f in namespace]
            if any(f in namespace for f in fields[: len(fields) - len(defaults)]):
                raise TypeError(f"{name}: a field without a default follows one with a default")
            base = collections.namedtuple(name, fields, defaults=defaults, module=namespace["__module__"])
            body = {k: v for k, v in namespace.items() if k not in fields and k not in ("__annotations__", "__slots__")}
            return type(name, (base,), {**body, "__slots__": ()})

    class Record(metaclass=_RecordType):
        """Subclass with annotated fields (defaults last), as `typing.NamedTuple`."""


__all__ = ["Record"]
