//! Compiles proto/agent.proto into the gRPC client and server (pure Rust: protox parses the
//! file, so building needs no protoc).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/agent.proto");
    let descriptors = protox::compile(["proto/agent.proto"], ["proto"])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
