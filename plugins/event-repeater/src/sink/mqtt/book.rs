//! Our own record of every publish handed to rumqttc and not yet done (see
//! the module docs of [`crate::sink::mqtt`]: rumqttc drops unacknowledged
//! publishes after a reconnect into a new session).

use std::collections::VecDeque;

use rumqttc::{EventLoop, Publish, QoS, Request};

use crate::buffer::Record;

struct Slot {
    rec: Record,
    /// Written at least once (so a later write is a republish).
    sent: bool,
}

/// Our own record of every publish handed to rumqttc and not yet done.
pub struct Book {
    pub qos: QoS,
    retain: bool,
    /// Indexed by packet id (1..=window); QoS 1 and 2.
    slots: Vec<Option<Slot>>,
    free: VecDeque<u16>,
    pub used: usize,
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
            qos0: VecDeque::new(),
            window: window as usize,
        }
    }

    pub fn len(&self) -> usize {
        self.used + self.qos0.len()
    }

    pub fn has_room(&self) -> bool {
        match self.qos {
            QoS::AtMostOnce => self.qos0.len() < self.window,
            _ => !self.free.is_empty(),
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

    /// Hands `rec` to the event loop; `false` if there was no room.
    pub fn hand_over(&mut self, rec: Record, el: &mut EventLoop) -> Result<(), Record> {
        if self.qos == QoS::AtMostOnce {
            if self.qos0.len() >= self.window {
                return Err(rec);
            }
            el.pending.push_back(self.publish(&rec, 0, false));
            self.qos0.push_back(rec);
            return Ok(());
        }
        let Some(pkid) = self.free.pop_front() else {
            return Err(rec);
        };
        el.pending.push_back(self.publish(&rec, pkid, false));
        self.slots[pkid as usize] = Some(Slot { rec, sent: false });
        self.used += 1;
        Ok(())
    }

    /// The broker did not keep our session: everything not done goes again.
    pub fn republish_all(&mut self, el: &mut EventLoop) -> usize {
        el.pending.clear();
        el.state.collision = None;
        let mut held: Vec<(u64, u16)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(pkid, s)| s.as_ref().map(|s| (s.rec.seq, pkid as u16)))
            .collect();
        held.sort_unstable();
        for (_, pkid) in &held {
            if let Some(slot) = &self.slots[*pkid as usize] {
                el.pending
                    .push_back(self.publish(&slot.rec, *pkid, slot.sent));
            }
        }
        for rec in &self.qos0 {
            el.pending.push_back(self.publish(rec, 0, false));
        }
        held.len() + self.qos0.len()
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

    /// The broker acknowledged `pkid` (PUBACK for QoS 1, PUBCOMP for QoS 2).
    pub fn done(&mut self, pkid: u16) -> Option<Record> {
        let slot = self.slots.get_mut(pkid as usize)?.take()?;
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
        assert_eq!(book.republish_all(&mut el), 3);
        assert_eq!(
            pkids(&el),
            vec![(1, "1".into()), (3, "3".into()), (2, "5".into())]
        );
        assert!(book.written(1).unwrap().1);
        assert!(!book.written(2).unwrap().1);
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
