//! `convert`: a llama2.c checkpoint and tokenizer to an artifact.

use curta_core::convert::{convert_explained, open_artifact, Input};
use curta_core::format::ChargeTable;

use crate::args::Args;
use crate::failure::{refused, Failure};
use crate::files::{read, write};

/// `convert CHECKPOINT TOKENIZER -o OUT [--charges TABLE]`: writes the
/// artifact.
pub fn command(args: &Args) -> Result<(), Failure> {
    args.check(2, &["-o", "--charges"])?;
    let out = args
        .get("-o")
        .ok_or_else(|| Failure::Usage("convert needs -o OUT".into()))?;
    let charges = match args.get("--charges") {
        None => ChargeTable::Specification,
        Some(name) => ChargeTable::from_name(name).ok_or_else(|| {
            Failure::Usage(format!(
                "--charges {name}: the tables are `specification` and `measured`"
            ))
        })?,
    };
    let (checkpoint, tokenizer) = (&args.positional[0], &args.positional[1]);
    let (checkpoint_bytes, tokenizer_bytes) = (read(checkpoint)?, read(tokenizer)?);
    let artifact =
        convert_explained(&checkpoint_bytes, &tokenizer_bytes, charges).map_err(|(input, r)| {
            let path = match input {
                Input::Checkpoint => checkpoint,
                Input::Tokenizer => tokenizer,
            };
            refused(
                r.error,
                format!("{path} is not a {}: {}", input.kind(), r.reason),
            )
        })?;
    write(std::path::Path::new(out), &artifact)?;
    let m = open_artifact(&artifact)?;
    outln!(
        "wrote {out}: {} bytes, {} sections, {} charges",
        artifact.len(),
        m.section_count(),
        charges.name()
    );
    Ok(())
}
