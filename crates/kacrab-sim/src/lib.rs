//! stub
#![warn(missing_docs)]

pub mod batch;
pub mod broker;
pub mod log;
