//! The node simulator's kubelet log endpoint through the real API server: a pod bound to a
//! dedicated simulated node prints the lines of its `sim.flotilla.dev/log` annotations, and
//! `kubectl logs` reads them through the `pods/log` subresource — all of them, the last N
//! (`--tail`), with their times (`--timestamps`), the previous instance's (`--previous`, refused
//! by name when there is none), one container of several (`-c`), and, followed (`-f`), a line
//! appended to the annotation while following.

mod support;

use std::process::{Command, Output, Stdio};

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use support::dedicated_node::DedicatedNode;
use support::{TestNamespace, apply, namespace, object, wait_until};

/// `kubectl -n NAMESPACE logs ARGS…` on cluster 1.
fn kubectl_logs(ns: &TestNamespace, args: &[&str]) -> Command {
    let mut command = Command::new(support::kubectl());
    command
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path(1))
        .args(["-n", &ns.name, "logs"])
        .args(args);
    command
}

/// A `kubectl logs -f`, killed when dropped (also when the test fails).
struct Following(std::process::Child);

impl Drop for Following {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(ns: &TestNamespace, args: &[&str]) -> Output {
    kubectl_logs(ns, args).output().expect("runs kubectl")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "kubectl logs: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn kubectl_logs_reads_the_simulated_containers_lines_through_the_api_server() {
    let ns = namespace(1, "sim-logs").await;
    let node = DedicatedNode::start(&ns.client, &ns.name).await;
    let pod: Pod = object(json!({
        "metadata": {"name": "talker", "annotations": {
            "sim.flotilla.dev/log": "one\ntwo\nthree",
            "sim.flotilla.dev/log.side": "side car",
            "sim.flotilla.dev/previous-log.app": "before the crash",
        }},
        "spec": {"nodeName": node.name, "containers": [
            {"name": "app", "image": "example.com/app:1"},
            {"name": "side", "image": "example.com/side:1"}
        ]}
    }));
    apply(&ns.api::<Pod>(), &pod).await;
    wait_until(
        &ns.api::<Pod>(),
        "talker",
        "the pod Running",
        |pod: &Pod| pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"),
    )
    .await;

    assert_eq!(
        stdout(&run(&ns, &["talker", "-c", "app"])),
        "one\ntwo\nthree\n"
    );
    assert_eq!(stdout(&run(&ns, &["talker", "-c", "side"])), "side car\n");
    assert_eq!(
        stdout(&run(&ns, &["talker", "-c", "app", "--tail", "2"])),
        "two\nthree\n"
    );
    let stamped = stdout(&run(
        &ns,
        &["talker", "-c", "app", "--tail", "1", "--timestamps"],
    ));
    let (time, line) = stamped
        .trim_end()
        .split_once(' ')
        .expect("a time and a line");
    assert!(
        time.parse::<k8s_openapi::jiff::Timestamp>().is_ok(),
        "{stamped}"
    );
    assert_eq!(line, "three");
    assert_eq!(
        stdout(&run(&ns, &["talker", "-c", "app", "--previous"])),
        "before the crash\n"
    );
    let refused = run(&ns, &["talker", "-c", "side", "--previous"]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains("previous terminated container \"side\" in pod \"talker\" not found"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    // Followed: a line appended to the annotation arrives on the open stream.
    let mut follow = Following(
        kubectl_logs(&ns, &["talker", "-c", "app", "-f", "--tail", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("runs kubectl logs -f"),
    );
    let mut reader = std::io::BufReader::new(follow.0.stdout.take().expect("its output"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut reader, &mut line).expect("reads a line");
    assert_eq!(line, "three\n");
    let annotated = Command::new(support::kubectl())
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path(1))
        .args(["-n", &ns.name, "annotate", "pod", "talker", "--overwrite"])
        .arg("sim.flotilla.dev/log=one\ntwo\nthree\nfour")
        .output()
        .expect("runs kubectl annotate");
    assert!(annotated.status.success());
    line.clear();
    let read = tokio::task::spawn_blocking(move || {
        std::io::BufRead::read_line(&mut reader, &mut line).map(|_| line)
    });
    let appended = tokio::time::timeout(support::TIMEOUT, read)
        .await
        .expect("the appended line within the timeout")
        .expect("joins")
        .expect("reads");
    assert_eq!(appended, "four\n");
    drop(follow);
    drop(node);
}
