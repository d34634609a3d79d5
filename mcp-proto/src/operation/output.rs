//! A tool's result held to the output its tool declared, before the operation hands it over.
//!
//! What this part is: the one check between a call's last answer and its outcome. It looks
//! up what the session's last tools listing declared of the called tool's output (see
//! [`OutputValidation`](crate::schema::OutputValidation)) and refuses a result that breaks it,
//! with the result inside the error. It must never send anything, wait, or alter a result it
//! lets through: a tool the listing declared nothing for, or a session that read no listing,
//! passes unchecked.

use std::time::Duration;

use super::view::View;
use super::{Action, Outcome};
use crate::Error;
use mcp_auth::{QUOTE_LIMIT, clip};

/// `outcome`, or the error that refuses it: a call's result checked against its tool's
/// declared output when the session knows it and the configuration asks for it. The check
/// lasts no longer than `left`, what the budget has left with the one unit it may overrun by:
/// a check that would take longer is not run ([`OutputProblem::Unchecked`]).
///
/// [`OutputProblem::Unchecked`]: crate::schema::OutputProblem::Unchecked
pub(super) fn check(
    outcome: Outcome,
    action: &Action,
    session: &View,
    left: Duration,
) -> Result<Outcome, Error> {
    // A resumed task's result is its call's: held to the tool the call named, when known.
    let name = match action {
        Action::CallTool { name, .. } => name,
        Action::ResumeTask(task) => match &task.tool {
            Some(tool) => tool,
            None => return Ok(outcome),
        },
        _ => return Ok(outcome),
    };
    let Outcome::Call(result) = outcome else {
        return Ok(outcome);
    };
    let declared = session.tool_schemas().and_then(|schemas| schemas.get(name));
    let checked = match declared {
        Some(declared) if session.config().output_validation().is_on() => {
            declared.check(&result, left)
        }
        _ => Ok(()),
    };
    match checked {
        Ok(()) => Ok(Outcome::Call(result)),
        Err(problem) => Err(Error::OutputInvalid {
            server: session.config().label().to_owned(),
            tool: clip(name, QUOTE_LIMIT),
            problem: Box::new(problem),
            result: Box::new(result),
        }),
    }
}
