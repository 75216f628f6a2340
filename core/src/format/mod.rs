//! The weight artifact (`CURTAW01`): its shape (the header's offsets, the
//! model `Config`, the section layout, the flags), which is curta-interface's
//! (`curta_interface::format`, re-exported here), and `Metadata`, the reader
//! of section zero and the lookups of the tables it holds, which is the
//! core's own. `docs/format.md` describes the same bytes.

mod metadata;

use crate::Error;
pub use curta_interface::format::*;
pub use metadata::{Metadata, ZeroArrays};
