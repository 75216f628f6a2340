//! Where the client connects and who signs, as the Solana CLI spells it:
//! `--url` monikers, `--keypair` files, `--commitment` levels, and the CLI's
//! own config file (`~/.config/solana/cli/config.yml`) for the defaults.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use solana_commitment_config::CommitmentConfig;
use solana_keypair::{read_keypair_file, Keypair};
use solana_pubkey::Pubkey;
use solana_signer::Signer;

use crate::bail;
use crate::errors::{Error, Result};

/// The Solana CLI's monikers and their RPC URLs.
pub const MONIKERS: [(&str, &str, &str); 4] = [
    ("localhost", "l", "http://127.0.0.1:8899"),
    ("devnet", "d", "https://api.devnet.solana.com"),
    ("testnet", "t", "https://api.testnet.solana.com"),
    ("mainnet-beta", "m", "https://api.mainnet-beta.solana.com"),
];

/// The program's keypair, which `make build-sbf` leaves beside the `.so`
/// (created by `curta deploy` when missing): its address is the program id.
pub const PROGRAM_KEYPAIR: &str = "target/deploy/curta_program-keypair.json";
/// The program `make build-sbf` builds.
pub const PROGRAM_SO: &str = "target/deploy/curta_program.so";

/// An RPC URL from a moniker (`localhost`, `devnet`, `testnet`,
/// `mainnet-beta` or their first letters) or a URL.
pub fn resolve_url(url: &str) -> Result<String> {
    if let Some((_, _, resolved)) = MONIKERS
        .iter()
        .find(|(name, short, _)| url == *name || url == *short)
    {
        return Ok(resolved.to_string());
    }
    if url.starts_with("http://") || url.starts_with("https://") {
        return Ok(url.to_string());
    }
    bail!(
        "--url {url:?} is neither a moniker (localhost, devnet, testnet, mainnet-beta) nor an \
         http(s) URL"
    )
}

/// `processed`, `confirmed` or `finalized`.
pub fn parse_commitment(level: &str) -> Result<CommitmentConfig> {
    match level {
        "processed" => Ok(CommitmentConfig::processed()),
        "confirmed" => Ok(CommitmentConfig::confirmed()),
        "finalized" => Ok(CommitmentConfig::finalized()),
        other => bail!("--commitment {other:?} is not processed, confirmed or finalized"),
    }
}

/// The Solana CLI's settings this client honours.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CliConfig {
    pub json_rpc_url: Option<String>,
    pub keypair_path: Option<PathBuf>,
    pub commitment: Option<String>,
}

impl CliConfig {
    /// `~/.config/solana/cli/config.yml`, if there is one.
    pub fn load() -> CliConfig {
        let Some(home) = std::env::var_os("HOME") else {
            return CliConfig::default();
        };
        let path = Path::new(&home).join(".config/solana/cli/config.yml");
        std::fs::read_to_string(path)
            .map(|text| CliConfig::parse(&text))
            .unwrap_or_default()
    }

    /// The YAML's flat `key: value` lines (all the CLI writes).
    pub fn parse(text: &str) -> CliConfig {
        let mut out = CliConfig::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            if value.is_empty() {
                continue;
            }
            match key.trim() {
                "json_rpc_url" => out.json_rpc_url = Some(value.to_string()),
                "keypair_path" => out.keypair_path = Some(PathBuf::from(value)),
                "commitment" => out.commitment = Some(value.to_string()),
                _ => {}
            }
        }
        out
    }
}

/// `~/.config/solana/id.json`.
pub fn default_keypair_path() -> PathBuf {
    let home = std::env::var_os("HOME").unwrap_or_default();
    Path::new(&home).join(".config/solana/id.json")
}

/// A Solana CLI keypair file (a JSON list of 64 bytes).
pub fn load_keypair(path: &Path, what: &str) -> Result<Keypair> {
    read_keypair_file(path).map_err(|e| {
        Error::new(format!(
            "cannot read the {what} keypair {}: {e} (create one with `curta keygen -o {}`, or \
             pass --keypair)",
            path.display(),
            path.display()
        ))
    })
}

/// An address given on the command line.
pub fn parse_address(text: &str, what: &str) -> Result<Pubkey> {
    let text = text.trim();
    match curta_core::client::base58::address_refusal(what, text) {
        None => Pubkey::from_str(text).map_err(|e| Error::new(format!("{what} {text:?}: {e}"))),
        Some(words) => Err(Error::new(words)),
    }
}

/// An address given as itself or as a keypair file holding its key.
pub fn address_or_keypair(text: &str, what: &str) -> Result<Pubkey> {
    if let Ok(key) = Pubkey::from_str(text.trim()) {
        return Ok(key);
    }
    let path = Path::new(text);
    if path.is_file() {
        return Ok(load_keypair(path, what)?.pubkey());
    }
    bail!("{what} {text:?} is neither a base58 address nor a keypair file")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monikers_urls_and_commitments() {
        assert_eq!(resolve_url("localhost").unwrap(), "http://127.0.0.1:8899");
        assert_eq!(resolve_url("d").unwrap(), "https://api.devnet.solana.com");
        assert_eq!(
            resolve_url("mainnet-beta").unwrap(),
            "https://api.mainnet-beta.solana.com"
        );
        assert_eq!(
            resolve_url("http://127.0.0.1:20040").unwrap(),
            "http://127.0.0.1:20040"
        );
        assert!(resolve_url("moon")
            .unwrap_err()
            .message()
            .contains("\"moon\" is neither a moniker"));
        assert_eq!(
            parse_commitment("finalized").unwrap(),
            CommitmentConfig::finalized()
        );
        assert!(parse_commitment("max").is_err());
    }

    #[test]
    fn the_cli_config_file() {
        let c = CliConfig::parse(
            "---\njson_rpc_url: \"https://api.devnet.solana.com\"\nwebsocket_url: ''\n\
             keypair_path: /home/me/.config/solana/id.json\naddress_labels:\n  \
             \"11111111111111111111111111111111\": System Program\ncommitment: confirmed\n",
        );
        assert_eq!(
            c.json_rpc_url.as_deref(),
            Some("https://api.devnet.solana.com")
        );
        assert_eq!(
            c.keypair_path,
            Some(PathBuf::from("/home/me/.config/solana/id.json"))
        );
        assert_eq!(c.commitment.as_deref(), Some("confirmed"));
    }

    #[test]
    fn bad_addresses_say_so() {
        let e = parse_address("not-an-address", "--model").unwrap_err();
        assert!(
            e.message().starts_with(
                "--model \"not-an-address\" is not a Solana address: \"-\" is not base58"
            ),
            "{}",
            e.message()
        );
        let e = address_or_keypair("/nonexistent/key.json", "--config").unwrap_err();
        assert!(e
            .message()
            .contains("neither a base58 address nor a keypair file"));
    }
}
