"""Type stubs of the duetime package: every value crosses as a plain dict in the wire format."""

from typing import Any, Dict, List, Optional, TypedDict, Union

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

class Effects(List[Effect]):
    refused: Optional[Dict[str, Any]]

class Parts(TypedDict):
    globals: str
    jobs: Dict[int, Optional[str]]

class DuetimeError(Exception):
    error: Dict[str, Any]
    kind: str
    field: Optional[str]
    message: str
    def __init__(self, error: Dict[str, Any]) -> None: ...

class Core:
    def __init__(self, config: Optional[Dict[str, Any]] = ...) -> None: ...
    @classmethod
    def from_json(cls, state: Union[str, bytes, bytearray, memoryview, Dict[str, Any]]) -> "Core": ...
    def to_json(self) -> str: ...
    def step(self, now: Now, event: Event) -> Effects: ...
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
    def track_changes(self, on: bool = ...) -> None: ...
    def take_parts(self) -> Parts: ...
    def save_parts(self) -> Parts: ...
    @classmethod
    def from_parts(cls, globals: Any, jobs: Any) -> "Core": ...
    def put_parts(self, globals: Any, jobs: Any) -> None: ...
    def request(self, line: str) -> str: ...
