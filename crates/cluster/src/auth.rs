//! The agents' shared token, for both ends: read from its file and checked on every call by
//! the agent (in constant time), added to every call by the coordinator.

use std::path::Path;

use crate::config::ConfigError;

use subtle::ConstantTimeEq;
use tonic::metadata::MetadataValue;
use tonic::{Request, Status};

/// Shortest token accepted: 16 bytes, so that guessing is hopeless.
pub const MIN_TOKEN_LEN: usize = 16;

/// Reads a token file: one line, at least [`MIN_TOKEN_LEN`] bytes.
pub fn read_token(path: &Path) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Unreadable {
        option: "--token-file",
        path: path.to_path_buf(),
        source,
    })?;
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

/// Whether a call carries `authorization: Bearer <token>`; constant time in the token.
pub fn check_token(token: &str, req: &Request<()>) -> Result<(), Status> {
    let Some(value) = req.metadata().get("authorization") else {
        return Err(Status::unauthenticated(
            "no token: the coordinator must send this agent's token (--token-file)",
        ));
    };
    let given = value.as_bytes().strip_prefix(b"Bearer ").unwrap_or(b"");
    if bool::from(given.ct_eq(token.as_bytes())) {
        Ok(())
    } else {
        Err(Status::unauthenticated("wrong token"))
    }
}

/// Adds the token to every call (the coordinator's side).
#[derive(Clone)]
pub(crate) struct Bearer(pub(crate) MetadataValue<tonic::metadata::Ascii>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        req.metadata_mut().insert("authorization", self.0.clone());
        Ok(req)
    }
}
