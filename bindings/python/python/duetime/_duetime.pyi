"""Type stubs of the native module (src/lib.rs)."""

WIRE_VERSION: int

class NativeCore:
    def __init__(self) -> None: ...
    def handle(self, line: str) -> str: ...
