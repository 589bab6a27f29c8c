//! stormark: what does this storage really sustain, at what latency, and what is holding it
//! back? The binary is thin: it parses the command line, builds a workload, hands it to the
//! coordinator and writes the results. Exit status: 0 ok, 1 the run failed or counted I/O
//! errors or was interrupted, 2 a user error found before any load.

mod agent_cmd;
mod cli;
mod compare_cmd;
mod probe_cmd;
mod run;
mod shape;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let code = match cli.command {
        cli::Command::Run(args) => run::main(*args),
        cli::Command::Probe(args) => probe_cmd::main(args),
        cli::Command::Agent(args) => agent_cmd::main(args),
        cli::Command::Compare(args) => compare_cmd::main(args),
    };
    std::process::exit(code);
}
