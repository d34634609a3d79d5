//! An operation assembled from its parts, as it starts: what the session lends it (its view,
//! the stdout framer), its era and first step (`progress`), its deadline and timers
//! (`grant`), and every other part empty.
//!
//! Only the operation's constructor uses this, and no part imports it: it is where the parts
//! meet once, so that none of them has to know the others.

use std::collections::VecDeque;

use super::answer::Answering;
use super::authorize::Authorizing;
use super::ending::Ending;
use super::grant::Grants;
use super::listen::Listen;
use super::progress::Start;
use super::replies::Replies;
use super::responses::Responses;
use super::resume::Resumption;
use super::{Action, Operation, Outcome};
use crate::deadline::OperationDeadline;
use crate::session::Session;

/// The operation for `action` under `deadline`, starting from what `session` knows. A close
/// with nothing to close is over at once; an operation that needs its session is offered it.
pub(super) fn operation(
    session: &mut Session,
    action: Action,
    deadline: OperationDeadline,
) -> Operation {
    let start = Start::of(session, &action);
    let (view, stdout) = start.lend(session);
    let config = view.config();
    let listen = Listen::for_operation(config, &action, start.era.modern().is_some());
    let nothing_to_close = start.nothing_to_close;
    let mut op = Operation {
        grants: Grants::new(deadline, config.is_stdio()),
        responses: Responses::new(listen),
        stdout,
        answering: Answering::for_action(&action),
        progress: start.progress(action, &view),
        session: view,
        events: VecDeque::new(),
        replies: Replies::default(),
        resume: Resumption::default(),
        auth: Authorizing::default(),
        ending: Ending::default(),
    };
    if nothing_to_close {
        // Ended before it began, as every operation ends (the stdout framer goes back).
        op.finish(Ok(Outcome::Closed));
    }
    op.handle_session(session);
    op
}
