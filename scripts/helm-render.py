#!/usr/bin/python3
"""Renders deploy/helm/vitrine the way `helm template` would, for the subset of
Go templates the chart uses, so that deploy/kubernetes/ (the plain manifests)
is produced and checked here, where helm cannot be installed (no Debian or npm
package of it). Supported: {{ .Values.x.y }}, .Release.Name/Namespace,
.Chart.Name/Version/AppVersion, define/include, if/end, pipelines through
quote, nindent N, indent N, toYaml, default; {{- and -}} trim whitespace.
Anything else is an error, so a template the renderer does not understand
fails the check instead of rendering wrong.

usage: helm-render.py CHART_DIR RELEASE_NAME > manifests.yaml
"""
import re
import sys
from pathlib import Path

import yaml

TOKEN = re.compile(r"{{(-?)\s*(.*?)\s*(-?)}}", re.S)


def parse(text):
    """Text -> list of nodes: str | ("expr", e) | ("if", e, body) | ("define", n, body)."""
    parts = []
    pos = 0
    for m in TOKEN.finditer(text):
        lit = text[pos:m.start()]
        if m.group(1) == "-":
            lit = lit.rstrip()
        if parts and isinstance(parts[-1], tuple) and parts[-1][0] == "trim":
            lit = lit.lstrip()
            parts.pop()
        parts.append(lit)
        parts.append(("tag", m.group(2)))
        if m.group(3) == "-":
            parts.append(("trim",))
        pos = m.end()
    lit = text[pos:]
    if parts and isinstance(parts[-1], tuple) and parts[-1][0] == "trim":
        lit = lit.lstrip()
        parts.pop()
    parts.append(lit)

    def block(it, until_end):
        out = []
        for p in it:
            if isinstance(p, str):
                out.append(p)
                continue
            t = p[1]
            if t == "end":
                if not until_end:
                    raise SyntaxError("unexpected end")
                return out
            if t.startswith("/*"):
                continue
            if t.startswith("if "):
                out.append(("if", t[3:].strip(), block(it, True)))
            elif t.startswith("define "):
                out.append(("define", t[7:].strip().strip('"'), block(it, True)))
            else:
                out.append(("expr", t))
        if until_end:
            raise SyntaxError("missing end")
        return out

    return block(iter(parts), False)


class Ctx:
    def __init__(self, values, chart, release):
        self.values, self.chart, self.release = values, chart, release
        self.defines = {}


def lookup(ctx, path):
    if path == ".":
        return ctx
    parts = path.lstrip(".").split(".")
    root = {"Values": ctx.values, "Chart": ctx.chart, "Release": ctx.release}
    v = root[parts[0]]
    for p in parts[1:]:
        v = v.get(p) if isinstance(v, dict) else None
    return v


def to_yaml(v):
    return yaml.safe_dump(v, default_flow_style=False, sort_keys=True).rstrip("\n")


def atom(ctx, tok):
    if tok.startswith('"'):
        return tok.strip('"')
    if re.fullmatch(r"-?\d+", tok):
        return int(tok)
    if tok.startswith("."):
        return lookup(ctx, tok)
    raise SyntaxError(f"unsupported term {tok!r}")


def call(ctx, fn, args, piped):
    vals = [atom(ctx, a) for a in args] + ([piped] if piped is not _NONE else [])
    if fn == "include":
        return render(ctx.defines[vals[0]], ctx)
    if fn == "quote":
        return '"' + str(fmt(vals[0])).replace('"', '\\"') + '"'
    if fn == "nindent":
        return "\n" + "\n".join(" " * vals[0] + l if l else l for l in str(vals[1]).split("\n"))
    if fn == "indent":
        return "\n".join(" " * vals[0] + l if l else l for l in str(vals[1]).split("\n"))
    if fn == "toYaml":
        return to_yaml(vals[0])
    if fn == "default":
        return vals[1] if vals[1] not in (None, "", False) else vals[0]
    raise SyntaxError(f"unsupported function {fn!r}")


_NONE = object()


def fmt(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return "" if v is None else v


def evaluate(ctx, expr):
    piped = _NONE
    for stage in [s.strip() for s in expr.split("|")]:
        words = re.findall(r'"[^"]*"|\S+', stage)
        if words[0].startswith(".") or words[0].startswith('"'):
            if len(words) != 1:
                raise SyntaxError(f"unsupported expression {stage!r}")
            piped = atom(ctx, words[0])
        else:
            piped = call(ctx, words[0], words[1:], piped)
    return piped


def render(nodes, ctx):
    out = []
    for n in nodes:
        if isinstance(n, str):
            out.append(n)
        elif n[0] == "expr":
            out.append(str(fmt(evaluate(ctx, n[1]))))
        elif n[0] == "if":
            if evaluate(ctx, n[1]):
                out.append(render(n[2], ctx))
        elif n[0] == "define":
            ctx.defines[n[1]] = n[2]
    return "".join(out)


def main():
    chart_dir = Path(sys.argv[1])
    release = sys.argv[2] if len(sys.argv) > 2 else "vitrine"
    chart = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
    values = yaml.safe_load((chart_dir / "values.yaml").read_text())
    ctx = Ctx(values, {"Name": chart["name"], "Version": chart["version"],
                       "AppVersion": chart["appVersion"]},
              {"Name": release, "Namespace": "default"})
    tdir = chart_dir / "templates"
    for helper in sorted(tdir.glob("_*.tpl")):
        render(parse(helper.read_text()), ctx)
    docs = []
    for t in sorted(tdir.glob("*.yaml")):
        text = render(parse(t.read_text()), ctx).strip()
        for doc in re.split(r"^---\s*$", text, flags=re.M):
            if doc.strip() and yaml.safe_load(doc) is not None:
                docs.append(f"# Source: vitrine/templates/{t.name}\n{doc.strip()}\n")
    sys.stdout.write("---\n".join(docs))


if __name__ == "__main__":
    main()
