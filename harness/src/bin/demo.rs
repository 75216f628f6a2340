//! `make demo`: converts stories260K, runs a prompt natively, then uploads
//! the model to the curta program on the SBF VM (solana-program-test: the
//! real `write` and `seal_model` transactions) and runs the same prompt one
//! `turn` transaction at a time, printing the text, the turns and the
//! compute units of each.
//!
//! `demo [PROMPT] [MAX_TOKENS]`, defaults "Once upon a time" and 12.

use std::io::Write;
use std::time::Instant;

use curta_core::planner::CHARGES;
use curta_core::protocol::run;
use curta_core::{output_text, StateInfo};
use curta_harness::chain::{self, Chain};
use curta_harness::manifest::RunSpec;
use curta_harness::models::{artifact, metadata};
use curta_harness::native;
use solana_keypair::Keypair;
use solana_signer::Signer;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let prompt = args
        .first()
        .cloned()
        .unwrap_or_else(|| "Once upon a time".into());
    let max_tokens: u32 = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(12);
    let spec = RunSpec {
        name: "demo".into(),
        model: "stories260K".into(),
        prompt: prompt.clone().into_bytes(),
        max_tokens,
        temperature_q16: 0,
        seed: 0,
    };
    let art = artifact("stories260K");
    let m = metadata(&art);
    println!(
        "stories260K converted: {} bytes in {} sections",
        art.len(),
        m.section_count()
    );

    let start = Instant::now();
    let mut state = native::open(&m, &spec);
    let mut native_turns = 0;
    while !StateInfo::read(&state).expect("state").complete {
        native::step(&art, &m, &mut state);
        native_turns += 1;
    }
    println!(
        "native: {prompt}{} ({native_turns} turns, {:.1} ms)",
        String::from_utf8_lossy(output_text(m.config, &state)),
        start.elapsed().as_secs_f64() * 1e3
    );

    let mut c = Chain::start(chain::program_test()).await;
    let (admin, owner, opener) = (Keypair::new(), Keypair::new(), Keypair::new());
    c.fund(&owner.pubkey(), 1_000_000_000).await;
    c.fund(&opener.pubkey(), 1_000_000_000).await;
    let config = c.init_config(&admin, CHARGES.allowance).await;
    let start = Instant::now();
    let keys = c.upload_model(&config, &art, &owner, 1_000).await;
    println!(
        "SBF VM: uploaded and sealed the model in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let (run_key, out) = c
        .open_run(&keys, &m.config, &spec, &opener, 1_000 * max_tokens as u64)
        .await;
    assert_eq!(out.result, Ok(()), "open_run: {:#?}", out.logs);
    print!("SBF VM: {prompt}");
    let mut printed = 0;
    let mut units = vec![];
    loop {
        let out = c.turn(&keys, &run_key, &m.config, CHARGES.allowance).await;
        assert_eq!(
            out.result,
            Ok(()),
            "turn {}: {:#?}",
            units.len() + 1,
            out.logs
        );
        units.push(out.program_cu);
        let data = c.data(&run_key).await;
        let onchain = &data[run::HEADER_LEN..];
        let text = output_text(m.config, onchain);
        print!("{}", String::from_utf8_lossy(&text[printed..]));
        std::io::stdout().flush().ok();
        printed = text.len();
        if StateInfo::read(onchain).expect("state").complete {
            assert_eq!(
                onchain,
                &state[..],
                "the chain's final state differs from the native one"
            );
            break;
        }
    }
    println!();
    println!("SBF VM: {} turns (native: {native_turns}), the final state equal to the native one byte for byte", units.len());
    for (i, u) in units.iter().enumerate() {
        println!("  turn {:>3}: {u:>9} compute units", i + 1);
    }
    println!(
        "  peak {} compute units per turn, total {}",
        units.iter().max().unwrap_or(&0),
        units.iter().sum::<u64>()
    );
}
