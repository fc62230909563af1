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
from typing import Any, Dict, List, Optional

from ._duetime import WIRE_VERSION, NativeCore

__all__ = ["Core", "DuetimeError", "WIRE_VERSION"]


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


class Core:
    """One scheduler state. ``Core()`` starts empty with the default config (a 30 s tick);
    ``Core(config)`` with the given one; ``Core.from_json(text)`` from a saved state."""

    def __init__(self, config: Optional[Dict[str, Any]] = None) -> None:
        self._native = NativeCore()
        if config is not None:
            self._ask({"op": "new", "config": config})

    @classmethod
    def from_json(cls, state: str) -> "Core":
        """A core holding the state ``to_json`` gave (raises ``DuetimeError`` with kind
        ``newer_format`` or ``inconsistent_state`` for one that cannot be loaded)."""
        core = cls()
        core._call('{"op":"load","state":' + state + "}")
        return core

    def to_json(self) -> str:
        """The state, as the text to store."""
        answer = self._native.handle('{"op":"save"}')
        prefix = '{"ok":true,"state":'
        if not answer.startswith(prefix):
            raise DuetimeError(json.loads(answer)["error"])
        return answer[len(prefix) : -1]

    def step(self, now: Dict[str, int], event: Dict[str, Any]) -> List[Dict[str, Any]]:
        """Feed one event with the time the process read (``{"wall": ms, "mono": ms}``);
        the effects, in order."""
        return self._ask({"op": "step", "now": now, "event": event})["effects"]

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

    def request(self, line: str) -> str:
        """One wire-format request line answered with its answer line, as text (what
        ``duetime core --stdio`` would print)."""
        return self._native.handle(line)

    def _ask(self, request: Dict[str, Any]) -> Dict[str, Any]:
        return self._call(json.dumps(request, separators=(",", ":")))

    def _call(self, line: str) -> Dict[str, Any]:
        answer = json.loads(self._native.handle(line))
        if not answer["ok"]:
            raise DuetimeError(answer["error"])
        return answer
