"""The duetime core for Python.

A job-scheduler core as one pure function: ``Core.step(now, event)`` changes the state and
returns the effects for the host to carry out. Everything crosses as plain dicts in the
wire format (docs/wire-format.md in the repository): times are integer milliseconds since
the epoch, enums are snake_case strings, tagged objects carry their tag (``{"event":
"tick", ...}``). The native module answers through the same Rust code as ``duetime core
--stdio`` and the Node package, so all three agree byte for byte.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Union

from ._duetime import NativeCore

__all__ = ["Core", "DuetimeError", "Effects", "WIRE_VERSION"]

#: The wire version this package's API speaks: every line it sends names it, so a command's
#: reply is tagged by ``outcome`` (``done`` with ``view``, ``refused`` with ``refusal``), not
#: Rust's ``Ok``/``Err`` (docs/wire-format.md, "Wire versions"). Fixed here, not taken from
#: the native core, so a newer core never changes what this code reads. ``Core.request(line)``
#: answers in the version the line names (none: version 1).
WIRE_VERSION = 2


class DuetimeError(Exception):
    """A request the core refused: ``kind`` (``bad_field``, ``newer_format``, ...), the
    ``field`` at fault when there is one (``event.def.schedule.expr``), and ``message``,
    which says what was wrong and what is accepted. ``error`` is the wire form."""

    def __init__(self, error: Dict[str, Any]) -> None:
        self.error = error
        self.kind: str = error.get("kind", "")
        self.field: Optional[str] = error.get("field")
        self.message: str = error.get("message", "")
        where = f"{self.field}: " if self.field else ""
        super().__init__(f"{self.kind}: {where}{self.message}")


class Effects(List[Dict[str, Any]]):
    """A step's effects, in order (a ``list``), in wire version 2: a command's ``reply`` is
    tagged by ``outcome``, ``"done"`` with the job's ``view`` or ``"refused"`` with the
    ``refusal``. ``refused`` is the refusal of the command the event carried when the core
    refused it (an invalid definition, a pause of a job that does not exist), else ``None``.
    Not an exception: the step may still have written journal lines to keep."""

    refused: Optional[Dict[str, Any]] = None


_JSON_SCALARS = (str, int, float, bool, type(None))


def _unsendable(value: Any, path: str = "") -> Optional[str]:
    """The path of the first value under ``value`` that JSON cannot carry (a ``datetime``,
    ``bytes``, a set, ...), as the wire names paths (``now.wall``, ``event.held[0].fence``),
    or ``None``. ``json.dumps`` raises a bare ``TypeError`` for these (issue 48)."""
    if isinstance(value, _JSON_SCALARS):
        return None
    if isinstance(value, dict):
        for key, child in value.items():
            if not isinstance(key, _JSON_SCALARS):
                return f"{path}.{key!r}" if path else repr(key)
            found = _unsendable(child, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for i, child in enumerate(value):
            found = _unsendable(child, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    return path


def _to_line(request: Dict[str, Any]) -> str:
    """``request`` as one wire line, or a ``DuetimeError`` naming what JSON cannot carry."""
    try:
        return json.dumps(request, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        field = _unsendable(request)
        raise DuetimeError(
            {
                "kind": "bad_field",
                "field": field,
                "message": f"{e}; accepted: JSON values (dict, list, str, int, float, bool, "
                "None), times as integer milliseconds since the epoch",
            }
        ) from None


def _state_text(state: Any) -> str:
    """A stored state as text: ``str``, UTF-8 ``bytes``/``bytearray``/``memoryview``, or the
    ``dict`` it parses to."""
    if isinstance(state, str):
        return state
    if isinstance(state, (bytes, bytearray, memoryview)):
        try:
            return bytes(state).decode("utf-8")
        except UnicodeDecodeError as e:
            message = f"the stored state is not UTF-8 ({e}); accepted: the text to_json gave"
            raise DuetimeError({"kind": "bad_field", "field": "state", "message": message}) from None
    if isinstance(state, dict):
        return _to_line(state)
    message = (
        f"the stored state is a {type(state).__name__}; accepted: the text to_json gave "
        "(str or UTF-8 bytes), or the dict it parses to"
    )
    raise DuetimeError({"kind": "bad_field", "field": "state", "message": message})


def _parts(native: Any) -> Dict[str, Any]:
    error, globals, jobs = native
    if error is not None:
        raise DuetimeError(json.loads(error)["error"])
    return {"globals": globals, "jobs": dict(jobs)}


def _part_text(part: Any, field: str) -> str:
    """A stored part as text: ``str``, UTF-8 bytes, or the dict it parses to."""
    if isinstance(part, (bytes, bytearray, memoryview)):
        part = bytes(part).decode("utf-8", errors="replace")
    if isinstance(part, str):
        return part
    if isinstance(part, dict):
        return _to_line(part)
    message = f"a {type(part).__name__}; accepted: the text take_parts or save_parts gave, or the dict it parses to"
    raise DuetimeError({"kind": "bad_field", "field": field, "message": message})


class Core:
    """One scheduler state. ``Core()`` starts empty with the default config (a 30 s tick);
    ``Core(config)`` with the given one; ``Core.from_json(text)`` from a saved state."""

    def __init__(self, config: Optional[Dict[str, Any]] = None) -> None:
        self._native = NativeCore()
        if config is not None:
            self._ask({"op": "new", "config": config})

    @classmethod
    def from_json(cls, state: Union[str, bytes, bytearray, memoryview, Dict[str, Any]]) -> "Core":
        """A core holding the state ``to_json`` gave: its text (``str`` or UTF-8 bytes) or
        the dict it parses to. Raises ``DuetimeError`` with kind ``newer_format`` or
        ``inconsistent_state`` for one that cannot be loaded, ``bad_field`` for one that
        cannot be read (its position in the state's own text)."""
        core = cls()
        answer = json.loads(core._native.load_text(_state_text(state)))
        if not answer["ok"]:
            raise DuetimeError(answer["error"])
        return core

    def to_json(self) -> str:
        """The state, as the text to store."""
        answer = self._native.handle('{"op":"save"}')
        prefix = '{"ok":true,"state":'
        if not answer.startswith(prefix):
            raise DuetimeError(json.loads(answer)["error"])
        return answer[len(prefix) : -1]

    def step(self, now: Dict[str, int], event: Dict[str, Any]) -> Effects:
        """Feed one event with the time the process read (``{"wall": ms, "mono": ms}``);
        the effects, in order, with ``refused`` set when the core refused the command the
        event carried (see ``Effects``)."""
        answer = self._ask({"op": "step", "now": now, "event": event})
        effects = Effects(answer["effects"])
        effects.refused = answer.get("refused")
        return effects

    def next_wake(self) -> Optional[int]:
        """The earliest instant a tick can change anything, or ``None``."""
        return self._ask({"op": "next_wake"})["wake"]

    def next_wake_for(self, process: int) -> Optional[int]:
        """When ``process``'s next tick can matter, by its own clock, or ``None``."""
        return self._ask({"op": "next_wake_for", "process": process})["wake"]

    def job(self, name: str, now: Optional[int] = None) -> Optional[Dict[str, Any]]:
        """The view of one job as of ``now`` (default: the store's clock), or ``None``."""
        return self._ask({"op": "job", "name": name, "now": now})["job"]

    def jobs(
        self,
        filter: Optional[Dict[str, Any]] = None,
        after: Optional[str] = None,
        limit: Optional[int] = None,
        now: Optional[int] = None,
    ) -> Dict[str, Any]:
        """A page of job views, attention first: ``{"items": [...], "next": key?}``;
        ``filter`` is ``{"status": ..., "name_prefix": ...}``."""
        request = {"op": "jobs", "filter": filter, "after": after, "limit": limit, "now": now}
        return self._ask(request)["page"]

    def track_changes(self, on: bool = True) -> None:
        """Note the jobs each step touches, for ``take_parts`` (off in a new or loaded
        core). A store keeping a row per job turns it on once, stores ``save_parts()``
        whole, then after each step writes what ``take_parts()`` gives: bytes in proportion
        to what changed."""
        self._native.track_changes(bool(on))

    def take_parts(self) -> Dict[str, Any]:
        """The jobs touched since the last call, and the globals, each the text to store:
        ``{"globals": text, "jobs": {seq: text or None}}`` (``None``: removed). Raises
        ``DuetimeError`` while changes are not tracked (an empty answer would let a store
        fall behind without a word)."""
        return _parts(self._native.parts(False))

    def save_parts(self) -> Dict[str, Any]:
        """Every job's record and the globals, as ``take_parts`` gives them."""
        return _parts(self._native.parts(True))

    @classmethod
    def from_parts(cls, globals: Any, jobs: Any) -> "Core":
        """A core holding the state stored as parts: ``globals`` (text, bytes or dict) and
        ``jobs``, each job's record by sequence number (a dict or ``(seq, record)`` pairs;
        a record as text, bytes or dict)."""
        core = cls()
        core._put_parts(True, globals, jobs)
        return core

    def put_parts(self, globals: Any, jobs: Any) -> None:
        """Bring this core up to date with parts another process stored (``None``: a job
        removed)."""
        self._put_parts(False, globals, jobs)

    def _put_parts(self, load: bool, globals: Any, jobs: Any) -> None:
        pairs = jobs.items() if isinstance(jobs, dict) else jobs
        texts = []
        for seq, record in pairs:
            try:
                number = int(seq)
            except (TypeError, ValueError):
                number = -1
            if number < 0:
                message = f"{seq!r} is no sequence number; accepted: the keys take_parts gave"
                raise DuetimeError({"kind": "bad_field", "field": f"parts.jobs.{seq}", "message": message})
            text = None if record is None else _part_text(record, f"parts.jobs.{seq}")
            texts.append((number, text))
        answer = json.loads(self._native.put_parts(load, _part_text(globals, "parts.globals"), texts))
        if not answer["ok"]:
            raise DuetimeError(answer["error"])

    def request(self, line: str) -> str:
        """One wire-format request line answered with its answer line, as text (what
        ``duetime core --stdio`` would print), in the wire version the line names: a line
        without ``wire`` is version 1 (replies as ``result`` with ``Ok``/``Err``), one with
        ``"wire": 2`` is answered as the rest of this API reads it."""
        return self._native.handle(line)

    def _ask(self, request: Dict[str, Any]) -> Dict[str, Any]:
        return self._call(_to_line({**request, "wire": WIRE_VERSION}))

    def _call(self, line: str) -> Dict[str, Any]:
        answer = json.loads(self._native.handle(line))
        if not answer["ok"]:
            raise DuetimeError(answer["error"])
        return answer
