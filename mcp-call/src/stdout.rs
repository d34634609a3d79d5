//! `mcp-call`'s stdout for what a command prints (results, listings): block-buffered when it
//! is not a terminal, so `--repeat`'s thousands of result lines cost a write per buffer, not
//! one each; a line at a time on a terminal, where a person reads it as it comes.
//!
//! Whatever was printed is flushed before the process exits ([`flush`], which `main` calls on
//! every way out) and at once where a reader waits for the line (`watch`'s notifications).
//! The bytes are the same either way. The bridge writes its messages itself, each flushed: it
//! never prints through here.

use std::fmt;
use std::io::{BufWriter, IsTerminal, Stdout, Write};
use std::sync::{LazyLock, Mutex, PoisonError};

/// Where a printed line goes.
enum Sink {
    /// Not a terminal: held until the buffer fills or the process ends.
    Buffered(BufWriter<Stdout>),
    /// A terminal: Rust's own line-buffered stdout.
    Lines(Stdout),
}

static SINK: LazyLock<Mutex<Sink>> = LazyLock::new(|| {
    let stdout = std::io::stdout();
    Mutex::new(match stdout.is_terminal() {
        true => Sink::Lines(stdout),
        false => Sink::Buffered(BufWriter::with_capacity(64 * 1024, stdout)),
    })
});

/// Prints one line (the newline added). A write that fails (a closed pipe) is dropped, as
/// `println!`'s would not be: a reader that went away ends nothing here.
pub(crate) fn line(text: fmt::Arguments<'_>) {
    let mut sink = SINK.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = match &mut *sink {
        Sink::Buffered(out) => out.write_fmt(text).and_then(|()| out.write_all(b"\n")),
        Sink::Lines(out) => writeln!(out, "{text}"),
    };
}

/// Prints `text` as one line (the newline added), as [`line()`] would print `"{text}"` but
/// without the formatting machinery: a warm `--repeat` call's result line costs a copy into
/// the buffer, not 2-3k instructions of `fmt::write`.
pub(crate) fn text_line(text: &str) {
    let mut sink = SINK.lock().unwrap_or_else(PoisonError::into_inner);
    let out: &mut dyn Write = match &mut *sink {
        Sink::Buffered(out) => out,
        Sink::Lines(out) => out,
    };
    let _ = out
        .write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"));
}

/// Writes out what is held: before the process exits, and where a reader waits.
pub(crate) fn flush() {
    let mut sink = SINK.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = match &mut *sink {
        Sink::Buffered(out) => out.flush(),
        Sink::Lines(out) => out.flush(),
    };
}

/// `println!` through [`line()`].
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::stdout::line(format_args!($($arg)*))
    };
}
pub(crate) use outln;
