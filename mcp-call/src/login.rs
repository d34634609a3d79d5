//! `mcp-call login`'s side of the browser step: a listener on 127.0.0.1 for the redirect, the
//! URL printed (and opened in a browser when a person is at the terminal).
//!
//! The authorizer prints `authorize: <URL>` on stderr, opens a browser only when stderr is a
//! terminal, and waits (at most until the step's end) for the one request that carries the
//! redirect, answering it with a short page. It never prints the redirect (it holds the
//! authorization code).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

use mcp_proto::driver::Authorize;

/// The port the redirect comes back to when it is free (a fixed one keeps the redirect URI of
/// a registration the same from one login to the next).
pub(crate) const PREFERRED_PORT: u16 = 8976;

/// The redirect URI for `port`.
pub(crate) fn redirect_uri(port: u16) -> String {
    format!("http://127.0.0.1:{port}/callback")
}

/// The listener the browser is sent back to.
#[derive(Clone)]
pub(crate) struct Loopback {
    listener: Arc<TcpListener>,
    open_browser: bool,
}

impl Loopback {
    /// Listens on 127.0.0.1, on [`PREFERRED_PORT`] when it is free, else on any port.
    pub(crate) fn bind(open_browser: bool) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", PREFERRED_PORT))
            .or_else(|_| TcpListener::bind(("127.0.0.1", 0)))?;
        Ok(Self {
            listener: Arc::new(listener),
            open_browser,
        })
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.listener.local_addr().map_or(0, |a| a.port())
    }

    /// Shows the URL, then waits for the redirect until the step ends.
    pub(crate) fn authorize(&self, step: &Authorize) -> Result<String, String> {
        eprintln!("authorize: {}", step.url);
        if self.open_browser {
            open_browser(&step.url);
        }
        let (sender, receiver) = mpsc::channel();
        let listener = Arc::clone(&self.listener);
        let port = self.port();
        // The accepting thread outlives a wait that timed out; the process ends soon after.
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if let Some(target) = answer(stream) {
                    let _ = sender.send(format!("http://127.0.0.1:{port}{target}"));
                    return;
                }
            }
        });
        let wait = step.ends_at.saturating_duration_since(Instant::now());
        receiver
            .recv_timeout(wait)
            .map_err(|_| "no redirect came back before the budget ran out".to_owned())
    }
}

/// Reads one request; answers the redirect's (`/callback?...`) with a page saying the login is
/// done, anything else (a favicon) with 404.
fn answer(mut stream: TcpStream) -> Option<String> {
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).ok()?;
    let target = line.split_whitespace().nth(1)?.to_owned();
    let ours = target.starts_with("/callback");
    let (status, body) = if ours {
        (
            "200 OK",
            "Authorized. You can close this window and return to mcp-call.",
        )
    } else {
        ("404 Not Found", "Not found.")
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    ours.then_some(target)
}

/// Opens `url` in the desktop's browser, quietly: the URL is printed anyway.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let _ = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

impl mcp_driver_blocking::Authorizer for Loopback {
    fn authorize(&mut self, step: &Authorize) -> Result<String, String> {
        Self::authorize(self, step)
    }
}

impl mcp_driver_tokio::Authorizer for Loopback {
    fn authorize(&self, step: &Authorize) -> mcp_driver_tokio::AuthorizeFuture {
        let (this, step) = (self.clone(), step.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || this.authorize(&step))
                .await
                .unwrap_or_else(|_| Err("the listener stopped".to_owned()))
        })
    }
}
