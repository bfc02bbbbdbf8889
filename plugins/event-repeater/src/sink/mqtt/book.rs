//! Our own record of every publish handed to rumqttc and not yet done (see
//! the module docs of [`crate::sink::mqtt`]: rumqttc drops unacknowledged
//! publishes after a reconnect into a new session).
//!
//! At most `limit` of them are on the wire at once. The limit starts at the
//! window (`--inflight`) and is lowered by [`Book::lower`] when the broker
//! drops the connection on a burst; what is over it waits in `resend`,
//! oldest first, and goes out as acknowledgements free places, before any
//! new event, so nothing is reordered.

use std::collections::VecDeque;

use rumqttc::{EventLoop, Publish, QoS, Request};

use crate::buffer::Record;

struct Slot {
    rec: Record,
    /// Written at least once (so a later write is a republish).
    sent: bool,
    /// PUBREC received (QoS 2): the broker holds it, PUBREL is next.
    received: bool,
    /// Waiting in `resend`, not on the wire.
    queued: bool,
}

/// Our own record of every publish handed to rumqttc and not yet done.
pub struct Book {
    pub qos: QoS,
    retain: bool,
    /// Indexed by packet id (1..=window); QoS 1 and 2.
    slots: Vec<Option<Slot>>,
    free: VecDeque<u16>,
    /// Slots in use (on the wire or in `resend`).
    pub used: usize,
    /// Slots on the wire (handed to the event loop).
    wire: usize,
    /// Packet ids to publish again, oldest event first.
    resend: VecDeque<u16>,
    /// Publishes allowed on the wire at once (QoS 1 and 2).
    limit: usize,
    /// QoS 0 publishes handed over and not yet written, in order.
    qos0: VecDeque<Record>,
    window: usize,
}

impl Book {
    pub fn new(qos: QoS, retain: bool, window: u16) -> Book {
        Book {
            qos,
            retain,
            slots: (0..=window).map(|_| None).collect(),
            free: (1..=window).collect(),
            used: 0,
            wire: 0,
            resend: VecDeque::new(),
            limit: usize::from(window),
            qos0: VecDeque::new(),
            window: usize::from(window),
        }
    }

    pub fn len(&self) -> usize {
        self.used + self.qos0.len()
    }

    /// Publishes allowed on the wire at once now.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Publishes on the wire now (QoS 1 and 2).
    pub fn on_wire(&self) -> usize {
        self.wire
    }

    /// Lowers the limit after a refused burst: to half, or to `acked`
    /// (what the broker did take at once) if that is more, and below the
    /// old limit; never below 1. The new limit.
    pub fn lower(&mut self, acked: usize) -> usize {
        let to = (self.limit / 2).max(acked).min(self.limit - 1);
        self.limit = to.max(1);
        self.limit
    }

    /// Room for a new event: nothing waits to be sent again and the wire
    /// is below the limit.
    pub fn has_room(&self) -> bool {
        match self.qos {
            QoS::AtMostOnce => self.qos0.len() < self.window,
            _ => self.resend.is_empty() && self.wire < self.limit && !self.free.is_empty(),
        }
    }

    fn publish(&self, rec: &Record, pkid: u16, dup: bool) -> Request {
        // rumqttc wants a String; `String::from` copies, where `to_string`
        // on an `Arc<str>` went through `Display` (200 instructions more).
        let mut p = Publish::from_bytes(
            String::from(&*rec.sink_topic),
            self.qos,
            rec.payload.clone(),
        );
        p.retain = self.retain;
        p.pkid = pkid;
        p.dup = dup;
        Request::Publish(p)
    }

    /// Hands `rec` to the event loop; `Err(rec)` if there was no room.
    pub fn hand_over(&mut self, rec: Record, el: &mut EventLoop) -> Result<(), Record> {
        if self.qos == QoS::AtMostOnce {
            if self.qos0.len() >= self.window {
                return Err(rec);
            }
            el.pending.push_back(self.publish(&rec, 0, false));
            self.qos0.push_back(rec);
            return Ok(());
        }
        if !self.has_room() {
            return Err(rec);
        }
        let Some(pkid) = self.free.pop_front() else {
            return Err(rec);
        };
        el.pending.push_back(self.publish(&rec, pkid, false));
        self.slots[pkid as usize] = Some(Slot {
            rec,
            sent: false,
            received: false,
            queued: false,
        });
        self.used += 1;
        self.wire += 1;
        Ok(())
    }

    /// Hands publishes waiting to be sent again to the event loop while
    /// the wire is below the limit; how many.
    pub fn resend_some(&mut self, el: &mut EventLoop) -> usize {
        let mut n = 0;
        while self.wire < self.limit {
            let Some(pkid) = self.resend.pop_front() else {
                break;
            };
            let Some(slot) = self.slots[pkid as usize].as_mut() else {
                continue;
            };
            slot.queued = false;
            let slot = &self.slots[pkid as usize];
            if let Some(slot) = slot {
                el.pending
                    .push_back(self.publish(&slot.rec, pkid, slot.sent));
            }
            self.wire += 1;
            n += 1;
        }
        n
    }

    /// A new connection: what is not done goes again, oldest first, within
    /// the limit. With the session resumed the broker holds what it sent
    /// PUBREC for (rumqttc sends PUBREL for those), and the publishes
    /// rumqttc queued again are replaced by ours, which keep the limit;
    /// with a new session everything goes again. How many are to go again.
    pub fn reconnected(&mut self, el: &mut EventLoop, session_present: bool) -> usize {
        if session_present {
            el.pending.retain(|r| !matches!(r, Request::Publish(_)));
        } else {
            el.pending.clear();
        }
        el.state.collision = None;
        let mut again: Vec<(u64, u16)> = Vec::with_capacity(self.used);
        let mut kept = 0;
        for (pkid, slot) in self.slots.iter_mut().enumerate() {
            let Some(slot) = slot.as_mut() else { continue };
            if session_present && slot.received {
                kept += 1;
                continue;
            }
            slot.received = false;
            slot.queued = true;
            again.push((slot.rec.seq, pkid as u16));
        }
        again.sort_unstable();
        self.resend = again.iter().map(|&(_, pkid)| pkid).collect();
        self.wire = kept;
        self.resend_some(el);
        for rec in &self.qos0 {
            el.pending.push_back(self.publish(rec, 0, false));
        }
        again.len() + self.qos0.len()
    }

    /// A publish was written; returns whether it was a republish.
    pub fn written(&mut self, pkid: u16) -> Option<(Option<Record>, bool)> {
        if pkid == 0 {
            return Some((self.qos0.pop_front(), false));
        }
        let slot = self.slots.get_mut(pkid as usize)?.as_mut()?;
        let again = slot.sent;
        slot.sent = true;
        Some((None, again))
    }

    /// PUBREC for `pkid` (QoS 2): the broker holds the publish.
    pub fn received(&mut self, pkid: u16) {
        if let Some(Some(slot)) = self.slots.get_mut(pkid as usize) {
            slot.received = true;
        }
    }

    /// The broker acknowledged `pkid` (PUBACK for QoS 1, PUBCOMP for QoS 2).
    pub fn done(&mut self, pkid: u16) -> Option<Record> {
        let slot = self.slots.get_mut(pkid as usize)?.take()?;
        if slot.queued {
            self.resend.retain(|&p| p != pkid);
        } else {
            self.wire -= 1;
        }
        self.used -= 1;
        self.free.push_back(pkid);
        Some(slot.rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use rumqttc::{AsyncClient, MqttOptions};

    fn rec(seq: u64) -> Record {
        Record {
            seq,
            source_topic: "s".into(),
            sink_topic: "t".into(),
            payload: Bytes::from(seq.to_string()),
            id: None,
            letter: None,
        }
    }

    fn pkids(el: &EventLoop) -> Vec<(u16, String)> {
        el.pending
            .iter()
            .map(|r| match r {
                Request::Publish(p) => (p.pkid, String::from_utf8(p.payload.to_vec()).unwrap()),
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    #[test]
    fn the_book_assigns_ids_from_its_window_and_republishes_in_order() {
        let (_c, mut el) = AsyncClient::new(MqttOptions::new("t", "localhost", 1), 4);
        let mut book = Book::new(QoS::AtLeastOnce, false, 3);
        for s in 1..=3 {
            book.hand_over(rec(s), &mut el).unwrap();
        }
        assert!(!book.has_room());
        assert!(book.hand_over(rec(4), &mut el).is_err());
        assert_eq!(
            pkids(&el),
            vec![(1, "1".into()), (2, "2".into()), (3, "3".into())]
        );
        for p in 1..=3 {
            assert!(!book.written(p).unwrap().1);
        }
        // Packet 2 is acknowledged; its id goes to the back of the free list.
        assert_eq!(book.done(2).unwrap().seq, 2);
        assert!(book.done(2).is_none());
        book.hand_over(rec(5), &mut el).unwrap();
        assert_eq!(book.len(), 3);
        // A new session: everything not done is sent again, oldest first.
        assert_eq!(book.reconnected(&mut el, false), 3);
        assert_eq!(
            pkids(&el),
            vec![(1, "1".into()), (3, "3".into()), (2, "5".into())]
        );
        assert!(book.written(1).unwrap().1);
        assert!(!book.written(2).unwrap().1);
    }

    #[test]
    fn a_lowered_limit_sends_the_oldest_first_and_new_events_after_them() {
        let (_c, mut el) = AsyncClient::new(MqttOptions::new("t", "localhost", 1), 4);
        let mut book = Book::new(QoS::ExactlyOnce, false, 8);
        for s in 1..=8 {
            book.hand_over(rec(s), &mut el).unwrap();
        }
        // Refused with 3 acknowledged: the window becomes 4 (half of 8).
        assert_eq!(book.lower(3), 4);
        assert_eq!(book.lower(0), 2);
        assert_eq!(book.lower(5), 1, "never up, always down");
        assert_eq!(book.lower(0), 1, "never below 1");
        let mut book = Book::new(QoS::ExactlyOnce, false, 8);
        for s in 1..=6 {
            book.hand_over(rec(s), &mut el).unwrap();
            book.written(s as u16);
        }
        book.received(1);
        assert_eq!(book.lower(0), 4);
        // The session resumed: 1 is held by the broker (PUBREL goes), the
        // others go again, within the window, oldest first.
        assert_eq!(book.reconnected(&mut el, true), 5);
        assert_eq!(
            pkids(&el),
            vec![(2, "2".into()), (3, "3".into()), (4, "4".into())]
        );
        assert_eq!(book.on_wire(), 4);
        assert!(!book.has_room(), "5 and 6 wait before any new event");
        assert_eq!(book.done(3).unwrap().seq, 3);
        el.pending.clear();
        assert_eq!(book.resend_some(&mut el), 1);
        assert_eq!(pkids(&el), vec![(5, "5".into())]);
        assert!(!book.has_room());
        assert_eq!(book.done(1).unwrap().seq, 1);
        el.pending.clear();
        assert_eq!(book.resend_some(&mut el), 1);
        assert_eq!(pkids(&el), vec![(6, "6".into())]);
        assert!(!book.has_room(), "the wire is at the window");
        book.done(2).unwrap();
        assert!(book.has_room());
        // A new session: everything not done goes again, the PUBREC'd too.
        book.received(4);
        el.pending.clear();
        assert_eq!(book.reconnected(&mut el, false), 3);
        assert_eq!(
            pkids(&el),
            vec![(4, "4".into()), (5, "5".into()), (6, "6".into())]
        );
    }

    #[test]
    fn qos0_records_complete_in_order_when_written() {
        let (_c, mut el) = AsyncClient::new(MqttOptions::new("t", "localhost", 1), 4);
        let mut book = Book::new(QoS::AtMostOnce, false, 2);
        book.hand_over(rec(1), &mut el).unwrap();
        book.hand_over(rec(2), &mut el).unwrap();
        assert!(book.hand_over(rec(3), &mut el).is_err());
        assert_eq!(book.written(0).unwrap().0.unwrap().seq, 1);
        assert_eq!(book.len(), 1);
    }
}
