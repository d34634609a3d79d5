//! What a result means: the handshake's, a probe's, a page of a listing, a tool's, a skill's
//! files, a server's request for more input; and the state those build up (the listing's
//! pages, the skill's files read so far, the last round's input).
//!
//! The answer has already been read, classified and matched to its request (`read`, the
//! operation); this module checks its envelope (the id, an error that refreshes a call's tools
//! or moves the era), turns a result into a [`Meaning`] the operation acts on (a handshake
//! answered and the stdio probe are taken here, by `progress` and `era`), and keeps the
//! listing's walk bounded (a page ceiling, no repeated cursor). It never ends the operation
//! itself, and holds no server text unclipped in a failure.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::era::{HEADER_MISMATCH, Move};
use super::failure::Failure;
use super::input::InputRounds;
use super::introduce::{read_discover, read_initialize};
use super::legs::InFlight;
use super::paging::{PageEnd, Paging};
use super::progress::Progress;
use super::read::Heard;
use super::replies::Replies;
use super::tasking::{Seen, Tasking, When};
use super::view::View;
use super::{Action, Event, LegKind, Outcome};
use crate::catalog::{Entry, ListKind, Listing, Tool};
use crate::jsonrpc::{Incoming, NotAnObject, RawResult, RequestId};
use crate::model::{CallToolResult, Plain, ProtocolVersion};
use crate::request::Answer;
use crate::schema::{Declared, OutputValidation};
use crate::skills::{self, LoadedSkill, SkillFile};
use crate::task::{self, TaskEra};
use mcp_auth::{QUOTE_LIMIT, clip};

/// A skill being loaded: its files in the order they are read, and those read and verified.
#[derive(Debug, Default)]
pub(super) struct Loading {
    files: Vec<SkillFile>,
    loaded: Vec<(String, Vec<u8>)>,
}

impl Loading {
    /// The files `action` loads (none unless it loads a skill).
    pub(super) fn for_action(action: &Action) -> Self {
        match action {
            Action::LoadSkill(skill) => Self {
                files: skill.files(),
                loaded: Vec::new(),
            },
            _ => Self::default(),
        }
    }

    /// The URI of the next file to read.
    pub(super) fn next_uri(&self) -> Option<&str> {
        self.files.get(self.loaded.len()).map(|f| f.uri.as_str())
    }

    /// Reads every file again (the session they were read on was lost).
    pub(super) fn restart(&mut self) {
        self.loaded.clear();
    }
}

/// A tool call's refresh of the listing after a header mismatch: at most once per operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Relist {
    /// Not needed so far.
    Never,
    /// The listing is being walked; the call goes out again after its last page.
    Walking,
    /// Done: a second mismatch is the server's answer.
    Done,
}

/// What the operation's answers built up so far.
#[derive(Debug)]
pub(super) struct Answering {
    /// The listing's walk.
    pub(super) paging: Paging,
    /// A skill's files, read and verified one by one (`Action::LoadSkill`).
    pub(super) loading: Loading,
    /// Where a tool call is in refreshing the tools' header annotations after a `-32020`.
    pub(super) relist: Relist,
    /// What the next try of the work request carries after the server asked for input.
    pub(super) input: InputRounds,
    /// The task the call became, when the server made one.
    pub(super) task: Tasking,
    /// Legacy era: how many of a subscription's resources the server acknowledged
    /// `resources/subscribe` for; its stream opens after the last.
    pub(super) subscribed: u32,
}

/// What a result means for the operation.
#[derive(Debug)]
pub(super) enum Meaning {
    /// The operation's result.
    Finish(Outcome),
    /// An error moved the era: the operation acts on the move (the request goes out again).
    Moved(Move),
    /// The walk goes on: the handshake's notification, the work after the stdio probe, the
    /// next page, the next file, the request again with the input the server asked for, or
    /// the call again after its tools were listed anew.
    More,
    /// The server ended the subscription.
    SubscriptionEnded,
    /// The result is not what the request asks for.
    Failed(Failure),
}

impl From<Meaning> for Heard {
    /// What the operation does with what a result means.
    fn from(meaning: Meaning) -> Self {
        match meaning {
            Meaning::Finish(outcome) => Self::Done(outcome),
            Meaning::Moved(moved) => Self::Moved(moved),
            Meaning::More => Self::Over,
            Meaning::SubscriptionEnded => Self::SubscriptionEnded { by_server: true },
            Meaning::Failed(failure) => Self::Failed(failure),
        }
    }
}

impl From<Seen> for Meaning {
    fn from(seen: Seen) -> Self {
        match seen {
            Seen::Running => Self::More,
            Seen::Done(outcome) => Self::Finish(outcome),
            Seen::Failed(failure) => Self::Failed(failure),
            // Read where the round it starts is kept (`Answering::read`).
            Seen::Input(_) => Self::More,
        }
    }
}

/// What a result is read against: the operation's other parts, borrowed for one answer.
pub(super) struct Context<'a> {
    /// Where the operation stands: its action, its era (an error may move it, a result
    /// confirms it), and a handshake answered is next committed.
    pub(super) progress: &'a mut Progress,
    pub(super) session: &'a mut View,
    pub(super) events: &'a mut VecDeque<Event>,
    /// What the caller is asked for an input round.
    pub(super) replies: &'a mut Replies,
    /// The session id the server issued with the answer (`initialize` only).
    pub(super) session_id: Option<String>,
    /// When the answer came, for the task's next poll.
    pub(super) when: When,
}

impl Answering {
    /// The state an operation for `action` starts with.
    pub(super) fn for_action(action: &Action) -> Self {
        Self {
            paging: Paging::default(),
            loading: Loading::for_action(action),
            relist: Relist::Never,
            input: InputRounds::default(),
            task: match action {
                Action::ResumeTask(handle) => Tasking::resumed(handle),
                _ => Tasking::default(),
            },
            subscribed: 0,
        }
    }

    /// Legacy era: the `resources/subscribe` a subscription sends before its stream opens,
    /// while one of its resources is not subscribed yet.
    pub(super) fn next_resource_subscribe(&self, progress: &Progress) -> Option<LegKind> {
        let Action::Subscribe(subscription) = &progress.action else {
            return None;
        };
        let wanted = subscription.resource_subscriptions.len();
        (progress.era.modern().is_none() && (self.subscribed as usize) < wanted).then_some(
            LegKind::ResourceSubscribe {
                resource: self.subscribed + 1,
            },
        )
    }

    /// The page the listing's walk asks for next (1-based), and whether it is a call's walk of
    /// its tools after a header mismatch.
    pub(super) fn next_page(&self) -> (u32, bool) {
        (self.paging.next_page(), self.relist == Relist::Walking)
    }

    /// Before a call goes out, the tools are walked first (inside the same budget) when the
    /// call needs what a listing says and no listing was read: in the legacy era, when the
    /// server runs calls as tasks, whether this tool must; in either era, when every result
    /// is to be checked ([`OutputValidation::Always`]), the tool's output schema.
    pub(super) fn list_before_call(&mut self, progress: &Progress, session: &View) {
        let Action::CallTool { name, .. } = &progress.action else {
            return;
        };
        if self.relist != Relist::Never || !progress.is_at_work() {
            return;
        }
        let tasks_unknown = progress.era.modern().is_none()
            && super::tasking::legacy_call_is_task(session, name).is_none();
        let schemas_unknown = session.config().output_validation() == OutputValidation::Always
            && session.tool_schemas().is_none();
        if tasks_unknown || schemas_unknown {
            self.relist = Relist::Walking;
        }
    }

    /// Forgets what belonged to an attempt that was abandoned (a lost session, another era):
    /// the listing's cursors and the last round's input; the skill's files are read again.
    pub(super) fn restart(&mut self) {
        self.input.restart();
        self.paging = Paging::default();
        self.loading.restart();
        self.subscribed = 0;
    }

    /// The answer to the work leg `leg`: its envelope checked, then what it means. An error
    /// is accepted whatever its id (servers send `null`, none, or a string of their own when
    /// they could not read the request at all), and may refresh a call's tools or move the era
    /// before it is the operation's failure; a result must carry the request's id.
    pub(super) fn answer(&mut self, leg: &InFlight, answer: Incoming, ctx: Context<'_>) -> Meaning {
        let result = match answer {
            // A refused log level changes nothing: the work goes out.
            Incoming::Error { .. } if leg.answers == LegKind::SetLogLevel => {
                ctx.progress.level_set();
                return Meaning::More;
            }
            Incoming::Error { error, .. } => {
                if self.relist_after(error.code, leg.answers, ctx.progress.era.modern()) {
                    return Meaning::More;
                }
                let stdio = ctx.session.config().is_stdio();
                let data = error.data.as_ref();
                let era = &mut ctx.progress.era;
                let moved = era.reconsider(error.code, data, leg.status, leg.answers, stdio);
                if let Some(moved) = moved {
                    return Meaning::Moved(moved);
                }
                let message = clip(&error.message, QUOTE_LIMIT);
                let (code, data) = (error.code, error.data);
                return Meaning::Failed(Failure::JsonRpc {
                    code,
                    message,
                    data,
                });
            }
            Incoming::Result { id, result } => {
                let expected = leg.request_id.map(RequestId::Number);
                if id != expected {
                    let shown = |id: Option<RequestId>| {
                        id.map_or_else(|| "none".to_owned(), |id| id.to_string())
                    };
                    let (got, want) = (shown(id), shown(expected));
                    return Meaning::Failed(Failure::Malformed(format!(
                        "the answer's id {got} does not match the request's id {want}"
                    )));
                }
                result
            }
            _ => return Meaning::More,
        };
        // A tool's plain result (no task, no request for input) is read straight into its
        // type: the call's hot path. Anything else is read as an object, below.
        let result = match result {
            RawResult::Text(text) if leg.answers == LegKind::CallTool => {
                match CallToolResult::read_plain(text) {
                    Plain::Call(call) => {
                        ctx.session.set_era(ctx.progress.era.confirm());
                        return match call {
                            Ok(call) => Meaning::Finish(Outcome::Call(call)),
                            Err(detail) => Meaning::Failed(Failure::Malformed(detail)),
                        };
                    }
                    Plain::Not(text) => RawResult::Text(text),
                }
            }
            result => result,
        };
        let result = match result.object() {
            Ok(result) => result,
            Err(NotAnObject::Other) => {
                let detail = "neither a result nor an error".to_owned();
                return Meaning::Failed(Failure::Malformed(detail));
            }
            Err(NotAnObject::Unreadable(why)) => {
                let detail = format!("the result cannot be read: {}", clip(&why, QUOTE_LIMIT));
                return Meaning::Failed(Failure::Malformed(detail));
            }
        };
        if leg.answers != LegKind::Initialize {
            // A request of this era was answered: the era is the server's, and the session
            // keeps it. The handshake's era is confirmed once it is committed.
            ctx.session.set_era(ctx.progress.era.confirm());
        }
        self.read(leg.answers, result, ctx)
    }

    /// What the result of the request `answers` means.
    fn read(&mut self, answers: LegKind, result: Map<String, Value>, ctx: Context<'_>) -> Meaning {
        if ctx.progress.era.modern().is_some()
            && result.get("resultType").and_then(Value::as_str) == Some("input_required")
        {
            if let LegKind::Request(
                method @ crate::request::Method {
                    input_rounds: false,
                    ..
                },
            ) = answers
            {
                return Meaning::Failed(Failure::Malformed(format!(
                    "{} was answered with a request for input, which it cannot be",
                    method.name
                )));
            }
            return match self
                .input
                .begin(result, ctx.session, ctx.events, ctx.replies)
            {
                Ok(()) => Meaning::More,
                Err(detail) => Meaning::Failed(Failure::Malformed(detail)),
            };
        }
        let malformed = |detail: String| Meaning::Failed(Failure::Malformed(detail));
        // A legacy call becomes a task only when it asked to be one.
        let era = match (ctx.progress.era.modern(), &ctx.progress.action) {
            (Some(_), _) => Some(TaskEra::Modern),
            (None, Action::CallTool { name, .. })
                if answers == LegKind::CallTool
                    && super::tasking::legacy_call_is_task(ctx.session, name) == Some(true) =>
            {
                Some(TaskEra::Legacy)
            }
            (None, _) => None,
        };
        if let Some(era) = era.filter(|&era| task::is_created_task(&result, era)) {
            return match answers {
                LegKind::CallTool if ctx.session.config().tasks() => {
                    let session_id = match era {
                        TaskEra::Legacy => ctx.session.info().and_then(|i| i.session_id.clone()),
                        _ => None,
                    };
                    let tool = match &ctx.progress.action {
                        Action::CallTool { name, .. } => Some(name.clone()),
                        _ => None,
                    };
                    (self
                        .task
                        .created(result, (era, session_id, tool), ctx.when, ctx.events))
                    .into()
                }
                _ => malformed(format!(
                    "{} was answered with a task, which it cannot create",
                    answers.request_name()
                )),
            };
        }
        match answers {
            LegKind::TaskGet => match self.task.polled(result, ctx.when, ctx.events) {
                // The task's requests for input are a round like a request's own.
                Seen::Input(requests) => {
                    let asked = Map::from_iter([("inputRequests".to_owned(), requests.into())]);
                    match self
                        .input
                        .begin(asked, ctx.session, ctx.events, ctx.replies)
                    {
                        Ok(()) => Meaning::More,
                        Err(detail) => malformed(detail),
                    }
                }
                seen => seen.into(),
            },
            LegKind::TaskResult => self.task.fetched(result).into(),
            LegKind::SetLogLevel => {
                ctx.progress.level_set();
                Meaning::More
            }
            LegKind::TaskUpdate => {
                let round = self.input.round.take();
                let keys = round.iter().flat_map(|round| round.responses.keys());
                self.task.updated(keys, ctx.when);
                Meaning::More
            }
            LegKind::TaskCancel => match &ctx.progress.action {
                Action::CancelTask(task) => {
                    Meaning::Finish(Outcome::TaskCancelRequested(task.task_id.clone()))
                }
                _ => Meaning::More,
            },
            LegKind::Initialize => match read_initialize(&result, ctx.session_id) {
                Ok(info) => {
                    ctx.progress.answered(info);
                    Meaning::More
                }
                Err(failure) => Meaning::Failed(failure),
            },
            // The stdio probe before the work: the server is modern, the work goes out.
            LegKind::Discover if ctx.progress.era.probes_first() => {
                ctx.progress.era.probed();
                Meaning::More
            }
            LegKind::Discover => Meaning::Finish(Outcome::Probe(read_discover(
                &result,
                ctx.progress.era.modern(),
            ))),
            LegKind::Ping => match ctx.session.info().cloned() {
                Some(info) => Meaning::Finish(Outcome::Probe(info)),
                None => malformed("ping answered on a session that is not live".to_owned()),
            },
            LegKind::List { of, .. } => self.read_list_page(of, result, ctx),
            LegKind::CallTool => match CallToolResult::from_result(result) {
                Ok(call) => Meaning::Finish(Outcome::Call(call)),
                Err(detail) => malformed(detail),
            },
            LegKind::Subscribe => Meaning::SubscriptionEnded,
            LegKind::ResourceSubscribe { .. } => {
                self.subscribed += 1;
                Meaning::More
            }
            LegKind::Request(_) if matches!(&ctx.progress.action, Action::LoadSkill(_)) => {
                match skills::read(result) {
                    Ok(read) => self.read_skill_file(&read, &ctx.progress.action),
                    Err(detail) => malformed(detail),
                }
            }
            LegKind::Request(method) => {
                Meaning::Finish(Outcome::Answer(Answer::new(method, result)))
            }
            _ => Meaning::More,
        }
    }

    /// A file of the skill being loaded came back: verify it against the skill's entry, then
    /// read the next one, or end with the loaded skill.
    fn read_skill_file(
        &mut self,
        read: &crate::request::ReadResourceResult,
        action: &Action,
    ) -> Meaning {
        let Action::LoadSkill(skill) = action else {
            return Meaning::More;
        };
        let Some(file) = self.loading.files.get(self.loading.loaded.len()) else {
            return Meaning::More;
        };
        let checked = match read.bytes_of(&file.uri) {
            Some(bytes) => skills::verify(skill, file, &bytes).map(|()| bytes),
            None => Err("the read returned no contents for it".to_owned()),
        };
        match checked {
            Ok(bytes) => {
                self.loading.loaded.push((file.uri.clone(), bytes));
                if self.loading.next_uri().is_some() {
                    return Meaning::More;
                }
                Meaning::Finish(Outcome::Skill(LoadedSkill {
                    skill: skill.clone(),
                    files: std::mem::take(&mut self.loading.loaded),
                }))
            }
            Err(reason) => Meaning::Failed(Failure::Skill {
                uri: clip(&file.uri, QUOTE_LIMIT),
                reason,
            }),
        }
    }

    /// A modern server refused a tool call with `-32020` (its headers do not match its body):
    /// the tool's `x-mcp-header` annotations this client mirrors may be stale. The listing is
    /// walked again and the call sent once more, inside the same budget, once per operation.
    /// True when it will be.
    pub(super) fn relist_after(
        &mut self,
        code: i64,
        answers: LegKind,
        modern: Option<ProtocolVersion>,
    ) -> bool {
        if code != HEADER_MISMATCH
            || answers != LegKind::CallTool
            || modern.is_none()
            || self.relist != Relist::Never
        {
            return false;
        }
        self.relist = Relist::Walking;
        self.paging = Paging::default();
        true
    }

    fn read_list_page(
        &mut self,
        of: ListKind,
        mut result: Map<String, Value>,
        ctx: Context<'_>,
    ) -> Meaning {
        let Some(Value::Array(entries)) = result.remove(of.member()) else {
            let detail = format!("the result has no \"{}\" array", of.member());
            return Meaning::Failed(Failure::Malformed(detail));
        };
        let ceiling = ctx.session.config().max_pages();
        match self.paging.take_page(entries, &result, ceiling) {
            PageEnd::Last(entries, _) if self.relist == Relist::Walking => {
                // The walk a header mismatch asked for: the annotations are fresh, the call
                // goes out again.
                vet_tool_headers(listed::<Tool>(entries), ctx);
                self.relist = Relist::Done;
                self.paging = Paging::default();
                Meaning::More
            }
            PageEnd::Last(entries, cache) => Meaning::Finish(match of {
                ListKind::Tools => Outcome::Tools(Listing {
                    items: vet_tool_headers(listed(entries), ctx),
                    cache,
                }),
                ListKind::Resources => Outcome::Resources(Listing {
                    items: listed(entries),
                    cache,
                }),
                ListKind::ResourceTemplates => Outcome::ResourceTemplates(Listing {
                    items: listed(entries),
                    cache,
                }),
                ListKind::Prompts => Outcome::Prompts(Listing {
                    items: listed(entries),
                    cache,
                }),
                ListKind::Skills => Outcome::Skills(Listing {
                    items: listed(entries),
                    cache,
                }),
            }),
            PageEnd::More => Meaning::More,
            PageEnd::Repeated(cursor) => Meaning::Failed(Failure::RepeatedCursor(cursor)),
            PageEnd::Ceiling => Meaning::Failed(Failure::TooManyPages(ceiling)),
        }
    }
}

/// In the modern era, leaves out every tool whose `x-mcp-header` annotations are invalid
/// (reported as an event) and remembers the others' for the calls that follow.
/// In the legacy era, remembers which tools may run as tasks instead.
fn vet_tool_headers(tools: Vec<Tool>, ctx: Context<'_>) -> Vec<Tool> {
    remember_tool_schemas(&tools, ctx.session);
    if ctx.progress.era.modern().is_none() {
        let tasks = tools.iter().filter_map(|tool| match tool.task_support() {
            crate::task::TaskSupport::Forbidden => None,
            support => Some((tool.name.clone(), support)),
        });
        ctx.session.remember_task_tools(tasks.collect());
        return tools;
    }
    let mut kept = Vec::with_capacity(tools.len());
    let mut headers = std::collections::HashMap::new();
    for tool in tools {
        match crate::headers::param_headers(tool.input_schema()) {
            Ok(found) => {
                if !found.is_empty() {
                    headers.insert(tool.name.clone(), found);
                }
                kept.push(tool);
            }
            Err(reason) => ctx.events.push_back(Event::ToolRejected {
                name: clip(&tool.name, QUOTE_LIMIT),
                reason: clip(&reason, QUOTE_LIMIT),
            }),
        }
    }
    ctx.session.remember_tool_headers(headers);
    kept
}

/// Remembers what each tool of a listing declares of its output, for the calls that follow
/// (compiled on the first result checked against it).
fn remember_tool_schemas(tools: &[Tool], session: &mut super::view::View) {
    if !session.config().output_validation().is_on() {
        return;
    }
    let schemas = tools.iter().filter_map(|tool| {
        let schema = tool.output_schema()?;
        Some((tool.name.clone(), Arc::new(Declared::new(schema.clone()))))
    });
    session.remember_tool_schemas(schemas.collect());
}

/// The entries of a listing that read as `T`; the others are dropped.
fn listed<T: Entry>(entries: Vec<Value>) -> Vec<T> {
    entries.into_iter().filter_map(T::from_entry).collect()
}
