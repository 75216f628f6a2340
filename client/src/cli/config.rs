//! `curta config`: a config account's admin and turn allowance, and closing it.

use serde_json::{json, Value};
use solana_pubkey::Pubkey;

use super::args::ConfigCommand;
use super::{addr, Globals};
use crate::cli_config;
use crate::errors::Result;
use crate::model::{self, ConfigInfo};
use crate::output::{sol, thousands, Outcome};
use crate::settings;

/// A config account, and whether this command created it.
struct Shown {
    info: ConfigInfo,
    created: Option<bool>,
}

impl Outcome for Shown {
    fn json(&self) -> Value {
        let mut v = json!({
            "config": self.info.address.to_string(),
            "admin": self.info.admin.to_string(),
            "allowance": self.info.allowance,
        });
        if let Some(created) = self.created {
            v["created"] = created.into();
        }
        v
    }

    fn text(&self) -> String {
        let note = match self.created {
            Some(true) => " (created)",
            Some(false) => " (exists)",
            None => "",
        };
        format!(
            "config: {}{note}\nadmin: {}\nturn allowance: {} compute units\n",
            self.info.address,
            self.info.admin,
            thousands(self.info.allowance as u64)
        )
    }
}

/// A config closed, and the lamports its admin got back.
struct Closed {
    config: Pubkey,
    returned: u64,
}

impl Outcome for Closed {
    fn json(&self) -> Value {
        json!({ "config": self.config.to_string(), "closed": true, "returnedLamports": self.returned })
    }

    fn text(&self) -> String {
        format!(
            "closed config {}: {} returned to the admin\n",
            self.config,
            sol(self.returned)
        )
    }
}

pub async fn run(g: &Globals, cmd: &ConfigCommand) -> Result<()> {
    let c = g.connect().await?;
    let which = |given: &Option<String>| -> Result<Pubkey> {
        match given {
            Some(a) => addr(a, "config"),
            None => Ok(settings::default_config(c)),
        }
    };
    let shown = match cmd {
        ConfigCommand::Init { allowance } => {
            let (info, created) = settings::init(c, *allowance).await?;
            Shown {
                info,
                created: Some(created),
            }
        }
        ConfigCommand::Show { config } => Shown {
            info: model::read_config(c, &which(config)?).await?,
            created: None,
        },
        ConfigCommand::SetAllowance { allowance, config } => Shown {
            info: settings::set_allowance(c, &which(config)?, *allowance).await?,
            created: None,
        },
        ConfigCommand::Close { config } => {
            let config = which(config)?;
            let returned = settings::close(c, &config).await?;
            g.print(&Closed { config, returned });
            return Ok(());
        }
        ConfigCommand::SetAdmin { new_admin, config } => {
            let new_admin = cli_config::load_keypair(new_admin, "new admin")?;
            Shown {
                info: settings::set_admin(c, &which(config)?, &new_admin).await?,
                created: None,
            }
        }
    };
    g.print(&shown);
    Ok(())
}
