"""The causeway DaemonSet's container as an OCI runtime config: what the
kubelet and containerd would give runc for the pod, derived from the
manifest (never restated), so a test runs the agent with exactly the
manifest's args, environment, capabilities, mounts, hostPID and security
settings.

    ds_oci.py SOURCE BUNDLE_CONFIG OUT_DIR [options] > summary.json

SOURCE is a manifest file (deploy/kubernetes/causeway.yaml or a copy) or
"helm:CHART[:KEY=JSON,...]" (the chart rendered by chart_render with those
values set, e.g. helm:deploy/helm/causeway:kmsg.privileged=true).
BUNDLE_CONFIG is the bundle's config.json for the image (umoci's, or
runc spec's with the image config's entrypoint, env and working
directory); it is rewritten in place. Volume contents (ConfigMap files,
Secret copies, emptyDirs) are written under OUT_DIR.

Options:
  --node NAME             spec.nodeName, for fieldRef env (NODE_NAME)
  --secret NAME=DIR       the Secret NAME's keys are DIR's files
  --host-path HOST=DIR    a hostPath volume of HOST is DIR instead (the
                          node's state directory, so a test has its own)
  --driver-root DIR       the node's NVIDIA driver files live under DIR
                          (DIR/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1)
  --grant-devices         the device cgroup also allows the CharDevice
                          hostPath volumes (what a device plugin's
                          allocation adds; see
                          tests/integration/test_daemonset_runc.sh)

Everything kubelet/containerd add that the manifest does not decide is the
image's or runc's default (masked and read-only /proc paths, /dev, the
cgroup and network namespaces); what is not emulated is said in the
summary's "not_emulated". A manifest construct this script does not know
is an error, never ignored.
"""
import json
import os
import re
import shutil
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chart_render  # noqa: E402
import yaml  # noqa: E402

# The NVIDIA container toolkit's runtime class (the GPU Operator's and the
# toolkit installer's name) and where its hook mounts the driver's NVML on
# a Debian-layout root: the host's own path, inside the container.
TOOLKIT_CLASS = "nvidia"
NVML_PATH = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"


class ManifestError(Exception):
    pass


def load(source):
    if source.startswith("helm:"):
        parts = source[5:].split(":", 1)
        values = {}
        for kv in (parts[1].split(",") if len(parts) > 1 and parts[1] else []):
            key, val = kv.split("=", 1)
            node = values
            keys = key.split(".")
            for k in keys[:-1]:
                node = node.setdefault(k, {})
            node[keys[-1]] = json.loads(val)
        return chart_render.render(parts[0], values)
    return [d for d in yaml.safe_load_all(open(source)) if d]


def quantity(q, unit):
    """A Kubernetes quantity: bytes for memory, millicores for CPU."""
    q = str(q)
    if unit == "cpu":
        return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)
    m = re.match(r"^([0-9]+)(Ki|Mi|Gi|Ti|k|M|G|T)?$", q)
    if not m:
        raise ManifestError("memory quantity %r" % q)
    mult = {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[m.group(2)]
    return int(m.group(1)) * mult


def host_caps():
    """Every capability this host's bounding set holds, by name."""
    names = {}
    for line in open("/usr/include/linux/capability.h"):
        m = re.match(r"#define (CAP_[A-Z_]+)\s+(\d+)\s*$", line)
        if m:
            names[int(m.group(2))] = m.group(1)
    bnd = int(re.search(r"^CapBnd:\s*([0-9a-f]+)", open("/proc/self/status").read(), re.M).group(1), 16)
    return [names[n] for n in sorted(names) if (bnd >> n) & 1]


def main(argv):
    source, cfg_path, out = argv[1], argv[2], argv[3]
    opts = {"node": "node-1", "secret": {}, "host": {}, "driver": None, "grant": False}
    i = 4
    while i < len(argv):
        a = argv[i]
        if a == "--grant-devices":
            opts["grant"] = True
            i += 1
            continue
        v = argv[i + 1]
        if a == "--node":
            opts["node"] = v
        elif a == "--secret":
            opts["secret"].update([v.split("=", 1)])
        elif a == "--host-path":
            opts["host"].update([v.split("=", 1)])
        elif a == "--driver-root":
            opts["driver"] = v
        else:
            raise SystemExit("ds_oci.py: unknown option " + a)
        i += 2

    docs = load(source)
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    ds = by_kind["DaemonSet"][0]
    spec = ds["spec"]["template"]["spec"]
    if len(spec["containers"]) != 1 or spec.get("initContainers"):
        raise ManifestError("one container expected")
    c = spec["containers"][0]
    sc = c.get("securityContext", {})
    cfg = json.load(open(cfg_path))
    notes, summary = [], {}

    # ---- environment: the image's, then the container's (fieldRef from the pod) ----
    env = dict(e.split("=", 1) for e in cfg["process"]["env"])
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
            env[e["name"]] = opts["node"]
        else:
            raise ManifestError("env %s: only values and fieldRef spec.nodeName are emulated" % e["name"])
    cfg["process"]["env"] = ["%s=%s" % kv for kv in env.items()]

    # ---- command: the image's entrypoint, the container's args ($(VAR) expanded as the kubelet does) ----
    if c.get("command"):
        raise ManifestError("container command overrides the entrypoint: not emulated")
    expand = lambda s: re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), s)
    cfg["process"]["args"] = cfg["process"]["args"][:1] + [expand(a) for a in c.get("args", [])]
    cfg["process"]["terminal"] = False

    # ---- security context ----
    privileged = bool(sc.get("privileged"))
    if privileged:
        caps = host_caps()
    else:
        caps = list(cfg["process"]["capabilities"]["bounding"])  # containerd's defaults
        if "ALL" in sc.get("capabilities", {}).get("drop", []):
            caps = []
        else:
            for d in sc.get("capabilities", {}).get("drop", []):
                caps = [x for x in caps if x != "CAP_" + d]
        for a in sc.get("capabilities", {}).get("add", []):
            if "CAP_" + a not in caps:
                caps.append("CAP_" + a)
    # What this host cannot grant (its own bounding set lacks it: a
    # container host here) no runtime could: said, not hidden.
    have = set(host_caps())
    for cap in [x for x in caps if x not in have]:
        notes.append("%s: not in this host's bounding set, not granted" % cap)
    caps = [x for x in caps if x in have]
    cfg["process"]["capabilities"] = {"bounding": caps, "effective": caps, "permitted": caps}
    cfg["process"]["noNewPrivileges"] = sc.get("allowPrivilegeEscalation", True) is False
    cfg["root"]["readonly"] = bool(sc.get("readOnlyRootFilesystem"))
    for key in ("seccompProfile", "appArmorProfile"):
        t = sc.get(key, {}).get("type", "RuntimeDefault")
        if t != "Unconfined":
            raise ManifestError("%s %s: only Unconfined is emulated" % (key, t))
    cfg["linux"].pop("seccomp", None)
    cfg["process"].pop("apparmorProfile", None)
    if sc.get("runAsUser") is not None or sc.get("runAsNonRoot"):
        raise ManifestError("runAsUser/runAsNonRoot: not emulated")
    if privileged:
        # containerd's privileged: every capability, every device, no masked
        # or read-only /proc paths, sysfs writable. (It also creates every
        # host device node in /dev; the test's mounts do not rely on that.)
        cfg["linux"]["resources"]["devices"] = [{"allow": True, "access": "rwm"}]
        cfg["linux"]["maskedPaths"] = []
        cfg["linux"]["readonlyPaths"] = []
        for m in cfg["mounts"]:
            if m["destination"] == "/sys":
                m["options"] = [o for o in m["options"] if o != "ro"]
        notes.append("privileged: host device nodes are not copied into /dev")

    # ---- namespaces ----
    if spec.get("hostNetwork") or spec.get("hostIPC"):
        raise ManifestError("hostNetwork/hostIPC: not emulated")
    if spec.get("hostPID"):
        cfg["linux"]["namespaces"] = [n for n in cfg["linux"]["namespaces"] if n["type"] != "pid"]

    # ---- resources: limits as the CRI sets them ----
    lim = c.get("resources", {}).get("limits", {})
    req = c.get("resources", {}).get("requests", {})
    r = cfg["linux"].setdefault("resources", {})
    if "memory" in lim:
        r["memory"] = {"limit": quantity(lim["memory"], "memory")}
    if "cpu" in lim or "cpu" in req:
        r["cpu"] = {}
        if "cpu" in lim:
            r["cpu"].update(quota=quantity(lim["cpu"], "cpu") * 100, period=100000)
        if "cpu" in req:
            r["cpu"]["shares"] = max(2, quantity(req["cpu"], "cpu") * 1024 // 1000)

    # ---- volumes ----
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    cms = {d["metadata"]["name"]: d for d in by_kind.get("ConfigMap", [])}
    mounts = []
    devices = []
    for vm in c.get("volumeMounts", []):
        v = vols.get(vm["name"])
        if v is None:
            raise ManifestError("volumeMount %s has no volume" % vm["name"])
        ro = bool(vm.get("readOnly"))
        vdir = os.path.join(out, "vol", vm["name"])
        if "configMap" in v:
            cm = cms.get(v["configMap"]["name"])
            if cm is None:
                raise ManifestError("ConfigMap %s is not in the manifest" % v["configMap"]["name"])
            os.makedirs(vdir, exist_ok=True)
            for k, text in cm.get("data", {}).items():
                open(os.path.join(vdir, k), "w").write(text)
            src = vdir
        elif "secret" in v:
            name = v["secret"]["secretName"]
            if name not in opts["secret"]:
                raise ManifestError("Secret %s: the test provides no --secret %s=DIR" % (name, name))
            os.makedirs(vdir, exist_ok=True)
            for f in os.listdir(opts["secret"][name]):
                shutil.copy(os.path.join(opts["secret"][name], f), os.path.join(vdir, f))
                os.chmod(os.path.join(vdir, f), v["secret"].get("defaultMode", 0o644))
            src = vdir
        elif "emptyDir" in v:
            os.makedirs(vdir, exist_ok=True)
            src = vdir
        elif "hostPath" in v:
            hp = v["hostPath"]
            src = opts["host"].get(hp["path"], hp["path"])
            t = hp.get("type", "")
            if t == "DirectoryOrCreate":
                os.makedirs(src, exist_ok=True)
            elif t == "CharDevice":
                st = os.stat(src)
                if not stat.S_ISCHR(st.st_mode):
                    raise ManifestError("hostPath %s is not a character device" % src)
                devices.append({"allow": True, "type": "c", "major": os.major(st.st_rdev),
                                "minor": os.minor(st.st_rdev), "access": "r" if ro else "rw",
                                "path": hp["path"]})
            elif t:
                raise ManifestError("hostPath type %s: not emulated" % t)
            if not os.path.exists(src):
                if t:
                    raise ManifestError("hostPath %s does not exist on this host" % src)
                # containerd creates a missing untyped hostPath as an empty
                # directory; an empty one of the test's stands in for it
                # (nothing is created on this host).
                src = os.path.join(out, "host", hp["path"].strip("/"))
                os.makedirs(src, exist_ok=True)
                notes.append("hostPath %s absent here: an empty directory, as containerd creates" % hp["path"])
        else:
            raise ManifestError("volume %s: only configMap, secret, emptyDir and hostPath are emulated" % vm["name"])
        if vm.get("subPath"):
            src = os.path.join(src, vm["subPath"])
        # The kubelet's bind mounts: recursive, private propagation.
        mounts.append({"destination": vm["mountPath"], "type": "bind", "source": src,
                       "options": ["rbind", "rprivate", "ro" if ro else "rw"]})

    # ---- the NVIDIA container toolkit's hook ----
    # There is no nvidia runtime here: this is the mount its prestart hook
    # (nvidia-container-cli configure) would add. The hook runs for the
    # runtime class and reads the container's env: NVIDIA_VISIBLE_DEVICES
    # (unset, "void" or "none": nothing injected; "all" or ids: those GPUs'
    # /dev/nvidia* nodes plus /dev/nvidiactl, with their device-cgroup
    # rules) and NVIDIA_DRIVER_CAPABILITIES ("utility" or "all": NVML,
    # libnvidia-ml.so.1, mounted read-only from the driver's host path at
    # the same path; "compute" adds libcuda). No GPU here: no device nodes.
    toolkit = "not run"
    if spec.get("runtimeClassName") == TOOLKIT_CLASS:
        vis = env.get("NVIDIA_VISIBLE_DEVICES", "")
        capset = env.get("NVIDIA_DRIVER_CAPABILITIES", "utility,compute").split(",")  # the toolkit's default
        if vis in ("", "void", "none"):
            toolkit = "no devices requested (NVIDIA_VISIBLE_DEVICES=%r)" % vis
        elif "utility" in capset or "all" in capset:
            if not opts["driver"]:
                raise ManifestError("the toolkit would mount NVML: the test gives no --driver-root")
            mounts.append({"destination": NVML_PATH, "type": "bind", "source": opts["driver"] + NVML_PATH,
                           "options": ["bind", "ro", "nosuid", "nodev"]})
            toolkit = "libnvidia-ml.so.1 mounted (NVIDIA_VISIBLE_DEVICES=%s, NVIDIA_DRIVER_CAPABILITIES=%s)" % (
                vis, ",".join(capset))
            notes.append("toolkit: no /dev/nvidia* nodes (no GPU on this host)")
        else:
            toolkit = "no NVML: NVIDIA_DRIVER_CAPABILITIES=%s lacks utility" % ",".join(capset)
    else:
        toolkit = "no toolkit: runtimeClassName %r" % spec.get("runtimeClassName")

    # A device plugin's allocation (the documented way to give an
    # unprivileged pod /dev/kmsg): the runtime adds a device-cgroup rule
    # for the node. Only with --grant-devices, and only for the
    # CharDevice volumes the manifest mounts.
    if opts["grant"] and not privileged:
        cfg["linux"]["resources"]["devices"] += [{k: d[k] for k in ("allow", "type", "major", "minor", "access")}
                                                 for d in devices]

    # The manifest's mounts go after runc's defaults, so they cover them
    # (/sys/fs/cgroup, /tmp); the image's volume is the state hostPath.
    dests = {m["destination"] for m in mounts}
    cfg["mounts"] = [m for m in cfg["mounts"] if m["destination"] not in dests] + mounts
    json.dump(cfg, open(cfg_path, "w"), indent=1)

    args = c.get("args", [])
    sm = by_kind.get("ServiceMonitor", [{}])[0].get("spec", {}).get("endpoints", [{}])[0]
    summary = {
        "args": cfg["process"]["args"], "env": cfg["process"]["env"], "capabilities": caps,
        "privileged": privileged, "hostPID": bool(spec.get("hostPID")),
        "mounts": [m["destination"] for m in mounts], "toolkit": toolkit,
        "granted_devices": [d["path"] for d in devices] if opts["grant"] and not privileged else [],
        "serve": args[args.index("--serve") + 1] if "--serve" in args else None,
        "metrics_path": sm.get("path"), "server_name": sm.get("tlsConfig", {}).get("serverName"),
        "readiness": c.get("readinessProbe", {}).get("exec", {}).get("command"),
        "config": yaml.safe_load(cms["causeway-config"]["data"]["causeway.yaml"]) if "causeway-config" in cms else None,
        "not_emulated": notes + ["the kubelet's /etc/hosts, /etc/hostname, /etc/resolv.conf, "
                                 "/dev/termination-log and KUBERNETES_* variables",
                                 "the pod network (a network namespace with loopback only)"],
    }
    json.dump(summary, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    try:
        main(sys.argv)
    except ManifestError as e:
        sys.exit("ds_oci.py: " + str(e))
