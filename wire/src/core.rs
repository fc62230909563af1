//! `Core`: one state behind the wire format. A request line in, a response line out; the
//! stdio core, the Node package and the Python package all answer through this, so what
//! one of them says the others say byte for byte.

use duetime::{Config, Effect, Event, Filter, JobSeq, Now, State, Timestamp};

use crate::effects::StepEffects;
use crate::error::{ErrorKind, WireError};
use crate::parts::{self, PartsIn, PartsText};
use crate::request::{
    checked_config, load_state, parse_versioned_line, JobsFilter, Request, DEFAULT_PAGE,
};
use crate::response::{refused, No, PageOut, Response, Versions, Yes};
use crate::version::WireVersion;

/// A state and the buffer its steps write effects into (kept, so a step allocates only
/// what its effects need).
#[derive(Debug, Clone, Default)]
pub struct Core {
    state: State,
    effects: Vec<Effect>,
}

impl Core {
    pub fn new(config: Config) -> Core {
        Core::from_state(State::new(config))
    }

    pub fn from_state(state: State) -> Core {
        Core {
            state,
            effects: Vec::new(),
        }
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    /// Answers one request line (without its newline) with one response line (without
    /// one), in the wire version the line names (`wire`; absent: 1). Never panics: a bad
    /// line is answered `{"ok":false,"error":...}` and the state is left as it was.
    pub fn handle_line(&mut self, line: &str) -> String {
        let answered =
            parse_versioned_line(line).and_then(|(wire, request)| self.answer_in(wire, request));
        match answered {
            Ok(text) => text,
            Err(error) => error_line(&error),
        }
    }

    /// `load` from the stored state's own text (what `save` answered, as the host kept it),
    /// answered as the `load` request would be. A host that wraps the text in a request
    /// line instead gets errors placed in its line ("line 1 column 22" for an empty state,
    /// issue 48); here they are placed in the state's text, under field `state`.
    pub fn load_text(&mut self, text: &str) -> String {
        let loaded = serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| {
                WireError::new(
                    ErrorKind::BadField,
                    Some("state".to_string()),
                    format!("the stored state is not JSON: {e} (of the state's text); accepted: the text `save` answered"),
                )
            })
            .and_then(|value| load_state(&value));
        match loaded {
            Ok(state) => {
                self.state = state;
                line(&Response::Done { ok: Yes })
            }
            Err(error) => error_line(&error),
        }
    }

    /// Carries out one decoded request; the answer as a response line of wire version 1.
    pub fn answer(&mut self, request: Request) -> Result<String, WireError> {
        self.answer_in(WireVersion::V1, request)
    }

    /// Carries out one decoded request; the answer as a response line of wire version
    /// `wire` (the versions differ only in a step's `reply` effects and `version`'s `wire`).
    pub fn answer_in(&mut self, wire: WireVersion, request: Request) -> Result<String, WireError> {
        match request {
            Request::Version {} => Ok(line(&Response::Version {
                ok: Yes,
                version: Versions::of(wire),
            })),
            Request::New { config } => {
                self.state = State::new(checked_config(config)?);
                Ok(line(&Response::Done { ok: Yes }))
            }
            Request::Load { state } => {
                self.state = *state;
                Ok(line(&Response::Done { ok: Yes }))
            }
            Request::Save {} => Ok(line(&Response::State {
                ok: Yes,
                state: &self.state,
            })),
            Request::Step { now, event } => Ok(self.step(wire, now, *event)),
            Request::TrackChanges { on } => {
                self.state.track_changes(on);
                Ok(line(&Response::Done { ok: Yes }))
            }
            Request::TakeParts {} => {
                let seqs = parts::touched(&mut self.state)?;
                let parts = parts::parts_out(&self.state, &seqs);
                Ok(line(&Response::Parts {
                    ok: Yes,
                    parts: &parts,
                }))
            }
            Request::SaveParts {} => {
                let seqs = self.all_parts();
                let parts = parts::parts_out(&self.state, &seqs);
                Ok(line(&Response::Parts {
                    ok: Yes,
                    parts: &parts,
                }))
            }
            Request::LoadParts { parts } => {
                self.state = parts::load_parts(*parts)?;
                Ok(line(&Response::Done { ok: Yes }))
            }
            Request::PutParts { parts } => {
                let PartsIn { globals, jobs } = *parts;
                self.state
                    .put_parts(globals, jobs)
                    .map_err(parts::load_error)?;
                Ok(line(&Response::Done { ok: Yes }))
            }
            Request::NextWake {} => Ok(wake(self.state.next_wake())),
            Request::NextWakeFor { process } => Ok(wake(self.state.next_wake_for(process))),
            Request::Job { name, now } => {
                let view = self.state.job(&name, self.view_time(now)?);
                Ok(line(&Response::Job {
                    ok: Yes,
                    job: view.as_ref(),
                }))
            }
            Request::Jobs {
                filter,
                after,
                limit,
                now,
            } => self.jobs(filter.unwrap_or_default(), after, limit, now),
        }
    }

    /// `State::step`, its effects written in wire version `wire`.
    fn step(&mut self, wire: WireVersion, now: Now, event: Event) -> String {
        self.effects.clear();
        self.state.step(now, event, &mut self.effects);
        line(&Response::Effects {
            ok: Yes,
            effects: StepEffects {
                wire,
                effects: &self.effects,
            },
            refused: refused(&self.effects),
        })
    }

    fn jobs(
        &self,
        filter: JobsFilter,
        after: Option<String>,
        limit: Option<u32>,
        now: Option<Timestamp>,
    ) -> Result<String, WireError> {
        let filter = Filter {
            status: filter.status,
            name_prefix: filter.name_prefix,
        };
        let limit = usize::try_from(limit.unwrap_or(DEFAULT_PAGE)).unwrap_or(usize::MAX);
        let page = self
            .state
            .jobs(&filter, after.as_deref(), limit, self.view_time(now)?);
        Ok(line(&Response::Page {
            ok: Yes,
            page: PageOut {
                items: &page.items,
                next: page.next.as_deref(),
            },
        }))
    }

    /// `State::track_changes` (see the `track_changes` request).
    pub fn track_changes(&mut self, on: bool) {
        self.state.track_changes(on);
    }

    /// `take_parts`, each part as the text to store (for the packages: no answer line to
    /// parse, each record handed over as its own text).
    pub fn take_parts_text(&mut self) -> Result<PartsText, WireError> {
        let seqs = parts::touched(&mut self.state)?;
        parts::parts_text(&self.state, &seqs)
    }

    /// `save_parts`, each part as the text to store.
    pub fn save_parts_text(&mut self) -> Result<PartsText, WireError> {
        let seqs = self.all_parts();
        parts::parts_text(&self.state, &seqs)
    }

    /// `load_parts` from each part's own text (errors placed in that text, under
    /// `parts.globals` or `parts.jobs.<seq>`).
    pub fn load_parts_text(
        &mut self,
        globals: &str,
        jobs: Vec<(JobSeq, String)>,
    ) -> Result<(), WireError> {
        let globals = parts::globals_of(globals)?;
        let jobs = parts::records_of(jobs.into_iter().map(|(s, t)| (s, Some(t))).collect())?;
        let parts = PartsIn {
            globals,
            jobs: jobs.into_iter().collect(),
        };
        self.state = parts::load_parts(parts)?;
        Ok(())
    }

    /// `put_parts` from each part's own text (`None`: the job was removed).
    pub fn put_parts_text(
        &mut self,
        globals: &str,
        jobs: Vec<(JobSeq, Option<String>)>,
    ) -> Result<(), WireError> {
        let globals = parts::globals_of(globals)?;
        let jobs = parts::records_of(jobs)?;
        self.state
            .put_parts(globals, jobs)
            .map_err(parts::load_error)
    }

    /// Every job's sequence number; what `take_parts` would answer is cleared, since the
    /// whole is about to be stored.
    fn all_parts(&mut self) -> Vec<JobSeq> {
        if self.state.tracks_changes() {
            self.state.take_touched();
        }
        self.state.records().map(|(seq, _)| seq).collect()
    }

    /// The instant a view is taken at: the request's, else the store's clock.
    fn view_time(&self, now: Option<Timestamp>) -> Result<Timestamp, WireError> {
        now.or(self.state.clock()).ok_or_else(|| {
            WireError::new(
                ErrorKind::BadField,
                Some("now".to_string()),
                "missing field `now`: the state has no clock yet (no process has spoken), \
                 so give the instant to view at, in milliseconds since the epoch",
            )
        })
    }
}

fn wake(at: Option<Timestamp>) -> String {
    line(&Response::Wake { ok: Yes, wake: at })
}

/// A response as one line. The core's types serialize to JSON without fail (string or
/// integer keys only); should one ever not, the host is told so instead of a panic.
fn line(response: &Response<'_>) -> String {
    serde_json::to_string(response).unwrap_or_else(|e| {
        error_line(&WireError::new(
            ErrorKind::BadLine,
            None,
            format!("the answer could not be written as JSON ({e}); this is a bug in duetime"),
        ))
    })
}

/// A refusal as one line.
pub fn error_line(error: &WireError) -> String {
    serde_json::to_string(&Response::Error { ok: No, error }).unwrap_or_else(|_| {
        r#"{"ok":false,"error":{"kind":"bad_line","message":"unprintable error"}}"#.to_string()
    })
}
