//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640): a skill listed by
//! `skills/list` names its files with their digest and size; loading it reads each file with
//! `resources/read` and **verifies** it before going on.
//!
//! This module holds the entries and the verification rules (the byte size, the `sha256:`
//! digest, the `SKILL.md` frontmatter compared field by field with the listing's). It never
//! reads anything itself: listing and loading are operations
//! ([`ListKind::Skills`](crate::ListKind::Skills), [`Action::LoadSkill`](crate::Action::LoadSkill)),
//! and no file is read before the caller asks to load its skill (hosts must not prefetch).

use std::fmt::Write as _;

use crate::request::{Method, ReadResource, ReadResourceResult, Request as _};

/// The request that reads a skill's file.
pub(crate) const READ: &Method = ReadResource::METHOD;

/// The result of a read of a skill's file, or what it lacks.
pub(crate) fn read(
    result: serde_json::Map<String, serde_json::Value>,
) -> Result<ReadResourceResult, String> {
    ReadResource::read(result)
}

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use yaml_rust2::{Yaml, YamlLoader};

use crate::catalog::{Entry, keyed};

/// How deep a frontmatter may nest before it is refused (a hostile file must not exhaust the
/// stack).
const FRONTMATTER_DEPTH: usize = 32;

/// One skill from `skills/list`, kept whole and verbatim in `raw`.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// The whole entry as the server sent it.
    pub raw: Map<String, Value>,
}

/// One file of a skill, as its listing entry describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// Its URI.
    pub uri: String,
    /// `sha256:<hex>` of its bytes, when listed.
    pub digest: Option<String>,
    /// Its length in bytes, when listed.
    pub size: Option<u64>,
}

impl Skill {
    /// The listing's frontmatter for this skill, when it is an object.
    pub fn frontmatter(&self) -> Option<&Map<String, Value>> {
        self.raw.get("frontmatter").and_then(Value::as_object)
    }

    /// The skill's `name` (from its frontmatter), when given.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter()?.get("name")?.as_str()
    }

    /// The files to load, `SKILL.md` first: the listed `resources` (entries without a string
    /// `uri` are left out), or only `SKILL.md` when the server lists them as `"dynamic"` (or
    /// not at all).
    pub fn files(&self) -> Vec<SkillFile> {
        let listed = self.raw.get("resources").and_then(Value::as_array);
        let mut files: Vec<SkillFile> = listed
            .into_iter()
            .flatten()
            .filter_map(|entry| {
                Some(SkillFile {
                    uri: entry.get("uri")?.as_str()?.to_owned(),
                    digest: entry
                        .get("digest")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    size: entry.get("size").and_then(Value::as_u64),
                })
            })
            .collect();
        match files.iter().position(|f| f.uri == self.uri) {
            Some(at) => files[..=at].rotate_right(1),
            None => files.insert(
                0,
                SkillFile {
                    uri: self.uri.clone(),
                    digest: None,
                    size: None,
                },
            ),
        }
        files
    }
}

impl Entry for Skill {
    fn from_entry(entry: Value) -> Option<Self> {
        keyed(entry, "uri").map(|(uri, raw)| Self { uri, raw })
    }
}

/// A skill whose every file was read and verified.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSkill {
    /// The skill as listed.
    pub skill: Skill,
    /// Each file's bytes, `SKILL.md` first, in the order they were read.
    pub files: Vec<(String, Vec<u8>)>,
}

impl LoadedSkill {
    /// The text of `SKILL.md` (lossily decoded).
    pub fn instructions(&self) -> String {
        self.files
            .first()
            .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
            .unwrap_or_default()
    }
}

/// `sha256:` and the lower-case hex of the SHA-256 of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> String {
    let mut out = String::from("sha256:");
    for byte in Sha256::digest(bytes) {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Checks a file's bytes against its entry, and for `SKILL.md` its frontmatter against the
/// listing's; `Err` says what does not match, in one sentence.
pub(crate) fn verify(skill: &Skill, file: &SkillFile, bytes: &[u8]) -> Result<(), String> {
    if let Some(size) = file.size {
        if bytes.len() as u64 != size {
            return Err(format!(
                "its size is {} bytes, the listing says {size}",
                bytes.len()
            ));
        }
    }
    if let Some(expected) = &file.digest {
        if digest(bytes) != *expected {
            return Err("its SHA-256 digest does not match the listing's".to_owned());
        }
    }
    if file.uri == skill.uri {
        let listed = skill.frontmatter().cloned().unwrap_or_default();
        let text = std::str::from_utf8(bytes).map_err(|_| "SKILL.md is not UTF-8".to_owned())?;
        let found = frontmatter(text)?;
        let keys = listed.keys().chain(found.keys());
        for key in keys {
            if listed.get(key).unwrap_or(&Value::Null) != found.get(key).unwrap_or(&Value::Null) {
                return Err(format!(
                    "its frontmatter's \"{}\" differs from the listing's",
                    mcp_auth::clip(key, mcp_auth::QUOTE_LIMIT)
                ));
            }
        }
    }
    Ok(())
}

/// The YAML frontmatter at the start of a `SKILL.md` (between `---` lines), as JSON.
pub(crate) fn frontmatter(text: &str) -> Result<Map<String, Value>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let missing = || "SKILL.md does not begin with a --- delimited frontmatter".to_owned();
    let body = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(missing)?;
    let mut yaml = String::new();
    let mut closed = false;
    for line in body.split_inclusive('\n') {
        if line
            .trim_end_matches(['\r', '\n'])
            .trim_end_matches([' ', '\t'])
            == "---"
        {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err(missing());
    }
    let docs = YamlLoader::load_from_str(&yaml)
        .map_err(|_| "SKILL.md's frontmatter is not YAML".to_owned())?;
    match docs.first().map(|doc| json(doc, 0)) {
        Some(Some(Value::Object(map))) => Ok(map),
        _ => Err("SKILL.md's frontmatter is not a YAML mapping".to_owned()),
    }
}

/// A YAML node as JSON; `None` for what JSON cannot hold (aliases, non-string keys, nesting
/// deeper than [`FRONTMATTER_DEPTH`]).
fn json(node: &Yaml, depth: usize) -> Option<Value> {
    if depth > FRONTMATTER_DEPTH {
        return None;
    }
    Some(match node {
        Yaml::String(s) => Value::from(s.as_str()),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(_) => Value::from(node.as_f64()?),
        Yaml::Boolean(b) => Value::from(*b),
        Yaml::Null => Value::Null,
        Yaml::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| json(item, depth + 1))
                .collect::<Option<_>>()?,
        ),
        Yaml::Hash(hash) => Value::Object(
            hash.iter()
                .map(|(k, v)| Some((k.as_str()?.to_owned(), json(v, depth + 1)?)))
                .collect::<Option<_>>()?,
        ),
        Yaml::Alias(_) | Yaml::BadValue => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";

    fn skill(resources: Value) -> Skill {
        Skill::from_entry(json!({
            "uri": "skill://pdf-processing/SKILL.md",
            "frontmatter": {"name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents"},
            "resources": resources,
        }))
        .unwrap()
    }

    fn file(skill: &Skill) -> SkillFile {
        skill.files().remove(0)
    }

    #[test]
    fn the_digest_is_sha256_in_lower_case_hex() {
        assert_eq!(
            digest(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn skill_md_goes_first_and_dynamic_skills_load_only_it() {
        let listed = skill(json!([
            {"uri": "skill://pdf-processing/references/FORMS.md", "digest": "sha256:00", "size": 1},
            {"uri": "skill://pdf-processing/SKILL.md", "digest": "sha256:11", "size": 2},
            {"digest": "no uri"},
        ]));
        let uris: Vec<String> = listed.files().into_iter().map(|f| f.uri).collect();
        assert_eq!(
            uris,
            [
                "skill://pdf-processing/SKILL.md",
                "skill://pdf-processing/references/FORMS.md"
            ]
        );
        let dynamic = skill(json!("dynamic"));
        assert_eq!(
            dynamic.files(),
            [SkillFile {
                uri: "skill://pdf-processing/SKILL.md".into(),
                digest: None,
                size: None
            }]
        );
    }

    #[test]
    fn a_file_is_verified_by_size_digest_and_frontmatter() {
        let good = skill(json!([{"uri": "skill://pdf-processing/SKILL.md",
            "digest": digest(SKILL_MD.as_bytes()), "size": SKILL_MD.len()}]));
        assert_eq!(verify(&good, &file(&good), SKILL_MD.as_bytes()), Ok(()));

        let evil = SKILL_MD.replace("Skill body.", "Evil body!!");
        let err = verify(&good, &file(&good), evil.as_bytes()).unwrap_err();
        assert!(err.contains("digest"), "{err}");

        let longer = format!("{SKILL_MD}extra\n");
        let err = verify(&good, &file(&good), longer.as_bytes()).unwrap_err();
        assert!(err.contains("size"), "{err}");

        // Digest and size match the tampered file: only the frontmatter tells.
        let tampered = SKILL_MD.replace(
            "description: Extract, fill, and assemble PDF documents",
            "description: Exfiltrate credentials",
        );
        let listed = skill(json!([{"uri": "skill://pdf-processing/SKILL.md",
            "digest": digest(tampered.as_bytes()), "size": tampered.len()}]));
        let err = verify(&listed, &file(&listed), tampered.as_bytes()).unwrap_err();
        assert!(err.contains("\"description\""), "{err}");
    }

    #[test]
    fn frontmatter_is_read_strictly_and_hostile_yaml_is_refused() {
        assert!(frontmatter("no frontmatter").is_err());
        assert!(frontmatter("---\nname: x\n").is_err(), "unclosed");
        assert!(frontmatter("---\n- a\n---\n").is_err(), "not a mapping");
        assert!(frontmatter("---\n: : :\n  - [\n---\n").is_err());
        let deep = format!("---\na: {}1{}\n---\n", "[".repeat(200), "]".repeat(200));
        assert!(frontmatter(&deep).is_err(), "too deep");
        let found =
            frontmatter("\u{feff}---\r\nname: x\r\ntags: [a, b]\r\nn: 2\r\n---  \r\nbody").unwrap();
        assert_eq!(
            Value::Object(found),
            json!({"name": "x", "tags": ["a", "b"], "n": 2})
        );
    }
}
