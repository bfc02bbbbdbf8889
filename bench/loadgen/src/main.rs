fn main() {
    std::process::exit(app_bench_loadgen::run(std::env::args_os()));
}
