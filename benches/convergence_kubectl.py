#!/usr/bin/env python3
"""Convergence of N trivial Applications — the method of `cargo bench --bench
controller_steady_state`'s convergence figures, driven with kubectl when the bench binary is not
built: `python3 benches/convergence_kubectl.py N FLOTILLA_BINARY` against the running test
control plane (`FLOTILLA_CONTROLPLANE_DIR`). Prints the time until every Application is listed
Synced and Healthy, the controller's CPU and RSS, and the API server's writes meanwhile
(`apiserver_request_total`, every client) per Application, by verb and resource."""
import json, os, subprocess, sys, time, tempfile, re, collections
N = int(sys.argv[1]); BIN = sys.argv[2]
STATE = os.environ.get("FLOTILLA_CONTROLPLANE_DIR", "/tmp/flotilla-controlplane"); KC = f"{STATE}/cluster1.kubeconfig"; K = [f"{STATE}/bin/kubectl", "--kubeconfig", KC]
def kubectl(*args, input=None):
    return subprocess.run(K + list(args), input=input, capture_output=True, text=True, check=True).stdout
def writes():
    c = collections.Counter()
    for line in kubectl("get", "--raw", "/metrics").splitlines():
        if not line.startswith("apiserver_request_total{"): continue
        labels, value = line[len("apiserver_request_total{"):].rsplit("} ", 1)
        d = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if d.get("verb") in ("GET", "LIST", "WATCH", "CONNECT"): continue
        key = d["verb"] + " " + d.get("resource", "") + ("/" + d["subresource"] if d.get("subresource") else "") + (" (dry run)" if d.get("dry_run") else "")
        c[key] += int(float(value))
    return c
def usage(pid):
    st = open(f"/proc/{pid}/stat").read(); f = st[st.rfind(")") + 2:].split()
    status = open(f"/proc/{pid}/status").read()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)); hwm = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))
    return int(f[11]) + int(f[12]), rss, hwm
work = tempfile.mkdtemp(prefix="converge-")
repo = os.path.join(work, "repo")
for i in range(N):
    d = os.path.join(repo, f"apps/app-{i}"); os.makedirs(d)
    open(os.path.join(d, "configmap.yaml"), "w").write(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-{i}\ndata:\n  key: value-{i}\n")
g = ["git", "-C", repo]
subprocess.run(g + ["init", "-q", "-b", "main"], check=True)
subprocess.run(g + ["add", "-A"], check=True)
subprocess.run(g + ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "apps"], check=True)
ns = f"conv-{os.getpid()}"
kubectl("create", "namespace", ns)
subprocess.run(K + ["apply", "--server-side", "-f", "-"], input=subprocess.run([BIN, "crd"], capture_output=True, text=True, check=True).stdout, capture_output=True, text=True, check=True)
time.sleep(2)
log = open(os.path.join(work, "controller.log"), "w")
ctl = subprocess.Popen([BIN, "controller", "-n", ns, "--kubeconfig", KC], env=dict(os.environ, RUST_LOG="warn"), stdout=subprocess.DEVNULL, stderr=log)
before = writes()
appset = {"apiVersion": "flotilla.dev/v1alpha1", "kind": "ApplicationSet", "metadata": {"name": "fleet", "namespace": ns},
  "spec": {"generators": [{"list": {"elements": [{"name": f"app-{i}"} for i in range(N)]}}],
    "template": {"metadata": {"name": "{{name}}"}, "spec": {"project": "default",
      "source": {"repoURL": f"file://{repo}", "targetRevision": "main", "path": "apps/{{name}}"},
      "destination": {"name": "in-cluster", "namespace": ns},
      "syncPolicy": {"automated": {"prune": True, "selfHeal": True}}}}}}
kubectl("apply", "--server-side", "--field-manager", "bench", "-f", "-", input=json.dumps(appset))
start = time.time()
while True:
    apps = json.loads(kubectl("get", "applications.flotilla.dev", "-n", ns, "-o", "json"))["items"]
    ready = sum(1 for a in apps if a.get("status", {}).get("sync", {}).get("status") == "Synced" and a.get("status", {}).get("health", {}).get("status") == "Healthy")
    if ready == N: break
    assert ctl.poll() is None, "controller exited"
    print(f"{time.time()-start:5.0f} s: {ready}/{len(apps)} of {N}; RSS {usage(ctl.pid)[1]/1024:.0f} MiB", file=sys.stderr, flush=True)
    time.sleep(5)
took = time.time() - start
ticks, rss, hwm = usage(ctl.pid)
after = writes()
hz = os.sysconf("SC_CLK_TCK")
print(f"convergence: {N} Applications in {took:.1f} s ({N/took:.1f} a second); controller CPU {ticks/hz:.1f} s = {1000*ticks/hz/N:.1f} ms per Application; RSS {rss/1024:.1f} MiB (peak {hwm/1024:.1f} MiB)")
d = {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0) > 0}
print(f"API writes meanwhile (apiserver_request_total, all clients): {sum(d.values())} = {sum(d.values())/N:.2f} per Application")
for k in sorted(d): print(f"  {k:<50} {d[k]:>8} = {d[k]/N:.2f} per Application")
print("load average:", open("/proc/loadavg").read().strip())
ctl.kill(); ctl.wait()
kubectl("delete", "namespace", ns, "--wait=false")
