//! A Helm chart repository on loopback: the fixture chart `tests/fixtures/sources/charts/db`
//! packaged by the real `helm` at several versions, indexed with `helm repo index` and served
//! by [`StaticFiles`].

use std::path::Path;
use std::process::Command;

use super::fixture_dir::copy_dir;
use super::loopback_http::StaticFiles;

/// The served repository; removed and stopped when dropped.
pub struct ChartRepository {
    pub server: StaticFiles,
    /// The server of the chart archives, when another than [`Self::server`].
    _archives: Option<StaticFiles>,
    /// Where the index points at the chart archives.
    archives_url: String,
    dir: tempfile::TempDir,
}

/// The fixture chart `db` packaged at each of `versions` into `into` (`db-VERSION.tgz`).
pub fn package_db(versions: &[&str], into: &Path) {
    package_db_with_tier(versions, None, into);
}

/// [`package_db`], its default `tier` value `tier` when given (else the fixture's `none`).
fn package_db_with_tier(versions: &[&str], tier: Option<&str>, into: &Path) {
    let work = tempfile::tempdir().expect("a temporary directory");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sources/charts/db");
    for version in versions {
        let chart = work.path().join(version).join("db");
        std::fs::create_dir_all(&chart).expect("a chart directory");
        copy_dir(&fixture, &chart);
        let metadata = std::fs::read_to_string(chart.join("Chart.yaml")).expect("Chart.yaml");
        std::fs::write(
            chart.join("Chart.yaml"),
            metadata.replace("version: 0.1.0", &format!("version: {version}")),
        )
        .expect("writes Chart.yaml");
        if let Some(tier) = tier {
            let values = std::fs::read_to_string(chart.join("values.yaml")).expect("values.yaml");
            std::fs::write(
                chart.join("values.yaml"),
                values.replace("tier: none", &format!("tier: {tier}")),
            )
            .expect("writes values.yaml");
        }
        run(helm().arg("package").arg(&chart).arg("-d").arg(into));
    }
}

/// The helm the tests run (FLOTILLA_HELM, else `helm` on PATH).
pub fn helm() -> Command {
    Command::new(std::env::var_os("FLOTILLA_HELM").unwrap_or_else(|| "helm".into()))
}

/// Runs `command`, failing the test with its stderr when it fails.
pub fn run(command: &mut Command) {
    let out = command.output().expect("helm runs");
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl ChartRepository {
    /// The chart `db` at each of `versions`.
    pub fn start(versions: &[&str]) -> Self {
        Self::serving(versions, None)
    }

    /// [`Self::start`], served only to requests with HTTP basic auth as `username`, `password`.
    pub fn start_with_password(versions: &[&str], username: &str, password: &str) -> Self {
        Self::serving(versions, Some((username, password)))
    }

    /// [`Self::start_with_password`], but the index points at the chart archives on another
    /// host (`localhost` instead of `127.0.0.1`, another port) asking the same password: helm
    /// sends it there only with `--pass-credentials`.
    pub fn start_split_with_password(versions: &[&str], username: &str, password: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let charts = dir.path().join("charts");
        package_db(versions, &charts);
        let server = StaticFiles::start_with_password(&charts, username, password);
        let archives = StaticFiles::start_with_password(&charts, username, password);
        let elsewhere = archives.url().replace("127.0.0.1", "localhost");
        run(helm()
            .args(["repo", "index"])
            .arg(&charts)
            .args(["--url", &elsewhere]));
        Self {
            server,
            _archives: Some(archives),
            archives_url: elsewhere,
            dir,
        }
    }

    fn serving(versions: &[&str], password: Option<(&str, &str)>) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let charts = dir.path().join("charts");
        package_db(versions, &charts);
        let server = match password {
            Some((username, password)) => {
                StaticFiles::start_with_password(&charts, username, password)
            }
            None => StaticFiles::start(&charts),
        };
        run(helm()
            .args(["repo", "index"])
            .arg(&charts)
            .args(["--url", &server.url()]));
        let archives_url = server.url();
        Self {
            server,
            _archives: None,
            archives_url,
            dir,
        }
    }

    /// Publishes the chart `db` at `version` too, its default `tier` value `tier` (so its
    /// manifests differ): packaged and indexed again.
    pub fn publish(&self, version: &str, tier: &str) {
        let charts = self.dir.path().join("charts");
        package_db_with_tier(&[version], Some(tier), &charts);
        run(helm()
            .args(["repo", "index"])
            .arg(&charts)
            .args(["--url", &self.archives_url]));
    }
}
