//! One word on every results document: `valid`, or `suspect` and why. A figure is suspect
//! when what it measured is not (only) the storage: reads served from a cache, a client
//! whose CPU set the pace, data a compressing or deduplicating target stores in less room
//! than written, a run too short or too noisy to trust, a clock off between hosts, a host
//! swapping or a neighbour taking its CPU, a file system nearly full, a run that did not end.
//! Each reason is a finding of the document (its evidence there) or the run's own settings.

use serde::{Deserialize, Serialize};

use crate::{Results, RunStatus};

/// The findings that make a figure suspect, and what each says of it.
pub const SUSPECT_FINDINGS: &[(&str, &str)] = &[
    (
        "page-cache-reads",
        "reads were served from the page cache, not the storage",
    ),
    (
        "arc-reads",
        "reads were served from ZFS's ARC, not the storage",
    ),
    (
        "page-cache-evicted",
        "the host evicts the page cache, so cached reads were partly the device's",
    ),
    (
        "cpu-bound",
        "the client's CPU, not the storage, set the pace",
    ),
    (
        "cpu-core-saturated",
        "one client CPU, not the storage, set the pace",
    ),
    ("net-cpu-bound", "a CPU, not the network, set the pace"),
    (
        "s3-client-cpu",
        "the client's own CPU, not the store, set the pace",
    ),
    ("run-too-short", "too short to trust"),
    ("noisy-run", "its seconds vary too much to trust one figure"),
    ("repetitions-vary", "its repetitions disagree"),
    ("clock-offset", "the hosts' clocks disagree"),
    ("swapping", "the host was swapping"),
    ("cpu-steal", "a neighbour on the hypervisor took CPU time"),
    ("filesystem-nearly-full", "the file system was nearly full"),
];

/// Whether a document's figures can be published as the storage's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    /// `valid` or `suspect`.
    pub status: ValidityStatus,
    /// Why it is suspect: each a finding's code (or the run's own, `reducible-data`,
    /// `run-failed`) and what it says of the figures. Empty when valid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<Reason>,
}

/// `valid` or `suspect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValidityStatus {
    /// Nothing found that makes the figures other than the storage's.
    Valid,
    /// At least one reason below.
    Suspect,
}

/// One reason a document is suspect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reason {
    /// The finding's code, or the run's own reason.
    pub code: String,
    /// What it says of the figures.
    pub why: String,
}

impl Validity {
    /// The verdict's one line, as the terminal, Markdown and HTML print it.
    pub fn line(&self) -> String {
        match self.status {
            ValidityStatus::Valid => "verdict: valid".into(),
            ValidityStatus::Suspect => {
                let why: Vec<String> = self
                    .reasons
                    .iter()
                    .map(|r| format!("{} ({})", r.why, r.code))
                    .collect();
                format!("verdict: suspect: {}", why.join("; "))
            }
        }
    }

    /// Whether it is suspect.
    pub fn suspect(&self) -> bool {
        self.status == ValidityStatus::Suspect
    }
}

/// The verdict a document's findings, settings and status give.
pub fn validity_of(r: &Results) -> Validity {
    let mut reasons: Vec<Reason> = Vec::new();
    let mut add = |code: &str, why: &str| {
        if !reasons.iter().any(|x| x.code == code) {
            reasons.push(Reason {
                code: code.into(),
                why: why.into(),
            });
        }
    };
    match r.status {
        RunStatus::Ok => {}
        RunStatus::Failed => add("run-failed", "the run failed"),
        RunStatus::Interrupted => add("run-interrupted", "the run was interrupted"),
        RunStatus::Running => add("run-unfinished", "the run did not finish"),
    }
    for f in &r.findings {
        if let Some((code, why)) = SUSPECT_FINDINGS.iter().find(|(c, _)| *c == f.code) {
            add(code, why);
        }
    }
    // Writes of zeros, or of data made to compress or repeat: a compressing or deduplicating
    // target (an array, ZFS, VDO) stores them in less room than written.
    let reducible = r.spec.jobs.iter().any(|j| {
        let writes = j
            .get("rw")
            .is_some_and(|rw| rw.contains("write") || rw.contains("rw"));
        let above_one = |k: &str| {
            j.get(k)
                .and_then(|v| v.parse::<f64>().ok())
                .is_some_and(|x| x > 1.0)
        };
        writes
            && (j.get("zero_buffers").is_some_and(|v| v == "true")
                || above_one("compress_ratio")
                || above_one("dedup_ratio"))
    });
    if reducible {
        add(
            "reducible-data",
            "it wrote zeros or data made to compress or repeat, which a compressing or deduplicating target stores in less room than written",
        );
    }
    Validity {
        status: if reasons.is_empty() {
            ValidityStatus::Valid
        } else {
            ValidityStatus::Suspect
        },
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Finding, Severity};

    fn finding(code: &str) -> Finding {
        Finding {
            severity: Severity::Warning,
            code: code.into(),
            message: String::new(),
            evidence: serde_json::json!({}),
            advice: String::new(),
        }
    }

    /// Findings that do not touch what a figure is (a device's latency, split requests) keep
    /// a document valid; each suspect finding is one reason, once, with its words.
    #[test]
    fn only_the_findings_that_change_what_was_measured_make_it_suspect() {
        let mut r = Results::new(vec!["stormark".into()]);
        r.findings = vec![
            finding("high-device-latency"),
            finding("device-splits-requests"),
        ];
        let v = validity_of(&r);
        assert_eq!(v.status, ValidityStatus::Valid);
        assert_eq!(v.line(), "verdict: valid");
        r.findings.push(finding("cpu-bound"));
        r.findings.push(finding("cpu-bound"));
        r.status = RunStatus::Interrupted;
        let v = validity_of(&r);
        assert!(v.suspect());
        let codes: Vec<&str> = v.reasons.iter().map(|x| x.code.as_str()).collect();
        assert_eq!(codes, ["run-interrupted", "cpu-bound"]);
        assert!(v
            .line()
            .contains("the client's CPU, not the storage, set the pace (cpu-bound)"));
    }
}
