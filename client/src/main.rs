//! `curta`: see `docs/client.md`, or `curta --help`.

fn main() -> std::process::ExitCode {
    curta_client::cli::main()
}
