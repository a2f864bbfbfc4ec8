//! `arca-bench`: the benchmark without the rest of arca (same arguments as `arca bench`).

use std::process::ExitCode;

use clap::Parser;

/// Reproduce the Fedora sizing studies against arca or any Fedora API server.
#[derive(Parser)]
#[command(name = "arca-bench", version, about, long_about = None)]
struct Cli {
    #[command(flatten)]
    bench: arca_bench::BenchArgs,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match arca_bench::run(cli.bench).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("arca-bench: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
