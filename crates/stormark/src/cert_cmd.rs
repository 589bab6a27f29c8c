//! `stormark cert`: a CA and agents' certificates for TLS between coordinator and agents.

use anyhow::Result;

use crate::cli_cert::{CertArgs, CertCommand};
use crate::{usage, Ending};

pub fn main(args: CertArgs) -> Result<Ending> {
    let made = match &args.what {
        CertCommand::Ca { dir } => stormark_cluster::make_ca(dir),
        CertCommand::Agent { dir, name, ip, dns } => {
            stormark_cluster::make_agent(dir, name, ip, dns)
        }
    };
    let made = made.map_err(|e| {
        if e.is_refusal() {
            usage(e.to_string())
        } else {
            anyhow::anyhow!(e)
        }
    })?;
    for f in made {
        outln!("{}", f.display());
    }
    Ok(Ending::Success)
}
