//! Which of the server's tools a run shows and lets be called: `--tool GLOB` (an allowlist)
//! and `--ignore-tool GLOB` (mcp-remote's flag, same meaning), and a `--config` entry's
//! `"tools"` and `"ignoreTools"`. A tool is visible when it matches at least one pattern of
//! every allowlist given (the flags', the entry's) and no ignore pattern from anywhere: each
//! source can only hide more. A hidden tool is left out of every listing and its call is refused
//! before anything is sent. Plain functions of their inputs: nothing here talks to a server.

use mcp_proto::{Listing, Tool};

/// The patterns of one source (the flags, or the entry), and how to name that source.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Patterns {
    /// `--tool`, `"tools" of --server "name"`, ...
    source: String,
    globs: Vec<String>,
}

/// The tool filters of a run; the default shows every tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ToolFilter {
    /// Each allowlist: a tool must match one pattern of each.
    allow: Vec<Patterns>,
    /// Ignore patterns: a tool that matches any one is hidden.
    ignore: Vec<Patterns>,
}

impl ToolFilter {
    /// Adds an allowlist named `source` (none when `globs` is empty).
    pub(crate) fn allowing(mut self, source: impl Into<String>, globs: &[String]) -> Self {
        if !globs.is_empty() {
            self.allow.push(Patterns {
                source: source.into(),
                globs: globs.to_vec(),
            });
        }
        self
    }

    /// Adds ignore patterns named `source`.
    pub(crate) fn ignoring(mut self, source: impl Into<String>, globs: &[String]) -> Self {
        if !globs.is_empty() {
            self.ignore.push(Patterns {
                source: source.into(),
                globs: globs.to_vec(),
            });
        }
        self
    }

    /// Whether the tool named `name` is hidden, and why: the ignore pattern it matches (the
    /// first), or the allowlist none of whose patterns it matches.
    pub(crate) fn hides(&self, name: &str) -> Option<String> {
        for ignore in &self.ignore {
            if let Some(glob) = ignore.globs.iter().find(|glob| matches(glob, name)) {
                return Some(format!("it matches {} \"{glob}\"", ignore.source));
            }
        }
        let missed =
            (self.allow.iter()).find(|allow| !allow.globs.iter().any(|g| matches(g, name)));
        missed.map(|allow| {
            let globs: Vec<String> = allow.globs.iter().map(|g| format!("\"{g}\"")).collect();
            format!(
                "it matches no {} pattern ({})",
                allow.source,
                globs.join(", ")
            )
        })
    }

    /// `tools` without the hidden ones (the listing's caching hints kept).
    pub(crate) fn visible(&self, mut tools: Listing<Tool>) -> Listing<Tool> {
        tools.items.retain(|tool| self.hides(&tool.name).is_none());
        tools
    }
}

/// Whether `name` matches `glob`, case-sensitively: `*` stands for any run of characters (none
/// too), `?` for exactly one, every other character for itself.
pub(crate) fn matches(glob: &str, name: &str) -> bool {
    let (glob, name): (Vec<char>, Vec<char>) = (glob.chars().collect(), name.chars().collect());
    let (mut g, mut n) = (0, 0);
    // The last `*` seen, and where in `name` its run would end if it took one more character.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match glob.get(g) {
            Some('*') => {
                star = Some((g, n));
                g += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                g += 1;
                n += 1;
            }
            // A mismatch: the last `*` takes one more character, or there is no match.
            _ => match star {
                Some((at, taken)) => {
                    g = at + 1;
                    n = taken + 1;
                    star = Some((at, taken + 1));
                }
                None => return false,
            },
        }
    }
    glob[g..].iter().all(|c| *c == '*')
}

/// A `--tool` or `--ignore-tool` value: a pattern that could match a tool.
pub(crate) fn parse_glob(text: &str) -> Result<String, String> {
    match text.is_empty() {
        true => Err("an empty pattern matches no tool".to_owned()),
        false => Ok(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_glob_has_stars_and_question_marks_and_is_case_sensitive() {
        for (glob, name) in [
            ("echo", "echo"),
            ("*", "anything"),
            ("*", ""),
            ("delete*", "delete_user"),
            ("delete*", "delete"),
            ("*account", "getAccount_account"),
            ("*admin*", "set_admin_role"),
            ("a?d", "add"),
            ("?*", "x"),
            ("a*b*c", "aXbYbZc"),
            ("*.*", "files.read"),
            ("é*", "écrire"),
            ("**x", "x"),
        ] {
            assert!(matches(glob, name), "{glob} should match {name}");
        }
        for (glob, name) in [
            ("echo", "echo2"),
            ("echo", "ech"),
            ("Echo", "echo"),
            ("delete*", "undelete"),
            ("a?d", "ad"),
            ("a?d", "aadd"),
            ("?", ""),
            ("a*b*c", "aXbYc_"),
            ("*account", "getAccount"),
        ] {
            assert!(!matches(glob, name), "{glob} should not match {name}");
        }
    }

    fn listing(names: &[&str]) -> Listing<Tool> {
        let tool = |name: &&str| Tool {
            name: (*name).to_owned(),
            raw: json!({"name": name}).as_object().cloned().unwrap(),
        };
        Listing {
            items: names.iter().map(tool).collect(),
            cache: None,
        }
    }

    fn names(tools: &Listing<Tool>) -> Vec<&str> {
        tools.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn a_tool_must_match_every_allowlist_and_no_ignore_pattern() {
        let all = listing(&["echo", "add", "sleep", "fail", "delete_user"]);
        assert_eq!(ToolFilter::default().visible(all.clone()), all, "no filter");

        let strings = |globs: &[&str]| globs.iter().map(|g| (*g).to_owned()).collect::<Vec<_>>();
        let ignoring =
            ToolFilter::default().ignoring("--ignore-tool", &strings(&["delete*", "f?il"]));
        assert_eq!(
            names(&ignoring.visible(all.clone())),
            ["echo", "add", "sleep"]
        );
        assert_eq!(
            ignoring.hides("fail").as_deref(),
            Some("it matches --ignore-tool \"f?il\"")
        );
        assert_eq!(ignoring.hides("echo"), None);

        // Both: allowed and not ignored.
        let both = ignoring
            .clone()
            .allowing("--tool", &strings(&["e*", "a*", "delete*"]));
        assert_eq!(names(&both.visible(all.clone())), ["echo", "add"]);
        assert_eq!(
            both.hides("sleep").as_deref(),
            Some("it matches no --tool pattern (\"e*\", \"a*\", \"delete*\")")
        );
        assert_eq!(
            both.hides("delete_user").as_deref(),
            Some("it matches --ignore-tool \"delete*\""),
            "an ignore pattern wins over the allowlist"
        );

        // The entry's allowlist and the flags' both apply: each can only hide more.
        let entry = both.allowing("\"tools\" of --server \"s\"", &strings(&["add"]));
        assert_eq!(names(&entry.visible(all)), ["add"]);
        assert_eq!(
            entry.hides("echo").as_deref(),
            Some("it matches no \"tools\" of --server \"s\" pattern (\"add\")")
        );
    }
}
