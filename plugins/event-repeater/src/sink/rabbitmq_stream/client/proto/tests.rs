//! The frames both ways, and what a cut or oversized frame does.

use super::*;

fn content(frame: Vec<u8>) -> Vec<u8> {
    let size = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
    assert_eq!(size, frame.len() - 4);
    frame[4..].to_vec()
}

#[test]
fn answers_and_server_commands_decode() {
    let f = Frame::new(PEER_PROPERTIES | ANSWER)
        .u32(7)
        .u16(code::OK)
        .properties(&[("product", "RabbitMQ")])
        .finish();
    assert_eq!(
        decode(&content(f)),
        Ok(Incoming::Reply(
            7,
            Reply {
                code: 1,
                body: Body::Properties(vec![("product".into(), "RabbitMQ".into())])
            }
        ))
    );
    let f = Frame::new(SASL_HANDSHAKE | ANSWER)
        .u32(2)
        .u16(1)
        .u32(2)
        .string("PLAIN")
        .string("AMQPLAIN")
        .finish();
    assert!(matches!(decode(&content(f)),
        Ok(Incoming::Reply(2, Reply { body: Body::Mechanisms(m), .. })) if m == ["PLAIN", "AMQPLAIN"]));
    let f = Frame::new(QUERY_PUBLISHER_SEQUENCE | ANSWER)
        .u32(3)
        .u16(1)
        .u64(42)
        .finish();
    assert!(matches!(
        decode(&content(f)),
        Ok(Incoming::Reply(
            3,
            Reply {
                code: 1,
                body: Body::Sequence(42)
            }
        ))
    ));
    let f = Frame::new(PUBLISH_CONFIRM)
        .u8(4)
        .u32(2)
        .u64(10)
        .u64(11)
        .finish();
    assert_eq!(decode(&content(f)), Ok(Incoming::Confirm(4, vec![10, 11])));
    let f = Frame::new(PUBLISH_ERROR)
        .u8(4)
        .u32(1)
        .u64(10)
        .u16(18)
        .finish();
    assert_eq!(
        decode(&content(f)),
        Ok(Incoming::PublishError(4, vec![(10, 18)]))
    );
    let f = Frame::new(TUNE).u32(1 << 20).u32(60).finish();
    assert_eq!(
        decode(&content(f)),
        Ok(Incoming::Tune {
            frame_max: 1 << 20,
            heartbeat: 60
        })
    );
    let f = Frame::new(CREATE_STREAM | ANSWER).u32(9).u16(5).finish();
    assert_eq!(
        decode(&content(f)),
        Ok(Incoming::Reply(
            9,
            Reply {
                code: code::STREAM_ALREADY_EXISTS,
                body: Body::None
            }
        ))
    );
}

#[test]
fn counts_past_the_frame_and_cut_frames_are_errors_not_allocations() {
    // A confirm claiming 2^32-1 ids in a 13-byte frame.
    let f = Frame::new(PUBLISH_CONFIRM).u8(1).u32(u32::MAX).finish();
    assert!(decode(&content(f)).is_err());
    let f = Frame::new(PUBLISH_CONFIRM).u8(1).u32(2).u64(1).finish();
    assert!(decode(&content(f)).is_err());
    let f = Frame::new(PEER_PROPERTIES | ANSWER)
        .u32(1)
        .u16(1)
        .u32(1_000_000)
        .finish();
    assert!(decode(&content(f)).is_err());
    assert!(decode(&[0x00]).is_err());
    assert_eq!(decode(&[0x7f, 0x00, 0, 1]), Ok(Incoming::Other(0x7f00)));
}

#[test]
fn messages_are_amqp_data_sections_both_ways() {
    for len in [0, 5, 255, 256, 70_000] {
        let body = vec![b'x'; len];
        let mut m = Vec::new();
        amqp_data(&mut m, &body);
        assert_eq!(m.len(), amqp_data_len(len));
        assert_eq!(amqp_body(&m), Some(&body[..]));
    }
    // Properties (a list) before the data section are skipped.
    let mut m = vec![0x00, 0x53, 0x73, 0xc0, 0x02, 0x01, 0x40];
    amqp_data(&mut m, b"hi");
    assert_eq!(amqp_body(&m), Some(&b"hi"[..]));
    assert_eq!(amqp_body(&[0x00, 0x53, 0x77, 0xa1, 0x01, b'a']), None);
    assert_eq!(amqp_body(b"plain"), None);
}

#[test]
fn chunks_give_their_records() {
    let mut data = Vec::new();
    for r in [&b"one"[..], b"two"] {
        data.extend_from_slice(&(r.len() as u32).to_be_bytes());
        data.extend_from_slice(r);
    }
    let f = Frame::new(DELIVER)
        .u8(1)
        .u8(0x50)
        .u8(0)
        .u16(2)
        .u32(2)
        .u64(1_700_000_000_123)
        .u64(1)
        .u64(0)
        .u32(0)
        .u32(data.len() as u32)
        .u32(0)
        .u32(0);
    let mut f = f.finish();
    f.extend_from_slice(&data);
    assert_eq!(
        decode(&f[4..]),
        Ok(Incoming::Deliver(
            1,
            Chunk {
                timestamp_ms: 1_700_000_000_123,
                records: vec![b"one".to_vec(), b"two".to_vec()],
            }
        ))
    );
    // Cut inside the data.
    assert!(decode(&f[4..f.len() - 1]).is_err());
}
