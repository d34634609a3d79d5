//! Authorization as legs of the operation, on a manual clock: which legs go out, what each is
//! granted, what carries the token, and how the budget ends an authorization.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_auth::{ClientConfig, ClientCredentials, CredentialStore, Entropy, MemoryStore, TokenSet};
use mcp_proto::driver::LegKind;
use mcp_proto::driver::{Input, LegStatus, Output};
use mcp_proto::{
    Budget, Clock, Error, ManualClock, OAuth, ProtocolVersion, Session, SessionConfig,
};
use serde_json::{Map, json};

const MCP: &str = "https://mcp.example.test/mcp";
const AS: &str = "https://auth.example.test";
const TOKEN: &str = "at-secret-7f3a";

/// The JSON-RPC id of a request.
fn id(request: &http::Request<Vec<u8>>) -> serde_json::Value {
    let body: serde_json::Value = serde_json::from_slice(request.body()).unwrap();
    body["id"].clone()
}

/// A credential store that counts its writes, so the tests can tell where they happen.
#[derive(Default)]
struct Recording {
    inner: MemoryStore,
    writes: AtomicUsize,
}

impl Recording {
    fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }
}

impl CredentialStore for Recording {
    fn client(&self, issuer: &str) -> Option<ClientCredentials> {
        self.inner.client(issuer)
    }
    fn save_client(&self, issuer: &str, client: ClientCredentials) {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.save_client(issuer, client);
    }
    fn tokens(&self, issuer: &str, resource: &str) -> Option<TokenSet> {
        self.inner.tokens(issuer, resource)
    }
    fn save_tokens(&self, issuer: &str, resource: &str, tokens: TokenSet) {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.save_tokens(issuer, resource, tokens);
    }
    fn forget_tokens(&self, issuer: &str, resource: &str) {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.forget_tokens(issuer, resource);
    }
}

struct Counter(u8);

impl Entropy for Counter {
    fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            self.0 = self.0.wrapping_add(1);
            *b = self.0;
        }
    }
}

/// One leg as the test server saw it.
#[derive(Debug, Clone)]
struct Seen {
    label: &'static str,
    uri: String,
    authorization: Option<String>,
    grant: Duration,
}

/// What the person does with the authorization URL.
#[derive(Clone, Copy)]
enum Person {
    /// Approves after this long.
    Approves(Duration),
    /// There is no authorizer.
    Absent,
    /// Never comes back.
    Gone,
}

struct World {
    clock: ManualClock,
    /// How long each leg takes, by label (default zero).
    takes: Vec<(&'static str, Duration)>,
    /// A 403 insufficient_scope for the first this-many tools/call legs carrying a token.
    step_ups: u32,
    /// The scope of each authorization URL.
    asked_scopes: Vec<String>,
    person: Person,
    seen: Vec<Seen>,
    /// The sessions' credential store.
    store: Arc<Recording>,
}

impl World {
    fn new(person: Person) -> Self {
        Self {
            clock: ManualClock::new(),
            takes: Vec::new(),
            step_ups: 0,
            asked_scopes: Vec::new(),
            person,
            seen: Vec::new(),
            store: Arc::default(),
        }
    }

    fn session(&self, budget: u64) -> Session {
        let client = ClientConfig::new("http://127.0.0.1:8976/callback")
            .unwrap()
            .with_client_name("tests");
        let config = SessionConfig::new(MCP)
            .unwrap()
            .with_protocol_version(ProtocolVersion::LATEST)
            .with_budget(Budget::from_secs(budget))
            .with_oauth(OAuth::new(client).with_store(self.store.clone()));
        let mut session = Session::new(config);
        session.set_entropy(Box::new(Counter(0)));
        session.set_time_of_day(self.clock.now(), SystemTime::UNIX_EPOCH);
        session
    }

    fn answer(&mut self, kind: LegKind, request: &http::Request<Vec<u8>>) -> (u16, String) {
        let authorized = request
            .headers()
            .get("authorization")
            .is_some_and(|v| v.to_str().unwrap() == format!("Bearer {TOKEN}"));
        match kind {
            LegKind::Auth(auth) => match auth.label() {
                "oauth:resource-metadata" => (
                    200,
                    json!({"resource": MCP, "authorization_servers": [AS], "scopes_supported": ["files:read"]})
                        .to_string(),
                ),
                "oauth:server-metadata" => (
                    200,
                    json!({"issuer": AS, "authorization_endpoint": format!("{AS}/authorize"),
                        "token_endpoint": format!("{AS}/token"), "registration_endpoint": format!("{AS}/register"),
                        "code_challenge_methods_supported": ["S256"]})
                    .to_string(),
                ),
                "oauth:register" => (201, json!({"client_id": "client-1"}).to_string()),
                "oauth:token" => (
                    200,
                    json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600})
                        .to_string(),
                ),
                other => panic!("unexpected {other}"),
            },
            _ if !authorized => (401, String::new()),
            LegKind::CallTool if self.step_ups > 0 => {
                self.step_ups -= 1;
                (403, String::new())
            }
            LegKind::Initialize => (
                200,
                json!({"jsonrpc": "2.0", "id": id(request), "result": {"protocolVersion": "2025-11-25",
                    "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}})
                .to_string(),
            ),
            LegKind::Initialized => (202, String::new()),
            _ => {
                (
                    200,
                    json!({"jsonrpc": "2.0", "id": id(request), "result": {"content": [{"type": "text", "text": "ok"}]}})
                        .to_string(),
                )
            }
        }
    }

    fn challenge(status: u16, scope: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let value = if status == 403 {
            format!(r#"Bearer error="insufficient_scope", scope="{scope}""#)
        } else {
            r#"Bearer resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp""#
                .to_owned()
        };
        headers.insert("www-authenticate", HeaderValue::from_str(&value).unwrap());
        headers
    }

    /// Drives one tool call to its end.
    fn call(&mut self, session: &mut Session) -> Result<String, Error> {
        let mut op = session.call_tool("echo", Map::new(), self.clock.now());
        for _ in 0..100 {
            // The store is written when the driver applies an update, never inside a poll.
            let writes = self.store.writes();
            let output = op.poll_output(self.clock.now());
            assert_eq!(self.store.writes(), writes, "a poll wrote the store");
            let output = match output {
                Output::Update(update) => {
                    session.apply(update);
                    continue;
                }
                Output::AwaitSession(_) => {
                    op.handle_input(Input::Session(session), self.clock.now());
                    continue;
                }
                other => other,
            };
            match output {
                Output::Transmit(leg) => {
                    let label = leg.kind.label();
                    self.seen.push(Seen {
                        label,
                        uri: leg.request.uri().to_string(),
                        authorization: leg
                            .request
                            .headers()
                            .get("authorization")
                            .map(|v| v.to_str().unwrap().to_owned()),
                        grant: leg.timeout,
                    });
                    let takes = self
                        .takes
                        .iter()
                        .find(|(l, _)| *l == label)
                        .map_or(Duration::ZERO, |(_, d)| *d);
                    // A leg that takes its whole grant answers just inside it; the rest of the
                    // grant passes once the answer is in.
                    let inside = takes.min(leg.timeout - Duration::from_millis(1));
                    self.clock.advance(inside);
                    let (status, body) = self.answer(leg.kind, &leg.request);
                    let now = self.clock.now();
                    let mut headers = if status == 401 || status == 403 {
                        Self::challenge(status, "files:write")
                    } else {
                        HeaderMap::new()
                    };
                    if !body.is_empty() {
                        headers
                            .insert("content-type", HeaderValue::from_static("application/json"));
                    }
                    let status = StatusCode::from_u16(status).unwrap();
                    if op.handle_input(
                        Input::Head {
                            leg: leg.id,
                            status,
                            headers: &headers,
                        },
                        now,
                    ) == LegStatus::ReadMore
                        && op.handle_input(
                            Input::Chunk {
                                leg: leg.id,
                                bytes: body.as_bytes(),
                            },
                            now,
                        ) == LegStatus::ReadMore
                    {
                        op.handle_input(Input::End { leg: leg.id }, now);
                    }
                    self.clock.advance(takes - inside);
                }
                Output::Authorize(step) => {
                    let url = url::Url::parse(&step.url).unwrap();
                    let param = |name: &str| {
                        url.query_pairs()
                            .find(|(k, _)| k == name)
                            .map(|(_, v)| v.into_owned())
                    };
                    self.asked_scopes.push(param("scope").unwrap_or_default());
                    self.seen.push(Seen {
                        label: "oauth:authorize",
                        uri: step.url.clone(),
                        authorization: None,
                        grant: step.timeout,
                    });
                    match self.person {
                        Person::Approves(after) => {
                            self.clock.advance(after);
                            let state = param("state").unwrap();
                            let redirect =
                                format!("http://127.0.0.1:8976/callback?code=c-1&state={state}");
                            op.handle_input(Input::Redirect(&redirect), self.clock.now());
                        }
                        Person::Absent => {
                            op.handle_input(Input::NoAuthorizer, self.clock.now());
                        }
                        Person::Gone => {}
                    }
                }
                Output::AwaitSession(_) | Output::Update(_) => unreachable!("handled above"),
                // The reports are checked by the stand-in driver's suites.
                Output::LegEnded(_) => {}
                Output::Wait(until) => {
                    self.clock.set(until.max(self.clock.now()));
                    op.handle_input(Input::Timeout, self.clock.now());
                }
                Output::Event(_) => {}
                Output::Request(request) => {
                    op.handle_input(request.reply_from(op.session_config()), self.clock.now());
                }
                Output::Done(result) => {
                    return result.map(|outcome| outcome.into_call().unwrap().text());
                }
            }
        }
        panic!("the operation did not end");
    }

    fn labels(&self) -> Vec<&'static str> {
        self.seen.iter().map(|s| s.label).collect()
    }

    fn grants(&self) -> Vec<u64> {
        self.seen.iter().map(|s| s.grant.as_secs()).collect()
    }
}

#[test]
fn a_cold_call_on_an_oauth_server_spends_one_budget_across_every_leg() {
    let mut world = World::new(Person::Approves(Duration::from_secs(3)));
    world.takes = vec![
        ("oauth:token", Duration::from_secs(2)),
        ("initialize", Duration::from_secs(1)),
    ];
    let mut session = world.session(20);
    let started = world.clock.now();
    assert_eq!(world.call(&mut session).unwrap(), "ok");
    assert_eq!(
        world.labels(),
        [
            "initialize",
            "oauth:resource-metadata",
            "oauth:server-metadata",
            "oauth:register",
            "oauth:authorize",
            "oauth:token",
            "initialize",
            "notifications/initialized",
            "tools/call",
        ]
    );
    // One budget of 20 s: each initialize's 1 s, the person's 3 s and the token's 2 s are
    // spent from it, and every later leg is granted only what is left.
    assert_eq!(world.grants(), [20, 19, 19, 19, 19, 16, 14, 13, 13]);
    assert_eq!(world.clock.now() - started, Duration::from_secs(7));
    // The token goes to the MCP server only, on every request after it was obtained.
    let token_leg = world
        .labels()
        .iter()
        .position(|l| *l == "oauth:token")
        .unwrap();
    for (number, seen) in world.seen.iter().enumerate() {
        let mcp = !seen.label.starts_with("oauth:");
        let expected = (mcp && number > token_leg).then(|| format!("Bearer {TOKEN}"));
        assert_eq!(seen.authorization, expected, "{seen:?}");
        assert_eq!(seen.uri.starts_with(MCP), mcp, "{seen:?}");
    }
    assert_eq!(world.asked_scopes, ["files:read"]);
    // The registration and the tokens reached the store, each when its update was applied.
    assert_eq!(world.store.writes(), 2);
}

#[test]
fn a_token_endpoint_that_takes_the_rest_of_the_budget_leaves_the_retried_call_refused() {
    let mut world = World::new(Person::Approves(Duration::ZERO));
    world.takes = vec![("oauth:token", Duration::from_secs(20))];
    let mut session = world.session(20);
    let err = world.call(&mut session).unwrap_err();
    match &err {
        Error::BudgetExhausted { method, leg, .. } => {
            assert_eq!((*method, *leg), ("initialize", 6));
        }
        other => panic!("{other:?}"),
    }
    // Nothing was sent after the token leg: the retried initialize was refused before it existed.
    assert_eq!(world.labels().last(), Some(&"oauth:token"));
    // The token was kept: the next operation (a fresh budget) uses it at once.
    world.seen.clear();
    assert_eq!(world.call(&mut session).unwrap(), "ok");
    assert_eq!(
        world.labels(),
        ["initialize", "notifications/initialized", "tools/call"]
    );
    assert!(!format!("{err} {err:?} {session:?}").contains(TOKEN));
}

#[test]
fn an_unattended_operation_that_needs_a_person_ends_at_once_naming_the_server() {
    let mut world = World::new(Person::Absent);
    let mut session = world.session(20);
    let started = world.clock.now();
    let err = world.call(&mut session).unwrap_err();
    match &err {
        Error::AuthorizationRequired {
            server,
            method,
            issuer,
            ..
        } => {
            assert_eq!(server, "mcp.example.test:443");
            assert_eq!(*method, "initialize");
            assert_eq!(issuer.as_deref(), Some(AS));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.fault(), mcp_proto::Fault::Authorization);
    assert_eq!(world.clock.now(), started, "no budget was spent waiting");
    assert_eq!(world.labels().last(), Some(&"oauth:authorize"));
}

#[test]
fn a_person_who_never_comes_back_ends_the_operation_at_its_deadline() {
    let mut world = World::new(Person::Gone);
    world.takes = vec![("oauth:register", Duration::from_secs(5))];
    let mut session = world.session(20);
    let started = world.clock.now();
    let err = world.call(&mut session).unwrap_err();
    assert!(
        matches!(err, Error::AuthorizationRequired { .. }),
        "{err:?}"
    );
    assert_eq!(world.clock.now() - started, Duration::from_secs(20));
    assert_eq!(world.seen.last().unwrap().grant, Duration::from_secs(15));
}

#[test]
fn a_step_up_asks_for_the_union_of_scopes_inside_the_same_operation() {
    let mut world = World::new(Person::Approves(Duration::ZERO));
    world.step_ups = 1;
    let mut session = world.session(20);
    assert_eq!(world.call(&mut session).unwrap(), "ok");
    assert_eq!(world.asked_scopes.len(), 2);
    let second: Vec<&str> = world.asked_scopes[1].split(' ').collect();
    assert!(
        second.contains(&"files:read") && second.contains(&"files:write"),
        "{second:?}"
    );
    // After the step-up, the same session is live: the call is sent again on it.
    let calls = world
        .labels()
        .iter()
        .filter(|l| **l == "tools/call")
        .count();
    assert_eq!(calls, 2);
}

#[test]
fn a_server_that_refuses_every_fresh_token_is_given_up_on() {
    let mut world = World::new(Person::Approves(Duration::ZERO));
    world.step_ups = u32::MAX;
    let mut session = world.session(60);
    let err = world.call(&mut session).unwrap_err();
    assert!(matches!(err, Error::Authorization { .. }), "{err:?}");
    let authorizations = world
        .labels()
        .iter()
        .filter(|l| **l == "oauth:authorize")
        .count();
    assert_eq!(authorizations, 3);
}

#[test]
fn an_auth_answer_past_its_cap_is_refused_without_reading_on() {
    let clock = ManualClock::new();
    let world = World::new(Person::Absent);
    let mut session = world.session(20);
    let mut op = session.call_tool("echo", Map::new(), clock.now());
    let Output::Transmit(first) = op.poll_output(clock.now()) else {
        panic!()
    };
    let _ = op.handle_input(
        Input::Head {
            leg: first.id,
            status: StatusCode::UNAUTHORIZED,
            headers: &World::challenge(401, ""),
        },
        clock.now(),
    );
    // The refused leg is over, and reported so.
    let Output::LegEnded(refused) = op.poll_output(clock.now()) else {
        panic!()
    };
    assert_eq!(refused.to_string().rsplit(' ').next(), Some("status=401"));
    // The refusal waits for the session (no other operation is authorizing): it claims the
    // authorization, and the flow's first leg goes out.
    assert!(matches!(
        op.poll_output(clock.now()),
        Output::AwaitSession(_)
    ));
    op.handle_input(Input::Session(&mut session), clock.now());
    let Output::Transmit(prm) = op.poll_output(clock.now()) else {
        panic!()
    };
    assert_eq!(prm.kind.label(), "oauth:resource-metadata");
    assert_eq!(
        op.handle_input(
            Input::Head {
                leg: prm.id,
                status: StatusCode::OK,
                headers: &HeaderMap::new()
            },
            clock.now()
        ),
        LegStatus::ReadMore
    );
    let mib = vec![b' '; 1024 * 1024];
    assert_eq!(
        op.handle_input(
            Input::Chunk {
                leg: prm.id,
                bytes: &mib
            },
            clock.now()
        ),
        LegStatus::Complete,
        "the leg ends at the cap"
    );
    let result = loop {
        match op.poll_output(clock.now()) {
            Output::Update(update) => session.apply(update),
            Output::Done(result) => break result,
            Output::Transmit(leg) => panic!("sent {:?} after a refused answer", leg.kind),
            _ => {}
        }
    };
    assert!(
        matches!(result, Err(Error::Authorization { .. })),
        "{result:?}"
    );
}
