//! mcp-testkit (being written).
