//! The soak's samples over time: the controller's resident memory (by window: min, max, last;
//! the slope of a least-squares line over each process life's samples past its start; the last
//! sample of each life), and API requests by minute: the API server's own count by verb (every
//! client) and the controller's count of its requests, carried over its restarts.

use std::collections::BTreeMap;
use std::time::Duration;

/// One sample of the controller's VmRSS.
struct Sample {
    /// Since the soak began.
    at: Duration,
    /// Which process (0: the first; each kill starts another).
    life: usize,
    kib: u64,
}

/// The controller's resident memory over the soak.
#[derive(Default)]
pub struct Memory {
    samples: Vec<Sample>,
    /// When each life began, since the soak began.
    lives: Vec<Duration>,
}

/// One window of [`Memory::windows`], in MiB.
pub struct Window {
    pub from: Duration,
    pub min: f64,
    pub max: f64,
    pub last: f64,
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

impl Memory {
    /// Records that a controller process started at `at`; later samples are its.
    pub fn started(&mut self, at: Duration) {
        self.lives.push(at);
    }

    /// Records `kib` of VmRSS at `at` for the latest process.
    pub fn record(&mut self, at: Duration, kib: u64) {
        let life = self.lives.len().saturating_sub(1);
        self.samples.push(Sample { at, life, kib });
    }

    /// Min, max and last of the samples in each window of `width`.
    pub fn windows(&self, width: Duration) -> Vec<Window> {
        let mut windows: BTreeMap<u128, Window> = BTreeMap::new();
        for sample in &self.samples {
            let index = sample.at.as_millis() / width.as_millis();
            let from = width * u32::try_from(index).expect("a window index");
            let rss = mib(sample.kib);
            let window = windows.entry(index).or_insert(Window {
                from,
                min: rss,
                max: rss,
                last: rss,
            });
            window.min = window.min.min(rss);
            window.max = window.max.max(rss);
            window.last = rss;
        }
        windows.into_values().collect()
    }

    /// The slope, in MiB an hour, of the least-squares line through the samples taken at least
    /// `warm_up` after their process started (each life's start-up excluded), and how many
    /// samples it fits.
    pub fn slope(&self, warm_up: Duration) -> (f64, usize) {
        let points: Vec<(f64, f64)> = self
            .samples
            .iter()
            .filter(|s| s.at >= self.lives[s.life] + warm_up)
            .map(|s| (s.at.as_secs_f64() / 3600.0, mib(s.kib)))
            .collect();
        let n = points.len() as f64;
        if points.len() < 2 {
            return (0.0, points.len());
        }
        let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
        let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
        let covariance: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
        let variance: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
        (covariance / variance, points.len())
    }

    /// The last sample of each process life: (when, MiB).
    pub fn last_of_each_life(&self) -> Vec<(Duration, f64)> {
        let mut last: BTreeMap<usize, (Duration, f64)> = BTreeMap::new();
        for sample in &self.samples {
            last.insert(sample.life, (sample.at, mib(sample.kib)));
        }
        last.into_values().collect()
    }
}

/// API requests by minute.
#[derive(Default)]
pub struct Requests {
    /// The API server's `apiserver_request_total` by verb at the last reading.
    server_before: BTreeMap<String, u64>,
    /// Per minute, the API server's requests by verb.
    server_minutes: Vec<BTreeMap<String, u64>>,
    /// The controller's count at its last reading, and the total carried over its restarts.
    controller_last: u64,
    controller_total: u64,
    /// The controller's total at each minute's reading.
    controller_minutes: Vec<u64>,
    /// The API server's counts by `verb resource` at the first and the last reading.
    server_first: BTreeMap<String, u64>,
    server_last: BTreeMap<String, u64>,
}

impl Requests {
    /// Reads the API server's counts (`verb resource` → total, as `harness::api_requests`
    /// gives them) at a minute's end (the first reading starts the count).
    pub fn server_minute(&mut self, totals: &BTreeMap<String, u64>) {
        let by_verb = by_verb(totals);
        if self.server_first.is_empty() {
            self.server_first = totals.clone();
        }
        self.server_last = totals.clone();
        if !self.server_before.is_empty() {
            let minute = by_verb
                .iter()
                .map(|(verb, n)| {
                    let before = self.server_before.get(verb).copied().unwrap_or(0);
                    (verb.clone(), n.saturating_sub(before))
                })
                .collect();
            self.server_minutes.push(minute);
            self.controller_minutes.push(self.controller_total);
        }
        self.server_before = by_verb;
    }

    /// Reads the controller's count of its requests so far.
    pub fn controller(&mut self, count: u64) {
        self.controller_total += count.saturating_sub(self.controller_last);
        self.controller_last = count;
    }

    /// A new controller process counts from zero.
    pub fn controller_restarted(&mut self) {
        self.controller_last = 0;
    }

    /// Per verb (and `all`), the mean and the largest count of a minute.
    pub fn server_per_minute(&self) -> BTreeMap<String, (f64, u64)> {
        let mut verbs: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for minute in &self.server_minutes {
            for (verb, n) in minute {
                verbs.entry(verb.clone()).or_default().push(*n);
            }
            verbs
                .entry("all".to_owned())
                .or_default()
                .push(minute.values().sum());
        }
        verbs
            .into_iter()
            .map(|(verb, counts)| (verb, mean_and_max(&counts)))
            .collect()
    }

    /// The `count` kinds of request (`verb resource`) the API server answered most over the
    /// readings, with their numbers, most first.
    pub fn server_busiest(&self, count: usize) -> Vec<(String, u64)> {
        let mut kinds: Vec<(String, u64)> = self
            .server_last
            .iter()
            .map(|(kind, n)| {
                let before = self.server_first.get(kind).copied().unwrap_or(0);
                (kind.clone(), n.saturating_sub(before))
            })
            .collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        kinds.truncate(count);
        kinds
    }

    /// The controller's requests a minute: mean and largest.
    pub fn controller_per_minute(&self) -> (f64, u64) {
        let counts: Vec<u64> = self
            .controller_minutes
            .windows(2)
            .map(|pair| pair[1] - pair[0])
            .collect();
        mean_and_max(&counts)
    }
}

fn mean_and_max(counts: &[u64]) -> (f64, u64) {
    let mean = counts.iter().sum::<u64>() as f64 / counts.len().max(1) as f64;
    (mean, counts.iter().copied().max().unwrap_or(0))
}

/// `verb resource` → total summed by verb.
fn by_verb(totals: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut verbs = BTreeMap::new();
    for (key, n) in totals {
        let verb = key.split(' ').next().unwrap_or_default().to_owned();
        *verbs.entry(verb).or_default() += n;
    }
    verbs
}
