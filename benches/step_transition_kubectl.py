#!/usr/bin/env python3
"""RollingSync step transitions — the method of `cargo bench --bench step_transition`, driven
with kubectl watches when the bench binary is not built (each Widget's Ready write is a kubectl
process, its start-up counted in): `python3 benches/step_transition_kubectl.py STEPS PER_STEP
FLOTILLA_BINARY` against the running test control plane (`FLOTILLA_CONTROLPLANE_DIR`)."""
import json, os, subprocess, sys, time, tempfile, threading, queue
STEPS, PER = int(sys.argv[1]), int(sys.argv[2]); BIN = sys.argv[3]
STATE = os.environ.get("FLOTILLA_CONTROLPLANE_DIR", "/tmp/flotilla-controlplane"); KC = f"{STATE}/cluster1.kubeconfig"; K = [f"{STATE}/bin/kubectl", "--kubeconfig", KC]
def kubectl(*a, input=None): return subprocess.run(K + list(a), input=input, capture_output=True, text=True, check=True).stdout
work = tempfile.mkdtemp(prefix="steps-"); repo = os.path.join(work, "repo")
name = lambda s, i: f"s{s}-a{i}"
for s in range(STEPS):
    for i in range(PER):
        d = os.path.join(repo, "apps", name(s, i)); os.makedirs(d)
        open(os.path.join(d, "widget.yaml"), "w").write(f"apiVersion: bench.flotilla.dev/v1\nkind: Widget\nmetadata:\n  name: {name(s,i)}\nspec:\n  size: 1\nstatus:\n  conditions:\n  - type: Ready\n    status: \"Unknown\"\n")
for c in (["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "w"]):
    subprocess.run(["git", "-C", repo] + c, check=True)
crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.bench.flotilla.dev"},
  "spec": {"group": "bench.flotilla.dev", "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
kubectl("apply", "--server-side", "-f", "-", input=json.dumps(crd))
subprocess.run(K + ["apply", "--server-side", "-f", "-"], input=subprocess.run([BIN, "crd"], capture_output=True, text=True, check=True).stdout, capture_output=True, text=True, check=True)
ns = f"steps-{os.getpid()}"; kubectl("create", "namespace", ns); time.sleep(2)
q = queue.Queue()
def watch(kind, tag):
    p = subprocess.Popen(K + ["get", kind, "-n", ns, "-w", "-o", "json", "--output-watch-events"], stdout=subprocess.PIPE, text=True)
    buf = ""
    for line in p.stdout:
        buf += line
        try: ev = json.loads(buf)
        except json.JSONDecodeError: continue
        buf = ""; q.put((time.time(), tag, ev["object"]))
for kind, tag in (("widgets.bench.flotilla.dev", "w"), ("applications.flotilla.dev", "a")):
    threading.Thread(target=watch, args=(kind, tag), daemon=True).start()
time.sleep(2)
ctl = subprocess.Popen([BIN, "controller", "-n", ns, "--kubeconfig", KC], env=dict(os.environ, RUST_LOG="warn"), stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "controller.log"), "w"))
appset = {"apiVersion": "flotilla.dev/v1alpha1", "kind": "ApplicationSet", "metadata": {"name": "steps", "namespace": ns},
  "spec": {"generators": [{"list": {"elements": [{"name": name(s, i), "step": str(s)} for s in range(STEPS) for i in range(PER)]}}],
    "strategy": {"type": "RollingSync", "rollingSync": {"steps": [{"matchExpressions": [{"key": "step", "operator": "In", "values": [str(s)]}]} for s in range(STEPS)]}},
    "template": {"metadata": {"name": "{{name}}", "labels": {"step": "{{step}}"}}, "spec": {"project": "default",
      "source": {"repoURL": f"file://{repo}", "targetRevision": "main", "path": "apps/{{name}}"}, "destination": {"name": "in-cluster", "namespace": ns}}}}}
kubectl("apply", "--server-side", "--field-manager", "bench", "-f", "-", input=json.dumps(appset))
ready, requested, made = {}, {}, set()
deadline = time.time() + 600
while sum(len(v) for v in ready.values()) < STEPS * PER:
    assert time.time() < deadline and ctl.poll() is None
    at, tag, obj = q.get(timeout=600)
    n = obj["metadata"]["name"]; s = int(n[1:].split("-a")[0])
    if tag == "a":
        if obj.get("spec", {}).get("operation"): requested.setdefault(s, at)
        continue
    if n in made: continue
    made.add(n); time.sleep(0.1)
    kubectl("patch", "widgets.bench.flotilla.dev", n, "-n", ns, "--type=merge", "-p", json.dumps({"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Up"}]}}))
    ready.setdefault(s, []).append(time.time())
time.sleep(1)
while not q.empty():
    at, tag, obj = q.get()
ctl.kill(); ctl.wait()
d = sorted(requested[s] - max(ready[s - 1]) for s in range(1, STEPS))
pct = lambda p: d[round((len(d) - 1) * p)] * 1000
print(f"step transitions (last Widget ready -> first sync request of the next step): {len(d)} over {STEPS} steps of {PER}: p50 {pct(.5):.0f} ms, p95 {pct(.95):.0f} ms, max {pct(1):.0f} ms")
print("all:", [round(x * 1000) for x in d]); print("load average:", open("/proc/loadavg").read().strip())
kubectl("delete", "namespace", ns, "--wait=false")
