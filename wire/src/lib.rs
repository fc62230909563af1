//! duetime-wire: the duetime core over JSON, the one serialized surface every host runtime
//! shares (docs/wire-format.md). A request line in, a response line out, through `Core`:
//! the stdio core (`duetime core --stdio`), the Node package and the Python package are
//! each a thin shell around it.

mod core;
mod decode;
mod effects;
mod error;
mod known;
mod line;
mod parts;
mod request;
mod response;
#[cfg(feature = "schema")]
pub mod schema;
mod version;

pub use crate::core::{error_line, Core};
pub use crate::decode::decode;
pub use crate::effects::{EffectV2, Reply, ReplyEffect, StepEffects};
pub use crate::error::{ErrorKind, WireError};
pub use crate::parts::{PartsIn, PartsOut, PartsText};
pub use crate::request::{
    parse_line, parse_versioned_line, ConfigIn, JobsFilter, Request, DEFAULT_PAGE, OPS,
};
pub use crate::response::{refused, PageOut, Response, Versions};
pub use crate::version::{WireVersion, WIRE_VERSION, WIRE_VERSIONS};
/// The core's job sequence number, which parts are keyed by (`PartsText`,
/// `Core::load_parts_text`, `Core::put_parts_text`), for the packages that use this crate alone.
pub use duetime::JobSeq;
