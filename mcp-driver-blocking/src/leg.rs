//! The HTTP transport of the blocking driver ([`HttpWire`]): legs on the wire, their answers
//! fed back, a leg handed out while a stream is read sent between two reads of it.
//!
//! Nothing here decides anything: every head, chunk and failure goes to the operation, which
//! says whether to read on. The only waits are the operation's (a pause it asked for) and the
//! drain after an answer, bounded by the proto's [`drain_until`](mcp_proto::driver::drain_until).

use std::io::{self, Read};
use std::sync::Arc;
use std::time::Instant;

use mcp_proto::TransportErrorKind;
use mcp_proto::driver::{DRAIN_BYTES, Input, Leg, LegKind, LegStatus, Operation, TransportError};
use mcp_proto::{Clock, MonotonicClock};

use crate::bodies::{Body, CHUNK, Kept};
use crate::drive::Wire;
use crate::events::EventStream;
use crate::exchange::{body_error, request_error};
use crate::lanes::{Lane, Shared};
use crate::pump::Pumps;

/// The HTTP transport of the blocking driver: each leg's request sent on the calling thread,
/// its head fed at once, its body read one chunk per wait. A leg handed out while a stream is
/// read (the answer to a request the server sent on it) is sent in between two reads of it,
/// so the bodies still being read form a stack: the newest is read first.
pub(crate) struct HttpWire<'a> {
    http: &'a crate::http1::Http,
    shared: &'a Shared,
    /// The body read buffer, kept by the lane between legs and operations.
    buf: &'a mut Vec<u8>,
    /// The bodies still being read, the newest last: emptied when the wire is dropped, its
    /// allocation kept by the lane.
    bodies: &'a mut Vec<Body>,
    /// Once the standalone stream is opened: it and every body after it read on threads
    /// ([`Pumps`]), their bytes fed here in order.
    pumps: Option<Pumps>,
    /// Makes the standalone stream's lane, and names the operation's (for the pumps).
    lanes: LaneMaker<'a>,
    /// Over HTTP+SSE: the session's event stream (the client's, while this operation has the
    /// turn; else one this operation opened, offered to the client at its end). While one is
    /// open, every body is read on a thread too, beside it.
    events: &'a mut Option<EventStream>,
}

/// What the wire needs to read beside the operation's thread: the operation's lane, and a
/// lane of the client's for the standalone stream.
pub(crate) struct LaneMaker<'a> {
    pub(crate) work: Arc<Shared>,
    pub(crate) new_lane: &'a dyn Fn() -> Lane,
}

impl<'a> HttpWire<'a> {
    pub(crate) fn new(
        http: &'a crate::http1::Http,
        shared: &'a Shared,
        kept: &'a mut Kept,
        lanes: LaneMaker<'a>,
        events: &'a mut Option<EventStream>,
    ) -> Self {
        kept.buf.resize(CHUNK, 0);
        let mut wire = Self {
            http,
            shared,
            buf: &mut kept.buf,
            bodies: &mut kept.bodies,
            pumps: None,
            lanes,
            events,
        };
        if wire.events.is_some() {
            let sink = wire.pumps().sink();
            if let Some(stream) = wire.events.as_ref() {
                stream.attach(sink);
            }
        }
        wire
    }

    /// The pumps, made on first use: from then on every body is read on a thread of its own.
    fn pumps(&mut self) -> &mut Pumps {
        let pumps = self
            .pumps
            .get_or_insert_with(|| Pumps::new(Arc::clone(&self.lanes.work)));
        for body in self.bodies.drain(..) {
            pumps.pump(body);
        }
        pumps
    }

    /// Over HTTP+SSE: sends the GET that opens the session's event stream on a lane of its
    /// own and feeds its head; when the operation reads on, its body is the session's stream
    /// from now on (replacing any before it), read on a thread of its own.
    fn open_events(&mut self, op: &mut Operation, leg: Leg) {
        let mut lane = (self.lanes.new_lane)();
        let stream_lane = Arc::clone(lane.shared());
        let (http, shared, _) = lane.parts();
        shared.begin_leg();
        shared.leg_ends_at(Some(leg.ends_at));
        let sent = http.send_stream(leg.request, leg.timeout);
        shared.leg_ends_at(None);
        let now = MonotonicClock.now();
        let response = match sent {
            Ok(response) => response,
            Err(err) => {
                let error = request_error(err, shared.connect_failed());
                op.handle_input(Input::Failed { leg: leg.id, error }, now);
                return;
            }
        };
        let (head, body) = response.into_parts();
        if op.handle_input(Input::head(leg.id, &head), now) == LegStatus::Complete {
            return;
        }
        // The old stream (if any) is dropped first: its connection closes.
        *self.events = None;
        match EventStream::read(body, stream_lane) {
            Ok(stream) => {
                stream.attach(self.pumps().sink());
                *self.events = Some(stream);
            }
            Err(err) => {
                let detail = format!("the event stream's thread could not start: {err}");
                let error = TransportError::new(TransportErrorKind::Io, detail);
                op.handle_input(Input::EventsEnded { error: Some(error) }, now);
            }
        }
    }

    /// The lane's sockets are shut down at the end of the grant of the body read next (the
    /// newest), if any: armed once for a leg and its body's reads, not around each read.
    fn arm_next_read(&self) {
        self.shared
            .leg_ends_at(self.bodies.last().map(|body| body.ends_at));
    }

    /// The answer is in. If the rest of the body ends within the proto's drain bounds, read it
    /// so the connection goes back to the pool; otherwise drop the reader (and with it the
    /// connection), however long the server meant to keep the stream open.
    fn drain(&mut self, mut body: Body, now: Instant) {
        // A leg that ran out has nothing worth draining.
        if now >= body.ends_at {
            return;
        }
        self.shared
            .set_drain(Some(mcp_proto::driver::drain_until(now, body.ends_at)));
        let mut left = DRAIN_BYTES;
        while left > 0 {
            match body.reader.read(self.buf) {
                Ok(n) if n > 0 => left = left.saturating_sub(n),
                _ => break,
            }
        }
        self.shared.set_drain(None);
    }
}

impl Drop for HttpWire<'_> {
    /// The operation is over: the bodies it did not read to their end close their
    /// connections now, not when the lane's next operation starts.
    fn drop(&mut self) {
        self.bodies.clear();
        self.shared.leg_ends_at(None);
    }
}

impl Wire for HttpWire<'_> {
    fn transmit(&mut self, op: &mut Operation, leg: Leg) {
        let clock = MonotonicClock;
        match leg.kind {
            // The standalone stream is read beside the other legs: on a lane and a thread of
            // its own, and from now on every body on a thread too (see `pump`).
            LegKind::Listen => {
                let lane = (self.lanes.new_lane)();
                self.pumps().listen(lane, leg);
                return;
            }
            LegKind::Events => return self.open_events(op, leg),
            LegKind::Hangup => {
                // Dropped, its connection closes: the server's session ends with it.
                *self.events = None;
                op.handle_input(Input::EventsEnded { error: None }, clock.now());
                return;
            }
            _ => {}
        }
        // Cancelled already, or while sending: the loop passes the cancel on.
        if self.shared.is_cancelled() && !op.is_finished() {
            return;
        }
        self.shared.begin_leg();
        let (id, ends_at) = (leg.id, leg.ends_at);
        self.shared.leg_ends_at(Some(ends_at));
        let sent = self.http.send(leg.request, leg.timeout);
        let now = clock.now();
        if self.shared.is_cancelled() && !op.is_finished() {
            return;
        }
        match sent {
            Ok(response) => {
                let (head, body) = response.into_parts();
                // On Complete, dropping an unread body closes its connection; an empty one is
                // already back in the pool.
                if op.handle_input(Input::head(id, &head), now) == LegStatus::ReadMore {
                    let body = Body {
                        id,
                        ends_at,
                        reader: body,
                    };
                    match &mut self.pumps {
                        Some(pumps) => pumps.pump(body),
                        None => self.bodies.push(body),
                    }
                }
            }
            Err(err) => {
                let error = request_error(err, self.shared.connect_failed());
                op.handle_input(Input::Failed { leg: id, error }, now);
            }
        }
        // Still armed at this leg's end when its body is read next (no map update).
        self.arm_next_read();
    }

    fn wait(&mut self, op: &mut Operation, until: Instant) {
        if let Some(pumps) = &self.pumps {
            pumps.wait(op, until);
            return;
        }
        let clock = MonotonicClock;
        // A body the operation let go (its stream is over with the operation) is dropped.
        self.bodies.retain(|body| op.is_in_flight(body.id));
        let Some(mut body) = self.bodies.pop() else {
            // Nothing is read: a pause the proto asked for (before resuming a stream the
            // server closed). A cancel cuts it short.
            self.shared.sleep_until(until);
            op.handle_input(Input::Timeout, clock.now());
            return;
        };
        // Armed already when this body's leg armed it last (no map update then).
        self.shared.leg_ends_at(Some(body.ends_at));
        let read = body.reader.read(self.buf);
        let now = clock.now();
        if self.shared.is_cancelled() && !op.is_finished() {
            return;
        }
        let id = body.id;
        match read {
            Ok(0) => {
                op.handle_input(Input::End { leg: id }, now);
            }
            Ok(n) => {
                let bytes = &self.buf[..n];
                match op.handle_input(Input::Chunk { leg: id, bytes }, now) {
                    LegStatus::ReadMore => self.bodies.push(body),
                    LegStatus::Complete => self.drain(body, now),
                }
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => self.bodies.push(body),
            Err(err) => {
                let error = body_error(err);
                op.handle_input(Input::Failed { leg: id, error }, now);
            }
        }
        self.arm_next_read();
    }
}
