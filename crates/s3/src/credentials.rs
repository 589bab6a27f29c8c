//! Where the keys come from: given, the environment (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`), or a profile of the shared credentials file, as the AWS tools
//! find them.

use crate::Credentials;

/// The largest credentials file read.
const FILE_LIMIT: u64 = 1 << 20;

/// The keys: those given, else the environment's, else profile `aws_profile` (or
/// `AWS_PROFILE`, or `default`) of the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`
/// or `~/.aws/credentials`). The error says, in one line, what to give.
pub fn find_credentials(
    access_key: Option<String>,
    secret_key: Option<String>,
    aws_profile: Option<String>,
) -> Result<Credentials, String> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let access = access_key.or_else(|| env("AWS_ACCESS_KEY_ID"));
    let secret = secret_key.or_else(|| env("AWS_SECRET_ACCESS_KEY"));
    if let (Some(access_key), Some(secret_key)) = (&access, &secret) {
        return Ok(Credentials {
            access_key: access_key.clone(),
            secret_key: secret_key.clone(),
        });
    }
    if access.is_some() != secret.is_some() {
        return Err(
            "--access-key and --secret-key go together (or AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY)".into(),
        );
    }
    let profile = aws_profile
        .or_else(|| env("AWS_PROFILE"))
        .unwrap_or_else(|| "default".into());
    let file = env("AWS_SHARED_CREDENTIALS_FILE")
        .map(std::path::PathBuf::from)
        .or_else(|| env("HOME").map(|h| std::path::Path::new(&h).join(".aws/credentials")));
    let text = file.as_deref().and_then(read_small);
    text.as_deref()
        .and_then(|t| profile_credentials(t, &profile))
        .ok_or_else(|| {
            format!(
                "no S3 keys: give --access-key and --secret-key, set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or add profile [{profile}] to {}",
                file.map_or_else(|| "~/.aws/credentials".into(), |f| f.display().to_string())
            )
        })
}

/// A regular file's text when it is at most [`FILE_LIMIT`] bytes (a device or a FIFO named
/// by mistake is not read).
fn read_small(path: &std::path::Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: a FIFO planted as AWS_SHARED_CREDENTIALS_FILE must not hang the open; it is
    // refused below as not a regular file.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > FILE_LIMIT {
        return None;
    }
    let mut text = String::new();
    file.take(FILE_LIMIT).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The keys of `profile` in an AWS shared credentials file (`~/.aws/credentials`):
/// `aws_access_key_id` and `aws_secret_access_key` under `[profile]`.
pub fn profile_credentials(text: &str, profile: &str) -> Option<Credentials> {
    let mut in_section = false;
    let (mut access, mut secret) = (None, None);
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') && line.ends_with(']') {
            let name = line[1..line.len() - 1].trim();
            in_section = name == profile || name == format!("profile {profile}");
            continue;
        }
        if !in_section || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            match k.trim() {
                "aws_access_key_id" => access = Some(v.trim().to_string()),
                "aws_secret_access_key" => secret = Some(v.trim().to_string()),
                _ => {}
            }
        }
    }
    Some(Credentials {
        access_key: access.filter(|a| !a.is_empty())?,
        secret_key: secret.filter(|s| !s.is_empty())?,
    })
}

#[cfg(test)]
mod profile_tests {
    use super::*;

    #[test]
    fn profiles() {
        let text = "[default]\naws_access_key_id = A1\naws_secret_access_key=S1\n\n[bench]\n# c\naws_access_key_id=A2\naws_secret_access_key = S2\n";
        assert_eq!(
            profile_credentials(text, "default").unwrap().access_key,
            "A1"
        );
        assert_eq!(profile_credentials(text, "bench").unwrap().secret_key, "S2");
        assert!(profile_credentials(text, "other").is_none());
        assert!(profile_credentials("[x]\naws_access_key_id=A", "x").is_none());
    }
}

#[cfg(test)]
mod tests {
    use super::read_small;

    /// Issue 54: a FIFO or a device named as the credentials file is passed over at once,
    /// never waited on for a writer or read without end.
    #[test]
    fn a_fifo_or_a_device_is_no_credentials_file() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let fifo = dir.path().join("credentials");
        let c = std::ffi::CString::new(fifo.to_str().expect("UTF-8")).expect("no NUL");
        // SAFETY: mkfifo(3) with a C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(read_small(&fifo), None);
        assert_eq!(read_small(std::path::Path::new("/dev/zero")), None);
        let file = dir.path().join("file");
        std::fs::write(&file, "[default]\n").expect("written");
        assert_eq!(read_small(&file).as_deref(), Some("[default]\n"));
    }
}
