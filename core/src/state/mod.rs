//! The resumable state (`CURTAST2`): its header, phases, cursor, layout and
//! output readers are curta-interface's (`curta_interface::state`,
//! re-exported here), since a run account's size and a finished run's text
//! are part of the program's interface; `diff`, where two states first
//! differ, is the core's own. `docs/state.md` describes the same bytes and
//! every cursor rule.

pub mod diff;

pub use curta_interface::state::*;
