//! `stormark run ... --on HOSTS FLAGS... --on HOSTS FLAGS...`: a job per `--on` section, each
//! on the hosts it names, as fio's client mode gives each host its own job file. Taken out of
//! the command line before clap reads it (a flag given in two sections would be given twice);
//! each section is then read by clap on its own.

use std::ffi::OsString;

/// One `--on HOSTS` section: the hosts as typed and the workload flags after it, as pairs.
#[derive(Debug, Clone, Default)]
pub struct OnSection {
    /// `HOSTS` as typed (`0`, `1-3`, `node2`).
    pub hosts: String,
    /// The workload flags of the section (job keys and their text).
    pub flags: Vec<(&'static str, String)>,
}

/// An `--on` section as typed: its hosts and the words after them.
pub type RawSection = (String, Vec<OsString>);

/// The command line without its `--on` sections (everything from the first `--on` on), and
/// the sections. Only `stormark run` has them. Every word after an `--on HOSTS` up to the next
/// `--on` is the section's, and must be a workload flag (`--rw`, `--bs`, `--rate-iops`, ...):
/// the run's own options go before the first `--on`. One line for the user otherwise.
pub fn split(args: Vec<OsString>) -> Result<(Vec<OsString>, Vec<RawSection>), String> {
    let is_run = args.get(1).is_some_and(|a| a == "run");
    let first = args.iter().position(|a| is_on(a).is_some());
    let (Some(first), true) = (first, is_run) else {
        return Ok((args, Vec::new()));
    };
    // After `--`, nothing is an option.
    if args[..first].iter().any(|a| a == "--") {
        return Ok((args, Vec::new()));
    }
    let known: std::collections::BTreeSet<String> = stormark_spec::FILE_FLAGS
        .iter()
        .map(|f| format!("--{}", f.long()))
        .collect();
    let mut rest = args[first..].iter().peekable();
    let mut sections: Vec<RawSection> = Vec::new();
    while let Some(word) = rest.next() {
        let text = word.to_str().unwrap_or("");
        if let Some(inline) = is_on(word) {
            let hosts = match inline {
                Some(h) => h.to_string(),
                None => rest
                    .next()
                    .and_then(|h| h.to_str())
                    .filter(|h| !h.starts_with("--"))
                    .ok_or(ON_FORM)?
                    .to_string(),
            };
            sections.push((hosts, Vec::new()));
            continue;
        }
        let name = text.split('=').next().unwrap_or("");
        if text.starts_with("--") && !known.contains(name) {
            return Err(format!(
                "{name} after --on: an --on section holds workload flags only (--rw, --bs, --iodepth, --rate-iops, ...); give the run's own options before the first --on"
            ));
        }
        if let Some((_, words)) = sections.last_mut() {
            words.push(word.clone());
        }
    }
    Ok((args[..first].to_vec(), sections))
}

/// Section `words` of `--on hosts`, read by clap as `stormark run`'s workload flags (a
/// mistake in them is clap's error, exit 2).
pub fn section(hosts: String, words: Vec<OsString>) -> OnSection {
    use clap::Parser;
    let argv = ["stormark", "run"]
        .into_iter()
        .map(OsString::from)
        .chain(words);
    let flags = match crate::cli::Cli::parse_from(argv).command {
        crate::cli::Command::Run(args) => args.workload.0,
        _ => unreachable!("parsed as run"),
    };
    OnSection { hosts, flags }
}

const ON_FORM: &str = "--on needs the hosts of its section, such as --on 0 --rw randwrite --on 1-3 --rw randread --rate-iops 300 (indexes from 0 in the order of --agents, ranges, or names as in --agents)";

/// `Some(None)` for `--on`, `Some(Some(HOSTS))` for `--on=HOSTS`; `None` for another word.
fn is_on(word: &OsString) -> Option<Option<&str>> {
    let text = word.to_str()?;
    if text == "--on" {
        return Some(None);
    }
    text.strip_prefix("--on=").map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn sections_are_split_off_and_hold_workload_flags_only() {
        let (common, sections) = split(words(
            "stormark run /mnt --agents a:1,b:1 --time 5s --on 0 --rw randwrite --bs=64k --on=1-3 --rw randread --rate-iops 300",
        ))
        .unwrap();
        assert_eq!(
            common,
            words("stormark run /mnt --agents a:1,b:1 --time 5s")
        );
        assert_eq!(sections.len(), 2);
        assert_eq!(sections[0].0, "0");
        assert_eq!(sections[0].1, words("--rw randwrite --bs=64k"));
        assert_eq!(sections[1].0, "1-3");
        assert_eq!(sections[1].1, words("--rw randread --rate-iops 300"));
        // Not run, or no --on: left alone.
        let other = words("stormark s3 --on 0");
        assert_eq!(split(other.clone()).unwrap().0, other);
        let plain = words("stormark run /mnt --rw read");
        assert_eq!(split(plain.clone()).unwrap(), (plain, Vec::new()));
        // The run's own options inside a section, or an --on without hosts: refused.
        let e = split(words("stormark run --on 0 --rw read --json x.json")).unwrap_err();
        assert!(e.starts_with("--json after --on"), "{e}");
        let e = split(words("stormark run --on --rw read")).unwrap_err();
        assert!(e.starts_with("--on needs the hosts"), "{e}");
    }
}
