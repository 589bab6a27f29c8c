//! Issue 54: what a job file can make stormark print, run or believe through its variables,
//! names and includes, and what `--print-fio` may write.

use super::tests::{env, jobs, no_include, parse};
use super::*;

/// Issue 54: what a job file can make stormark print or run through its variables, names and
/// includes.
#[test]
fn a_job_file_cannot_leak_a_secret_forge_a_line_or_explode() {
    let secret_env = |name: &str| match name {
        "AWS_SECRET_ACCESS_KEY" | "API_TOKEN" | "DB_PASSWORD" => Some("SeCrEt".to_string()),
        "AWS_ACCESS_KEY_ID" => Some("AKID".to_string()),
        "EVIL" => Some("x\nstatus: ok (forged)".to_string()),
        "EVIL_FILE" => Some("/d/x\nexec_prerun=touch /tmp/PWNED\n[evil]".to_string()),
        _ => None,
    };
    let parse_with = |text: &str| {
        parse_fio_job_file(text, "t.fio", &secret_env, &no_include, false)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    for text in [
        "[j]\nname=x${AWS_SECRET_ACCESS_KEY}\n",
        "[j]\nbs=$API_TOKEN\n",
        "[j]\nfilename=/d/${DB_PASSWORD}\n",
    ] {
        let e = parse_with(text).unwrap_err();
        assert!(!e.contains("SeCrEt"), "{e}");
        assert!(e.contains("named like a secret"), "{e}");
    }
    // A key's id is not a secret: expanded (and refused here as a block size, for its value).
    let e = parse_with("[j]\nbs=${AWS_ACCESS_KEY_ID}\n").unwrap_err();
    assert!(!e.contains("secret"), "{e}");
    for text in [
        "[j]\nname=$EVIL\n",
        "[j]\nfilename=${EVIL_FILE}\n",
        "[j\u{1b}]2;owned\u{7}]\nrw=read\n",
    ] {
        let e = parse_with(text).unwrap_err();
        assert!(e.contains("control character"), "{e}");
        assert!(
            !e.contains("forged") && !e.contains("PWNED") && !e.contains('\u{1b}'),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // An include bomb: each file includes the next 12 times, 7 deep (35 million includes).
    let bomb = |name: &str| -> Result<String, String> {
        let level: u32 = name
            .trim_start_matches('f')
            .trim_end_matches(".fio")
            .parse()
            .unwrap_or(9);
        Ok(if level < 7 {
            format!("include f{}.fio\n", level + 1).repeat(12)
        } else {
            "[global]\nbs=4k\n".into()
        })
    };
    // A token file given as a job file: its first line is not printed.
    let token = parse("s3cr3tt0kenvalue1234567890\n")
        .unwrap_err()
        .to_string();
    assert!(
        !token.contains("s3cr3t") && token.contains("before any section"),
        "{token}"
    );
    let e = parse_fio_job_file(
        "include f1.fio\n[j]\nrw=read\n",
        "t.fio",
        &env,
        &bomb,
        false,
    )
    .unwrap_err()
    .to_string();
    // Refused by the count, after at most MAX_INCLUDES reads, not after millions.
    assert!(e.contains("includes in all"), "{e}");
}

#[test]
fn print_fio_never_writes_a_line_it_was_not_asked_for() {
    let f = parse("[a]\nrw=read\n").unwrap();
    let j = jobs(&f);
    for target in [
        "/d/x\nexec_prerun=touch /tmp/PWNED\n[evil]",
        "/d/x ;y",
        "/d/\0x",
    ] {
        let e = fio_check(&j, target).unwrap_err();
        assert!(e.starts_with("TARGET "), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        // Printed unchecked all the same, still no line of its own.
        let text = to_fio(&j, target, true);
        assert!(
            !text.lines().any(|l| l.starts_with("exec_prerun")),
            "{text}"
        );
    }
    assert!(fio_check(&j, "/mnt/bench").is_ok());
}
