//! The repeater's side of its source: what it reports and does when the
//! source stops sending (`stall`), and the SSE ids it will not keep
//! (`sse_ids`). Feeds nobody here wrote are in `feeds`; a source restarted,
//! or its connection cut, under load in `reliability::source`.

mod sse_ids;
mod stall;
