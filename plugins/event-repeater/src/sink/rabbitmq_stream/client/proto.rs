//! The RabbitMQ stream protocol's frames, version 1 of every command (what
//! RabbitMQ 3.9 and 3.10 speak; later versions answer version 1 too), the
//! part a publisher and a simple reader need. Written here rather than on
//! the `rabbitmq-stream-protocol` crate, whose decoder sizes its vectors
//! from the peer's counts before reading them (`Vec::with_capacity` of an
//! `i32` cast to `usize`), so one bad frame aborts the process.
//!
//! A frame is `size: u32, key: u16, version: u16, content`, big-endian;
//! strings are `i16` length + UTF-8, byte strings `i32` length + bytes,
//! arrays `i32` count + items. Answers carry the request's key with the
//! high bit set and its correlation id.

use std::fmt;

pub const DECLARE_PUBLISHER: u16 = 0x0001;
pub const PUBLISH: u16 = 0x0002;
pub const PUBLISH_CONFIRM: u16 = 0x0003;
pub const PUBLISH_ERROR: u16 = 0x0004;
pub const QUERY_PUBLISHER_SEQUENCE: u16 = 0x0005;
pub const DELETE_PUBLISHER: u16 = 0x0006;
pub const SUBSCRIBE: u16 = 0x0007;
pub const DELIVER: u16 = 0x0008;
pub const CREDIT: u16 = 0x0009;
pub const CREATE_STREAM: u16 = 0x000d;
pub const DELETE_STREAM: u16 = 0x000e;
pub const METADATA_UPDATE: u16 = 0x0010;
pub const PEER_PROPERTIES: u16 = 0x0011;
pub const SASL_HANDSHAKE: u16 = 0x0012;
pub const SASL_AUTHENTICATE: u16 = 0x0013;
pub const TUNE: u16 = 0x0014;
pub const OPEN: u16 = 0x0015;
pub const CLOSE: u16 = 0x0016;
pub const HEARTBEAT: u16 = 0x0017;
/// The bit an answer's key carries.
pub const ANSWER: u16 = 0x8000;

/// Response codes this client acts on.
pub mod code {
    pub const OK: u16 = 1;
    pub const STREAM_ALREADY_EXISTS: u16 = 5;
    pub const AUTHENTICATION_FAILURE: u16 = 8;
    pub const VIRTUAL_HOST_ACCESS_FAILURE: u16 = 12;
    pub const ACCESS_REFUSED: u16 = 16;
    pub const PRECONDITION_FAILED: u16 = 17;
}

/// RabbitMQ's name for a response code, for messages.
pub fn code_name(code: u16) -> &'static str {
    match code {
        1 => "ok",
        2 => "stream does not exist",
        3 => "subscription id already exists",
        4 => "subscription id does not exist",
        5 => "stream already exists",
        6 => "stream not available",
        7 => "SASL mechanism not supported",
        8 => "authentication failure",
        9 => "SASL error",
        10 => "SASL challenge",
        11 => "authentication failure (loopback)",
        12 => "virtual host access failure",
        13 => "unknown frame",
        14 => "frame too large",
        15 => "internal error",
        16 => "access refused",
        17 => "precondition failed",
        18 => "publisher does not exist",
        19 => "no offset",
        _ => "unknown code",
    }
}

/// Bytes a publish frame spends besides the messages' bodies: the frame
/// head and publisher id and count, then per message its id, length and
/// the AMQP 1.0 data section head ([`amqp_data_len`]).
pub const PUBLISH_HEAD: usize = 4 + 2 + 2 + 1 + 4;
pub const PUBLISH_PER_MESSAGE: usize = 8 + 4 + 8;

/// A frame that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoError(pub String);

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn short(what: &str) -> ProtoError {
    ProtoError(format!("a frame from RabbitMQ ends inside its {what}"))
}

/// What the server sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// The answer to a request.
    Reply(u32, Reply),
    Tune {
        frame_max: u32,
        heartbeat: u32,
    },
    Heartbeat,
    Confirm(u8, Vec<u64>),
    /// Refused publishes: (publishing id, code).
    PublishError(u8, Vec<(u64, u16)>),
    /// A stream the connection uses went away or moved.
    MetadataUpdate {
        code: u16,
        stream: String,
    },
    /// The server closes the connection (answer it, then stop).
    Close {
        corr: u32,
        code: u16,
        reason: String,
    },
    /// A chunk for a subscription.
    Deliver(u8, Chunk),
    /// A credit for a subscription that is not there.
    CreditError(u8, u16),
    /// A command this client does not use (ignored).
    Other(u16),
}

/// A delivered chunk: when its writer stored it and its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The chunk's timestamp: the writer's clock, in ms since the epoch,
    /// when it wrote the chunk (a store time, for the benchmarks).
    pub timestamp_ms: i64,
    /// The bodies of its messages, as stored.
    pub records: Vec<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub code: u16,
    pub body: Body,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    None,
    Properties(Vec<(String, String)>),
    Mechanisms(Vec<String>),
    Sequence(u64),
}

/// Reads the fields of one frame, each checked against what is left.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ProtoError> {
        if self.0.len() < n {
            return Err(short(what));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self, what: &str) -> Result<u8, ProtoError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, ProtoError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, what: &str) -> Result<u32, ProtoError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &str) -> Result<u64, ProtoError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    fn string(&mut self, what: &str) -> Result<String, ProtoError> {
        let len = self.u16(what)? as i16;
        if len < 0 {
            return Ok(String::new());
        }
        let b = self.take(len as usize, what)?;
        Ok(String::from_utf8_lossy(b).into_owned())
    }
    /// An array's count, checked against the bytes left (each item takes
    /// at least `min` bytes), so nothing is sized from an unchecked count.
    fn count(&mut self, min: usize, what: &str) -> Result<usize, ProtoError> {
        let n = self.u32(what)?;
        let n = usize::try_from(n).map_err(|_| short(what))?;
        if n.saturating_mul(min) > self.0.len() {
            return Err(short(what));
        }
        Ok(n)
    }
    fn properties(&mut self) -> Result<Vec<(String, String)>, ProtoError> {
        if self.0.is_empty() {
            return Ok(Vec::new());
        }
        let n = self.count(4, "properties")?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push((self.string("properties")?, self.string("properties")?));
        }
        Ok(v)
    }
}

/// Decodes one frame's content (after its size).
pub fn decode(frame: &[u8]) -> Result<Incoming, ProtoError> {
    let mut c = Cursor(frame);
    let key = c.u16("key")?;
    let _version = c.u16("version")?;
    Ok(match key {
        TUNE => Incoming::Tune {
            frame_max: c.u32("tune")?,
            heartbeat: c.u32("tune")?,
        },
        HEARTBEAT => Incoming::Heartbeat,
        PUBLISH_CONFIRM => {
            let publisher = c.u8("confirm")?;
            let n = c.count(8, "confirm")?;
            let mut ids = Vec::with_capacity(n);
            for _ in 0..n {
                ids.push(c.u64("confirm")?);
            }
            Incoming::Confirm(publisher, ids)
        }
        PUBLISH_ERROR => {
            let publisher = c.u8("publish error")?;
            let n = c.count(10, "publish error")?;
            let mut errors = Vec::with_capacity(n);
            for _ in 0..n {
                errors.push((c.u64("publish error")?, c.u16("publish error")?));
            }
            Incoming::PublishError(publisher, errors)
        }
        METADATA_UPDATE => Incoming::MetadataUpdate {
            code: c.u16("metadata update")?,
            stream: c.string("metadata update")?,
        },
        CLOSE => Incoming::Close {
            corr: c.u32("close")?,
            code: c.u16("close")?,
            reason: c.string("close")?,
        },
        DELIVER => {
            let sub = c.u8("deliver")?;
            Incoming::Deliver(sub, chunk(&mut c)?)
        }
        k if k == CREDIT | ANSWER => {
            let code = c.u16("credit answer")?;
            Incoming::CreditError(c.u8("credit answer")?, code)
        }
        k if k & ANSWER != 0 => {
            let corr = c.u32("answer")?;
            let code = c.u16("answer")?;
            let body = match k & !ANSWER {
                PEER_PROPERTIES | OPEN => Body::Properties(c.properties()?),
                SASL_HANDSHAKE => {
                    let n = c.count(2, "mechanisms")?;
                    let mut m = Vec::with_capacity(n);
                    for _ in 0..n {
                        m.push(c.string("mechanisms")?);
                    }
                    Body::Mechanisms(m)
                }
                QUERY_PUBLISHER_SEQUENCE => Body::Sequence(c.u64("sequence")?),
                _ => Body::None,
            };
            Incoming::Reply(corr, Reply { code, body })
        }
        k => Incoming::Other(k),
    })
}

/// An Osiris chunk's timestamp and user records (other chunk types hold
/// none).
fn chunk(c: &mut Cursor) -> Result<Chunk, ProtoError> {
    let _magic_version = c.u8("chunk")?;
    let chunk_type = c.u8("chunk")?;
    let entries = c.u16("chunk")?;
    let _records = c.u32("chunk")?;
    let timestamp_ms = c.u64("chunk")? as i64;
    c.take(8 + 8 + 4, "chunk")?; // epoch, first offset, crc
    let data_len = c.u32("chunk")? as usize;
    c.take(4 + 4, "chunk")?; // trailer length, reserved
    let mut data = Cursor(c.take(data_len, "chunk data")?);
    if chunk_type != 0 {
        return Ok(Chunk {
            timestamp_ms,
            records: Vec::new(),
        });
    }
    let mut out = Vec::with_capacity(usize::from(entries).min(data.0.len() / 4));
    while let Some(&first) = data.0.first() {
        if first & 0x80 == 0 {
            let n = data.u32("entry")? as usize;
            out.push(data.take(n, "entry")?.to_vec());
            continue;
        }
        // A sub-batch: a flag byte (compression in bits 4-6), its record
        // count, uncompressed length and length.
        let compression = (data.u8("sub-batch")? >> 4) & 0x7;
        let records = data.u16("sub-batch")?;
        let _uncompressed = data.u32("sub-batch")?;
        let len = data.u32("sub-batch")? as usize;
        let mut sub = Cursor(data.take(len, "sub-batch")?);
        if compression != 0 {
            return Err(ProtoError(
                "a compressed sub-batch (this reader takes uncompressed ones)".into(),
            ));
        }
        for _ in 0..records {
            let n = sub.u32("sub-batch entry")? as usize;
            out.push(sub.take(n, "sub-batch entry")?.to_vec());
        }
    }
    Ok(Chunk {
        timestamp_ms,
        records: out,
    })
}

/// Builds one frame: `Frame::new(KEY).u32(..)…finish()`.
pub struct Frame(Vec<u8>);

impl Frame {
    pub fn new(key: u16) -> Frame {
        Frame::into(key, Vec::with_capacity(64))
    }
    /// A frame written into `buf` (cleared), to reuse its allocation.
    pub fn into(key: u16, mut buf: Vec<u8>) -> Frame {
        buf.clear();
        buf.extend_from_slice(&[0, 0, 0, 0]);
        buf.extend_from_slice(&key.to_be_bytes());
        buf.extend_from_slice(&1u16.to_be_bytes());
        Frame(buf)
    }
    pub fn u8(mut self, v: u8) -> Frame {
        self.0.push(v);
        self
    }
    pub fn u16(mut self, v: u16) -> Frame {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u32(mut self, v: u32) -> Frame {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u64(mut self, v: u64) -> Frame {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// Callers keep strings under 32 KiB (names are checked before).
    pub fn string(self, s: &str) -> Frame {
        let s = &s.as_bytes()[..s.len().min(i16::MAX as usize)];
        let mut f = self.u16(s.len() as u16);
        f.0.extend_from_slice(s);
        f
    }
    pub fn bytes(self, b: &[u8]) -> Frame {
        let mut f = self.u32(b.len() as u32);
        f.0.extend_from_slice(b);
        f
    }
    pub fn properties(self, p: &[(&str, &str)]) -> Frame {
        let mut f = self.u32(p.len() as u32);
        for (k, v) in p {
            f = f.string(k).string(v);
        }
        f
    }
    /// Appends one message of a publish: its id and its body as an AMQP
    /// 1.0 message of one data section.
    pub fn put_message(&mut self, id: u64, body: &[u8]) {
        self.0.extend_from_slice(&id.to_be_bytes());
        self.0
            .extend_from_slice(&(amqp_data_len(body.len()) as u32).to_be_bytes());
        amqp_data(&mut self.0, body);
    }
    /// Overwrites the `u32` at byte `at` (a count known at the end).
    pub fn patch_u32(&mut self, at: usize, v: u32) {
        self.0[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Nothing after the head.
    pub fn is_empty(&self) -> bool {
        self.0.len() <= 8
    }
    /// The frame's bytes, its size filled in.
    pub fn finish(mut self) -> Vec<u8> {
        let size = (self.0.len() - 4) as u32;
        self.0[..4].copy_from_slice(&size.to_be_bytes());
        self.0
    }
}

/// The size of a body as an AMQP 1.0 data section.
pub fn amqp_data_len(body: usize) -> usize {
    body + if body <= 255 { 5 } else { 8 }
}

/// Appends `body` as an AMQP 1.0 data section (described type 0x75,
/// `vbin8` or `vbin32`).
fn amqp_data(out: &mut Vec<u8>, body: &[u8]) {
    out.extend_from_slice(&[0x00, 0x53, 0x75]);
    if body.len() <= 255 {
        out.extend_from_slice(&[0xa0, body.len() as u8]);
    } else {
        out.push(0xb0);
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    }
    out.extend_from_slice(body);
}

/// The first data section of an AMQP 1.0 message, skipping the sections
/// before it whose values are lists or maps (header, annotations,
/// properties); `None` when there is none or another value comes first.
pub fn amqp_body(msg: &[u8]) -> Option<&[u8]> {
    let mut c = Cursor(msg);
    loop {
        if c.u8("").ok()? != 0x00 {
            return None;
        }
        let code = match c.u8("").ok()? {
            0x53 => u64::from(c.u8("").ok()?),
            0x80 => c.u64("").ok()?,
            _ => return None,
        };
        let ctor = c.u8("").ok()?;
        let len = match ctor {
            0xa0 | 0xc0 | 0xc1 => usize::from(c.u8("").ok()?),
            0xb0 | 0xd0 | 0xd1 => c.u32("").ok()? as usize,
            0x45 | 0x40 => 0,
            _ => return None,
        };
        let value = c.take(len, "").ok()?;
        if code == 0x75 && matches!(ctor, 0xa0 | 0xb0) {
            return Some(value);
        }
    }
}

#[cfg(test)]
mod tests;
