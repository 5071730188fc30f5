//! A criterion measurement of the benchmark thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`):
//! what a routine costs on one core, unaffected by other processes competing for the machine.
//! Benchmarks with a target "on one core" report this instead of wall time.

use std::time::Duration;

use criterion::Throughput;
use criterion::measurement::{Measurement, ValueFormatter};

/// CPU time consumed by the calling thread.
pub struct ThreadCpuTime;

pub fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the clock id is a constant the kernel knows.
    #[allow(
        unsafe_code,
        reason = "a thread's CPU time is only read through clock_gettime(2)"
    )]
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

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
