//! `inspect`: an artifact's configuration, sections and matrices, as text or
//! JSON.

use curta_core::format::{LayerMatrix, MatrixRef, Metadata};

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

/// A matrix's name, one of its pieces (the whole matrix, unless it is split
/// across sections) and the whole matrix's rows.
type Piece = (String, MatrixRef, u32);

/// Every piece of a matrix of `rows` rows, `piece(row)` giving the one
/// holding a row.
fn pieces(name: String, rows: u32, piece: impl Fn(u32) -> MatrixRef, out: &mut Vec<Piece>) {
    let mut row = 0;
    while row < rows {
        let p = piece(row);
        out.push((name.clone(), p, rows));
        row = p.end_row();
    }
}

fn inspect(m: &Metadata, json: bool) {
    let c = m.config;
    let mut matrices = Vec::new();
    pieces(
        "embedding".into(),
        c.vocab_size,
        |r| m.embedding(r),
        &mut matrices,
    );
    for layer in 0..c.n_layers {
        for which in LayerMatrix::ALL {
            let name = format!("layer{layer}.{which:?}");
            let rows = which.shape(&c).0;
            pieces(name, rows, |r| m.matrix(layer, which, r), &mut matrices);
        }
    }
    pieces(
        "classifier".into(),
        c.vocab_size,
        |r| m.classifier(r),
        &mut matrices,
    );
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
            .map(|(name, r, _)| {
                format!(
                    "{{\"name\":\"{name}\",\"section\":{},\"offset\":{},\"rows\":{},\"cols\":{},\"first_row\":{}}}",
                    r.section, r.offset, r.rows, r.cols, r.first_row
                )
            })
            .collect();
        outln!(
            "{{\"config\":{{\"dim\":{},\"hidden_dim\":{},\"n_layers\":{},\"n_heads\":{},\"n_kv_heads\":{},\"vocab_size\":{},\"seq_len\":{}}},\"charges\":\"{}\",\"shared_classifier\":{},\"artifact_len\":{},\"sections\":[{}],\"matrices\":[{}]}}",
            c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len,
            c.charges.name(), c.shared_classifier, m.artifact_len(), sections.join(","), mats.join(",")
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
        if c.shared_classifier {
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
    for (name, r, all) in &matrices {
        let rows = match r.rows == *all {
            true => String::new(),
            false => format!(" (rows {} to {})", r.first_row, r.end_row() - 1),
        };
        outln!(
            "{name}: section {} offset {} {}x{}{rows}",
            r.section,
            r.offset,
            r.rows,
            r.cols
        );
    }
}
