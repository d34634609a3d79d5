//! The skills extension: `skills/list` is a listing like any other; loading a skill is one
//! operation whose legs read its files (`SKILL.md` first), each verified against the listing
//! (size, digest, frontmatter) before the next is read, all under one budget.

mod support;

use mcp_proto::driver::LegKind;
use mcp_proto::request::{ReadResource, Request as _};
use mcp_proto::{
    Action, Clock, Error, ListKind, ManualClock, ProtocolVersion, Session, SessionConfig,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{Answer, drive};

const SKILL: &str = "skill://pdf-processing/SKILL.md";
const FORMS: &str = "skill://pdf-processing/references/FORMS.md";
const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
const FORMS_MD: &str = "Supporting content.\n";

fn digest(text: &str) -> String {
    let hex: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

fn entry() -> Value {
    json!({"uri": SKILL,
        "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
        "resources": [
            {"uri": SKILL, "digest": digest(SKILL_MD), "size": SKILL_MD.len()},
            {"uri": FORMS, "digest": digest(FORMS_MD), "size": FORMS_MD.len()}]})
}

fn session() -> Session {
    Session::new(
        SessionConfig::new("http://mcp.example.test:8080/mcp")
            .unwrap()
            .with_protocol_version(ProtocolVersion::MODERN),
    )
}

fn read(uri: &str, text: &str) -> Answer {
    Answer::Result(json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}))
}

/// The listed skill, through a `skills/list` operation.
fn listed(session: &mut Session, clock: &ManualClock) -> mcp_proto::skills::Skill {
    let op = session.list(ListKind::Skills, clock.now());
    let run = drive(session, op, clock, &[], |_, _| {
        Answer::Result(json!({"skills": [entry()], "ttlMs": 0, "cacheScope": "private"}))
    });
    assert_eq!(run.methods(), ["skills/list"]);
    let skills = run
        .result
        .unwrap()
        .into_listing::<mcp_proto::skills::Skill>()
        .unwrap();
    assert_eq!(skills[0].name(), Some("pdf-processing"));
    skills.into_items().remove(0)
}

#[test]
fn listing_reads_no_file_and_loading_reads_each_verified_in_one_budget() {
    let clock = ManualClock::new();
    let mut session = session();
    let skill = listed(&mut session, &clock);
    let op = session.start(
        Action::LoadSkill(skill),
        session.default_deadline(clock.now()),
    );
    let run = drive(&mut session, op, &clock, &[3.0, 1.0], |_, n| match n {
        1 => read(SKILL, SKILL_MD),
        _ => read(FORMS, FORMS_MD),
    });
    let loaded = run.result.clone().unwrap().into_skill().unwrap();
    assert_eq!(loaded.instructions(), SKILL_MD);
    assert_eq!(
        loaded.files[1],
        (FORMS.to_owned(), FORMS_MD.as_bytes().to_vec())
    );
    assert_eq!(run.methods(), ["resources/read", "resources/read"]);
    let uris: Vec<&Value> = run.legs.iter().map(|l| &l.body["params"]["uri"]).collect();
    assert_eq!(uris, [SKILL, FORMS], "SKILL.md first");
    assert_eq!(run.legs[0].request.headers()["mcp-name"], SKILL);
    assert_eq!(run.grant_secs(), [20, 17], "one budget for the whole skill");
}

#[test]
fn a_file_that_fails_verification_stops_the_load_before_the_next_read() {
    let tampered_frontmatter = SKILL_MD.replace(
        "description: Extract, fill, and assemble PDF documents",
        "description: Exfiltrate credentials",
    );
    for (served, listed_as, says) in [
        (
            SKILL_MD.replace("Skill body.", "Evil body!!"),
            None,
            "digest",
        ),
        (format!("{SKILL_MD}extra bytes\n"), None, "size"),
        (
            tampered_frontmatter.clone(),
            Some(tampered_frontmatter.clone()),
            "frontmatter",
        ),
    ] {
        let clock = ManualClock::new();
        let mut session = session();
        let mut entry = entry();
        if let Some(text) = &listed_as {
            // The listing agrees with the file's bytes: only its frontmatter tells.
            entry["resources"][0]["digest"] = json!(digest(text));
            entry["resources"][0]["size"] = json!(text.len());
        }
        let op = session.list(ListKind::Skills, clock.now());
        let run = drive(&mut session, op, &clock, &[], |_, _| {
            Answer::Result(json!({"skills": [entry.clone()]}))
        });
        let skill = run
            .result
            .unwrap()
            .into_listing::<mcp_proto::skills::Skill>()
            .unwrap()
            .into_items()
            .remove(0);
        let op = session.start(
            Action::LoadSkill(skill),
            session.default_deadline(clock.now()),
        );
        let run = drive(&mut session, op, &clock, &[], |_, _| read(SKILL, &served));
        let Err(Error::SkillRejected { uri, reason, .. }) = &run.result else {
            panic!("{says}: {:?}", run.result)
        };
        assert_eq!(uri, SKILL);
        assert!(reason.contains(says), "{reason}");
        assert_eq!(run.legs.len(), 1, "{says}: FORMS.md was not read");
        assert_eq!(run.legs[0].kind, LegKind::Request(ReadResource::METHOD));
    }
}
