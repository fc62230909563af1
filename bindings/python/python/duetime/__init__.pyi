"""Type stubs of the duetime package: every value crosses as a plain dict in the wire format."""

from typing import Any, Dict, List, Optional, TypedDict

WIRE_VERSION: int

class Now(TypedDict, total=False):
    wall: int
    mono: int
    boot: int

Event = Dict[str, Any]
Effect = Dict[str, Any]
JobView = Dict[str, Any]

class Page(TypedDict, total=False):
    items: List[JobView]
    next: str

class DuetimeError(Exception):
    error: Dict[str, Any]
    kind: str
    field: Optional[str]
    message: str
    def __init__(self, error: Dict[str, Any]) -> None: ...

class Core:
    def __init__(self, config: Optional[Dict[str, Any]] = ...) -> None: ...
    @classmethod
    def from_json(cls, state: str) -> "Core": ...
    def to_json(self) -> str: ...
    def step(self, now: Now, event: Event) -> List[Effect]: ...
    def next_wake(self) -> Optional[int]: ...
    def next_wake_for(self, process: int) -> Optional[int]: ...
    def job(self, name: str, now: Optional[int] = ...) -> Optional[JobView]: ...
    def jobs(
        self,
        filter: Optional[Dict[str, Any]] = ...,
        after: Optional[str] = ...,
        limit: Optional[int] = ...,
        now: Optional[int] = ...,
    ) -> Page: ...
    def request(self, line: str) -> str: ...
