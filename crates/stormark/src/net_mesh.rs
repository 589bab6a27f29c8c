//! `stormark net --agents LIST --mode mesh`: the network between every pair of the agents'
//! hosts, as vendor guides ask for before a storage cluster is accepted: each ordered pair
//! alone (the connectivity matrix), then all pairs at once (the network under load). A
//! `kind = "net"` job to the run's agents (`server = "agents"`) in the plan's mesh shape,
//! handed to the same road as `stormark run`.

use anyhow::Result;

use crate::cli::{DistributedArgs, NetMeshArgs, OutputArgs, RunArgs, ShapeArgs, WorkloadFlags};
use crate::{usage, Ending};

pub fn main(args: &NetMeshArgs) -> Result<Ending> {
    if args.mode != "mesh" {
        return Err(usage(format!(
            "--mode {}: over agents the mode is mesh (pair tests run with stormark net client)",
            args.mode
        )));
    }
    let streams = crate::cli_net::parse_streams(&args.streams)?;
    crate::cli_net::parse_time(&args.time)?;
    let msg_size = match &args.msg_size {
        None => 1 << 20,
        Some(text) => crate::cli_net::parse_msg_size(text)?,
    };
    let keys = vec![
        ("kind", "net".to_string()),
        ("server", "agents".to_string()),
        ("mode", "send".to_string()),
        ("jobs", streams.to_string()),
        ("time", args.time.clone()),
        ("msg_size", msg_size.to_string()),
        ("name", "mesh".to_string()),
    ];
    crate::run::main(RunArgs {
        workload: WorkloadFlags::from_pairs(keys),
        shape: ShapeArgs {
            mesh: true,
            ..ShapeArgs::default()
        },
        distributed: DistributedArgs {
            agents: args.agents.clone(),
            agents_file: args.agents_file.clone(),
            token_file: args.token_file.clone(),
            tls_ca: args.tls_ca.clone(),
            // A host that fails is named in its pairs; the others are measured.
            on_agent_failure: Some("continue".into()),
            max_failed_agents: None,
            ..DistributedArgs::default()
        },
        output: OutputArgs {
            json: args.json.clone(),
            html: args.html.clone(),
            metrics_listen: args.metrics_listen,
            quiet: args.quiet,
            progress: None,
        },
        ..RunArgs::default()
    })
}
