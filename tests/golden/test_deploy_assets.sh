#!/bin/bash
# The monitoring and deployment files in deploy/ are checked for what they
# must be, not only for parsing:
#  - alert rules: promtool check rules, and promtool test rules cases that
#    fire and stay silent for each alert;
#  - Grafana dashboard: valid JSON, a Prometheus datasource variable used by
#    every panel, every PromQL expression accepted by promtool;
#  - every causeway metric family the rules and the dashboard use, and every
#    family /metrics serves, is documented in docs/metrics.md;
#  - Kubernetes: every document parses; the DaemonSet has what tracing needs
#    (hostPID, BPF/tracefs/cgroup mounts, capabilities not privileged, GPU
#    node selector, limits, probes with a client certificate on
#    /api/v1/health, the TLS Secret); the PrometheusRule carries exactly the
#    rules file;
#  - the Helm chart's templates render (for the template constructs they
#    use) to exactly the plain manifests with the default values;
#  - the systemd unit passes systemd-analyze verify and grants the same
#    capabilities as the DaemonSet; the Dockerfile builds from source.
set -u
command -v promtool >/dev/null || { echo "FAIL: promtool not installed (scripts/install-deps.sh)"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
. "$CW_ROOT/tests/lib/auth.sh"
auth_shared # every server and client here shares $CW_TOKEN
R=$CW_ROOT
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

promtool check rules "$R/deploy/prometheus/causeway-rules.yaml" >"$D/out" 2>&1 ||
	fail "promtool check rules: $(cat "$D/out")"
(cd "$R/tests/prometheus" && promtool test rules causeway-rules.test.yaml) >"$D/out" 2>&1 ||
	fail "promtool test rules: $(cat "$D/out")"
cmp -s "$R/deploy/prometheus/causeway-rules.yaml" "$R/deploy/helm/causeway/files/causeway-rules.yaml" ||
	fail "the chart's files/causeway-rules.yaml differs from deploy/prometheus/causeway-rules.yaml"
for alert in TrainingJobStalled StragglerRank CUDATailLatencyHigh NoisyNeighbour AgentLosingEvents AgentDown \
	GPUXidCritical GPUXidError GPUThermalThrottling GPUPowerBrake GPUTemperatureHigh GPUFramebufferFull \
	GPUDoubleBitECC GPUUnderutilizedTraining GPUClockDropWithHeat InferenceLatencyP99High InferenceLatencyP95High \
	InferenceTTFTHigh InferenceErrorRateHigh InferenceAvailabilityLow; do
	grep -q "alertname: $alert\$" "$R/tests/prometheus/causeway-rules.test.yaml" || fail "no test case for $alert"
done
# Runbooks name commands that exist, and their SQL runs on a store with
# GPU samples (the thermal-throttling demo).
"$CW_BIN" demo thermal-throttling --db "$D/gpu.db" >/dev/null 2>&1 || fail "demo thermal-throttling"
grep -o '`causeway [a-z]*' "$R/deploy/prometheus/causeway-rules.yaml" | sort -u | while read -r _ sub; do
	"$CW_BIN" "$sub" --help >/dev/null 2>&1 || { echo "FAIL: a runbook names causeway $sub, which is no command"; exit 1; }
done || exit 1
grep -o 'causeway query --db [^ ]* "[^"]*"' "$R/deploy/prometheus/causeway-rules.yaml" | sed 's/.*--db [^ ]* "\(.*\)"$/\1/' |
	while read -r sql; do
		"$CW_BIN" query --db "$D/gpu.db" "$sql" >/dev/null 2>"$D/qerr" || { echo "FAIL: runbook SQL \"$sql\": $(cat "$D/qerr")"; exit 1; }
	done || exit 1

# The /metrics of three demo databases (a training loop, an NCCL job, a GPU
# fault), for the documentation check below.
: >"$D/metrics.txt"
for sc in incident nccl-hang xid-fault; do
	"$CW_BIN" demo "$sc" --db "$D/$sc.db" >/dev/null 2>&1 || fail "demo $sc"
	"$CW_BIN" serve --db "$D/$sc.db" --no-tls --listen 127.0.0.1:0 2>"$D/serve-$sc.log" &
	SP=$!
	port=
	for _ in $(seq 1 100); do
		port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$D/serve-$sc.log")
		[ -n "$port" ] && break
		sleep 0.05
	done
	curl -sf "${AUTH[@]}" --max-time 10 "http://127.0.0.1:$port/metrics" >>"$D/metrics.txt"
	kill $SP
	wait $SP 2>/dev/null
done
grep -q '^causeway_nccl_hang_missing' "$D/metrics.txt" || fail "no NCCL series from the nccl-hang demo"
grep -q '^causeway_gpu_xid_errors_total{.*code="79"' "$D/metrics.txt" || fail "no Xid series from the xid-fault demo"

python3 - "$R" "$D" <<'PY' || exit 1
import copy, json, re, subprocess, sys, yaml
R, D = sys.argv[1], sys.argv[2]
def die(msg):
    sys.exit("FAIL: " + msg)

# ---- Grafana ----
dash = json.load(open(R + "/deploy/grafana/causeway-dashboard.json"))
tv = {v["name"]: v for v in dash["templating"]["list"]}
if tv.get("datasource", {}).get("type") != "datasource" or tv["datasource"].get("query") != "prometheus":
    die("dashboard has no Prometheus datasource variable")
exprs = []
rows = [p for p in dash["panels"] if p.get("type") == "row"]
if "GPU health" not in [r.get("title") for r in rows]:
    die("dashboard has no GPU health row")
for r in rows:
    if r.get("targets") or r.get("gridPos", {}).get("w") != 24:
        die("row %r must span the width and hold no query" % r.get("title"))
for p in dash["panels"]:
    if p.get("type") == "row":
        continue
    if p.get("datasource", {}).get("uid") != "${datasource}":
        die("panel %r does not use the datasource variable" % p["title"])
    if not p.get("targets"):
        die("panel %r has no query" % p["title"])
    for t in p["targets"]:
        if t.get("datasource", {}).get("uid") != "${datasource}":
            die("a query of panel %r does not use the datasource variable" % p["title"])
        exprs.append((p["title"], t["expr"]))
for v in tv.values():
    q = v.get("query")
    if isinstance(q, dict):
        m = re.match(r"label_values\((\w+), *(\w+)\)$", q["query"])
        if not m:
            die("variable %s: %r" % (v["name"], q["query"]))
        exprs.append(("variable " + v["name"], m.group(1)))
def concrete(e):
    return e.replace("$__rate_interval", "5m").replace("$node", ".*").replace("$op", ".*")
rules = {"groups": [{"name": "dashboard", "rules": [
    {"record": "causeway:dashboard_check_%d" % i, "expr": concrete(e)} for i, (_, e) in enumerate(exprs)]}]}
open(D + "/dash-rules.yaml", "w").write(yaml.safe_dump(rules))
r = subprocess.run(["promtool", "check", "rules", D + "/dash-rules.yaml"], capture_output=True, text=True)
if r.returncode:
    die("a dashboard expression does not parse: " + r.stdout + r.stderr)

# ---- metric families are documented ----
doc = open(R + "/docs/metrics.md").read()
documented = set(re.findall(r"`((?:causeway|process)_[a-z_]+)`", doc))
used = set()
for _, e in exprs:
    used |= set(re.findall(r"\b(causeway_[a-z_]+?)(?:_bucket|_count|_sum)?\b", e))
rules_text = open(R + "/deploy/prometheus/causeway-rules.yaml").read()
used |= set(re.findall(r"\b(causeway_[a-z_]+?)(?:_bucket|_count|_sum)?\b", rules_text))
served = set(re.findall(r"^# TYPE (\S+) ", open(D + "/metrics.txt").read(), re.M))
for fam in sorted(used | served):
    if fam not in documented:
        die("metric family %s is used or served but not in docs/metrics.md" % fam)
for fam in sorted(used):
    if fam not in served and fam not in (
            "causeway_op_errors_total", "causeway_process_cuda_idle_seconds",
            "causeway_offcpu_seconds_total",  # live-only: test_prometheus_scrape
            "causeway_writer_lag_seconds", "causeway_writer_commit_lag_seconds",
            "causeway_cgroup_pressure_seconds_total"):  # trace only: test_metrics_gpu
        die("rules or dashboard use %s, which /metrics does not serve" % fam)

# ---- Kubernetes ----
docs = [d for d in yaml.safe_load_all(open(R + "/deploy/kubernetes/causeway.yaml")) if d]
kinds = {d["kind"]: d for d in docs}
for k in ("Namespace", "ServiceAccount", "ConfigMap", "DaemonSet", "Service", "ServiceMonitor", "PrometheusRule"):
    if k not in kinds:
        die("deploy/kubernetes/causeway.yaml has no " + k)
ds = kinds["DaemonSet"]
spec = ds["spec"]["template"]["spec"]
if not spec.get("hostPID"):
    die("DaemonSet without hostPID")
if "nvidia.com/gpu.present" not in spec.get("nodeSelector", {}):
    die("DaemonSet without a GPU node selector")
c = spec["containers"][0]
sc = c["securityContext"]
if sc.get("privileged") is not False or sc.get("allowPrivilegeEscalation") is not False:
    die("the container must not be privileged")
add = set(sc["capabilities"]["add"])
for cap in ("BPF", "PERFMON", "SYS_PTRACE", "SYSLOG"):
    if cap not in add:
        die("capability %s missing" % cap)
# NVML through the NVIDIA container toolkit, the kernel log for Xids.
env = {e["name"]: e.get("value") for e in c["env"]}
if spec.get("runtimeClassName") != "nvidia" or env.get("NVIDIA_VISIBLE_DEVICES") != "all" or \
        "utility" not in (env.get("NVIDIA_DRIVER_CAPABILITIES") or "").split(","):
    die("the DaemonSet does not get NVML from the NVIDIA runtime: %r %r" % (spec.get("runtimeClassName"), env))
if sc["capabilities"].get("drop") != ["ALL"]:
    die("capabilities are not dropped first")
lim = c["resources"]["limits"]
if "cpu" not in lim or "memory" not in lim:
    die("no resource limits")
for probe in ("livenessProbe", "readinessProbe"):
    cmd = c[probe]["exec"]["command"]
    if "https://127.0.0.1:7070/api/v1/health" not in cmd or "--cert" not in cmd:
        die("%s must call /api/v1/health with a client certificate: %r" % (probe, cmd))
mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
vols = {v["name"]: v for v in spec["volumes"]}
for path in ("/sys/kernel/tracing", "/sys/fs/bpf", "/sys/fs/cgroup", "/var/lib/causeway", "/etc/causeway/tls"):
    if path not in mounts:
        die("DaemonSet does not mount " + path)
if vols.get(mounts.get("/dev/kmsg"), {}).get("hostPath") != {"path": "/dev/kmsg", "type": "CharDevice"}:
    die("the DaemonSet does not mount the host's /dev/kmsg")
if vols[mounts["/var/lib/causeway"]].get("hostPath", {}).get("path") != "/var/lib/causeway":
    die("the store is not on the host")
if vols[mounts["/etc/causeway/tls"]].get("secret", {}).get("secretName") != "causeway-tls":
    die("TLS does not come from the causeway-tls Secret")
args = c["args"]
if args[args.index("--serve") + 1] != "0.0.0.0:7070" or "--no-view" not in args or "trace" not in args:
    die("the agent does not trace and serve on 7070: %r" % args)
cfg = yaml.safe_load(kinds["ConfigMap"]["data"]["causeway.yaml"])
# Always on: the store's cap is the deployment's choice, never trace's
# default share of whatever the node's disk has free (docs/trace.md).
for where, c in (("the DaemonSet's ConfigMap", cfg),
                 ("deploy/systemd/causeway.yaml", yaml.safe_load(open(R + "/deploy/systemd/causeway.yaml")))):
    if not re.match(r"^[0-9]+(\.[0-9]+)?[KMGT]iB$", str(c.get("store", {}).get("max_size", ""))):
        die("%s sets no explicit store.max_size" % where)
if not cfg["server"]["tls"].get("client_ca"):
    die("the agent's config does not require client certificates")
sm = kinds["ServiceMonitor"]["spec"]["endpoints"][0]
if sm["scheme"] != "https" or "cert" not in sm["tlsConfig"] or sm["path"] != "/metrics":
    die("the ServiceMonitor does not scrape /metrics over mutual TLS")
# kube-prometheus-stack selects by the release label: the most common
# reason a ServiceMonitor or rule is silently ignored.
for k in ("ServiceMonitor", "PrometheusRule"):
    if kinds[k]["metadata"]["labels"].get("release") != "kube-prometheus-stack":
        die("%s has no release: kube-prometheus-stack label" % k)
if kinds["ServiceMonitor"]["spec"].get("namespaceSelector") != {"matchNames": ["causeway"]}:
    die("the ServiceMonitor has no namespaceSelector")
if kinds["PrometheusRule"]["spec"] != yaml.safe_load(rules_text):
    die("the PrometheusRule differs from deploy/prometheus/causeway-rules.yaml")

# ---- Helm: the constructs the templates use, rendered with the defaults ----
sys.path.insert(0, R + "/tests/lib")
import chart_render
chart = R + "/deploy/helm/causeway"
try:
    rendered = chart_render.render(chart)
except chart_render.TemplateError as e:
    die(str(e))
key = lambda d: d["kind"]
if sorted(rendered, key=key) != sorted(docs, key=key):
    a = {d["kind"]: d for d in rendered}
    for d in docs:
        if a.get(d["kind"]) != d:
            die("the chart renders %s differently from deploy/kubernetes/causeway.yaml:\n%s\nvs\n%s" % (
                d["kind"], yaml.safe_dump(a.get(d["kind"])), yaml.safe_dump(d)))
    die("the chart renders other documents than deploy/kubernetes/causeway.yaml")

# The same templates with other values (no helm binary in Debian: the
# renderer substitutes them): labels, selectors and the GPU access come
# from the values, not from the templates.
other = {d["kind"]: d for d in chart_render.render(chart, {
    "serviceMonitor": {"labels": {"release": "prom-main", "team": "gpu"}, "namespaceSelector": {"any": True, "matchNames": None}},
    "prometheusRule": {"labels": {"release": "prom-main"}},
    "gpu": {"runtimeClassName": "nvidia-cdi"},
    "kmsg": {"privileged": True},
    "store": {"maxSize": "3GiB"}})}
sm_, pr_ = other["ServiceMonitor"], other["PrometheusRule"]
if sm_["metadata"]["labels"] != {"app.kubernetes.io/name": "causeway", "release": "prom-main", "team": "gpu"} or \
        sm_["spec"]["namespaceSelector"] != {"any": True}:
    die("the chart does not render the ServiceMonitor's labels and selector from its values: %r" % sm_)
if pr_["metadata"]["labels"].get("release") != "prom-main":
    die("the chart does not render the PrometheusRule's labels from its values")
ds_ = other["DaemonSet"]["spec"]["template"]["spec"]
if ds_["runtimeClassName"] != "nvidia-cdi" or ds_["containers"][0]["securityContext"]["privileged"] is not True:
    die("the chart does not render the GPU runtime class or kmsg.privileged from its values")
if yaml.safe_load(other["ConfigMap"]["data"]["causeway.yaml"])["store"]["max_size"] != "3GiB":
    die("the chart does not render store.maxSize")

# ---- systemd ----
unit = open(R + "/deploy/systemd/causeway.service").read()
amb = set(re.search(r"^AmbientCapabilities=(.*)$", unit, re.M).group(1).split())
bnd = set(re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M).group(1).split())
if amb != bnd or amb != {"CAP_" + a for a in add}:
    die("the unit's capabilities %r differ from the DaemonSet's %r" % (amb, add))
for k in ("User=causeway", "NoNewPrivileges=yes", "ProtectSystem=strict", "StateDirectory=causeway", "Restart=on-failure"):
    if k not in unit:
        die("the unit lacks " + k)
print("dashboard: %d expressions; %d families documented; k8s: %s; chart renders the same" % (
    len(exprs), len(used | served), ", ".join(sorted(kinds))))
PY

# systemd-analyze verify needs the ExecStart binary to exist: point it at ours.
if command -v systemd-analyze >/dev/null; then
	sed "s|/usr/local/bin/causeway|$CW_BIN|" "$R/deploy/systemd/causeway.service" >"$D/causeway.service"
	out=$(systemd-analyze verify "$D/causeway.service" 2>&1) || fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify: $out"
fi
"$CW_BIN" --config "$R/deploy/systemd/causeway.yaml" check >/dev/null 2>&1 ||
	fail "the unit's causeway.yaml is refused: $("$CW_BIN" --config "$R/deploy/systemd/causeway.yaml" check 2>&1 | tail -2)"
grep -q '^FROM debian' "$R/deploy/Dockerfile" && grep -q 'scripts/install-deps.sh' "$R/deploy/Dockerfile" &&
	grep -q 'make .*all' "$R/deploy/Dockerfile" || fail "the Dockerfile does not build from source"
echo ok
