//! What an answer means: the handshake's result, a probe's `ping`, a page of a listing, a
//! tool's result; and the paging state of a tool listing.
//!
//! The answer has already been read and classified (`read`); this module checks its id,
//! turns it into the operation's next step or its [`Outcome`](super::Outcome), and keeps the
//! listing's walk bounded (a page ceiling, no repeated cursor).

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::legs::Role;
use super::{LegKind, Operation, Outcome, Relist, Step};
use crate::catalog::{
    CacheHint, Entry, GetPromptResult, ListKind, Listing, ReadResourceResult, Tool,
};
use crate::error::Error;
use crate::jsonrpc::{Incoming, RequestId};
use crate::model::{self, CallToolResult, ProtocolVersion, SessionInfo};
use crate::skills::{self, LoadedSkill, SkillFile};
use mcp_auth::{QUOTE_LIMIT, clip};

/// The most times one operation answers a server's request for more input.
const MAX_INPUT_ROUNDS: u32 = 8;

/// A listing's walk: the entries so far (verbatim), the pages' caching hints, and where the
/// next page starts.
#[derive(Debug, Default)]
pub(super) struct Paging {
    entries: Vec<Value>,
    cache: Option<CacheHint>,
    cursor: Option<String>,
    cursors_seen: HashSet<String>,
    pages: u32,
}

/// A skill being loaded: its files in the order they are read, and those read and verified.
#[derive(Debug, Default)]
pub(super) struct Loading {
    files: Vec<SkillFile>,
    loaded: Vec<(String, Vec<u8>)>,
}

impl Loading {
    /// The files `action` loads (none unless it loads a skill).
    pub(super) fn for_action(action: &super::Action) -> Self {
        match action {
            super::Action::LoadSkill(skill) => Self {
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

/// What a page says about the walk.
enum PageEnd {
    /// No next cursor: the walk is over.
    Last(Vec<Value>, Option<CacheHint>),
    /// Another page follows.
    More,
    /// The server handed back a cursor it had already given.
    Repeated(String),
    /// The page ceiling was reached with a next page still announced.
    Ceiling,
}

impl Paging {
    /// The number of the page to ask for next (1-based).
    pub(super) fn next_page(&self) -> u32 {
        self.pages + 1
    }

    /// The params of the next `tools/list`.
    pub(super) fn params(&self) -> Map<String, Value> {
        match &self.cursor {
            Some(cursor) => match json!({ "cursor": cursor }) {
                Value::Object(params) => params,
                _ => Map::new(),
            },
            None => Map::new(),
        }
    }

    fn take_page(
        &mut self,
        entries: Vec<Value>,
        result: &Map<String, Value>,
        ceiling: u32,
    ) -> PageEnd {
        self.entries.extend(entries);
        if let Some(hint) = CacheHint::of(result) {
            self.cache = Some(self.cache.map_or(hint, |cache| cache.merge(hint)));
        }
        self.pages += 1;
        let next_cursor = result.get("nextCursor").and_then(Value::as_str);
        let Some(cursor) = next_cursor.filter(|c| !c.is_empty()) else {
            return PageEnd::Last(std::mem::take(&mut self.entries), self.cache.take());
        };
        if !self.cursors_seen.insert(cursor.to_owned()) {
            return PageEnd::Repeated(clip(cursor, QUOTE_LIMIT));
        }
        if self.pages >= ceiling {
            return PageEnd::Ceiling;
        }
        self.cursor = Some(cursor.to_owned());
        PageEnd::More
    }
}

impl Operation {
    /// A response arrived for the work leg: check it and move on.
    pub(super) fn read_answer(&mut self, answer: Incoming) {
        let Some(leg) = self.grants.end(Role::Work) else {
            return;
        };
        let method = leg.answers.request_name();
        let malformed = |detail: String| {
            move |server| Error::Malformed {
                server,
                method,
                detail,
            }
        };
        let result = match answer {
            // Error envelopes are accepted whatever their id: servers send `null`, none, or
            // a string of their own when they could not read the request at all.
            Incoming::Error { error, .. } => {
                if self.relist_after(error.code, leg.answers) {
                    return;
                }
                let stdio = self.session.config().is_stdio();
                let moved = self.era.reconsider(
                    error.code,
                    error.data.as_ref(),
                    leg.status,
                    leg.answers,
                    stdio,
                );
                if self.era_moved(moved) {
                    return;
                }
                let message = clip(&error.message, QUOTE_LIMIT);
                self.fail(|server| Error::JsonRpc {
                    server,
                    method,
                    code: error.code,
                    message,
                    data: error.data,
                });
                return;
            }
            Incoming::Result { id, result } => {
                let expected = leg.request_id.map(RequestId::Number);
                if id != expected {
                    let got = id.map_or_else(|| "none".to_owned(), |id| id.to_string());
                    let want = expected.map_or_else(|| "none".to_owned(), |id| id.to_string());
                    self.fail(malformed(format!(
                        "the answer's id {got} does not match the request's id {want}"
                    )));
                    return;
                }
                match result {
                    Value::Object(result) => result,
                    _ => {
                        self.fail(malformed("neither a result nor an error".to_owned()));
                        return;
                    }
                }
            }
            _ => return,
        };
        if leg.answers != LegKind::Initialize {
            // The handshake's era is confirmed once it is committed.
            self.era_confirmed();
        }
        if self.era.modern().is_some()
            && result.get("resultType").and_then(Value::as_str) == Some("input_required")
        {
            if let Err(detail) = self.answer_input_requests(result) {
                self.fail(malformed(detail));
            }
            return;
        }
        match leg.answers {
            LegKind::Initialize => self.read_initialize(&result, leg.session_id),
            LegKind::Discover if self.era.probes_first() => {
                // The stdio probe before the work: the server is modern; the work goes out.
                self.era.probed();
            }
            LegKind::Discover => {
                let info = self.read_discover(&result);
                self.finish(Ok(Outcome::Probe(info)));
            }
            LegKind::Ping => match self.session.info().cloned() {
                Some(info) => self.finish(Ok(Outcome::Probe(info))),
                None => self.fail(malformed(
                    "ping answered on a session that is not live".to_owned(),
                )),
            },
            LegKind::List { of, .. } => self.read_list_page(of, result),
            LegKind::CallTool => match CallToolResult::from_result(result) {
                Ok(call) => self.finish(Ok(Outcome::Call(call))),
                Err(detail) => self.fail(malformed(detail)),
            },
            LegKind::Subscribe => self.subscription_ended(true),
            LegKind::ReadResource => match ReadResourceResult::from_result(result) {
                Ok(read) if matches!(self.action, super::Action::LoadSkill(_)) => {
                    self.read_skill_file(&read);
                }
                Ok(read) => self.finish(Ok(Outcome::Resource(read))),
                Err(detail) => self.fail(malformed(detail)),
            },
            LegKind::GetPrompt => match GetPromptResult::from_result(result) {
                Ok(prompt) => self.finish(Ok(Outcome::Prompt(prompt))),
                Err(detail) => self.fail(malformed(detail)),
            },
            _ => {}
        }
    }

    fn read_initialize(&mut self, result: &Map<String, Value>, session_id: Option<String>) {
        let Some(version) = result.get("protocolVersion").and_then(Value::as_str) else {
            self.fail(|server| Error::Malformed {
                server,
                method: "initialize",
                detail: "the initialize result has no protocolVersion".to_owned(),
            });
            return;
        };
        // A modern version has no handshake: an `initialize` answer naming one is not spoken.
        let spoken = ProtocolVersion::parse(version).filter(|v| !v.is_modern());
        let Some(protocol_version) = spoken else {
            let version = clip(version, model::LABEL_LIMIT);
            self.fail(|server| Error::UnsupportedProtocolVersion { server, version });
            return;
        };
        let server = result.get("serverInfo");
        self.pending = Some(session_info(result, protocol_version, server, session_id));
        self.next = Step::Initialized;
    }

    /// The server needs more input before it can answer (a multi round-trip request): answer
    /// each of its `inputRequests` with the caller's responders, and let the same request go
    /// out again (a new id, a new leg, the same budget) carrying the answers and the server's
    /// `requestState` exactly as it came. At most [`MAX_INPUT_ROUNDS`] rounds.
    fn answer_input_requests(&mut self, mut result: Map<String, Value>) -> Result<(), String> {
        self.input_rounds += 1;
        if self.input_rounds > MAX_INPUT_ROUNDS {
            return Err(format!(
                "the server asked for more input {MAX_INPUT_ROUNDS} times; the request was not retried again"
            ));
        }
        let requests = match result.remove("inputRequests") {
            None => Map::new(),
            Some(Value::Object(requests)) => requests,
            Some(_) => return Err("\"inputRequests\" is not an object".to_owned()),
        };
        let state = result.remove("requestState");
        if requests.is_empty() && state.is_none() {
            return Err(
                "an input_required result with neither inputRequests nor requestState".to_owned(),
            );
        }
        let mut responses = Map::new();
        for (key, request) in requests {
            let method = request.get("method").and_then(Value::as_str).unwrap_or("");
            let params = request.get("params").cloned().unwrap_or(Value::Null);
            let answer = self.session.config().answer_server_request(method, &params);
            self.events.push_back(super::Event::ServerRequest {
                id: RequestId::String(key.clone()),
                method: method.to_owned(),
                params,
            });
            match answer {
                Ok(answer) => {
                    responses.insert(key, answer);
                }
                // Elicitation has a refusal of its own: a client with no responder declines.
                Err(_) if method == "elicitation/create" => {
                    responses.insert(key, json!({"action": "decline"}));
                }
                // Sampling and roots have none: the request cannot go on.
                Err(_) => {
                    return Err(format!(
                        "the server asked for input with \"{}\", which this client does not answer (register a responder)",
                        clip(method, QUOTE_LIMIT)
                    ));
                }
            }
        }
        self.input = Some(crate::wire::InputRound { responses, state });
        Ok(())
    }

    /// A file of the skill being loaded came back: verify it against the skill's entry, then
    /// read the next one, or end with the loaded skill.
    fn read_skill_file(&mut self, read: &ReadResourceResult) {
        let super::Action::LoadSkill(skill) = &self.action else {
            return;
        };
        let Some(file) = self.loading.files.get(self.loading.loaded.len()) else {
            return;
        };
        let checked = match read.bytes_of(&file.uri) {
            Some(bytes) => skills::verify(skill, file, &bytes).map(|()| bytes),
            None => Err("the read returned no contents for it".to_owned()),
        };
        match checked {
            Ok(bytes) => {
                self.loading.loaded.push((file.uri.clone(), bytes));
                if self.loading.next_uri().is_none() {
                    let loaded = LoadedSkill {
                        skill: skill.clone(),
                        files: std::mem::take(&mut self.loading.loaded),
                    };
                    self.finish(Ok(Outcome::Skill(loaded)));
                }
            }
            Err(reason) => {
                let uri = clip(&file.uri, QUOTE_LIMIT);
                self.fail(|server| Error::SkillRejected {
                    server,
                    uri,
                    reason,
                });
            }
        }
    }

    /// A modern server refused a tool call with `-32020` (its headers do not match its body):
    /// the tool's `x-mcp-header` annotations this client mirrors may be stale. The listing is
    /// walked again and the call sent once more, inside the same budget, once per operation.
    fn relist_after(&mut self, code: i64, answers: LegKind) -> bool {
        if code != super::era::HEADER_MISMATCH
            || answers != LegKind::CallTool
            || self.era.modern().is_none()
            || self.relist != Relist::Never
        {
            return false;
        }
        self.relist = Relist::Walking;
        self.paging = Paging::default();
        true
    }

    /// In the modern era, leaves out every tool whose `x-mcp-header` annotations are invalid
    /// (reported as an event) and remembers the others' for the calls that follow.
    fn vet_tool_headers(&mut self, tools: Vec<Tool>) -> Vec<Tool> {
        if self.era.modern().is_none() {
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
                Err(reason) => self.events.push_back(super::Event::ToolRejected {
                    name: clip(&tool.name, QUOTE_LIMIT),
                    reason: clip(&reason, QUOTE_LIMIT),
                }),
            }
        }
        self.session.remember_tool_headers(headers);
        kept
    }

    /// What `server/discover` says: who the server is and what it offers. The version is the
    /// one this operation spoke; there is no session.
    fn read_discover(&self, result: &Map<String, Value>) -> SessionInfo {
        let server = result
            .get("_meta")
            .and_then(|meta| meta.get("io.modelcontextprotocol/serverInfo"));
        let version = self.era.modern().unwrap_or(ProtocolVersion::MODERN);
        session_info(result, version, server, None)
    }

    /// `notifications/initialized` was accepted: the handshake is committed to the session.
    pub(super) fn handshake_confirmed(&mut self) {
        let Some(info) = self.pending.take() else {
            return;
        };
        self.session.establish(info.clone());
        self.era_confirmed();
        if self.action == super::Action::Probe {
            self.finish(Ok(Outcome::Probe(info)));
        } else {
            self.next = Step::Work;
        }
    }

    fn read_list_page(&mut self, of: ListKind, mut result: Map<String, Value>) {
        let Some(Value::Array(entries)) = result.remove(of.member()) else {
            let detail = format!("the result has no \"{}\" array", of.member());
            self.fail(|server| Error::Malformed {
                server,
                method: of.method(),
                detail,
            });
            return;
        };
        let ceiling = self.session.config().max_pages();
        match self.paging.take_page(entries, &result, ceiling) {
            PageEnd::Last(entries, _) if self.relist == Relist::Walking => {
                // The walk a header mismatch asked for: the annotations are fresh, the call
                // goes out again.
                self.vet_tool_headers(listed::<Tool>(entries));
                self.relist = Relist::Done;
                self.paging = Paging::default();
            }
            PageEnd::Last(entries, cache) => {
                let outcome = match of {
                    ListKind::Tools => {
                        let tools = self.vet_tool_headers(listed(entries));
                        Outcome::Tools(Listing {
                            items: tools,
                            cache,
                        })
                    }
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
                };
                self.finish(Ok(outcome));
            }
            PageEnd::More => {}
            PageEnd::Repeated(cursor) => {
                self.fail(|server| Error::RepeatedCursor { server, cursor });
            }
            PageEnd::Ceiling => self.fail(|server| Error::TooManyPages {
                server,
                pages: ceiling,
            }),
        }
    }
}

/// The entries of a listing that read as `T`; the others are dropped.
fn listed<T: Entry>(entries: Vec<Value>) -> Vec<T> {
    entries.into_iter().filter_map(T::from_entry).collect()
}

/// What a server says about itself (an `initialize` or `server/discover` result), with the
/// version spoken and the session id it issued, if any.
fn session_info(
    result: &Map<String, Value>,
    protocol_version: ProtocolVersion,
    server: Option<&Value>,
    session_id: Option<String>,
) -> SessionInfo {
    SessionInfo {
        protocol_version,
        server: model::server_info(server),
        capabilities: result
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
        instructions: result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned),
        session_id,
    }
}
