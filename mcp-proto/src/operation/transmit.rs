//! The request each leg carries: the JSON-RPC body, the era's metadata and headers, the token,
//! the transport's framing.
//!
//! A request is built only after its leg was granted (`grant`): nothing of a refused leg
//! exists. What a leg carries is taken from the part that holds it only then ([`Sources`]: a
//! resumption, an answer owed, the cancel notice), and the leg is handed out: entered in the
//! leg table, its response not read yet. This module never grants, sends or reads anything.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::answer::{Answering, Loading};
use super::ending::Ending;
use super::grant::Grants;
use super::legs::Role;
use super::paging::Paging;
use super::progress::Progress;
use super::replies::Replies;
use super::responses::Responses;
use super::resume::Resumption;
use super::view::View;
use super::{Action, Leg, LegKind};
use crate::config::DEADLINE_META_KEY;
use crate::jsonrpc;
use crate::model::{ProtocolVersion, SessionInfo};
use crate::wire;

/// A request as a leg carries it (the body: JSON-RPC bytes, or over stdio the line).
pub(super) type HttpRequest = http::Request<Vec<u8>>;

/// A built request and what its answer answers: the request whose answer the leg reads (for
/// a resumption, the original one) and the JSON-RPC id that answer must carry.
pub(super) type Carried = (HttpRequest, (LegKind, Option<i64>));

/// What any leg's request is built from: the operation's parts, borrowed for one leg.
pub(super) struct Sources<'a> {
    /// It lends the request id and presents the token.
    pub(super) session: &'a mut View,
    /// The action, its era, the handshake in force.
    pub(super) progress: &'a Progress,
    /// The listing's page, the skill's file, the input round.
    pub(super) answering: &'a Answering,
    /// The pending resumption, and the last event id.
    pub(super) resume: &'a mut Resumption,
    /// The answers owed to the server.
    pub(super) replies: &'a mut Replies,
    /// The cancel notice owed.
    pub(super) ending: &'a mut Ending,
    /// The leg table the leg enters, and the responses it is read by.
    pub(super) grants: &'a mut Grants,
    pub(super) responses: &'a mut Responses,
    /// Over HTTP+SSE, what reads the event stream (a new stream is read afresh).
    pub(super) stdout: &'a mut super::stdio::Stdout,
}

impl Sources<'_> {
    /// Hands out a leg of `kind` at `now`, granted `grant`: its request built (`flow`: an auth
    /// leg's, made by the authorization flow), the token on an MCP request and, over stdio,
    /// framed as a line; a new work leg's response is read afresh, and the standalone
    /// stream's head is awaited. `None` when what it would carry is gone.
    pub(super) fn hand_out(
        mut self,
        kind: LegKind,
        flow: Option<HttpRequest>,
        grant: Duration,
        now: Instant,
    ) -> Option<Leg> {
        let (request, answers) = self.carry(kind, flow, now)?;
        if Role::of(kind) == Role::Work {
            self.responses.reading.restart();
        }
        let leg = self.grants.hand_out(kind, request, grant, now, answers);
        if kind == LegKind::Listen {
            self.responses.listen.sent(now, leg.ends_at, self.grants);
        }
        if kind == LegKind::Events {
            self.stdout.reopen(self.session.config().body_cap());
        }
        Some(leg)
    }

    /// What a request built at `now` carries in `_meta` besides the era's own.
    fn meta(&self, now: Instant) -> Map<String, Value> {
        let config = self.session.config();
        let mut meta = config.trace_context().clone();
        if config.sends_deadline() {
            let left = self.grants.deadline().remaining(now).as_millis();
            let left = u64::try_from(left).unwrap_or(u64::MAX);
            meta.insert(DEADLINE_META_KEY.to_owned(), Value::from(left));
        }
        meta
    }

    /// The request of a leg of `kind` built at `now`, and what its answer answers.
    fn carry(
        &mut self,
        kind: LegKind,
        built: Option<HttpRequest>,
        now: Instant,
    ) -> Option<Carried> {
        let handshake = self.progress.handshake(self.session);
        let wire = self.session.config().wire();
        let (mut request, answers) = match kind {
            LegKind::Resume => {
                let (answers, request_id, _) = self.resume.take()?;
                let request = wire.get(handshake, self.resume.last_event_id());
                (request, (answers, request_id))
            }
            LegKind::Respond => (wire.post(self.replies.pop_body()?, handshake), (kind, None)),
            LegKind::Listen => (wire.get(self.session.info(), None), (kind, None)),
            // The URL itself: no session yet, the stream will name one.
            LegKind::Events => (wire.get(None, None), (kind, None)),
            LegKind::CancelNotice => {
                let body = wire::cancelled(self.ending.take_notice()?);
                (wire.post(body, handshake), (kind, None))
            }
            LegKind::Auth(_) => (built?, (kind, None)),
            _ => {
                let cancelled = match kind {
                    LegKind::TaskCancelNotice => Some(self.ending.take_task_cancel()?),
                    _ => None,
                };
                // A new request opens a new answer stream: an event id of an earlier stream
                // must never be used to resume this one.
                self.resume.forget_stream();
                let (request, request_id) = Request {
                    session: self.session,
                    action: &self.progress.action,
                    handshake,
                    modern: self.progress.era.modern(),
                    paging: &self.answering.paging,
                    loading: &self.answering.loading,
                    input: self.answering.input.round.as_ref(),
                    task_id: match (&cancelled, &self.progress.action) {
                        (Some(id), _) => Some(id.as_str()),
                        (None, Action::CancelTask(task)) => Some(task.task_id.as_str()),
                        (None, _) => self.answering.task.task_id(),
                    },
                    meta: self.meta(now),
                }
                .build(kind);
                (request, (kind, request_id))
            }
        };
        // Over HTTP+SSE every message goes to the endpoint the operation's stream named (an
        // auth leg goes where its flow says).
        if let (Some(endpoint), &http::Method::POST, false) = (
            self.session.endpoint(),
            request.method(),
            matches!(kind, LegKind::Auth(_)),
        ) {
            *request.uri_mut() = endpoint.clone();
        }
        // After the URL is final: a DPoP proof names it.
        if !matches!(kind, LegKind::Auth(_)) {
            self.session.present_token(&mut request, now);
        }
        // Over stdio a message is a line: the transport's framing is decided here, once.
        if self.session.config().is_stdio() && !request.body().is_empty() {
            request.body_mut().push(b'\n');
        }
        Some((request, answers))
    }
}

/// What a work leg's request is built from: borrowed from the operation for one build.
struct Request<'a> {
    pub(super) session: &'a View,
    pub(super) action: &'a Action,
    /// The handshake in force (committed, or answered and not yet confirmed).
    pub(super) handshake: Option<&'a SessionInfo>,
    /// The modern version spoken, or `None` in the legacy era.
    pub(super) modern: Option<ProtocolVersion>,
    pub(super) paging: &'a Paging,
    pub(super) loading: &'a Loading,
    /// What the request carries after the server asked for input.
    pub(super) input: Option<&'a wire::InputRound>,
    /// The task a poll looks at.
    pub(super) task_id: Option<&'a str>,
    /// What every request carries in `_meta` besides the era's own: the trace context, and
    /// the milliseconds left of the budget when the configuration tells the server.
    pub(super) meta: Map<String, Value>,
}

impl Request<'_> {
    /// The request of a work leg of `kind`, and the JSON-RPC id its answer must carry.
    fn build(&self, kind: LegKind) -> (http::Request<Vec<u8>>, Option<i64>) {
        if matches!(
            kind,
            LegKind::Spawn
                | LegKind::Shutdown
                | LegKind::Terminate
                | LegKind::Kill
                | LegKind::Hangup
        ) {
            // No message: the driver starts or ends the process, or drops the stream.
            return (http::Request::new(Vec::new()), None);
        }
        if let Some(version) = self.modern {
            return self.build_modern(kind, version);
        }
        match kind {
            LegKind::Initialized => {
                let body = jsonrpc::notification("notifications/initialized", Map::new());
                let request = self.session.config().wire().post(body, self.handshake);
                return (request, None);
            }
            LegKind::Close => {
                let request = self.session.config().wire().delete(self.handshake);
                return (request, None);
            }
            // The legacy era's subscription is the session's own stream.
            LegKind::Subscribe => {
                let request = self.session.config().wire().get(self.handshake, None);
                return (request, None);
            }
            _ => {}
        }
        let id = self.session.take_request_id();
        let config = self.session.config();
        let trace = &self.meta;
        let traced = |mut params: Map<String, Value>| {
            if !trace.is_empty() {
                params.insert("_meta".to_owned(), Value::Object(trace.clone()));
            }
            params
        };
        let body = match (kind, self.action) {
            (LegKind::Initialize, _) => {
                let client = config.client_info();
                let mut params = Map::new();
                params.insert(
                    "protocolVersion".to_owned(),
                    Value::from(self.session.offered_version().as_str()),
                );
                params.insert(
                    "capabilities".to_owned(),
                    Value::Object(config.capabilities()),
                );
                params.insert(
                    "clientInfo".to_owned(),
                    serde_json::json!({"name": client.name, "version": client.version}),
                );
                let body = jsonrpc::request(id, "initialize", traced(params));
                // `initialize` carries no session header and no version header.
                return (config.wire().post(body, None), Some(id));
            }
            (LegKind::List { of, .. }, _) => {
                jsonrpc::request(id, of.method(), traced(self.paging.params()))
            }
            (LegKind::CallTool, Action::CallTool { name, arguments }) => {
                let progress = config.progress().then_some(id);
                let meta = match trace.is_empty() {
                    true => wire::CallMeta::None,
                    false => wire::CallMeta::Members(trace),
                };
                let task = super::tasking::legacy_call_is_task(self.session, name) == Some(true);
                wire::call_tool(id, name, arguments, progress, meta, None, task)
            }
            (LegKind::SetLogLevel, _) => {
                let level = config
                    .log_level()
                    .map_or("info", crate::message::LogLevel::as_str);
                let params = Map::from_iter([("level".to_owned(), Value::from(level))]);
                jsonrpc::request(id, kind.request_name(), traced(params))
            }
            (LegKind::Request(_), _) => {
                jsonrpc::request(id, kind.request_name(), traced(self.action_params()))
            }
            (LegKind::ResourceSubscribe { resource }, Action::Subscribe(subscription)) => {
                let uri = (subscription.resource_subscriptions)
                    .get(resource as usize - 1)
                    .map_or("", String::as_str);
                let params = Map::from_iter([("uri".to_owned(), Value::from(uri))]);
                jsonrpc::request(id, kind.request_name(), traced(params))
            }
            (kind, _) if kind.is_about_task() => {
                let id_of = Value::from(self.task_id.unwrap_or_default());
                let params = Map::from_iter([("taskId".to_owned(), id_of)]);
                jsonrpc::request(id, kind.request_name(), traced(params))
            }
            _ => jsonrpc::request(id, kind.request_name(), traced(Map::new())),
        };
        (config.wire().post(body, self.handshake), Some(id))
    }

    /// A modern request: no session, the version and the client's capabilities in `_meta`,
    /// the version, method and name mirrored in headers.
    fn build_modern(
        &self,
        kind: LegKind,
        version: ProtocolVersion,
    ) -> (http::Request<Vec<u8>>, Option<i64>) {
        let id = self.session.take_request_id();
        let config = self.session.config();
        let task_action = matches!(self.action, Action::ResumeTask(_) | Action::CancelTask(_));
        let modern = config.modern_meta(version, config.tasks() || task_action);
        // What this request adds to the configuration's own members: the time left, when the
        // server is told (the trace context is the configuration's, in `modern` already).
        let own = config.sends_deadline().then(|| {
            let mut meta = modern.members.clone();
            meta.extend(self.meta.clone());
            meta
        });
        let method = kind.request_name();
        let (body, name, params) = match (kind, self.action) {
            (LegKind::CallTool, Action::CallTool { name, arguments }) => {
                let progress = config.progress().then_some(id);
                let input = self.input;
                let meta = match &own {
                    Some(own) => wire::CallMeta::Members(own),
                    None => wire::CallMeta::Modern(&modern),
                };
                let body = wire::call_tool(id, name, arguments, progress, meta, input, false);
                let params =
                    crate::headers::param_values(self.session.tool_headers(name), arguments);
                (body, Some(name.as_str()), params)
            }
            _ => {
                let mut params = match (kind, self.task_id) {
                    (LegKind::List { .. }, _) => self.paging.params(),
                    (kind, Some(id)) if kind.is_about_task() => {
                        Map::from_iter([("taskId".to_owned(), Value::from(id))])
                    }
                    _ => self.action_params(),
                };
                if let Some(input) = self.input {
                    input.add_to(&mut params);
                }
                let meta = own.unwrap_or_else(|| modern.members.clone());
                params.insert("_meta".to_owned(), Value::Object(meta));
                // `Mcp-Name` mirrors what names the request: a prompt's name, a resource's URI,
                // the task a poll or cancel is about (so a load balancer routes it to the task's server).
                let name = match self.action {
                    _ if kind.is_about_task() => self.task_id,
                    Action::Request(request) => request.name(),
                    Action::LoadSkill(_) => self.loading.next_uri(),
                    _ => None,
                };
                (jsonrpc::request(id, method, params), name, Vec::new())
            }
        };
        let request = config
            .wire()
            .post_modern(body, version, method, name, params);
        (request, Some(id))
    }

    /// The params of the work request: a one-request method's own, the skill's next file, the
    /// subscription's filter.
    fn action_params(&self) -> Map<String, Value> {
        match self.action {
            Action::Request(request) => request.params().clone(),
            Action::LoadSkill(_) => {
                let uri = self.loading.next_uri().unwrap_or_default();
                Map::from_iter([("uri".to_owned(), Value::from(uri))])
            }
            Action::Subscribe(subscription) => {
                let filter = Value::Object(subscription.filter());
                Map::from_iter([("notifications".to_owned(), filter)])
            }
            _ => Map::new(),
        }
    }
}
