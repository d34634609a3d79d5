//! Blocking driver for `mcp-proto` over ureq 3.
//!
//! This crate will hold the thin synchronous driver: it turns each leg intent of an
//! `mcp_proto::Operation` into one HTTP request, bounds the whole leg by its grant and feeds
//! what came back into the state machine. It holds no policy. Nothing is implemented yet.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
