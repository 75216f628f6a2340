//! `inspect`: an artifact's configuration, sections and matrices, as text or
//! JSON.

use curta_core::format::{LayerMatrix, Metadata};

use crate::args::Args;
use crate::failure::Failure;
use crate::files::{open, read};

/// `inspect ARTIFACT [--json]`.
pub fn command(args: &Args) -> Result<(), Failure> {
    args.check(1, &[])?;
    let path = &args.positional[0];
    let artifact = read(path)?;
    inspect(&open(path, &artifact)?, args.has("--json"));
    Ok(())
}

fn inspect(m: &Metadata, json: bool) {
    let c = m.config;
    let mut matrices = vec![("embedding".to_string(), m.embedding())];
    for layer in 0..c.n_layers {
        for which in LayerMatrix::ALL {
            matrices.push((format!("layer{layer}.{which:?}"), m.matrix(layer, which)));
        }
    }
    matrices.push(("classifier".to_string(), m.classifier()));
    if json {
        let sections: Vec<String> = (0..m.section_count())
            .map(|i| {
                format!(
                    "{{\"index\":{i},\"offset\":{},\"length\":{}}}",
                    m.section_offset(i),
                    m.section_len(i)
                )
            })
            .collect();
        let mats: Vec<String> = matrices
            .iter()
            .map(|(name, r)| {
                format!(
                    "{{\"name\":\"{name}\",\"section\":{},\"offset\":{},\"rows\":{},\"cols\":{}}}",
                    r.section, r.offset, r.rows, r.cols
                )
            })
            .collect();
        outln!(
            "{{\"config\":{{\"dim\":{},\"hidden_dim\":{},\"n_layers\":{},\"n_heads\":{},\"n_kv_heads\":{},\"vocab_size\":{},\"seq_len\":{}}},\"charges\":\"{}\",\"shared_classifier\":{},\"artifact_len\":{},\"sections\":[{}],\"matrices\":[{}]}}",
            c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len,
            c.charges.name(), m.shared_classifier, m.artifact_len(), sections.join(","), mats.join(",")
        );
        return;
    }
    outln!(
        "config: dim {} hidden {} layers {} heads {} kv heads {} vocab {} context {}",
        c.dim,
        c.hidden_dim,
        c.n_layers,
        c.n_heads,
        c.n_kv_heads,
        c.vocab_size,
        c.seq_len
    );
    outln!(
        "classifier: {}",
        if m.shared_classifier {
            "shared with the embedding"
        } else {
            "its own"
        }
    );
    outln!("charges: the {} table", c.charges.name());
    outln!("artifact: {} bytes", m.artifact_len());
    for i in 0..m.section_count() {
        outln!(
            "section {i}: offset {} length {}",
            m.section_offset(i),
            m.section_len(i)
        );
    }
    for (name, r) in &matrices {
        outln!(
            "{name}: section {} offset {} {}x{}",
            r.section,
            r.offset,
            r.rows,
            r.cols
        );
    }
}
