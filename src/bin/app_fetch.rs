//! `app_fetch`: downloads and unpacks plugins for `app plugin install`, so
//! that the `app` binary links no HTTP, TLS or archive code. See
//! [`app::install::helper`].

fn main() {
    std::process::exit(app::install::helper::serve(
        std::env::args_os().skip(1).collect(),
    ));
}
