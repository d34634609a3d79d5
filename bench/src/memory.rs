//! Peak memory of one call facing a 100 MiB answer, against the configured body cap.
//!
//! Each measurement is a fresh child process (`mcp-bench memory-child DRIVER URL`): it makes
//! one `tools/call` with the default configuration (cap 2 MiB) and reports its peak resident
//! set (`VmHWM` from `/proc/self/status`) at the end. The server runs in its own process, so
//! only the client's memory counts. A child calling a server that answers normally gives the
//! baseline (the binary, its libraries, the runtime), so the cost of the hostile answer is the
//! difference.

use std::io;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use mcp_proto::SessionConfig;

use crate::wire::{TOOL, arguments};

/// What one child reported.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRun {
    /// The driver (`blocking` or `tokio`).
    pub driver: String,
    /// The server role it called.
    pub role: String,
    /// Peak resident set, KiB.
    pub peak_kib: u64,
    /// How the call ended.
    pub outcome: String,
    /// How long the call took, ms.
    pub millis: f64,
}

/// The peak resident set so far of process `pid` (`"self"` for this one), KiB; `None` when
/// `/proc` cannot be read (the process is gone).
pub fn vm_hwm_kib(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The body of `mcp-bench memory-child DRIVER URL`: one call, then one line
/// `peak_kib millis outcome`.
pub fn child_main(driver: &str, url: &str) -> io::Result<()> {
    let config = SessionConfig::new(url)
        .map_err(io::Error::other)?
        .with_protocol_version(mcp_proto::ProtocolVersion::LATEST);
    let started = Instant::now();
    let result = match driver {
        "blocking" => mcp_driver_blocking::Client::new(config).call_tool(TOOL, arguments()),
        "tokio" => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(mcp_driver_tokio::Client::new(config).call_tool(TOOL, arguments())),
        other => return Err(io::Error::other(format!("no driver {other}"))),
    };
    let millis = started.elapsed().as_secs_f64() * 1e3;
    let outcome = match result {
        Ok(answer) => format!("answered ({} bytes of text)", answer.text().len()),
        Err(err) => {
            let text = err.to_string();
            text.chars().take(160).collect()
        }
    };
    let peak = vm_hwm_kib("self").unwrap_or(0);
    println!("{peak} {millis:.1} {outcome}");
    Ok(())
}

/// Runs one child with `exe` for `driver` against the server `role` at `url`.
pub fn measure(exe: &Path, driver: &str, role: &str, url: &str) -> io::Result<MemoryRun> {
    let output = Command::new(exe)
        .args(["memory-child", driver, url])
        .output()?;
    if !output.status.success() {
        return Err(io::Error::other(format!(
            "memory child failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let line = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let mut parts = line.splitn(3, ' ');
    let peak_kib = parts.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let millis = parts.next().and_then(|v| v.parse().ok()).unwrap_or(0.0);
    let outcome = parts.next().unwrap_or("").to_owned();
    Ok(MemoryRun {
        driver: driver.to_owned(),
        role: role.to_owned(),
        peak_kib,
        outcome,
        millis,
    })
}
