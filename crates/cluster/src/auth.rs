//! The agents' shared token, for both ends: checked on every call by the agent (in constant
//! time), added to every call by the coordinator (its file is read by `config.rs`).

use subtle::ConstantTimeEq;
use tonic::metadata::MetadataValue;
use tonic::{Request, Status};

/// Shortest token accepted: 16 bytes, so that guessing is hopeless.
pub const MIN_TOKEN_LEN: usize = 16;

/// 128 random bits from the kernel, as hex: a session's id, a mesh's token.
pub(crate) fn session_id() -> String {
    let mut bytes = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
