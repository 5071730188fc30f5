//! Shared benchmark support.

pub mod cpu_time;

/// The `main` of a benchmark whose function `$bench` is measured in the benchmark thread's CPU
/// time ([`cpu_time::ThreadCpuTime`]).
macro_rules! cpu_time_main {
    ($bench:path) => {
        criterion::criterion_group! {
            name = benches;
            config = criterion::Criterion::default()
                .with_measurement($crate::support::cpu_time::ThreadCpuTime);
            targets = $bench
        }
        criterion::criterion_main!(benches);
    };
}
pub(crate) use cpu_time_main;
