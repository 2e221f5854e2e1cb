#!/usr/bin/env python3
"""A loopback OTLP/HTTP (JSON) receiver for the suite: checks every payload
field by field against the OTLP JSON mapping, records what it accepted, and
answers with a chosen status.

  receiver.py PORTFILE OUTDIR [--status N]

Writes its port to PORTFILE once listening. Each accepted payload is kept as
OUTDIR/NNNN-metrics.json or -logs.json; a payload that fails a check is kept
as OUTDIR/NNNN-invalid.txt with the reason, and answered 400."""
import json, os, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

portfile, outdir = sys.argv[1], sys.argv[2]
status = int(sys.argv[sys.argv.index("--status") + 1]) if "--status" in sys.argv else 200
lock = threading.Lock()
seq = [0]


class Invalid(Exception):
    pass


def need(cond, what):
    if not cond:
        raise Invalid(what)


def u64(v, what):
    need(isinstance(v, str) and v.isdigit(), "%s must be a uint64 decimal string, got %r" % (what, v))
    return int(v)


def attrs(lst, what):
    need(isinstance(lst, list), what + ".attributes must be a list")
    out = {}
    for a in lst:
        need(set(a) == {"key", "value"}, "%s attribute keys %r" % (what, sorted(a)))
        v = a["value"]
        need(len(v) == 1 and list(v)[0] in ("stringValue", "intValue", "doubleValue", "boolValue"),
             "%s attribute %s value %r" % (what, a["key"], v))
        (kind, val), = v.items()
        if kind == "intValue":
            need(isinstance(val, str) and val.lstrip("-").isdigit(), "intValue must be a decimal string")
            val = int(val)
        out[a["key"]] = val
    need(len(out) == len(lst), what + " has duplicate attribute keys")
    return out


def resource(r):
    a = attrs(r["resource"]["attributes"], "resource")
    need(a.get("service.name") == "causeway", "service.name")
    need(a.get("host.name"), "host.name")


def check_metrics(doc):
    need(list(doc) == ["resourceMetrics"], "top-level keys %r" % list(doc))
    for rm in doc["resourceMetrics"]:
        resource(rm)
        for sm in rm["scopeMetrics"]:
            need(sm["scope"]["name"] == "causeway", "scope name")
            names = [m["name"] for m in sm["metrics"]]
            for want in ("causeway.op.duration", "causeway.events.lost", "causeway.calls.aggregated"):
                need(want in names, "metric %s missing" % want)
            for m in sm["metrics"]:
                if "histogram" in m:
                    h = m["histogram"]
                    need(h["aggregationTemporality"] == 2, "histogram must be cumulative")
                    need(m["unit"] == "s", "histogram unit")
                    for p in h["dataPoints"]:
                        a = attrs(p["attributes"], m["name"])
                        need({"node", "source", "op"} <= set(a), "histogram attributes %r" % a)
                        start, t = u64(p["startTimeUnixNano"], "start"), u64(p["timeUnixNano"], "time")
                        need(0 < start <= t, "start after time")
                        counts = [u64(c, "bucketCounts") for c in p["bucketCounts"]]
                        bounds = p["explicitBounds"]
                        need(len(counts) == len(bounds) + 1 == 27, "27 buckets, 26 bounds")
                        need(all(x < y for x, y in zip(bounds, bounds[1:])), "bounds increasing")
                        need(sum(counts) == u64(p["count"], "count"), "bucket counts add up to count")
                        need(isinstance(p["sum"], (int, float)) and p["sum"] >= 0, "sum")
                elif "sum" in m:
                    s = m["sum"]
                    need(s["aggregationTemporality"] == 2 and s["isMonotonic"] is True, "sum temporality")
                    for p in s["dataPoints"]:
                        attrs(p["attributes"], m["name"])
                        u64(p["asInt"], "asInt")
                        u64(p["timeUnixNano"], "time")
                else:
                    raise Invalid("metric %s has no data" % m["name"])


def check_logs(doc):
    need(list(doc) == ["resourceLogs"], "top-level keys %r" % list(doc))
    for rl in doc["resourceLogs"]:
        resource(rl)
        for sl in rl["scopeLogs"]:
            need(sl["scope"]["name"] == "causeway", "scope name")
            need(sl["logRecords"], "no log records")
            for r in sl["logRecords"]:
                u64(r["timeUnixNano"], "timeUnixNano")
                u64(r["observedTimeUnixNano"], "observedTimeUnixNano")
                need(r["severityNumber"] in (9, 13, 17), "severityNumber")
                need(r["severityText"] in ("LOW", "MEDIUM", "HIGH"), "severityText")
                need(r["body"]["stringValue"], "empty body")
                a = attrs(r["attributes"], "log record")
                for k in ("causeway.chain.id", "causeway.chain.kind", "causeway.op", "node"):
                    need(k in a, "log record attribute %s missing" % k)


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        kind = {"/v1/metrics": "metrics", "/v1/logs": "logs"}.get(self.path)
        with lock:
            seq[0] += 1
            i = seq[0]
        try:
            need(kind, "path %s" % self.path)
            need(self.headers.get("Content-Type") == "application/json", "content type")
            doc = json.loads(body)
            (check_metrics if kind == "metrics" else check_logs)(doc)
        except (Invalid, KeyError, TypeError, ValueError) as e:
            open(os.path.join(outdir, "%04d-invalid.txt" % i), "w").write("%s: %r\n" % (self.path, e))
            self.send_response(400)
            self.end_headers()
            return
        if status == 200:
            open(os.path.join(outdir, "%04d-%s.json" % (i, kind)), "wb").write(body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")


srv = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), H)
open(portfile + ".tmp", "w").write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
