//! The drivers' `tracing` spans (feature `tracing`, on by default): one `mcp.operation` span
//! per operation with one `mcp.leg` child per leg, their fields as documented, and no secret
//! in any of them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_testkit::{Script, TestServer};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

use super::support::{Driver, config, echo};

/// One span as the capture layer saw it.
#[derive(Debug, Clone, Default)]
struct Captured {
    name: String,
    parent: Option<u64>,
    fields: HashMap<String, String>,
}

#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<(u64, Captured)>>>,
    events: Arc<Mutex<Vec<HashMap<String, String>>>>,
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

impl<S> Layer<S> for Capture
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut span = Captured {
            name: attrs.metadata().name().to_owned(),
            parent: ctx.span_scope(id).and_then(|mut scope| {
                scope.next();
                scope.next().map(|parent| parent.id().into_u64())
            }),
            ..Captured::default()
        };
        attrs.record(&mut Fields(&mut span.fields));
        self.spans.lock().unwrap().push((id.into_u64(), span));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut spans = self.spans.lock().unwrap();
        if let Some((_, span)) = spans.iter_mut().find(|(known, _)| *known == id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap().push(fields);
    }
}

thread_local! {
    /// The capture of the test running on this thread, if it captures.
    static CURRENT: std::cell::RefCell<Option<Capture>> = const { std::cell::RefCell::new(None) };
}

/// The one subscriber of the test binary, global, routing to the capture of the thread that
/// emitted. A global subscriber is interested in every callsite from the first time any thread
/// reaches it; a scoped one (`with_default`) is not, when a test on another thread registered
/// the callsite first (tracing caches a callsite's interest), and its events were then lost.
struct Router;

impl<S> Layer<S> for Router
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if let Some(capture) = CURRENT.with(|c| c.borrow().clone()) {
            capture.on_new_span(attrs, id, ctx);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(capture) = CURRENT.with(|c| c.borrow().clone()) {
            capture.on_record(id, values, ctx);
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        if let Some(capture) = CURRENT.with(|c| c.borrow().clone()) {
            capture.on_event(event, ctx);
        }
    }
}

/// Runs `f` with what this thread emits going to `capture`.
fn capturing<R>(capture: &Capture, f: impl FnOnce() -> R) -> R {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ =
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Router));
    });
    CURRENT.with(|c| *c.borrow_mut() = Some(capture.clone()));
    let result = f();
    CURRENT.with(|c| *c.borrow_mut() = None);
    result
}

const SECRET: &str = "Bearer secret-token-4711";

pub(super) fn a_tool_call_is_one_operation_span_with_a_span_per_leg<D: Driver>() {
    let server = TestServer::start(Script::new());
    let capture = Capture::default();
    let config = config(&server, Duration::from_secs(10))
        .with_header("Authorization", SECRET)
        .unwrap();
    capturing(&capture, || {
        let mut client = D::new(config);
        client.call_tool("echo", echo("hi")).unwrap();
    });
    let spans = capture.spans.lock().unwrap().clone();
    let operations: Vec<&(u64, Captured)> = spans
        .iter()
        .filter(|(_, s)| s.name == "mcp.operation")
        .collect();
    assert_eq!(operations.len(), 1, "{spans:#?}");
    let (op_id, op) = operations[0];
    assert_eq!(op.fields["server"], format!("127.0.0.1:{}", server.port()));
    assert_eq!(op.fields["action"], "tools/call");
    assert_eq!(op.fields["budget_ms"], "10000");
    assert_eq!(op.fields["resolution_ms"], "1");
    assert_eq!(op.fields["result"], "ok");
    let legs: Vec<&Captured> = spans
        .iter()
        .filter(|(_, s)| s.name == "mcp.leg")
        .map(|(_, s)| s)
        .collect();
    let shape: Vec<(String, String, String)> = legs
        .iter()
        .map(|leg| {
            assert_eq!(leg.parent, Some(*op_id), "{leg:?}");
            assert!(leg.fields.contains_key("grant_ms") && leg.fields.contains_key("elapsed_ms"));
            (
                leg.fields["number"].clone(),
                leg.fields["method"].clone(),
                leg.fields["end"].clone(),
            )
        })
        .collect();
    let expected = [
        ("1", "initialize", "200"),
        ("2", "notifications/initialized", "202"),
        ("3", "tools/call", "200"),
    ]
    .map(|(n, m, e)| (n.to_owned(), m.to_owned(), e.to_owned()));
    assert_eq!(shape, expected);
    for (_, span) in &spans {
        for value in span.fields.values() {
            assert!(!value.contains("secret-token"), "{span:?}");
        }
    }
}

pub(super) fn a_refusal_is_an_event_on_its_operation_span<D: Driver>() {
    // 1 s at whole-second resolution: initialize takes 0.7 s, the notification is granted the
    // rounded-up 1 s and takes 0.5 s, so nothing is left for tools/call: it is refused.
    let server = TestServer::start(
        Script::new()
            .delay("initialize", Duration::from_millis(700))
            .delay("notifications/initialized", Duration::from_millis(500)),
    );
    let capture = Capture::default();
    let config =
        config(&server, Duration::from_secs(1)).with_resolution(mcp_proto::Resolution::SECOND);
    capturing(&capture, || {
        let mut client = D::new(config);
        let err = client.call_tool("echo", echo("hi")).unwrap_err();
        assert!(
            matches!(err, mcp_proto::Error::BudgetExhausted { .. }),
            "{err:?}"
        );
    });
    let spans = capture.spans.lock().unwrap().clone();
    let (_, op) = spans
        .iter()
        .find(|(_, s)| s.name == "mcp.operation")
        .unwrap();
    assert_eq!(op.fields["result"], "budget");
    let events = capture.events.lock().unwrap().clone();
    let refused: Vec<_> = events
        .iter()
        .filter(|e| e.get("message").map(String::as_str) == Some("mcp.refused"))
        .collect();
    assert_eq!(refused.len(), 1, "{events:?}");
    assert!(refused[0]["error"].contains("tools/call"), "{refused:?}");
    assert_eq!(
        spans.iter().filter(|(_, s)| s.name == "mcp.leg").count(),
        2,
        "the refused leg has no span: it was never sent"
    );
}
