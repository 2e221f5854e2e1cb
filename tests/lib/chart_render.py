"""The Helm chart in deploy/helm/causeway rendered without helm (helm is
not in Debian): the template constructs the chart uses, substituted from a
values tree. A construct this renderer does not know is an error, never
passed through, so a template change that needs more fails the tests that
render it (golden/test_deploy_assets, integration/test_daemonset_runc).

    import chart_render
    docs = chart_render.render(chart_dir)                 # values.yaml
    docs = chart_render.render(chart_dir, {"kmsg": {"privileged": True}})
"""
import copy
import glob
import re

import yaml


class TemplateError(Exception):
    pass


def merge(base, over):
    """values.yaml with over's keys set: nested dicts merged and a None
    deleting its key, as helm merges a values file over the defaults."""
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def render_text(chart, text, ctx):
    def lookup(path):
        v = ctx
        for part in path.strip(".").split("."):
            v = v[part]
        return v

    def block(m):
        return m.group(2) if lookup(m.group(1)) else ""
    text = re.sub(r"\{\{- if (\.[\w.]+) \}\}\n(.*?)\{\{- end \}\}\n?", block, text, flags=re.S)

    def action(m):
        body = m.group(2).strip()
        fm = re.match(r'\.Files\.Get "([^"]+)" \| nindent (\d+)$', body)
        tm = re.match(r"toYaml (\.[\w.]+) \| nindent (\d+)$", body)
        if fm:
            s, n = open(chart + "/" + fm.group(1)).read().rstrip("\n"), int(fm.group(2))
        elif tm:
            s, n = yaml.safe_dump(lookup(tm.group(1)), sort_keys=False).rstrip("\n"), int(tm.group(2))
        elif re.match(r"\.[\w.]+$", body):
            v = lookup(body)
            # Go templates print booleans in lower case, as YAML reads them.
            return ("true" if v else "false") if isinstance(v, bool) else str(v)
        else:
            raise TemplateError("template construct not understood by this renderer: {{ %s }}" % body)
        return "\n" + "\n".join((" " * n + l) if l else l for l in s.split("\n"))
    return re.sub(r"[ \t]*\{\{(-?) *(.*?) *\}\}",
                  lambda m: action(m) if m.group(1) else m.group(0).split("{{")[0] + action(m), text)


def render(chart, values=None, namespace="causeway"):
    """Every document the chart's templates render, in file order."""
    base = yaml.safe_load(open(chart + "/values.yaml"))
    ctx = {"Values": merge(base, values), "Release": {"Namespace": namespace}}
    docs = []
    for f in sorted(glob.glob(chart + "/templates/*.yaml")):
        docs += [d for d in yaml.safe_load_all(render_text(chart, open(f).read(), ctx)) if d]
    return docs
