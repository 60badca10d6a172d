"""memvault.records: the prompt path's typing.NamedTuple stand-in behaves as NamedTuple does."""

from __future__ import annotations

import pickle
from typing import NamedTuple

import pytest

from memvault.index.chunking import Chunk
from memvault.recall.search import Options
from memvault.records import Record


class Point(Record):
    """A point."""

    x: int
    y: int = 0
    label: str = ""

    @property
    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)

    def moved(self, dx: int) -> Point:
        return self._replace(x=self.x + dx)


class TypedPoint(NamedTuple):
    x: int
    y: int = 0
    label: str = ""


def test_a_record_has_the_fields_defaults_and_methods_of_a_named_tuple() -> None:
    p = Point(3, label="a")
    assert p == (3, 0, "a") == TypedPoint(3, label="a")
    assert Point._fields == TypedPoint._fields and Point.__doc__ == "A point."
    assert p._asdict() == {"x": 3, "y": 0, "label": "a"}
    assert p.norm1 == 3 and p.moved(2) == Point(5, 0, "a") and isinstance(p.moved(2), Point)
    assert repr(p) == "Point(x=3, y=0, label='a')" and hash(p) == hash((3, 0, "a"))
    assert pickle.loads(pickle.dumps(p)) == p  # noqa: S301 (its own bytes): a module-level record pickles by name
    with pytest.raises(AttributeError):
        p.x = 4  # type: ignore[misc]
    with pytest.raises(AttributeError):
        p.z = 1  # type: ignore[attr-defined]  # no instance dict


def test_a_field_without_a_default_after_one_with_a_default_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default follows"):

        class Bad(Record):
            x: int = 0
            y: int  # type: ignore[misc]


def test_the_recall_records_are_records() -> None:
    assert Options()._replace(k=3).k == 3 and Options().floor.on is False
    assert Chunk(0, "", "text").before == ""
