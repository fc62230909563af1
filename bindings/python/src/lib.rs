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

    /// Loads a stored state from its own text (what `save` answered), answered as `load`
    /// is, with a decode error placed in that text.
    fn load_text(&mut self, text: &str) -> String {
        self.core.load_text(text)
    }

    /// `State::track_changes`.
    fn track_changes(&mut self, on: bool) {
        self.core.track_changes(on);
    }

    /// The touched jobs' parts (`all`: every job's) as `(None, globals, [(seq, record |
    /// None)])`, each part the text to store, or `(error line, "", [])`.
    #[allow(clippy::type_complexity)]
    fn parts(&mut self, all: bool) -> (Option<String>, String, Vec<(u64, Option<String>)>) {
        let taken = if all {
            self.core.save_parts_text()
        } else {
            self.core.take_parts_text()
        };
        match taken {
            // Python's own ints: a sequence number crosses as its bare number.
            Ok(parts) => {
                let jobs = parts.jobs.into_iter().map(|(s, r)| (s.0, r)).collect();
                (None, parts.globals, jobs)
            }
            Err(e) => (
                Some(duetime_wire::error_line(&e)),
                String::new(),
                Vec::new(),
            ),
        }
    }

    /// A state made from parts' texts (`load`: replaces the state; else brings it up to
    /// date, `None` a removed job), answered as a request line is.
    fn put_parts(&mut self, load: bool, globals: &str, jobs: Vec<(u64, Option<String>)>) -> String {
        let jobs = jobs.into_iter().map(|(s, r)| (duetime_wire::JobSeq(s), r));
        let done = if load {
            match jobs.map(|(s, r)| r.map(|r| (s, r)).ok_or(s)).collect() {
                Ok(jobs) => self.core.load_parts_text(globals, jobs),
                Err(seq) => Err(duetime_wire::WireError::new(
                    duetime_wire::ErrorKind::BadField,
                    Some(format!("parts.jobs.{seq}")),
                    "None: a job to load needs its record; accepted: the text save_parts or \
                     take_parts gave (None is for put_parts: a job removed)",
                )),
            }
        } else {
            self.core.put_parts_text(globals, jobs.collect())
        };
        match done {
            Ok(()) => r#"{"ok":true}"#.to_string(),
            Err(e) => duetime_wire::error_line(&e),
        }
    }
}

#[pymodule]
fn _duetime(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeCore>()?;
    m.add("WIRE_VERSION", duetime_wire::WIRE_VERSION)?;
    Ok(())
}
