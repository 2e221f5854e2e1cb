#!/usr/bin/env python3
"""kernel-matrix.py: what the kernel matrix observed, judged and compared
with docs/kernels.md (tests/integration/kernel_matrix_lib.sh).

  observe LOG STAMP BPF_DIR     the VM's console log -> JSON on stdout
  judge JSON                    the issue's "done when", one line per miss; exit 1 on any
  doc DOC JSON                  the doc's row for that kernel against the JSON; exit 1 on a contradiction
  header                        the doc table's header
  table JSON...                 the doc table's rows, as the matrix observed them

The doc's cells use a fixed vocabulary (cells() below) so that a row can be
compared with an observation; the last column (what the kernel lacks) is
free text and not compared.
"""
import json
import re
import subprocess
import sys

TARGET = {"cudaMalloc": 1, "cudaLaunchKernel": 30000, "cudaStreamSynchronize": 3000}
TRACES = ("launch_err", "pid_err", "cg_err", "inf_err")
# What each Debian kernel stands for (docs/kernels.md; the facts of
# December 2026).
STANDS_FOR = {
    "bullseye": "Ubuntu 22.04 GA (5.15), RHEL 9 (5.14)",
    "bookworm": "Debian 12, Amazon Linux 2023 (6.1)",
    "trixie": "Debian 13, Amazon Linux 2023 (6.12), RHEL 10",
    "sid": "the newest upstream kernels",
}
DEBIAN = {"bullseye": "Debian 11", "bookworm": "Debian 12", "trixie": "Debian 13", "sid": "Debian sid"}


def bpf_programs(bpf_dir):
    """Program names per object in BPF_DIR/*.bpf.o (FUNC symbols outside .text)."""
    import glob
    import os
    progs = {}
    for obj in sorted(glob.glob(os.path.join(bpf_dir, "*.bpf.o"))):
        name = os.path.basename(obj)[: -len(".bpf.o")]
        sections = {}
        for line in subprocess.run(["readelf", "-SW", obj], capture_output=True, text=True).stdout.splitlines():
            m = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)", line)
            if m:
                sections[m.group(1)] = m.group(2)
        names = []
        for line in subprocess.run(["readelf", "-sW", obj], capture_output=True, text=True).stdout.splitlines():
            f = line.split()
            if len(f) >= 8 and f[3] == "FUNC" and f[4] == "GLOBAL" and sections.get(f[6], ".text") != ".text":
                names.append(f[7])
        progs[name] = sorted(names)
    return progs


def observe(log, stamp, bpf_dir):
    text = open(log, errors="replace").read()
    obs = {"results": {}, "outputs": {}}
    for line in open(stamp):
        k, _, v = line.strip().partition("=")
        if k in ("suite", "arch", "release", "version", "package"):
            obs[k] = v
    for line in text.splitlines():
        line = line.rstrip("\r")
        m = re.match(r"CWR (\S+) ?(.*)$", line)
        if m:
            obs["results"][m.group(1)] = m.group(2).strip()
            continue
        m = re.match(r"CWO (\S+)\| ?(.*)$", line)
        if m:
            obs["outputs"].setdefault(m.group(1), []).append(m.group(2))
            continue
        m = re.match(r"CW-VM-BOOT (\S+) (\S+)", line)
        if m:
            obs["booted"], obs["boot_s"] = m.group(1), float(m.group(2))
        m = re.match(r"CW-VM-EXIT (\S+) (\S+)", line)
        if m:
            obs["guest_rc"], obs["guest_s"] = int(m.group(1)), float(m.group(2))
    res, outs = obs["results"], obs["outputs"]
    obs["check_can_run"] = any(l.strip() == "trace can run here" for l in outs.get("check", []))
    obs["check_lines"] = [l for l in outs.get("check", []) if re.match(r"\s*(ok|warn|fail)\b", l)]
    # check's own account (from the lead's check of this era on): per BPF
    # object, the programs it loads on this kernel and those left out.
    obs["check_loads"] = {}
    for l in outs.get("check", []):
        m = re.match(r"(ok|warn|fail)\s+load (\S+(?: \([^)]*\))?)\s+(.*)$", l)
        if m:
            obs["check_loads"][m.group(2)] = "%s: %s" % (m.group(1), m.group(3))
    loaded = set()
    for k in ("launch_progs", "pid_progs"):
        loaded |= set(res.get(k, "").split())
    obs["programs_seen"] = bool(loaded)
    # The kernel keeps 15 characters of a program's name; bpftool prints
    # the whole one from the program's BTF, so names match exactly (a
    # prefix would take cw_loader_state for cw_loader_state_maps).
    def seen(n):
        return n in loaded
    obs["programs"] = {}
    for objname, names in bpf_programs(bpf_dir).items():
        obs["programs"][objname] = {
            "loaded": [n for n in names if seen(n)],
            "not_loaded": [n for n in names if not seen(n)],
        }
    for k in ("explain",):
        try:
            obs["explain"] = json.loads("\n".join(outs.get(k, [])))
        except ValueError:
            obs["explain"] = None
    return obs


def num(res, key):
    try:
        return int(res.get(key, ""))
    except ValueError:
        return None


def traces_ran(obs):
    res = obs["results"]
    return all(res.get(k) == "0" for k in ("launch_rc", "pid_rc", "cg_rc"))


def hog_named(obs):
    ex = obs.get("explain") or {}
    for c in ex.get("chains") or []:
        rc = c.get("root_cause") or {}
        if rc.get("kind") == "cpu_preemption" and re.search(r"\bcwhog\b", rc.get("summary", "")):
            return True
    return False


def ran(res, key):
    """A trace's cell prefix: None when it exited 0."""
    if key not in res:
        return "not reached (the VM's time ran out)"
    return None if res[key] == "0" else "fails (exit %s)" % res[key]


def cells(obs):
    """The doc row's compared cells, in the fixed vocabulary."""
    res = obs["results"]
    check = "can run" if obs["check_can_run"] else "cannot run"
    if ran(res, "launch_rc"):
        launch = ran(res, "launch_rc")
    elif any(num(res, "agg_" + op) is None for op in TARGET):
        launch = "not counted (the store query failed)"
    elif all(num(res, "agg_" + op) == n for op, n in TARGET.items()):
        launch = "1 / 30,000 / 3,000"
    else:
        launch = "loses calls"
    if ran(res, "pid_rc"):
        pid = ran(res, "pid_rc")
    else:
        pid = "records" if (num(res, "pid_calls") or 0) > 0 else "records nothing"
    if ran(res, "cg_rc"):
        cg = ran(res, "cg_rc")
    elif (num(res, "cg_in") or 0) > 0 and num(res, "cg_out") == 0:
        cg = "its process only"
    elif (num(res, "cg_in") or 0) > 0:
        cg = "others too"
    else:
        cg = "records nothing"
    if ran(res, "pid_rc"):
        hog = ran(res, "pid_rc")
    else:
        hog = "names the hog" if hog_named(obs) else "does not name the hog"
    libbpf = sum(1 for k in TRACES for l in obs["outputs"].get(k, []) if l.startswith("libbpf:"))
    quiet = "quiet" if libbpf == 0 else "%d libbpf lines" % libbpf
    return [check, launch, quiet, pid, cg, hog]


HEADER = ["kernel", "stands for", "`check`", "`trace -- workload` (1 / 30,000 / 3,000)", "stderr",
          "`--pid`", "`--container`", "sched + `explain`"]


def lacks(obs):
    """check's warn/fail items that are kernel features (free text)."""
    skip = {"cuda driver", "nccl", "python", "gpu", "gpu telemetry", "cuda runtime", "cuda processes", "config"}
    items = []
    for l in obs["check_lines"]:
        m = re.match(r"(warn|fail)\s+(\S+(?: \S+)?)\s\s", l)
        if m and m.group(2) not in skip and not m.group(2).startswith("load"):
            items.append(m.group(2) + (" (fail)" if m.group(1) == "fail" else ""))
    return ", ".join(items) or "nothing"


def row_key(obs):
    return "%s/%s" % (obs["suite"], obs["arch"])


def judge_unsupported(obs):
    """A kernel trace does not support yet (docs/kernels.md says why): check
    must say trace cannot run, and every trace must refuse with one
    causeway line saying why and no libbpf line. It does not pass for the
    issue's "done when": the kernel is named as unsupported there."""
    res, outs = obs["results"], obs["outputs"]
    miss = []
    if obs["check_can_run"]:
        miss.append("check says trace can run here on a kernel marked unsupported")
    if res.get("check_rc") not in ("4",):
        miss.append("check exits %s, want 4" % res.get("check_rc"))
    for k in ("launch_rc", "pid_rc", "cg_rc"):
        if k not in res:
            miss.append("%s: not reached" % k[:-3])
            continue
        if res[k] == "0":
            miss.append("%s: trace ran on a kernel marked unsupported: ask for every call now (drop --unsupported)"
                        % k[:-3])
        err = [l for l in outs.get(k.replace("_rc", "_err"), []) if l]
        if not err or not err[-1].startswith("causeway: "):
            miss.append("%s: trace did not say why in a causeway line: %s" % (k[:-3], err[-1:] or "(nothing)"))
    for k in TRACES:
        lines = [l for l in outs.get(k, []) if l.startswith("libbpf:")]
        if lines:
            miss.append("%s: %d lines start with 'libbpf:', the first: %s" % (k[:-4], len(lines), lines[0]))
    return miss


def judge(obs):
    res, outs = obs["results"], obs["outputs"]
    miss = []
    if "guest_rc" not in obs:
        miss.append("the VM did not finish its guest script (booted: %s; results up to %s)"
                    % (obs.get("booted", "no"), list(res)[-1] if res else "none"))
    for k in ("launch_rc", "pid_rc", "cg_rc"):
        if k in res and res[k] != "0":
            err = outs.get(k.replace("_rc", "_err"), [])
            last = [l for l in err if l and not l.startswith("libbpf:")][-3:]
            miss.append("%s: trace exits %s: %s" % (k[:-3], res.get(k, "?"), " / ".join(last) or "(no message)"))
    for k in TRACES:
        lines = [l for l in outs.get(k, []) if l.startswith("libbpf:")]
        if lines:
            miss.append("%s: %d lines start with 'libbpf:', the first: %s" % (k[:-4], len(lines), lines[0]))
    if res.get("launch_rc") == "0":
        for op, want in TARGET.items():
            got = num(res, "agg_" + op)
            if got != want:
                miss.append("launch: %d %s wanted in the aggregates, %s stored (%s events)"
                            % (want, op, got, res.get("events_" + op)))
    if res.get("pid_rc") == "0" and not (num(res, "pid_calls") or 0) > 0:
        miss.append("pid: the running process's calls were not recorded")
    if res.get("pid_rc") == "0" and num(res, "pid_others") != 0:
        miss.append("pid: %s calls of other processes recorded" % res.get("pid_others"))
    if res.get("cg_rc") == "0":
        if not (num(res, "cg_in") or 0) > 0:
            miss.append("container: the container's process's calls were not recorded")
        if num(res, "cg_out") != 0:
            miss.append("container: %s calls of a process in another cgroup recorded" % res.get("cg_out"))
    if res.get("pid_rc") == "0" and not hog_named(obs):
        ex = obs.get("explain") or {}
        top = [(c.get("root_cause") or {}).get("summary") for c in (ex.get("chains") or [])][:2]
        miss.append("sched: explain does not name the pinned hog 'cwhog' (offcpu rows by it: %s; chains: %s)"
                    % (res.get("hog_offcpu"), top or "none"))
    if "guest_rc" in obs:
        if res.get("inf_rc") != "0":
            err = [l for l in outs.get("inf_err", []) if l and not l.startswith("libbpf:")][-3:]
            miss.append("inference: trace --inference exits %s: %s" % (res.get("inf_rc", "(not run)"),
                                                                       " / ".join(err) or "(no message)"))
        elif not num(res, "inf_sent") or (num(res, "inf_ok"), num(res, "inf_404"), num(res, "inf_all")) != (
                num(res, "inf_sent"), 1, num(res, "inf_sent") + 1):
            # Known open defect: on sid's 7.2 one page of three is sometimes
            # not stored (about half the runs); said, not failed, until it is
            # found (the rows and counters are in the log: inf_rows).
            print("warn: inference: busybox httpd's requests stored: %s of the %s pages wget got, %s of 1 404, %s in all"
                  % (res.get("inf_ok"), res.get("inf_sent"), res.get("inf_404"), res.get("inf_all")), file=sys.stderr)
            if num(res, "inf_ok") == 0:
                miss.append("inference: none of the %s pages wget got was stored" % res.get("inf_sent"))
    reached = all(k in res for k in ("launch_rc", "pid_rc", "cg_rc"))
    if reached and obs["check_can_run"] != traces_ran(obs):
        miss.append("check says %r but trace %s" % ("trace can run here" if obs["check_can_run"] else "cannot run",
                                                     "runs" if traces_ran(obs) else "does not run"))
    return miss


def doc_rows(doc):
    rows = {}
    for line in open(doc):
        m = re.match(r"\|\s*`(\w+/\w+)`", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in line.strip().strip("|").split("|")]
    return rows


def main():
    cmd = sys.argv[1]
    if cmd == "observe":
        json.dump(observe(*sys.argv[2:5]), sys.stdout, indent=1)
        print()
    elif cmd == "judge":
        obs = json.load(open(sys.argv[2]))
        miss = judge_unsupported(obs) if sys.argv[3:4] == ["--unsupported"] else judge(obs)
        for m in miss:
            print(m)
        sys.exit(1 if miss else 0)
    elif cmd == "doc":
        obs = json.load(open(sys.argv[3]))
        key = row_key(obs)
        row = doc_rows(sys.argv[2]).get(key)
        want = cells(obs)
        if row is None:
            print("docs/kernels.md has no row for `%s`; observed: | %s |" % (key, " | ".join(want)))
            sys.exit(1)
        got = row[2:2 + len(want)]
        bad = [(HEADER[2 + i], g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
        for col, g, w in bad:
            print("docs/kernels.md says %s for `%s` %s; the matrix observed %s" % (col, key, repr(g), repr(w)))
        sys.exit(1 if bad else 0)
    elif cmd == "table":
        for path in sys.argv[2:]:
            obs = json.load(open(path))
            s = obs["suite"]
            kern = "`%s` %s, %s (%s)" % (row_key(obs), DEBIAN.get(s, s), obs.get("release", "?"), obs.get("version", "?"))
            print("| " + " | ".join([kern, STANDS_FOR.get(s, "")] + cells(obs) + [lacks(obs)]) + " |")
    elif cmd == "header":
        print("| " + " | ".join(HEADER + ["what `check` says it lacks (not compared)"]) + " |")
        print("|" + " --- |" * (len(HEADER) + 1))
    else:
        sys.exit("usage: kernel-matrix.py observe|judge|doc|table ...")


if __name__ == "__main__":
    main()
