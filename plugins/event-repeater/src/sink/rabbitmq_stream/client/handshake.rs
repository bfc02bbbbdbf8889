//! The connection's opening: peer properties, SASL PLAIN, tune, open,
//! each answered before the next, before the client's reader runs.

use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::proto::{self, code, code_name, Body, Frame, Incoming, Reply};
use super::{read_frame, Options, Stream, FRAME_MAX};

async fn send(s: &mut Stream, frame: Vec<u8>) -> Result<(), String> {
    s.write_all(&frame)
        .await
        .map_err(|e| format!("cannot write to RabbitMQ: {e}"))?;
    s.flush()
        .await
        .map_err(|e| format!("cannot write to RabbitMQ: {e}"))
}

/// The next frame of the handshake that is not a heartbeat.
async fn next(s: &mut Stream, buf: &mut Vec<u8>) -> Result<Incoming, String> {
    loop {
        read_frame(s, buf, FRAME_MAX).await?;
        match proto::decode(buf).map_err(|e| e.to_string())? {
            Incoming::Heartbeat => {}
            Incoming::Close { reason, code, .. } => {
                return Err(format!(
                    "RabbitMQ closed the connection: {reason} ({})",
                    code_name(code)
                ))
            }
            other => return Ok(other),
        }
    }
}

async fn answer(s: &mut Stream, buf: &mut Vec<u8>, what: &str) -> Result<Reply, String> {
    match next(s, buf).await? {
        Incoming::Reply(_, r) if r.code == code::OK => Ok(r),
        Incoming::Reply(_, r) => Err(format!("{what}: {}", code_name(r.code))),
        other => Err(format!("{what}: unexpected {other:?}")),
    }
}

/// Connects (TLS when asked), signs in with SASL PLAIN, tunes and opens
/// the virtual host: the stream, the frame max and heartbeat agreed.
pub(super) async fn handshake(o: &Options<'_>) -> Result<(Stream, u32, Duration), String> {
    let tcp = tokio::net::TcpStream::connect((o.host, o.port))
        .await
        .map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    let mut s: Stream = match &o.tls {
        None => Box::new(tcp),
        Some(cfg) => {
            let name = rustls::pki_types::ServerName::try_from(o.host.to_string())
                .map_err(|e| format!("{:?} as a TLS server name: {e}", o.host))?;
            let tls = tokio_rustls::TlsConnector::from(cfg.clone())
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS: {e}"))?;
            Box::new(tls)
        }
    };
    let mut buf = Vec::new();
    let version = env!("CARGO_PKG_VERSION");
    let props = [
        ("product", "app-event-repeater"),
        ("version", version),
        ("platform", "Rust"),
        ("connection_name", o.connection_name),
    ];
    let f = Frame::new(proto::PEER_PROPERTIES).u32(1).properties(&props);
    send(&mut s, f.finish()).await?;
    answer(&mut s, &mut buf, "peer properties").await?;

    send(&mut s, Frame::new(proto::SASL_HANDSHAKE).u32(2).finish()).await?;
    let r = answer(&mut s, &mut buf, "SASL handshake").await?;
    if let Body::Mechanisms(m) = &r.body {
        if !m.iter().any(|m| m == "PLAIN") {
            return Err(format!("RabbitMQ offers no SASL PLAIN sign-in ({m:?})"));
        }
    }
    let mut sasl = Vec::with_capacity(o.username.len() + o.password.len() + 2);
    sasl.push(0);
    sasl.extend_from_slice(o.username.as_bytes());
    sasl.push(0);
    sasl.extend_from_slice(o.password.as_bytes());
    let f = Frame::new(proto::SASL_AUTHENTICATE)
        .u32(3)
        .string("PLAIN")
        .bytes(&sasl);
    send(&mut s, f.finish()).await?;
    answer(&mut s, &mut buf, "authentication").await?;

    let (fm, hb) = loop {
        if let Incoming::Tune {
            frame_max,
            heartbeat,
        } = next(&mut s, &mut buf).await?
        {
            break (frame_max, heartbeat);
        }
    };
    // 0 means no limit from that side: ours applies.
    let frame_max = if fm == 0 {
        FRAME_MAX
    } else {
        fm.min(FRAME_MAX)
    };
    let ours = o.heartbeat.as_secs().clamp(1, 3600) as u32;
    let heartbeat = if hb == 0 { ours } else { hb.min(ours) };
    let f = Frame::new(proto::TUNE).u32(frame_max).u32(heartbeat);
    send(&mut s, f.finish()).await?;

    let f = Frame::new(proto::OPEN).u32(4).string(o.vhost);
    send(&mut s, f.finish()).await?;
    answer(&mut s, &mut buf, &format!("virtual host {:?}", o.vhost)).await?;
    Ok((s, frame_max, Duration::from_secs(u64::from(heartbeat))))
}
