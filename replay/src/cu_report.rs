//! The compute-unit report: per run, turns, median and peak program compute
//! units per turn and the total, beside the golden receipt's, and compute
//! units per multiply-accumulate per model beside the golden slope. Written
//! as Markdown to `target/cu-report.md`. A turn over the transaction limit
//! or over the planner's charge for it, or a run whose total grew more than
//! 1% over golden, fails it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use curta_core::planner::CHARGES;

use crate::receipt::Receipt;
use crate::replay::RunReport;
use crate::slope::Slope;

/// The two ComputeBudget instructions every harness transaction carries.
pub const COMPUTE_BUDGET_CU: u64 = 300;
/// A run's total may grow this much over golden before the report fails.
pub const TOTAL_TOLERANCE: f64 = 0.01;

/// Program compute units per turn of a receipt (turn 0 is `open_run`).
fn turn_units(r: &Receipt) -> Vec<u64> {
    r.turns.iter().skip(1).map(|t| t.program_cu).collect()
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Summary {
    pub turns: usize,
    pub median: f64,
    pub peak: u64,
    pub total: u64,
}

pub fn summarize(r: &Receipt) -> Summary {
    let mut units = turn_units(r);
    units.sort_unstable();
    let n = units.len();
    let median = match n {
        0 => 0.0,
        _ if n % 2 == 1 => units[n / 2] as f64,
        _ => (units[n / 2 - 1] + units[n / 2]) as f64 / 2.0,
    };
    Summary {
        turns: n,
        median,
        peak: units.last().copied().unwrap_or(0),
        total: units.iter().sum(),
    }
}

/// `golden/slopes.txt`: one `model cu_per_mac` line per model.
pub fn load_slopes() -> BTreeMap<String, f64> {
    let path = crate::root().join("golden/slopes.txt");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (m, v) = l.split_once(' ')?;
            Some((m.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

pub fn save_slopes(slopes: &[Slope]) {
    let mut out =
        String::from("# compute units per multiply-accumulate, written by `make golden`\n");
    for s in slopes {
        let _ = writeln!(out, "{} {:.4}", s.model, s.cu_per_mac());
    }
    std::fs::write(crate::root().join("golden/slopes.txt"), out).expect("write golden/slopes.txt");
}

fn delta(now: f64, golden: Option<f64>) -> String {
    match golden {
        Some(g) if g != 0.0 => format!("{:+.2}%", (now - g) / g * 100.0),
        _ => "new".into(),
    }
}

/// Renders the report; returns it and the reasons it fails, if any.
pub fn render(
    reports: &[RunReport],
    golden: &[Option<Receipt>],
    slopes: &[Slope],
) -> (String, Vec<String>) {
    let mut md = String::from("# Compute units\n\n");
    let mut failures = vec![];
    let limit = CHARGES.transaction_limit as u64;
    md.push_str("Program compute units per `turn` on the SBF VM (solana-program-test), beside the golden receipts.\n\n");
    md.push_str("| Run | Turns | Median per turn | Peak | Total | Golden total | Delta |\n|---|---|---|---|---|---|---|\n");
    for (r, g) in reports.iter().zip(golden) {
        let s = summarize(&r.receipt);
        let gs = g.as_ref().map(summarize);
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} | {} | {} | {} | {} |",
            r.spec.name,
            s.turns,
            s.median,
            s.peak,
            s.total,
            gs.map_or("-".into(), |g| g.total.to_string()),
            delta(s.total as f64, gs.map(|g| g.total as f64)),
        );
        // The planner's charge for a turn bounds what the program spends on
        // it: a turn's compute-unit limit is taken from its plan.
        for t in r.receipt.turns.iter().skip(1) {
            if t.program_cu > t.planner_cu as u64 {
                failures.push(format!(
                    "{} turn {}: the program used {} compute units, over the planner's {}",
                    r.spec.name, t.turn, t.program_cu, t.planner_cu
                ));
            }
        }
        if s.peak + COMPUTE_BUDGET_CU > limit {
            failures.push(format!(
                "{}: a turn used {} compute units, over {limit}",
                r.spec.name,
                s.peak + COMPUTE_BUDGET_CU
            ));
        }
        if let Some(g) = gs {
            if s.total as f64 > g.total as f64 * (1.0 + TOTAL_TOLERANCE) {
                failures.push(format!(
                    "{}: total {} grew more than 1% over golden {}",
                    r.spec.name, s.total, g.total
                ));
            }
        }
    }
    let golden_slopes = load_slopes();
    md.push_str("\nCompute units per multiply-accumulate: the slope between two turns of the classifier that differ only in rows.\n\n");
    md.push_str(
        "| Model | Rows | Columns | CU per MAC | Golden | Delta |\n|---|---|---|---|---|---|\n",
    );
    for s in slopes {
        let g = golden_slopes.get(&s.model).copied();
        let _ = writeln!(
            md,
            "| {} | {} and {} | {} | {:.4} | {} | {} |",
            s.model,
            s.rows[0],
            s.rows[1],
            s.cols,
            s.cu_per_mac(),
            g.map_or("-".into(), |g| format!("{g:.4}")),
            delta(s.cu_per_mac(), g),
        );
    }
    md.push_str("\nWall-clock time of each run's turns on each target.\n\n");
    md.push_str("| Run | Native | SBF VM | WebAssembly |\n|---|---|---|---|\n");
    for r in reports {
        let t = &r.times;
        let _ = writeln!(
            md,
            "| {} | {:.3} s | {:.3} s | {:.3} s |",
            r.spec.name,
            t.native.as_secs_f64(),
            t.sbf.as_secs_f64(),
            t.wasm.as_secs_f64()
        );
    }
    (md, failures)
}

/// Writes the report to `target/cu-report.md` and returns its path.
pub fn write(md: &str) -> std::path::PathBuf {
    let path = crate::root().join("target/cu-report.md");
    std::fs::create_dir_all(path.parent().expect("target")).expect("create target/");
    std::fs::write(&path, md).expect("write target/cu-report.md");
    path
}
