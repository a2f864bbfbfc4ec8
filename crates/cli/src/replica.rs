//! `arca replica sync|verify`: bring the replicas up to date, or audit them.

use clap::Subcommand;
use std::process::ExitCode;

use crate::CommonArgs;

/// `arca replica` subcommands.
#[derive(Subcommand)]
pub enum ReplicaCommand {
    /// Make each replica (or the one named) equal to the primary root: copy what it lacks
    /// or holds differently, remove what the primary no longer has.
    Sync {
        #[command(flatten)]
        common: CommonArgs,
        /// Only the replica of this name.
        #[arg(long)]
        name: Option<String>,
    },
    /// Audit each replica (or the one named) as `arca fixity` audits the primary, and
    /// repair its damage from the primary.
    Verify {
        #[command(flatten)]
        common: CommonArgs,
        /// Only the replica of this name.
        #[arg(long)]
        name: Option<String>,
    },
}

/// Runs the subcommand; exit status 0 when every replica is (now) whole, 1 when damage
/// remains, 2 when it could not run.
pub async fn run(command: ReplicaCommand) -> ExitCode {
    let _ = command;
    todo!("H2")
}
