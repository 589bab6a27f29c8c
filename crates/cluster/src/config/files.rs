//! The files an agent or a coordinator is named (a token, TLS certificates and keys), read
//! as regular files only, without blocking and to a limit.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use super::ConfigError;
use crate::auth::MIN_TOKEN_LEN;

/// The most a token file may hold: a token is one line.
pub const TOKEN_FILE_LIMIT: u64 = 4 << 10;

/// The most a PEM file of certificates or a key may hold.
pub const PEM_LIMIT: u64 = 1 << 20;

/// Reads a file named by an option or the environment (`option` names it in errors), as a
/// regular file only: opened without blocking (a FIFO is refused, never waited on for a
/// writer; `O_NOCTTY`, so a terminal never becomes the agent's), refused in one line unless
/// `fstat` says it is a regular file (`/dev/zero` is refused, not read), and refused when
/// larger than `limit` bytes. `expected` says what the option wants, as in "a file holding
/// the token".
pub fn read_regular(
    path: &Path,
    option: &'static str,
    limit: u64,
    expected: &'static str,
) -> Result<Vec<u8>, ConfigError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let unreadable = |source| ConfigError::Unreadable {
        option,
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    let kind = meta.file_type();
    let found = if kind.is_file() {
        None
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    };
    if let Some(found) = found {
        return Err(ConfigError::NotAFile {
            option,
            path: path.to_path_buf(),
            found,
            expected,
        });
    }
    let too_large = || ConfigError::TooLarge {
        option,
        path: path.to_path_buf(),
        limit,
        expected,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    // A regular file ignores O_NONBLOCK. Read to one byte past the limit: a file that grew
    // since fstat is refused too.
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Reads a token file: one line, at least [`MIN_TOKEN_LEN`] bytes, from a regular file of at
/// most [`TOKEN_FILE_LIMIT`] bytes (see [`read_regular`]).
pub fn read_token(path: &Path) -> Result<String, ConfigError> {
    let bytes = read_regular(
        path,
        "--token-file",
        TOKEN_FILE_LIMIT,
        "a file holding the token, one line",
    )?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(ConfigError::BadToken {
            path: path.to_path_buf(),
        });
    };
    let token = text.trim().to_string();
    if token.len() < MIN_TOKEN_LEN
        || token.contains(char::is_whitespace)
        || token.contains(char::is_control)
    {
        return Err(ConfigError::BadToken {
            path: path.to_path_buf(),
        });
    }
    Ok(token)
}
