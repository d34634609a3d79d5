//! The caller-facing types: what an operation is for ([`Action`]), what the server sent
//! while it ran ([`Event`]) and how it ended ([`Outcome`]). What drivers exchange with an
//! operation (legs, inputs, outputs) is `driving`'s.
//!
//! Plain data. Nothing here decides anything.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::catalog::{ListKind, Listing, Prompt, Resource, ResourceTemplate, Tool};
use crate::jsonrpc::RequestId;
use crate::message::Notification;
use crate::model::{CallToolResult, SessionInfo, Subscription, SubscriptionEnd};
use crate::request::{Answer, OneRequest};
use crate::skills::{LoadedSkill, Skill};
use crate::task::TaskHandle;

/// How long to wait before resuming a closed stream when the server named no `retry`.
pub const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The most times one answer's stream is resumed before the operation gives up.
pub const MAX_RESUMPTIONS: u32 = 16;
/// The most times a modern request whose answer stream broke is sent again as a new request
/// (the 2026-07-28 revision has no resumption: a broken stream loses the request).
pub const MAX_REISSUES: u32 = 2;

/// What an operation is for.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Action {
    /// Handshake only (or `ping` on a live session): does the server answer, and who is it?
    Probe,
    /// Every page of a listing (`tools/list`, `resources/list`, ...).
    List(ListKind),
    /// One `tools/call`.
    CallTool {
        /// The tool's name.
        name: String,
        /// Its arguments (sent as `{}` when empty).
        arguments: Map<String, Value>,
    },
    /// One request of the table of one-request methods ([`crate::request`]), ended with its
    /// [`Outcome::Answer`].
    Request(OneRequest),
    /// Loads a skill (the skills extension): each of its files read (a resource read),
    /// `SKILL.md` first, and verified against the skill's entry before the next is read.
    LoadSkill(Skill),
    /// A subscription for as long as the operation's budget lasts: `subscriptions/listen`
    /// (modern era), or the session's GET stream (legacy era). Its notifications are events;
    /// the budget running out ends it normally, with [`Outcome::Subscription`].
    Subscribe(Subscription),
    /// Polls a task the server runs (`tasks/get`) until it is done, under a new budget: the
    /// task a call became, handed back when an earlier operation's budget ran out
    /// ([`Error::TaskRunning`](crate::Error::TaskRunning)). Ends with the call's result
    /// ([`Outcome::Call`]), or hands the task back again when this budget runs out too. The
    /// task's era decides the era spoken.
    ResumeTask(TaskHandle),
    /// Asks the server to cancel a task (`tasks/cancel`), one request under the configured
    /// budget. Ends with [`Outcome::TaskCancelRequested`] once the server acknowledged it:
    /// cancelling is cooperative, and the task may still end otherwise.
    CancelTask(TaskHandle),
    /// End the session on the server (a DELETE).
    Close,
}

impl Action {
    /// One word for traces: the JSON-RPC method of the request the action is about (`probe`,
    /// `skill` and `close` for the actions that are about several or none).
    pub const fn label(&self) -> &'static str {
        match self {
            Self::Probe => "probe",
            Self::List(of) => of.method(),
            Self::CallTool { .. } => "tools/call",
            Self::Request(request) => request.method().name,
            Self::LoadSkill(_) => "skill",
            Self::Subscribe(_) => "subscriptions/listen",
            Self::ResumeTask(_) => "tasks/get",
            Self::CancelTask(_) => "tasks/cancel",
            Self::Close => "close",
        }
    }
}

/// Something the server sent while answering, for the caller.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A notification (progress, logging, list changes).
    Notification(Notification),
    /// A request from the server, for the record. One whose method the caller answers
    /// ([`SessionConfig::respond_to`](crate::SessionConfig::respond_to)) is then asked of the
    /// caller ([`Output::Request`](crate::driver::Output::Request), which the drivers answer with
    /// the registered responder); the operation answers the rest itself (`{}` to `ping`, error
    /// -32601 to anything else).
    ServerRequest {
        /// The server's id for it.
        id: RequestId,
        /// The method.
        method: String,
        /// The params, verbatim.
        params: Value,
    },
    /// Over stdio: a line on the server's stdout that is not a JSON-RPC message (a banner, a
    /// log line written to the wrong stream). The spec forbids them; real servers print them,
    /// so they are skipped, and each is reported here (clipped).
    StdoutNoise {
        /// The line, clipped, control characters folded.
        line: String,
    },
    /// The task the call became, as the server describes it: when it is created, and each
    /// time a poll finds its status or its message changed.
    TaskStatus {
        /// The server's id of the task.
        task_id: String,
        /// Where it stands.
        status: crate::task::TaskStatus,
        /// The server's message about it, if any (clipped).
        message: Option<String>,
    },
    /// A tool the listing leaves out because its `x-mcp-header` annotations break the
    /// protocol's rules (modern era): the other tools stay usable.
    ToolRejected {
        /// The tool's name.
        name: String,
        /// Why, in one sentence.
        reason: String,
    },
}

/// The successful result of an operation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// What a probe found.
    Probe(SessionInfo),
    /// Every tool of every page, in order.
    Tools(Listing<Tool>),
    /// Every resource of every page, in order.
    Resources(Listing<Resource>),
    /// Every resource template of every page, in order.
    ResourceTemplates(Listing<ResourceTemplate>),
    /// Every prompt of every page, in order.
    Prompts(Listing<Prompt>),
    /// Every skill of every page, in order.
    Skills(Listing<Skill>),
    /// A skill whose files were all read and verified.
    Skill(LoadedSkill),
    /// A subscription ended.
    Subscription(SubscriptionEnd),
    /// The tool's result (which may be `is_error`).
    Call(CallToolResult),
    /// The answer to one request of the table ([`Action::Request`]): read it with
    /// [`Answer::read`].
    Answer(Answer),
    /// The server acknowledged the cancel of the task with this id (it may still end
    /// otherwise: cancelling is cooperative).
    TaskCancelRequested(String),
    /// The session is closed (or there was none to close).
    Closed,
}

impl Outcome {
    /// The probe's report, if this is one.
    pub fn into_probe(self) -> Option<SessionInfo> {
        match self {
            Self::Probe(info) => Some(info),
            _ => None,
        }
    }

    /// The listing of `E`, if this is one: `outcome.into_listing::<Tool>()`.
    pub fn into_listing<E: Listed>(self) -> Option<Listing<E>> {
        E::from_outcome(self).ok()
    }

    /// The call's result, if this is one.
    pub fn into_call(self) -> Option<CallToolResult> {
        match self {
            Self::Call(result) => Some(result),
            _ => None,
        }
    }

    /// The answer to one request of the table, if this is one.
    pub fn into_answer(self) -> Option<Answer> {
        match self {
            Self::Answer(answer) => Some(answer),
            _ => None,
        }
    }

    /// The loaded skill, if this is one.
    pub fn into_skill(self) -> Option<LoadedSkill> {
        match self {
            Self::Skill(skill) => Some(skill),
            _ => None,
        }
    }
}

/// What a listing walk lists ([`Tool`], [`Resource`], [`ResourceTemplate`], [`Prompt`],
/// [`Skill`]): the listing it walks ([`Action::List`]) and the outcome that holds its entries.
/// Both drivers' `Client::list::<E>()` take it.
pub trait Listed: Sized {
    /// The listing walked for it.
    const KIND: ListKind;

    /// The listing `outcome` holds, or `outcome` itself when it is another action's.
    ///
    /// # Errors
    /// `outcome`, boxed, when it holds no listing of this kind.
    fn from_outcome(outcome: Outcome) -> Result<Listing<Self>, Box<Outcome>>;
}

macro_rules! listed {
    ($($entry:ty => $kind:ident, $variant:ident;)*) => {$(
        impl Listed for $entry {
            const KIND: ListKind = ListKind::$kind;

            fn from_outcome(outcome: Outcome) -> Result<Listing<Self>, Box<Outcome>> {
                match outcome {
                    Outcome::$variant(listing) => Ok(listing),
                    other => Err(Box::new(other)),
                }
            }
        }
    )*};
}

listed! {
    Tool => Tools, Tools;
    Resource => Resources, Resources;
    ResourceTemplate => ResourceTemplates, ResourceTemplates;
    Prompt => Prompts, Prompts;
    Skill => Skills, Skills;
}
