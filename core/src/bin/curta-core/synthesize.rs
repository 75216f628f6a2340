//! `synthesize`: a llama2.c checkpoint of random weights, of a shape given
//! by name or by its seven numbers.

use curta_core::format::ChargeTable;
use curta_core::Config;

use crate::args::Args;
use crate::failure::{refused, Failure};
use crate::files::write;

/// `synthesize (--shape NAME | --config D,H,L,NH,NKV,V,S) [--seed S] -o OUT`,
/// NAME one of `SHAPES`.
pub fn command(args: &Args) -> Result<(), Failure> {
    args.check(0, &["--shape", "--config", "--seed", "-o"])?;
    let config = match (args.get("--shape"), args.get("--config")) {
        (Some(name), None) => {
            let shapes = curta_core::convert::SHAPES;
            match shapes.iter().find(|(n, _)| *n == name) {
                Some((_, config)) => *config,
                None => {
                    let names: Vec<&str> = shapes.iter().map(|(n, _)| *n).collect();
                    let names = names.join(", ");
                    return Err(Failure::Usage(format!(
                        "--shape {name} is not one of {names}"
                    )));
                }
            }
        }
        (None, Some(list)) => {
            let values: Vec<u32> = list.split(',').filter_map(|v| v.parse().ok()).collect();
            if values.len() != 7 {
                return Err(Failure::Usage("--config takes seven numbers".into()));
            }
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            Config::read(&bytes).map_err(|e| {
                let config = Config {
                    dim: values[0],
                    hidden_dim: values[1],
                    n_layers: values[2],
                    n_heads: values[3],
                    n_kv_heads: values[4],
                    vocab_size: values[5],
                    seq_len: values[6],
                    charges: ChargeTable::Specification,
                    shared_classifier: true,
                };
                match config.out_of_range() {
                    Some(problem) => refused(e, format!("--config {list}: {problem}")),
                    None => e.into(),
                }
            })?
        }
        _ => return Err(Failure::Usage("give --shape NAME or --config".into())),
    };
    let seed = args.get("--seed").map_or(Ok(1), |s| s.parse::<u64>());
    let seed = seed.map_err(|_| Failure::Usage("--seed takes a whole number".into()))?;
    let out = args
        .get("-o")
        .ok_or_else(|| Failure::Usage("synthesize needs -o OUT".into()))?;
    let checkpoint = curta_core::convert::synthetic_checkpoint(&config, seed)?;
    write(std::path::Path::new(out), &checkpoint)?;
    outln!("wrote {out}: {} bytes", checkpoint.len());
    Ok(())
}
