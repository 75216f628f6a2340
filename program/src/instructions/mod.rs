//! One file per instruction. Each handler opens with its accounts, in the
//! order `curta_core::protocol::Instruction` lists them, then writes its
//! checks out before it changes anything: a failing instruction changes no
//! account (the runtime discards its writes), and every check runs first.

mod bind_weight;
mod close_config;
mod close_model;
mod close_run;
mod close_weight;
mod deliver;
mod init_config;
mod init_model;
mod open_run;
mod reclaim;
mod seal_model;
mod seal_section;
mod set_admin;
mod set_allowance;
mod turn;
mod write;
mod write_prompt;

pub use bind_weight::bind_weight;
pub use close_config::close_config;
pub use close_model::close_model;
pub use close_run::close_run;
pub use close_weight::close_weight;
pub use deliver::deliver;
pub use init_config::init_config;
pub use init_model::{init_model, InitModel};
pub use open_run::{open_run, OpenRun};
pub use reclaim::reclaim;
pub use seal_model::seal_model;
pub use seal_section::seal_section;
pub use set_admin::set_admin;
pub use set_allowance::set_allowance;
pub use turn::turn;
pub use write::write;
pub use write_prompt::write_prompt;
