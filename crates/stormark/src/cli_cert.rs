//! The command line of `stormark cert`.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Subcommand};

const CERT_EXAMPLES: &str = "\
Examples:
  stormark cert ca tls
      tls/ca.pem (give it to coordinators as --tls-ca) and tls/ca.key (mode 600: keep it on
      the host that makes certificates)
  stormark cert agent tls --name node1 --ip 10.0.0.11
      tls/node1.pem and tls/node1.key for the agent reached as node1 or 10.0.0.11: its
      --tls-cert and --tls-key
  stormark cert agent tls --name node2 --ip 10.0.0.12 --ip fd00::12 --dns node2.lab.example
      more names and addresses, every one the coordinator may write in --agents

Then: stormark agent ... --tls-cert node1.pem --tls-key node1.key on node1, and
stormark run ... --agents node1:7878,10.0.0.12:7878 --tls-ca tls/ca.pem on the coordinator.
The coordinator checks that an agent's certificate names the host as written in --agents; the
agent knows the coordinator by the token, so a coordinator needs no certificate. Keys are
ECDSA P-256, written mode 600; nothing is ever overwritten (an existing file is refused).";

/// Options of `stormark cert`.
#[derive(Debug, Args)]
#[command(after_help = CERT_EXAMPLES)]
pub struct CertArgs {
    /// What to make.
    #[command(subcommand)]
    pub what: CertCommand,
}

/// What `stormark cert` makes.
#[derive(Debug, Subcommand)]
pub enum CertCommand {
    /// A CA: DIR/ca.pem (the coordinators' --tls-ca) and DIR/ca.key (mode 600), valid ten
    /// years; DIR is made (mode 700) when missing.
    #[command(after_help = "Examples:\n  stormark cert ca tls\n      tls/ca.pem and tls/ca.key")]
    Ca {
        /// The directory to make the CA in.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// An agent's certificate signed by the CA of DIR: DIR/NAME.pem and DIR/NAME.key (mode
    /// 600), the agent's --tls-cert and --tls-key, valid 825 days.
    #[command(
        after_help = "Examples:\n  stormark cert agent tls --name node1 --ip 10.0.0.11\n      tls/node1.pem and tls/node1.key, valid for node1 and 10.0.0.11\n  stormark cert agent tls --name 10.0.0.12\n      tls/10.0.0.12.pem, valid for that address"
    )]
    Agent {
        /// The directory of the CA (`stormark cert ca DIR`); the files go there too.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// The agent's host name (a DNS name in the certificate, and the files' name), or its
        /// IP address.
        #[arg(long, value_name = "HOST")]
        name: String,
        /// An address the coordinator reaches the agent at (an IP name in the certificate);
        /// repeat for more.
        #[arg(long, value_name = "ADDR")]
        ip: Vec<IpAddr>,
        /// One more DNS name the agent is known by; repeat for more.
        #[arg(long, value_name = "NAME")]
        dns: Vec<String>,
    },
}
