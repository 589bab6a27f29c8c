//! The one line a launched agent prints on its standard output, which the launcher forwards
//! to the coordinator: its rank among the launched tasks, how many there are, and the address
//! it serves on. Both ends read and write it here.

use std::net::SocketAddr;

/// The word a launched agent's line begins with. A launcher that labels its tasks' output
/// (`srun -l`: `0: `, `mpirun --tag-output`: `[1,0]<stdout>:`) puts its label before it, so the
/// line is found wherever the word is.
const WORD: &str = "stormark-agent";

/// What a launched agent says of itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announce {
    /// Its rank among the tasks the launcher started, from 0.
    pub rank: u32,
    /// How many tasks the launcher started.
    pub size: u32,
    /// The address it serves on.
    pub address: SocketAddr,
    /// Its host's name.
    pub host: String,
}

impl Announce {
    /// The line, as printed (without its newline).
    pub fn line(&self) -> String {
        format!(
            "{WORD} rank={} size={} address={} host={}",
            self.rank, self.size, self.address, self.host
        )
    }

    /// The announcement in a line of the launcher's output, if it holds one.
    pub fn parse(line: &str) -> Option<Announce> {
        let (_, rest) = line.split_once(&format!("{WORD} "))?;
        let (mut rank, mut size, mut address, mut host) = (None, None, None, None);
        for pair in rest.split_whitespace() {
            match pair.split_once('=')? {
                ("rank", v) => rank = v.parse().ok(),
                ("size", v) => size = v.parse().ok(),
                ("address", v) => address = v.parse().ok(),
                ("host", v) => host = Some(v.to_string()),
                _ => {}
            }
        }
        let a = Announce {
            rank: rank?,
            size: size?,
            address: address?,
            host: host?,
        };
        (a.rank < a.size).then_some(a)
    }
}

/// This task's rank and the number of tasks, as its launcher says in the environment: Open
/// MPI's (`OMPI_COMM_WORLD_RANK`, `_SIZE`), the PMI's of MPICH and Intel MPI (`PMI_RANK`,
/// `PMI_SIZE`), then Slurm's (`SLURM_PROCID`, `SLURM_NTASKS`). MPI's come first: an `mpirun`
/// inside a Slurm batch script inherits the script's own `SLURM_PROCID` of 0. Rank 0 of 1 when
/// none is set (a launcher that starts one agent).
pub fn rank_and_size(env: impl Fn(&str) -> Option<String>) -> (u32, u32) {
    let pairs = [
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMI_RANK", "PMI_SIZE"),
        ("SLURM_PROCID", "SLURM_NTASKS"),
        ("SLURM_PROCID", "SLURM_NPROCS"),
    ];
    let num = |k: &str| env(k).and_then(|v| v.trim().parse::<u32>().ok());
    pairs
        .iter()
        .find_map(|(r, s)| Some((num(r)?, num(s)?)).filter(|(r, s)| r < s))
        .unwrap_or((0, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_labels_are_passed_over() {
        let a = Announce {
            rank: 2,
            size: 4,
            address: "10.0.0.12:41234".parse().unwrap(),
            host: "node2".into(),
        };
        assert_eq!(
            a.line(),
            "stormark-agent rank=2 size=4 address=10.0.0.12:41234 host=node2"
        );
        assert_eq!(Announce::parse(&a.line()), Some(a.clone()));
        assert_eq!(
            Announce::parse(&format!("2: {}", a.line())),
            Some(a.clone())
        );
        assert_eq!(
            Announce::parse(&format!("[1,2]<stdout>:{}", a.line())),
            Some(a.clone())
        );
        let v6 = Announce {
            address: "[fd00::12]:41234".parse().unwrap(),
            ..a
        };
        assert_eq!(Announce::parse(&v6.line()), Some(v6));
        for not in [
            "",
            "hello",
            "stormark-agent rank=4 size=4 address=10.0.0.1:1 host=a",
            "stormark-agent rank=0 size=4 address=10.0.0.1 host=a",
            "stormark-agent rank=0 size=4 host=a",
            "stormark-agent rank=x size=4 address=10.0.0.1:1 host=a",
        ] {
            assert_eq!(Announce::parse(not), None, "{not}");
        }
    }

    #[test]
    fn ranks_come_from_mpi_before_slurm() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(rank_and_size(env(&[])), (0, 1));
        assert_eq!(
            rank_and_size(env(&[("SLURM_PROCID", "3"), ("SLURM_NTASKS", "4")])),
            (3, 4)
        );
        assert_eq!(
            rank_and_size(env(&[
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "1"),
                ("OMPI_COMM_WORLD_RANK", "2"),
                ("OMPI_COMM_WORLD_SIZE", "8"),
            ])),
            (2, 8)
        );
        assert_eq!(
            rank_and_size(env(&[("PMI_RANK", "1"), ("PMI_SIZE", "2")])),
            (1, 2)
        );
        // A rank beyond the size is no rank.
        assert_eq!(
            rank_and_size(env(&[("SLURM_PROCID", "4"), ("SLURM_NTASKS", "4")])),
            (0, 1)
        );
    }
}
