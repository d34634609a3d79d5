//! Granting and building legs: the budget check that sits before a request exists, the
//! request each leg carries, and the leg's entry in the leg and timer tables.
//!
//! Every leg the operation hands out goes through [`Operation::hand_out`]; every work leg
//! through [`Operation::transmit`], which refuses it (nothing built, nothing sent) once the
//! budget is spent. The cancel notice and the kill of a local server are the legs that may
//! follow a spent budget, and neither waits on it.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::legs::Reading;
use super::legs::{InFlight, Role};
use super::timers::Timer;
use super::{Action, CANCEL_NOTICE_GRANT, Leg, LegId, LegKind, Operation, Output};
use crate::deadline::Budget;
use crate::error::Error;
use crate::jsonrpc;
use crate::model::{ProtocolVersion, SessionInfo};
use crate::wire::{self, SESSION_HEADER};

impl Operation {
    /// The cancel notice: what is left of the budget, at most [`CANCEL_NOTICE_GRANT`]. Once
    /// the budget is spent, over stdio it is still handed out (the driver writes it only if
    /// the server's stdin takes it at once, see [`LegKind::CancelNotice`]) and over HTTP it
    /// is not sent at all (`None`): a request would wait past the budget.
    pub(super) fn transmit_notice(&mut self, request_id: i64, now: Instant) -> Option<Leg> {
        let stdio = self.session.config().is_stdio();
        let grant = match self.deadline.grant(now) {
            Ok(grant) => grant.min(CANCEL_NOTICE_GRANT),
            Err(_) if stdio => self.deadline.resolution().unit().min(CANCEL_NOTICE_GRANT),
            Err(_) => return None,
        };
        let body = wire::cancelled(request_id);
        let request = self.session.config().wire().post(body, self.handshake());
        Some(self.hand_out(
            LegKind::CancelNotice,
            request,
            grant,
            now,
            (LegKind::CancelNotice, None),
        ))
    }

    /// Over stdio: the server process is ended at once ([`LegKind::Kill`]). Its grant (one
    /// unit) only bounds a driver that never reports the exit: a kill does not wait.
    pub(super) fn transmit_kill(&mut self, now: Instant) -> Leg {
        let unit = self.deadline.resolution().unit();
        self.hand_out(
            LegKind::Kill,
            http::Request::new(Vec::new()),
            unit,
            now,
            (LegKind::Kill, None),
        )
    }

    /// The request whose answer is being read or awaited (the work leg in flight, or the one a
    /// pending resumption serves, else the next one): its kind, JSON-RPC id and grant.
    pub(super) fn awaited(&self) -> (LegKind, Option<i64>, Duration) {
        match (self.legs.get(Role::Work), self.resume.awaited()) {
            (Some(leg), _) => (leg.answers, leg.request_id, leg.grant),
            (None, Some(awaited)) => awaited,
            (None, None) => (self.next_leg_kind(), None, Duration::ZERO),
        }
    }

    /// The awaited request did not get its answer within the budget: it timed out (the server
    /// was asked, so this is not a refused leg).
    pub(super) fn fail_awaited_timed_out(&mut self) {
        let (kind, _, grant) = self.awaited();
        let method = kind.request_name();
        self.fail(|server| Error::LegTimedOut {
            server,
            method,
            grant,
        });
    }

    /// Grants the next work leg what is left of the budget and hands it out, or refuses it.
    pub(super) fn transmit(&mut self, kind: LegKind, now: Instant) -> Output {
        let timeout = match self.deadline.grant(now) {
            Ok(grant) => grant,
            // The request being resumed was sent and its answer did not come within the
            // budget: that is the request timing out, not a request the server never saw.
            Err(_) if kind == LegKind::Resume => {
                self.fail_awaited_timed_out();
                return self.poll_output(now);
            }
            // A close after the budget: the local server is ended at once, nothing waits.
            Err(_) if kind == LegKind::Shutdown => {
                return Output::Transmit(self.transmit_kill(now));
            }
            Err(exhausted) => {
                // The check sits before the request is built: nothing of this leg exists.
                let (method, leg) = (kind.request_name(), self.legs_sent + 1);
                self.fail(|server| Error::BudgetExhausted {
                    server,
                    budget: Budget::from_duration(exhausted.total),
                    method,
                    leg,
                });
                return self.poll_output(now);
            }
        };
        let (request, answers) = if kind == LegKind::Resume {
            let Some((answers, request_id, _)) = self.resume.take() else {
                return self.wait(now);
            };
            let request = self
                .session
                .config()
                .wire()
                .get(self.handshake(), self.resume.last_event_id());
            (request, (answers, request_id))
        } else {
            // A new request opens a new answer stream: an event id of an earlier stream must
            // never be used to resume this one.
            self.resume.forget_stream();
            let (request, request_id) = self.build_request(kind);
            (request, (kind, request_id))
        };
        Output::Transmit(self.hand_out(kind, request, timeout, now, answers))
    }

    /// Puts a leg in the table under its role, arms its end, and hands it out.
    pub(super) fn hand_out(
        &mut self,
        kind: LegKind,
        mut request: http::Request<Vec<u8>>,
        timeout: Duration,
        now: Instant,
        (answers, request_id): (LegKind, Option<i64>),
    ) -> Leg {
        if !matches!(kind, LegKind::Auth(_)) {
            self.present_token(&mut request, now);
        }
        // Over stdio a message is a line: the transport's framing is decided here, once.
        if self.session.config().is_stdio() && !request.body().is_empty() {
            request.body_mut().push(b'\n');
        }
        let ends_at = now.checked_add(timeout).unwrap_or(now);
        let carried_session = request.headers().contains_key(SESSION_HEADER);
        self.legs_sent += 1;
        let id = LegId(self.legs_sent);
        let role = Role::of(kind);
        self.legs.insert(
            role,
            InFlight {
                id,
                kind,
                answers,
                request_id,
                grant: timeout,
                carried_session,
                status: 0,
                written: false,
                session_id: None,
                reading: Reading::Head,
            },
        );
        self.timers.set(Timer::LegEnd(role), ends_at);
        Leg {
            id,
            kind,
            request,
            timeout,
            ends_at,
        }
    }

    /// The handshake in force: committed to the session, or answered and not yet confirmed.
    pub(super) fn handshake(&self) -> Option<&SessionInfo> {
        self.pending.as_ref().or_else(|| self.session.info())
    }

    fn build_request(&mut self, kind: LegKind) -> (http::Request<Vec<u8>>, Option<i64>) {
        if matches!(kind, LegKind::Spawn | LegKind::Shutdown | LegKind::Kill) {
            // No message: the driver starts or ends the process.
            return (http::Request::new(Vec::new()), None);
        }
        if let Some(version) = self.modern {
            return self.build_modern(kind, version);
        }
        match kind {
            LegKind::Initialized => {
                let body = jsonrpc::notification("notifications/initialized", Map::new());
                let request = self.session.config().wire().post(body, self.handshake());
                return (request, None);
            }
            LegKind::Close => {
                let request = self.session.config().wire().delete(self.handshake());
                return (request, None);
            }
            // The legacy era's subscription is the session's own stream.
            LegKind::Subscribe => {
                let request = self.session.config().wire().get(self.handshake(), None);
                return (request, None);
            }
            _ => {}
        }
        let id = self.session.take_request_id();
        let config = self.session.config();
        let trace = config.trace_context();
        let traced = |mut params: Map<String, Value>| {
            if !trace.is_empty() {
                params.insert("_meta".to_owned(), Value::Object(trace.clone()));
            }
            params
        };
        let body = match (kind, &self.action) {
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
                let meta = (!trace.is_empty()).then_some(trace);
                wire::call_tool(id, name, arguments, progress, meta, None)
            }
            (LegKind::ReadResource | LegKind::GetPrompt, _) => {
                jsonrpc::request(id, kind.request_name(), traced(self.action_params()))
            }
            _ => jsonrpc::request(id, kind.request_name(), traced(Map::new())),
        };
        (config.wire().post(body, self.handshake()), Some(id))
    }

    /// A modern request: no session, the version and the client's capabilities in `_meta`,
    /// the version, method and name mirrored in headers.
    fn build_modern(
        &mut self,
        kind: LegKind,
        version: ProtocolVersion,
    ) -> (http::Request<Vec<u8>>, Option<i64>) {
        let id = self.session.take_request_id();
        let config = self.session.config();
        let mut meta = wire::modern_meta(version, config.capabilities(), config.client_info());
        meta.extend(config.trace_context().clone());
        let method = kind.request_name();
        let (body, name, params) = match (kind, &self.action) {
            (LegKind::CallTool, Action::CallTool { name, arguments }) => {
                let progress = config.progress().then_some(id);
                let input = self.input.as_ref();
                let body = wire::call_tool(id, name, arguments, progress, Some(&meta), input);
                let params =
                    crate::headers::param_values(self.session.tool_headers(name), arguments);
                (body, Some(name.as_str()), params)
            }
            _ => {
                let mut params = match kind {
                    LegKind::List { .. } => self.paging.params(),
                    _ => self.action_params(),
                };
                if let Some(input) = &self.input {
                    input.add_to(&mut params);
                }
                params.insert("_meta".to_owned(), Value::Object(meta));
                // `Mcp-Name` mirrors what names the request: a prompt's name, a resource's URI.
                let name = match &self.action {
                    Action::ReadResource { uri } => Some(uri.as_str()),
                    Action::LoadSkill(_) => self.loading.next_uri(),
                    Action::GetPrompt { name, .. } => Some(name.as_str()),
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

    /// The params of a request that names what it is about (`resources/read`, `prompts/get`).
    fn action_params(&self) -> Map<String, Value> {
        let mut params = Map::new();
        match &self.action {
            Action::ReadResource { uri } => {
                params.insert("uri".to_owned(), Value::from(uri.as_str()));
            }
            Action::LoadSkill(_) => {
                let uri = self.loading.next_uri().unwrap_or_default();
                params.insert("uri".to_owned(), Value::from(uri));
            }
            Action::Subscribe(subscription) => {
                params.insert(
                    "notifications".to_owned(),
                    Value::Object(subscription.filter()),
                );
            }
            Action::GetPrompt { name, arguments } => {
                params.insert("name".to_owned(), Value::from(name.as_str()));
                if !arguments.is_empty() {
                    params.insert("arguments".to_owned(), Value::Object(arguments.clone()));
                }
            }
            _ => {}
        }
        params
    }
}
