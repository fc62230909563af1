//! `duetime._duetime`: the native half of the Python package. One method, `handle`: a
//! request line of the wire format in, its answer line out, through `duetime_wire::Core`
//! (the same code the stdio core and the Node package answer with). The Python half
//! (`python/duetime/__init__.py`) turns dicts into lines and refusals into exceptions.

use pyo3::prelude::*;

/// One core state behind the wire format.
#[pyclass(module = "duetime._duetime", name = "NativeCore")]
struct NativeCore {
    core: duetime_wire::Core,
}

#[pymethods]
impl NativeCore {
    #[new]
    fn new() -> NativeCore {
        NativeCore {
            core: duetime_wire::Core::default(),
        }
    }

    /// Answers one request line (docs/wire-format.md) with one answer line. Never raises:
    /// a bad line is answered `{"ok":false,"error":...}`.
    fn handle(&mut self, line: &str) -> String {
        self.core.handle_line(line)
    }
}

#[pymodule]
fn _duetime(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeCore>()?;
    m.add("WIRE_VERSION", duetime_wire::WIRE_VERSION)?;
    Ok(())
}
