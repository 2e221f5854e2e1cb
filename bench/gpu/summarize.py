"""summarize: bench/gpu/run.sh's checks and figures from the files it wrote,
into OUTDIR/summary.json and OUTDIR/summary.md. Exit 0 when every check that
ran passed, 1 when one failed, 2 when a step failed (--failed NAME).

A check is "pass", "fail" or "skipped: REASON"; in a dry run (the stand-in
libcudart, no torch) the checks only a GPU can answer are "skipped: dry run",
never passed."""
import argparse
import json
import os
import re
import statistics


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def marks(path, mode):
    """{role: [line, ...]} of the "# MARK MODE ROLE" comments of a workload."""
    out = {}
    with open(path) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"# MARK (\w+) ([\w-]+)\s*$", text)
            if m and m.group(1) == mode:
                out.setdefault(m.group(2), []).append(n)
    return out


def median(xs):
    return statistics.median(xs) if xs else None


def pct(xs, q):
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--dry", default="0")
    ap.add_argument("--failed", default="")
    ap.add_argument("--train", required=True)
    ap.add_argument("--infer", required=True)
    a = ap.parse_args()
    d, dry = a.out, a.dry == "1"
    mode = "dry" if dry else "gpu"
    f = lambda name: os.path.join(d, name)
    checks = []

    def check(name, ok, detail, gpu_only=False):
        if gpu_only and dry:
            status = "skipped: dry run"
        elif ok is None:
            status = "skipped: " + detail
        else:
            status = "pass" if ok else "fail"
        checks.append({"name": name, "status": status, "detail": detail})

    steps = []
    if os.path.exists(f("steps.tsv")):
        for line in open(f("steps.tsv")):
            name, rc, secs = line.rstrip("\n").split("\t")
            steps.append({"step": name, "exit": int(rc), "seconds": int(secs)})
    params = dict(l.strip().split("=", 1) for l in open(f("params.txt")) if "=" in l) if os.path.exists(f("params.txt")) else {}
    summary = {"mode": mode, "failed_step": a.failed or None, "steps": steps, "checks": checks}

    # check
    cj = load(f("check.json"))
    check("check", params.get("check_rc") == "0" and cj is not None,
          "causeway check exit %s, --json %s" % (params.get("check_rc"), "parsed" if cj is not None else "unreadable"))

    # timing: untraced vs traced (trace's defaults), alternated rounds
    def steps_of(prefix):
        xs, rounds = [], []
        r = 1
        while True:
            j = load(f("%s-%d.json" % (prefix, r)))
            if j is None:
                break
            xs += j["step_s"]
            rounds.append(median(j["step_s"]))
            r += 1
        return xs, rounds
    un, un_r = steps_of("train-untraced")
    tr, tr_r = steps_of("train-traced")
    lines_run = load(f("train-lines.json"))
    timing = {"untraced_steps": len(un), "traced_steps": len(tr),
              "untraced_median_s": median(un), "traced_median_s": median(tr),
              "untraced_round_medians_s": un_r, "traced_round_medians_s": tr_r,
              "ratio_traced_untraced": median(tr) / median(un) if un and tr else None,
              "py_stacks_all_median_s": median(lines_run["step_s"]) if lines_run else None}
    if lines_run and un:
        timing["ratio_py_stacks_all_untraced"] = timing["py_stacks_all_median_s"] / median(un)
    summary["train"] = timing
    check("step_time_n", len(un) >= 10 and len(tr) >= 10 and timing["ratio_traced_untraced"] is not None,
          "%d untraced and %d traced steps timed" % (len(un), len(tr)))
    info = load(f("train-untraced-1.json")) or {}
    summary["workload"] = {k: info.get(k) for k in ("mode", "torch", "cuda", "device", "python")}

    # inference latency
    inf = {}
    for cond in ("untraced", "traced", "lines"):
        j = load(f("infer-%s.json" % cond))
        if j:
            inf[cond] = {"iters": len(j["eager_s"]),
                         "eager_p50_s": median(j["eager_s"]), "eager_p99_s": pct(j["eager_s"], 0.99),
                         "graph_p50_s": median(j["graph_s"]), "graph_p99_s": pct(j["graph_s"], 0.99)}
    if "untraced" in inf and "traced" in inf:
        inf["ratio_eager_p50"] = inf["traced"]["eager_p50_s"] / inf["untraced"]["eager_p50_s"]
        inf["ratio_graph_p50"] = inf["traced"]["graph_p50_s"] / inf["untraced"]["graph_p50_s"]
    summary["infer"] = inf

    # hooked APIs seen, launches named (full capture: --py-stacks all)
    launch = lambda op: op.startswith("cudaLaunchKernel") or op.startswith("cuLaunchKernel")
    seen = {}
    for db in ("train-lines", "infer-lines"):
        rows = load(f("ops-%s.out" % db)) or []
        seen[db] = rows
        n = sum(r["launches"] or 0 for r in rows)
        unnamed = sum(r["unnamed"] or 0 for r in rows)
        check("kernel_names_" + db.split("-")[0], n > 0 and unnamed == 0,
              "%d launches, %d without a kernel name" % (n, unnamed))
    summary["apis_seen"] = seen
    summary["kernels"] = {db: (load(f("kernels-%s.out" % db)) or [])[:40] for db in ("train-lines", "infer-lines")}
    ops = lambda db: {r["op"] for r in seen.get(db, [])}
    has = lambda db, names: [n for n in names if not any(o == n or o.startswith(n) for o in ops(db))]
    tr_ops, in_ops = ops("train-lines"), ops("infer-lines")
    miss = has("train-lines", ["cudaMalloc", "cudaMemcpyAsync", "cudaStreamSynchronize"])
    if not any(launch(o) for o in tr_ops):
        miss.append("a kernel launch")
    check("apis_train", not miss, "missing: " + ", ".join(miss) if miss else "seen: " + ", ".join(sorted(tr_ops)))
    miss = has("infer-lines", ["cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaGraphInstantiate", "cudaGraphLaunch"])
    if not in_ops & {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cuCtxSynchronize"}:
        miss.append("a synchronization")
    check("apis_infer", not miss, "missing: " + ", ".join(miss) if miss else "seen: " + ", ".join(sorted(in_ops)))

    # Python lines: forward on the main thread, backward on the engine's
    lines = load(f("lines-train-lines.out")) or []
    mk = marks(a.train, mode)
    train_file = os.path.realpath(a.train)
    at = lambda r: os.path.realpath(r["file"] or "") == train_file
    fwd_seen = {r["line"] for r in lines if at(r) and r["thread"] == "main" and not r["attributed"]}
    fwd_missing = [l for l in mk.get("forward", []) if l not in fwd_seen]
    check("forward_lines", bool(mk.get("forward")) and not fwd_missing,
          "forward lines %s; not seen on the main thread: %s" % (mk.get("forward"), fwd_missing or "none"))
    own = sum(r["calls"] for r in lines if at(r) and r["thread"] == "other" and not r["attributed"]
              and r["line"] in mk.get("backward-thread", []))
    via = sum(r["calls"] for r in lines if at(r) and r["thread"] == "other" and r["attributed"]
              and r["line"] in mk.get("backward", []))
    total = (lines_run or {}).get("warmup", 0) + len((lines_run or {}).get("step_s", []))
    # The stand-in's backward thread makes 4 launches a step, each with Python
    # frames of its own: every one must carry its line. On the GPU any will do.
    check("backward_thread_lines", own == 4 * total if dry else own + via > 0,
          "calls on another thread: %d at its own backward line %s%s, %d attributed to the waiting line %s"
          % (own, mk.get("backward-thread"), " (%d made)" % (4 * total) if dry else "", via, mk.get("backward")))
    check("backward_attributed", via > 0,
          "%d calls of libtorch's autograd thread (no Python frames) attributed to loss.backward() at line %s"
          % (via, mk.get("backward")), gpu_only=True)
    ilines = load(f("lines-infer-lines.out")) or []
    imk = marks(a.infer, mode).get("infer", [])
    infer_file = os.path.realpath(a.infer)
    iseen = {r["line"] for r in ilines if os.path.realpath(r["file"] or "") == infer_file and r["thread"] == "main"}
    check("infer_lines", bool(imk) and all(l in iseen for l in imk),
          "infer lines %s; seen %s" % (imk, sorted(l for l in iseen if l in imk)))
    summary["python_lines"] = {"train": lines[:40], "infer": ilines[:40]}

    # the stand-in makes a known number of calls: every one must be stored
    if dry:
        got = sum(r["launches"] or 0 for r in seen.get("train-lines", []))
        check("every_launch_stored", total > 0 and got == 9 * total,
              "%d launches stored, %d made (9 per step)" % (got, 9 * total))
    else:
        check("every_launch_stored", None, "gpu run: the count libtorch makes is not known")

    # GPU-only
    check("gpu_device", bool(info.get("device")), "device %s, torch %s, cuda %s"
          % (info.get("device"), info.get("torch"), info.get("cuda")), gpu_only=True)
    names = [k["kernel_name"] or "" for k in summary["kernels"].get("train-lines", [])]
    check("torch_kernel_names", len(set(names)) >= 5 and any("elementwise" in n for n in names),
          "%d distinct kernel names in the training step, PyTorch's elementwise kernels among them: %s"
          % (len(set(names)), any("elementwise" in n for n in names)), gpu_only=True)
    gs = (load(f("gpu-samples-train-lines.out")) or [{}])[0].get("samples", 0)
    check("gpu_telemetry", gs > 0, "%s gpu_samples rows (NVML) in the training trace" % gs, gpu_only=True)

    if a.failed:
        checks.append({"name": "step " + a.failed, "status": "fail", "detail": "the step failed; see %s.err" % a.failed})
    with open(f("summary.json"), "w") as out:
        json.dump(summary, out, indent=2)

    fmt = lambda s: "%.3f ms" % (s * 1e3) if isinstance(s, float) else str(s)
    md = ["# causeway on %s" % ("the stand-in libcudart (dry run)" if dry else (info.get("device") or "the GPU")), ""]
    if a.failed:
        md += ["**Step `%s` failed**: see `%s.err`." % (a.failed, a.failed), ""]
    md += ["| check | status | detail |", "|---|---|---|"]
    md += ["| %s | %s | %s |" % (c["name"], c["status"], c["detail"].replace("|", "/")) for c in checks]
    md += ["", "## Training step (median of %d untraced, %d traced steps)" % (len(un), len(tr)), "",
           "| condition | median step | ratio to untraced |", "|---|---|---|",
           "| untraced | %s | 1 |" % fmt(timing["untraced_median_s"]),
           "| traced (defaults) | %s | %s |" % (fmt(timing["traced_median_s"]),
                                                "%.3f" % timing["ratio_traced_untraced"] if timing["ratio_traced_untraced"] else "-"),
           "| traced, --py-stacks all | %s | %s |" % (fmt(timing["py_stacks_all_median_s"]),
                                                      "%.3f" % timing["ratio_py_stacks_all_untraced"] if timing.get("ratio_py_stacks_all_untraced") else "-"),
           "", "Round medians untraced: %s; traced: %s" % (", ".join(fmt(x) for x in un_r), ", ".join(fmt(x) for x in tr_r)), ""]
    if inf:
        md += ["## Inference loop (per iteration, synchronized)", "",
               "| condition | iters | eager p50 | eager p99 | graph p50 | graph p99 |", "|---|---|---|---|---|---|"]
        md += ["| %s | %d | %s | %s | %s | %s |" % (c, v["iters"], fmt(v["eager_p50_s"]), fmt(v["eager_p99_s"]),
                                                   fmt(v["graph_p50_s"]), fmt(v["graph_p99_s"]))
               for c, v in inf.items() if isinstance(v, dict)]
        md.append("")
    md += ["## Hooked APIs seen (full capture)", "", "| file | source | op | calls | kernel names |", "|---|---|---|---|---|"]
    for db, rows in seen.items():
        md += ["| %s | %s | %s | %d | %s |" % (db, r["source"], r["op"], r["calls"], r["kernels"] if r["launches"] else "")
               for r in rows]
    with open(f("summary.md"), "w") as out:
        out.write("\n".join(md) + "\n")
    if a.failed:
        return 2
    return 1 if any(c["status"] == "fail" for c in checks) else 0


if __name__ == "__main__":
    raise SystemExit(main())
