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

    /// Loads a stored state from its own text (what `save` answered), answered as `load`
    /// is, with a decode error placed in that text.
    #[napi]
    pub fn load_text(&mut self, text: String) -> String {
        self.core.load_text(&text)
    }

    /// `State::track_changes`.
    #[napi]
    pub fn track_changes(&mut self, on: bool) {
        self.core.track_changes(on);
    }

    /// The touched jobs' parts (`all`: every job's), flat: `[null, globals, seq, record |
    /// null, ...]`, or `[error line]` (each part the text to store: no answer to parse).
    #[napi]
    pub fn parts(&mut self, all: bool) -> Vec<Option<String>> {
        let taken = if all {
            self.core.save_parts_text()
        } else {
            self.core.take_parts_text()
        };
        match taken {
            Ok(parts) => {
                let mut flat = Vec::with_capacity(2 + 2 * parts.jobs.len());
                flat.push(None);
                flat.push(Some(parts.globals));
                for (seq, record) in parts.jobs {
                    flat.push(Some(seq.to_string()));
                    flat.push(record);
                }
                flat
            }
            Err(e) => vec![Some(duetime_wire::error_line(&e))],
        }
    }

    /// A state made from parts' texts (`load`: replaces the state; else brings it up to
    /// date, `null` a removed job), answered as a request line is.
    #[napi]
    pub fn put_parts(
        &mut self,
        load: bool,
        globals: String,
        seqs: Vec<String>,
        records: Vec<Option<String>>,
    ) -> String {
        let mut jobs = Vec::with_capacity(seqs.len());
        for (key, record) in seqs.into_iter().zip(records) {
            match key.parse::<u64>() {
                Ok(seq) => jobs.push((duetime_wire::JobSeq(seq), record)),
                Err(_) => return bad_seq(&key),
            }
        }
        let done = if load {
            match jobs
                .into_iter()
                .map(|(s, r)| r.map(|r| (s, r)).ok_or(s))
                .collect()
            {
                Ok(jobs) => self.core.load_parts_text(&globals, jobs),
                Err(seq) => return bad_seq_null(seq),
            }
        } else {
            self.core.put_parts_text(&globals, jobs)
        };
        match done {
            Ok(()) => r#"{"ok":true}"#.to_string(),
            Err(e) => duetime_wire::error_line(&e),
        }
    }
}

fn bad_seq(key: &str) -> String {
    let message = format!(
        "`{key}` is no sequence number; accepted: the keys takeParts() or saveParts() gave (0 or more)"
    );
    let field = Some(format!("parts.jobs.{key}"));
    duetime_wire::error_line(&duetime_wire::WireError::new(
        duetime_wire::ErrorKind::BadField,
        field,
        message,
    ))
}

fn bad_seq_null(seq: duetime_wire::JobSeq) -> String {
    duetime_wire::error_line(&duetime_wire::WireError::new(
        duetime_wire::ErrorKind::BadField,
        Some(format!("parts.jobs.{seq}")),
        "null: a job to load needs its record; accepted: the text saveParts() or takeParts() gave (null is for putParts: a job removed)",
    ))
}

/// The newest wire version the native core answers (the package's API speaks its own,
/// `WIRE` in index.js).
#[napi]
pub fn wire_version() -> u32 {
    duetime_wire::WIRE_VERSION
}
