//! `make golden`: replays every run of `golden/manifest.json` (or those
//! named in `CURTA_RUNS`) on the three targets and, only if they agree on
//! every turn, writes `golden/receipts/NAME.txt` and `golden/slopes.txt`.
//! Tests never write golden files; a receipt changes only with a commit that
//! says why.

use curta_replay::replay::replay_all;
use curta_replay::{cu_report, manifest, slope};

fn main() {
    let specs = manifest::selected();
    let reports = replay_all(&specs, &vec![None; specs.len()]);
    for r in &reports {
        if let Some(f) = &r.failure {
            eprintln!("error: {f}\nno golden file written");
            std::process::exit(1);
        }
        println!(
            "{}: {} turns, {:?}",
            r.spec.name,
            r.receipt.turns.len() - 1,
            r.times
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let slopes: Vec<_> = slope::MODELS
        .iter()
        .map(|model| runtime.block_on(slope::measure(model)))
        .collect();
    for r in &reports {
        r.receipt.save();
    }
    cu_report::save_slopes(&slopes);
    let golden = vec![None; reports.len()];
    let (md, _) = cu_report::render(&reports, &golden, &slopes);
    println!("{md}");
    println!("wrote {} receipts and golden/slopes.txt", reports.len());
}
