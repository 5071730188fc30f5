//! A criterion measurement of the benchmark thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`):
//! what a routine costs on one core, unaffected by other processes competing for the machine.
//! Benchmarks with a target "on one core" report this instead of wall time.

use std::time::Duration;

use criterion::Throughput;
use criterion::measurement::{Measurement, ValueFormatter};
pub use flotilla::controller::runtime::cpu_time::thread_cpu_time;

/// CPU time consumed by the calling thread.
pub struct ThreadCpuTime;

impl Measurement for ThreadCpuTime {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        thread_cpu_time()
    }

    fn end(&self, started: Duration) -> Duration {
        thread_cpu_time().saturating_sub(started)
    }

    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }

    fn zero(&self) -> Duration {
        Duration::ZERO
    }

    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuTimeFormatter
    }
}

/// Formats nanoseconds of CPU time with a readable unit.
struct CpuTimeFormatter;

impl ValueFormatter for CpuTimeFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (divisor, unit) = match typical {
            t if t < 1e3 => (1.0, "ns (cpu)"),
            t if t < 1e6 => (1e3, "µs (cpu)"),
            t if t < 1e9 => (1e6, "ms (cpu)"),
            _ => (1e9, "s (cpu)"),
        };
        values.iter_mut().for_each(|v| *v /= divisor);
        unit
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        _throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        values.iter_mut().for_each(|v| *v = 1e9 / *v);
        "runs/s (cpu)"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}
