//! The codec's tests, one binary: each file under `tests/` named below is one module here,
//! so the dependency graph is linked once, not once per file. The files keep their
//! paths: `cargo test -p kacrab-wire --test codec oracle_requests::` runs one.
//! `server_roundtrip` needs the `server` feature and stays a binary of its own.

#[path = "../connection.rs"]
mod connection;
#[path = "../framing.rs"]
mod framing;
#[path = "../never_panics.rs"]
mod never_panics;
#[path = "../oracle_requests.rs"]
mod oracle_requests;
#[path = "../oracle_responses.rs"]
mod oracle_responses;
#[path = "../versions.rs"]
mod versions;
