//! The native half of the Node package: `NativeCore.handle(line)`, a request line of the
//! wire format in, its answer line out, through `duetime_wire::Core` (the code the stdio
//! core and the Python package answer with). `../index.js` turns objects into lines and
//! refusals into exceptions.

use napi_derive::napi;

/// One core state behind the wire format.
#[napi]
pub struct NativeCore {
    core: duetime_wire::Core,
}

#[napi]
impl NativeCore {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> NativeCore {
        NativeCore {
            core: duetime_wire::Core::default(),
        }
    }

    /// Answers one request line (docs/wire-format.md) with one answer line. Never throws:
    /// a bad line is answered `{"ok":false,"error":...}`.
    #[napi]
    pub fn handle(&mut self, line: String) -> String {
        self.core.handle_line(&line)
    }
}

/// The wire format's version.
#[napi]
pub fn wire_version() -> u32 {
    duetime_wire::WIRE_VERSION
}
