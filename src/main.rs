//! `app`: the dispatcher binary. All the work happens in [`app::run`].

fn main() {
    std::process::exit(app::run::run(std::env::args_os().collect()));
}
