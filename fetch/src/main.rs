//! `app_fetch`: downloads and unpacks plugins for `app plugin install`, so
//! that the `app` binary links no HTTP, TLS or archive code. The protocol
//! between the two is in `app::install::helper`; the work is the
//! dispatcher's `install` module built with its `fetch` feature.

fn main() {
    std::process::exit(app::install::helper::serve(
        std::env::args_os().skip(1).collect(),
    ));
}
