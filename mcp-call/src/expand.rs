//! Secrets from the environment and from files: `${NAME}` and `${env:NAME}` (the form Cursor
//! and VS Code write) in `--header` values, in a `--config` entry's `url`, `headers` and `env`
//! values, and in `--header-file`, whose lines are `Name: value`.
//!
//! The rules: only `${...}` expands (a bare `$NAME` is left as written, as `mcp-remote` does);
//! a `${` with no `}` after it is left as written; a variable that is not set is an error naming
//! it, never an empty credential sent; any other `${...}` (`${input:...}`, `${}`) is an error
//! too: only the host that wrote it could fill it in. One pass: a value that itself holds
//! `${...}` is not expanded again.
//!
//! Nothing here ever puts a variable's value, or a header file's line, into an error: errors
//! name the variable, the header, the file and the line.
//!
//! Uses nothing of the binary crate, so that a fuzz harness can compile it by `#[path]`.

use std::fmt;
use std::path::Path;

/// Why a value could not be expanded. Its text names the variable, never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// `${NAME}` where NAME is not set.
    Unset(String),
    /// `${NAME}` where NAME's value is not UTF-8.
    NotUnicode(String),
    /// `${...}` whose inside is not a variable's name (escaped, as the operator wrote it).
    NotAVariable(String),
    /// A header's `${NAME}` whose value holds a line break or another control character.
    Unsendable(String),
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unset(name) => write!(
                f,
                "the environment variable {name} (written ${{{name}}}) is not set: nothing is sent in its place"
            ),
            Self::NotUnicode(name) => {
                write!(f, "the environment variable {name} is not valid UTF-8")
            }
            Self::NotAVariable(inside) => write!(
                f,
                "\"${{{inside}}}\" is not an environment variable: only ${{NAME}} and ${{env:NAME}} are expanded"
            ),
            Self::Unsendable(name) => write!(
                f,
                "the environment variable {name} holds a line break or another control character, which a header cannot carry"
            ),
        }
    }
}

/// What a variable's name may be: letters, digits and `_`.
fn is_name(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// This process's environment, as [`expand`] reads it.
pub(crate) fn from_env(name: &str) -> Option<Result<String, ()>> {
    std::env::var_os(name).map(|value| value.into_string().map_err(|_| ()))
}

/// `text` with each `${NAME}` and `${env:NAME}` replaced by what `lookup` gives for NAME
/// (`None`: unset; `Err`: not UTF-8). With `header`, a value holding a control character
/// (a header cannot carry it) is refused, naming the variable.
///
/// # Errors
/// The first variable that cannot be used, or the first `${...}` that is not a variable.
pub(crate) fn expand(
    text: &str,
    lookup: impl Fn(&str) -> Option<Result<String, ()>>,
    header: bool,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            // A `${` never closed is text.
            break;
        };
        out.push_str(&rest[..start]);
        let inside = &rest[start + 2..start + 2 + len];
        let name = inside.strip_prefix("env:").unwrap_or(inside);
        if !is_name(name) {
            let shown: String = inside.chars().take(100).collect();
            return Err(ExpandError::NotAVariable(shown.escape_debug().to_string()));
        }
        let value = match lookup(name) {
            None => return Err(ExpandError::Unset(name.to_owned())),
            Some(Err(())) => return Err(ExpandError::NotUnicode(name.to_owned())),
            Some(Ok(value)) => value,
        };
        if header && value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(ExpandError::Unsendable(name.to_owned()));
        }
        out.push_str(&value);
        rest = &rest[start + 2 + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The headers of a `--header-file`: one `Name: value` a line; blank lines and lines whose
/// first non-blank character is `#` are skipped; values are trimmed and expanded.
///
/// # Errors
/// A usage error naming the file and, for a line that is not `Name: value` or whose value
/// cannot be expanded, the line's number and the header (never the line's text).
pub(crate) fn read_header_file(
    path: &Path,
    lookup: impl Fn(&str) -> Option<Result<String, ()>>,
) -> Result<Vec<(String, String)>, String> {
    let shown = path.display();
    let text =
        std::fs::read_to_string(path).map_err(|err| format!("cannot read {shown}: {err}"))?;
    let mut headers = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!(
                "{shown}, line {number}: not 'Name: value' (no colon)"
            ));
        };
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!(
                "{shown}, line {number}: not 'Name: value' (no header name before the colon)"
            ));
        }
        let value = expand(value.trim(), &lookup, true).map_err(|err| {
            format!(
                "{shown}, line {number}, header \"{}\": {err}",
                name.escape_debug()
            )
        })?;
        headers.push((name.to_owned(), value));
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<Result<String, ()>> {
        match name {
            "TOKEN" => Some(Ok("s3cret".to_owned())),
            "TEAM" => Some(Ok("blue".to_owned())),
            "EMPTY" => Some(Ok(String::new())),
            "NEWLINE" => Some(Ok("abc\n".to_owned())),
            "BINARY" => Some(Err(())),
            "NESTED" => Some(Ok("${TOKEN}".to_owned())),
            _ => None,
        }
    }

    #[test]
    fn both_forms_expand_and_a_bare_dollar_or_an_unclosed_brace_stays() {
        let ok = |text: &str| expand(text, env, true).unwrap();
        assert_eq!(ok("Bearer ${TOKEN}"), "Bearer s3cret");
        assert_eq!(ok("Bearer ${env:TOKEN}"), "Bearer s3cret");
        assert_eq!(ok("${TEAM}-${env:TOKEN}/${TEAM}"), "blue-s3cret/blue");
        assert_eq!(ok("set but empty: [${EMPTY}]"), "set but empty: []");
        assert_eq!(ok("$TOKEN and $$ stay"), "$TOKEN and $$ stay");
        assert_eq!(ok("price ${ 5"), "price ${ 5", "a ${{ never closed is text");
        assert_eq!(ok("${TOKEN} then ${"), "s3cret then ${");
        assert_eq!(ok("no variables"), "no variables");
        assert_eq!(
            ok("${NESTED}"),
            "${TOKEN}",
            "one pass: a value is not expanded again"
        );
    }

    #[test]
    fn an_unset_or_unusable_variable_is_an_error_naming_it_and_never_its_value() {
        let err = expand("Bearer ${MISSING}", env, true).unwrap_err();
        assert_eq!(err, ExpandError::Unset("MISSING".into()));
        assert!(err.to_string().contains("MISSING"), "{err}");
        let err = expand("${TOKEN}${env:ALSO_MISSING}", env, true).unwrap_err();
        assert_eq!(err, ExpandError::Unset("ALSO_MISSING".into()));
        assert!(!err.to_string().contains("s3cret"), "{err}");
        assert_eq!(
            expand("${BINARY}", env, true).unwrap_err(),
            ExpandError::NotUnicode("BINARY".into())
        );
        // A line break a header cannot carry: the variable is named, its value is not shown.
        let err = expand("x ${NEWLINE}", env, true).unwrap_err();
        assert_eq!(err, ExpandError::Unsendable("NEWLINE".into()));
        assert!(!err.to_string().contains("abc"), "{err}");
        assert_eq!(
            expand("x ${NEWLINE}", env, false).unwrap(),
            "x abc\n",
            "not a header"
        );
        for inside in ["input:api-key", "", "env:", "A B", "a${B"] {
            let text = format!("${{{inside}}}");
            assert!(
                matches!(expand(&text, env, true), Err(ExpandError::NotAVariable(_))),
                "{text}"
            );
        }
    }

    fn header_file(
        name: &str,
        text: &str,
    ) -> (std::path::PathBuf, Result<Vec<(String, String)>, String>) {
        let dir = std::env::temp_dir().join(format!("mcp-call-expand-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let read = read_header_file(&path, env);
        let _ = std::fs::remove_file(&path);
        (path, read)
    }

    #[test]
    fn a_header_file_skips_comments_and_blank_lines_and_expands_values() {
        let (_, read) = header_file(
            "ok.headers",
            "# the team's token\n\nAuthorization: Bearer ${TOKEN}\r\n   # indented comment\n  X-Team:${env:TEAM}  \nX-Note: a # is not a comment here\nX-Empty:\n",
        );
        assert_eq!(
            read.unwrap(),
            [
                ("Authorization".to_owned(), "Bearer s3cret".to_owned()),
                ("X-Team".to_owned(), "blue".to_owned()),
                ("X-Note".to_owned(), "a # is not a comment here".to_owned()),
                ("X-Empty".to_owned(), String::new()),
            ]
        );
    }

    #[test]
    fn a_malformed_line_or_an_unset_variable_names_the_file_and_the_line_not_its_text() {
        let (_, read) = header_file("bad.headers", "# ok\nX-A: 1\nBearer s3cret-literal\n");
        let err = read.unwrap_err();
        assert!(err.contains("bad.headers, line 3"), "{err}");
        assert!(
            !err.contains("s3cret"),
            "the line's text is not shown: {err}"
        );
        let (_, read) = header_file("noname.headers", "\n: value\n");
        let err = read.unwrap_err();
        assert!(
            err.contains("noname.headers, line 2") && err.contains("no header name"),
            "{err}"
        );
        let (_, read) = header_file("unset.headers", "X-A: 1\n\nAuthorization: Bearer ${NOPE}\n");
        let err = read.unwrap_err();
        assert!(
            err.contains("unset.headers, line 3")
                && err.contains("\"Authorization\"")
                && err.contains("NOPE"),
            "{err}"
        );
        let err = read_header_file(Path::new("/nonexistent/tokens.headers"), env).unwrap_err();
        assert!(
            err.contains("cannot read /nonexistent/tokens.headers"),
            "{err}"
        );
    }
}
