//! SCSI failures as error kinds (`scsi-medium-error`, `scsi-busy`, ...): a failed command's
//! sense key (SPC-4's table 48) or status, numbered as [`code`] makes them, named as results
//! and `--ignore-errors` name them.

/// SPC's sense keys, by number, as kind names.
const SENSE_KEYS: [&str; 15] = [
    "no-sense",
    "recovered-error",
    "not-ready",
    "medium-error",
    "hardware-error",
    "illegal-request",
    "unit-attention",
    "data-protect",
    "blank-check",
    "vendor-specific",
    "copy-aborted",
    "aborted-command",
    "reserved",
    "volume-overflow",
    "miscompare",
];

/// SCSI statuses other than CHECK CONDITION, by number, as kind names.
const STATUSES: [(u8, &str); 4] = [
    (0x08, "busy"),
    (0x18, "reservation-conflict"),
    (0x28, "task-set-full"),
    (0x40, "task-aborted"),
];

/// A status's codes are above every sense key's.
const STATUS: u16 = 0x100;

/// The code of a CHECK CONDITION with sense key `key` (`Some`), or of status `status`.
pub fn code(key: Option<u8>, status: u8) -> u16 {
    match key {
        Some(k) => u16::from(k & 0x0f),
        None => STATUS | u16::from(status),
    }
}

/// The kind's name: `scsi-medium-error`, `scsi-busy`, `scsi-sense-15`, `scsi-status-0x22`.
pub fn name(code: u16) -> String {
    if code < STATUS {
        return match SENSE_KEYS.get(usize::from(code)) {
            Some(n) => format!("scsi-{n}"),
            None => format!("scsi-sense-{code}"),
        };
    }
    let status = (code & 0xff) as u8;
    match STATUSES.iter().find(|(s, _)| *s == status) {
        Some((_, n)) => format!("scsi-{n}"),
        None => format!("scsi-status-{status:#04x}"),
    }
}

/// The code of a kind's [`name`] (any case); `None` for another name.
pub fn code_of(name: &str) -> Option<u16> {
    let w = name.to_ascii_lowercase();
    let rest = w.strip_prefix("scsi-")?;
    if let Some(k) = SENSE_KEYS.iter().position(|n| *n == rest) {
        return Some(k as u16);
    }
    if let Some((s, _)) = STATUSES.iter().find(|(_, n)| *n == rest) {
        return Some(STATUS | u16::from(*s));
    }
    if let Some(k) = rest.strip_prefix("sense-") {
        return k.parse::<u8>().ok().filter(|&k| k < 16).map(u16::from);
    }
    let s = rest.strip_prefix("status-0x")?;
    u8::from_str_radix(s, 16)
        .ok()
        .map(|s| STATUS | u16::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_names_a_kind_that_reads_back_as_itself() {
        for key in 0..16u8 {
            let c = code(Some(key), 0x02);
            assert_eq!(code_of(&name(c)), Some(c), "{}", name(c));
        }
        for status in 0..=255u8 {
            let c = code(None, status);
            assert_eq!(code_of(&name(c)), Some(c), "{}", name(c));
        }
        assert_eq!(name(code(Some(3), 2)), "scsi-medium-error");
        assert_eq!(name(code(None, 0x08)), "scsi-busy");
        assert_eq!(code_of("SCSI-Illegal-Request"), Some(5));
        assert_eq!(code_of("scsi-"), None);
        assert_eq!(code_of("scsi-sense-16"), None);
        assert_eq!(code_of("eio"), None);
    }
}
