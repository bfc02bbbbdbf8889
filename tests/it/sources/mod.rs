//! The repeater's side of its source: what it reports and does when the
//! source stops sending. Feeds nobody here wrote are in `feeds`; a source
//! restarted, or its connection cut, under load in `reliability::source`.

mod stall;
