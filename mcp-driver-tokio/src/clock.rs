//! Time as tokio sees it.

use std::time::Instant;

use mcp_proto::Clock;

/// Tokio's clock as an [`mcp_proto::Clock`]: `tokio::time::Instant::now()` as a std instant.
///
/// The driver passes these readings to the state machine and converts each leg's end back with
/// `tokio::time::Instant::from_std`, so grants and timers agree, also under tokio's paused
/// test time (`tokio::time::pause`), where this clock moves only when tokio's does.
///
/// ```
/// use mcp_driver_tokio::TokioClock;
/// use mcp_proto::Clock;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let t0 = TokioClock.now();
/// assert!(TokioClock.now() >= t0);
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
}
