"""`memvault.wire`: the hook's short-way messages round-trip any text, and anything else is refused clearly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault import wire

TEXT = st.text(st.characters(blacklist_categories=("Cs",)))


@given(payload=st.binary(), event=TEXT, env=st.dictionaries(st.text("ABCXYZ_", min_size=1), TEXT), started=st.floats(
    min_value=0, max_value=1e9, allow_nan=False))
def test_a_request_round_trips(payload: bytes, event: str, env: dict[str, str], started: float) -> None:
    line = wire.pack({"op": "prompt_hook", "event": event, "payload": payload,
                      "env": [f"{k}={v}" for k, v in env.items()], "started": started, "host": None})  # fmt: skip
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and wire.is_message(line)
    request = wire.request(line)
    assert request["event"] == event and request["env"] == env and request["started"] == started
    assert request["payload"] == payload.decode("utf-8", "replace")  # as the JSON request's reader took it
    assert "host" not in request and request["wire"] is True


@given(items=st.lists(TEXT), flag=st.booleans())
def test_lists_and_flags_round_trip(items: list[str], flag: bool) -> None:
    fields = wire.unpack(wire.pack({"items": items, "flag": flag, "n": 12.5}))
    assert wire.items(fields["items"]) == items
    assert wire.text(fields["flag"]) == ("1" if flag else "0") and float(wire.text(fields["n"])) == 12.5


@pytest.mark.parametrize("line", [b'{"op": "status"}', b"MVB2 a=00", b"MVB1 novalue", b"MVB1 =61", b"MVB1 a=zz"])
def test_what_is_not_a_message_is_refused(line: bytes) -> None:
    with pytest.raises(ValueError):
        wire.request(line)


def test_values_without_a_wire_form_are_refused() -> None:
    with pytest.raises(TypeError, match="list of strings"):
        wire.pack({"writes": [["a", "b"]]})
    with pytest.raises(TypeError, match="no wire form"):
        wire.pack({"record": {"a": 1}})
