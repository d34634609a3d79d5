//! Latency statistics and CPU accounting.
//!
//! Latencies are recorded per operation ([`Stats::from_latencies`]); CPU time is read from
//! `/proc` ([`CpuSnapshot`]): the client process's own time, the server's time (the server
//! process, or for stdio the server processes the client started: [`children_cpu`]), and the
//! whole machine's busy time, so that each case can say how much CPU each side spent per call
//! and how busy the machine was with *other* work while it ran.

use std::fs;
use std::time::{Duration, Instant};

/// Throughput and latency of one measured run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Operations completed.
    pub ops: u64,
    /// Wall time of the measured window.
    pub wall: Duration,
    /// Median latency of one operation.
    pub p50: Duration,
    /// 99th percentile latency of one operation.
    pub p99: Duration,
    /// Operations run in all, warm-up included (to share out counters read around the case).
    pub all_ops: u64,
}

impl Stats {
    /// Statistics of `latencies` (one per operation) completed in `wall`, after `warm_ops`
    /// untimed operations.
    pub fn from_latencies(mut latencies: Vec<Duration>, wall: Duration, warm_ops: u64) -> Self {
        latencies.sort_unstable();
        let ops = latencies.len() as u64;
        Self {
            ops,
            wall,
            p50: percentile(&latencies, 0.50),
            p99: percentile(&latencies, 0.99),
            all_ops: ops + warm_ops,
        }
    }

    /// Operations per second.
    pub fn per_sec(&self) -> f64 {
        let secs = self.wall.as_secs_f64();
        if secs > 0.0 {
            self.ops as f64 / secs
        } else {
            0.0
        }
    }
}

/// Raw latencies of a run (or of several runs of the same case, merged).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// One latency per timed operation.
    pub latencies: Vec<Duration>,
    /// Wall time of the timed windows, added up.
    pub wall: Duration,
    /// Untimed (warm-up) operations.
    pub warm_ops: u64,
}

impl Sample {
    /// A sample of `latencies` timed over `wall`, after `warm_ops` untimed operations.
    pub fn new(latencies: Vec<Duration>, wall: Duration, warm_ops: u64) -> Self {
        Self {
            latencies,
            wall,
            warm_ops,
        }
    }

    /// Adds `other` (another window of the same case) to this sample.
    pub fn merge(&mut self, other: Self) {
        self.latencies.extend(other.latencies);
        self.wall += other.wall;
        self.warm_ops += other.warm_ops;
    }

    /// The statistics of the sample.
    pub fn stats(&self) -> Stats {
        Stats::from_latencies(self.latencies.clone(), self.wall, self.warm_ops)
    }
}

/// The `q` quantile of sorted `values` (nearest rank), zero when empty.
pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64) * q).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Clock ticks per second of `/proc/*/stat` times (`USER_HZ`, 100 on Linux).
const TICKS_PER_SEC: f64 = 100.0;

/// User plus system CPU time of process `pid` (`"self"` for this one), all threads, dead
/// ones included. `None` when `/proc` cannot be read.
pub fn process_cpu(pid: &str) -> Option<Duration> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces: fields are counted after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): utime is field 14, stime field 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_secs_f64((utime + stime) / TICKS_PER_SEC))
}

/// CPU time of this process's children named `comm` (the kernel's 15-byte process name):
/// those still running (or exited and not yet reaped) with their user + system time, plus
/// every child already reaped (`cutime` + `cstime` of this process, whatever its name). Read
/// around a stdio case, whose clients start the stdio servers as their own children, the
/// difference is what those servers spent, provided no other child of this process is
/// reaped meanwhile. `None` when `/proc` cannot be read.
pub fn children_cpu(comm: &str) -> Option<Duration> {
    // Fields after the command name: state ppid ... (rest[1] is the ppid, rest[11] utime,
    // rest[12] stime, rest[13] cutime, rest[14] cstime).
    fn fields(stat: &str) -> Option<(&str, Vec<&str>)> {
        let open = stat.find('(')?;
        let close = stat.rfind(')')?;
        let rest = stat.get(close + 2..)?.split_whitespace().collect();
        Some((stat.get(open + 1..close)?, rest))
    }
    let ticks = |fields: &[&str], at: usize| -> Option<f64> {
        let a: f64 = fields.get(at)?.parse().ok()?;
        let b: f64 = fields.get(at + 1)?.parse().ok()?;
        Some(a + b)
    };
    let own = fs::read_to_string("/proc/self/stat").ok()?;
    let (_, own) = fields(&own)?;
    let mut total = ticks(&own, 13)?;
    let me = std::process::id().to_string();
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some((name, rest)) = fields(&stat)
            && name == comm
            && rest.get(1) == Some(&me.as_str())
        {
            total += ticks(&rest, 11).unwrap_or(0.0);
        }
    }
    Some(Duration::from_secs_f64(total / TICKS_PER_SEC))
}

/// The name the kernel gives a process running `program` (its file name, at most 15 bytes),
/// for [`children_cpu`].
pub fn comm_of(program: &std::path::Path) -> String {
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

/// Busy (non-idle) CPU time of the whole machine, all cores added up.
pub fn machine_busy() -> Option<Duration> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let values: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest times are inside user/nice).
    let busy: f64 = values
        .iter()
        .take(8)
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, v)| v)
        .sum();
    Some(Duration::from_secs_f64(busy / TICKS_PER_SEC))
}

/// The machine's 1-minute load average.
pub fn load_average() -> Option<f64> {
    fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// CPU readings at one instant: this process, the server process, the machine.
#[derive(Debug, Clone, Copy)]
pub struct CpuSnapshot {
    at: Instant,
    client: Option<Duration>,
    server: Option<Duration>,
    machine: Option<Duration>,
}

/// Where the CPU went between two [`CpuSnapshot`]s (or over several such spans, added up).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CpuUse {
    /// CPU time of the client process (every client thread and task).
    pub client: Option<Duration>,
    /// CPU time of the server process.
    pub server: Option<Duration>,
    /// CPU time of everything else on the machine.
    pub other: Option<Duration>,
    /// Wall time of the span(s).
    pub wall: Duration,
}

fn add(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    Some(a? + b?)
}

impl CpuUse {
    /// Average number of cores kept busy by everything else on the machine.
    pub fn other_cores(&self) -> Option<f64> {
        let wall = self.wall.as_secs_f64();
        (wall > 0.0).then(|| self.other.map(|o| o.as_secs_f64() / wall))?
    }

    /// Adds another span.
    pub fn merge(&mut self, other: &Self) {
        self.client = add(self.client, other.client);
        self.server = add(self.server, other.server);
        self.other = add(self.other, other.other);
        self.wall += other.wall;
    }
}

impl CpuSnapshot {
    /// Reads the counters now; `server_pid` is the server process (if any).
    pub fn take(server_pid: Option<u32>) -> Self {
        Self {
            at: Instant::now(),
            client: process_cpu("self"),
            server: server_pid.and_then(|pid| process_cpu(&pid.to_string())),
            machine: machine_busy(),
        }
    }

    /// Reads the counters at the start of a stdio case, the server being this process's
    /// children named `comm` (the stdio servers its clients start: [`children_cpu`]). The
    /// children are read first and the client last, so that the scan of `/proc` this takes
    /// is not counted as the client's: end the span with [`Self::children_after`].
    pub fn children_before(comm: &str) -> Self {
        let server = children_cpu(comm);
        let machine = machine_busy();
        Self {
            at: Instant::now(),
            client: process_cpu("self"),
            server,
            machine,
        }
    }

    /// Reads the counters at the end of a stdio case: the client first, then the children
    /// (see [`Self::children_before`]).
    pub fn children_after(comm: &str) -> Self {
        let at = Instant::now();
        let client = process_cpu("self");
        let machine = machine_busy();
        Self {
            at,
            client,
            server: children_cpu(comm),
            machine,
        }
    }

    /// What was spent from `self` until `later`.
    pub fn until(&self, later: &Self) -> CpuUse {
        let diff = |a: Option<Duration>, b: Option<Duration>| Some(b?.saturating_sub(a?));
        let client = diff(self.client, later.client);
        let server = diff(self.server, later.server);
        let machine = diff(self.machine, later.machine);
        let other = machine
            .zip(client)
            .map(|(machine, client)| machine.saturating_sub(client + server.unwrap_or_default()));
        CpuUse {
            client,
            server,
            other,
            wall: later.at.duration_since(self.at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&values, 0.50), Duration::from_micros(50));
        assert_eq!(percentile(&values, 0.99), Duration::from_micros(99));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
        let stats = Stats::from_latencies(values, Duration::from_secs(2), 0);
        assert!((stats.per_sec() - 50.0).abs() < 1e-9);
    }

    #[test]
    fn a_child_that_burns_cpu_counts_as_the_servers() {
        let program = std::path::Path::new("/bin/sh");
        let comm = comm_of(program);
        assert_eq!(comm, "sh");
        assert_eq!(
            comm_of(std::path::Path::new("/x/mcp-testkit-stdio")),
            "mcp-testkit-std"
        );
        let before = children_cpu(&comm).unwrap();
        // A child that burns some CPU, says so, then waits for its stdin to close.
        let mut child = std::process::Command::new(program)
            .args([
                "-c",
                "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo burnt; read x || true",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line, "burnt\n");
        let alive = children_cpu(&comm).unwrap().saturating_sub(before);
        assert!(
            alive >= Duration::from_millis(50),
            "while it runs: {alive:?}"
        );
        drop(child.stdin.take());
        assert!(child.wait().unwrap().success());
        let reaped = children_cpu(&comm).unwrap().saturating_sub(before);
        assert!(reaped >= alive, "reaped: {reaped:?}, alive: {alive:?}");
        assert!(
            reaped < alive * 2 + Duration::from_millis(100),
            "counted once: {reaped:?} against {alive:?}"
        );
    }

    #[test]
    fn this_process_has_cpu_time() {
        assert!(process_cpu("self").is_some());
        assert!(machine_busy().is_some());
    }
}
