"""Every event kind survives recorder → file → reader unchanged (property-based); unknown kinds
and unknown fields are kept, never an error; values JSON cannot hold never cost an event."""

from __future__ import annotations

import math
import typing
from itertools import count

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3tui import events as ev
from k3tui.reader import decode_event, read_all
from k3tui.recording import Recorder, encode_event, encode_safely
from k3tui.redact import Redactor


class _NoRedaction(Redactor):
    """Round trips compare field by field: redaction is tested on its own."""

    def event(self, event):  # noqa: ANN001, ANN201
        return event


_floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | _floats | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)


def _strategy(tp: typing.Any) -> st.SearchStrategy[typing.Any]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is typing.Any:
        return _json
    if tp is float:
        return _floats
    if tp is str:
        return _text
    if tp is int:
        return st.integers(-(2**63), 2**63 - 1)
    if tp is bool:
        return st.booleans()
    if tp is type(None):
        return st.none()
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return st.one_of(*[_strategy(a) for a in args])
    if origin is list:
        return st.lists(_strategy(args[0]), max_size=4)
    if origin is dict:
        return st.dictionaries(_text, _strategy(args[1]), max_size=4)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return _struct(tp)
    raise AssertionError(f"no strategy for {tp!r}: extend _strategy")


def _struct(cls: type) -> st.SearchStrategy[typing.Any]:
    hints = typing.get_type_hints(cls)
    fields = {name: _strategy(hints[name]) for name in cls.__struct_fields__}
    return st.builds(cls, **fields)


ALL_EVENTS = st.one_of(*[_struct(cls) for cls in ev.EVENT_TYPES])
# what a producer emits: a Seal is the recorder's own closing line (issue 16), which readers consume as the end
EMITTED_EVENTS = st.one_of(*[_struct(cls) for cls in ev.EVENT_TYPES if cls is not ev.Seal])
_n = count()


def test_the_schema_has_every_kind_the_issue_names():
    need = {"host_connected", "host_disconnected", "host_reconnected", "command_sent", "output", "command_exited",
            "stage_reached", "exception_found", "scene_frozen", "check_verdict", "http_request", "http_response",
            "gpu_sample", "run_config", "rung_entered", "rung_left", "note", "marker", "decision"}  # fmt: skip
    assert need <= ev.KINDS


@settings(max_examples=200, deadline=None)
@given(ALL_EVENTS)
def test_every_kind_has_a_one_line_summary(e):
    s = ev.summary(e, 100)
    assert isinstance(s, str) and "\n" not in s and len(s) <= 100
    assert ev.kind_of(e) == type(e).__struct_config__.tag


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(events=st.lists(EMITTED_EVENTS, min_size=1, max_size=12))
def test_round_trip_through_the_recorder(tmp_path, events):
    path = tmp_path / f"rt{next(_n)}.k3rec"
    events = [e if e.t else msgspec.structs.replace(e, t=1.5) for e in events]  # t=0 is stamped by the recorder
    with Recorder(path, ev.Header(host="h"), redactor=_NoRedaction(), index=False) as rec:
        for e in events:
            rec.emit(e)
    _, back = read_all(path, strict=True)
    assert back == events


@settings(max_examples=200, deadline=None)
@given(ALL_EVENTS)
def test_encode_decode_is_identity_for_every_kind(e):
    assert decode_event(encode_event(e)) == e


@settings(max_examples=100, deadline=None)
@given(
    kind=_text.filter(lambda k: k not in ev.KINDS),
    t=_floats,
    host=_text,
    data=st.dictionaries(_text, _json, max_size=5),
)
def test_unknown_kinds_read_back_as_opaque_and_re_encode(kind, t, host, data):
    data = {k: v for k, v in data.items() if k not in ("kind", "t", "host", "h")}
    op = ev.Opaque(kind=kind, t=t, host=host, data=data)
    back = decode_event(encode_event(op))
    assert back == op
    assert decode_event(encode_event(back)) == op


def test_an_unknown_kind_in_a_file_is_kept_and_re_recorded(tmp_path):
    path = tmp_path / "a.k3rec"
    with Recorder(path, redactor=Redactor()) as rec:
        rec.emit(ev.Note(text="before"))
    with open(path, "ab") as fh:
        fh.write(b'{"kind":"gpu_power","t":2.5,"host":"gb300-01","watts":[700,710]}\n')
    _, events = read_all(path)
    op = events[-1]
    assert isinstance(op, ev.Opaque) and op.kind == "gpu_power" and op.data == {"watts": [700, 710]}
    assert ev.summary(op) == "(gpu_power: unknown to this version)"
    copy = tmp_path / "b.k3rec"
    with Recorder(copy, redactor=Redactor()) as rec:
        rec.emit(op)
    assert read_all(copy, strict=True)[1] == [op]


def test_schema_evolution_extra_fields_still_decode():
    line = (
        b'{"kind":"command_exited","t":3.0,"id":"c9","status":0,"duration":1.5,"cpu_seconds":0.7,"new_thing":{"a":[1]}}'
    )
    e = decode_event(line)
    assert e == ev.CommandExited(t=3.0, id="c9", status=0, duration=1.5)


def test_missing_fields_take_their_defaults():
    e = decode_event(b'{"kind":"rung_left","rung":"r2"}')
    assert e == ev.RungLeft(rung="r2") and e.verdict == "" and e.reproduced is None


def test_every_field_has_a_default():
    """The schema grows only by adding fields WITH defaults: an old line must still decode."""
    for cls in ev.EVENT_TYPES:
        for name in cls.__struct_fields__:
            info = {f.name: f for f in msgspec.structs.fields(cls)}[name]
            assert info.default is not msgspec.NODEFAULT or info.default_factory is not msgspec.NODEFAULT, (
                f"{cls.__name__}.{name} has no default: files written before it existed would not read"
            )


def test_kind_tags_are_unique():
    tags = [cls.__struct_config__.tag for cls in ev.EVENT_TYPES]
    assert len(tags) == len(set(tags))


@pytest.mark.parametrize(
    "event",
    [
        ev.CommandExited(t=1.0, id="c1", duration=math.nan),
        ev.GpuSample(t=1.0, gpus=[ev.GpuMem(index=0, used_mib=math.inf)]),
        ev.Output(t=1.0, id="c1", text="bad utf-8 from remote: \udcff\udcfe done"),
        ev.SceneFrozen(t=1.0, scene={"pids": {1, 2}, "blob": b"\x00\x01", "obj": object(), 3: "int key"}),
        ev.Note(t=math.nan, text="clock went wrong"),
    ],
)
def test_values_json_cannot_hold_never_cost_the_event(event):
    body = encode_safely(event)
    back = decode_event(body)
    assert ev.kind_of(back) == ev.kind_of(event)


def test_an_event_beyond_repair_becomes_a_notice():
    bad = ev.SceneFrozen(t=2.0, scene={"k": {(1, 2): "tuple key"}})
    back = decode_event(encode_safely(bad))
    assert isinstance(back, ev.Notice) and "scene_frozen could not be recorded" in back.message and back.t == 2.0


def test_a_request_without_an_answer_says_so():
    assert (
        ev.summary(ev.HttpResponse(status=None, duration=0.032, error="ReadError"))
        == "← no answer after 32 ms: ReadError"
    )
    assert ev.summary(ev.HttpResponse(status=200, duration=0.5)) == "← 200 in 500 ms"
