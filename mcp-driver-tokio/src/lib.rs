//! Tokio driver for `mcp-proto`.
//!
//! This crate will hold the thin asynchronous driver: one future per operation, each leg
//! inside `timeout_at(end of the leg)`, dropping the future cancels the request in flight.
//! It holds no policy. Nothing is implemented yet.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
