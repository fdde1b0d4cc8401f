"""Templates are code: Jinja2 and Django templates read by the Python taint
engine. A render call (render_template, render, TemplateResponse,
get_template().render, an aiohttp_jinja2 @template handler's returned dict)
hands its context to the template; an output the template does not escape
({{ x|safe }}, a {% autoescape false/off %} block) of a context value that
carries request data is cross-site scripting, reported on the template's line
with the flow through the render call."""

import os
import re

import aster_rules as R
from aster_flow import PARAM, WEB, step_of

MAX_TEMPLATE_FILES = 5000
MAX_TEMPLATE_BYTES = 512 << 10

_TAG = re.compile(r"\{%-?\s*(\w+)\s*(.*?)\s*-?%\}|\{\{-?\s*(.*?)\s*-?\}\}", re.S)
_IDENT = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)")
_FOR = re.compile(r"([A-Za-z_][\w, ]*?)\s+in\s+([A-Za-z_][A-Za-z0-9_]*)")
_SET = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([A-Za-z_][A-Za-z0-9_]*)")


class Templates:
    def __init__(self, project):
        self.p = project
        self.files = None
        self.parsed = {}

    def needed(self):
        """Whether a changed file is a template (then every module is read,
        to find what renders it)."""
        return any(t.endswith(R.TEMPLATE_EXTS) and not t.endswith((".txt", ".xml")) for t in self.p.targets)

    def list_files(self):
        if self.files is not None:
            return self.files
        self.files = []
        root = self.p.root
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "__pycache__", "venv", ".venv"))
            for fn in sorted(filenames):
                if fn.endswith(R.TEMPLATE_EXTS):
                    self.files.append(os.path.relpath(os.path.join(dirpath, fn), root).replace(os.sep, "/"))
                    if len(self.files) >= MAX_TEMPLATE_FILES:
                        return self.files
        return self.files

    def find(self, name):
        name = name.lstrip("/")
        hits = [f for f in self.list_files() if f == name or f.endswith("/" + name)]
        hits.sort(key=lambda f: ("templates/" not in f, len(f), f))
        return hits[0] if hits else None

    def outputs(self, rel):
        """The template's unescaped outputs: (line, column, text, root name)."""
        if rel in self.parsed:
            return self.parsed[rel]
        out = []
        try:
            full = os.path.join(self.p.root, rel)
            if os.path.islink(full) or os.path.getsize(full) > MAX_TEMPLATE_BYTES:
                self.parsed[rel] = out
                return out
            with open(full, "rb") as f:
                src = f.read(MAX_TEMPLATE_BYTES).decode("utf-8", "replace")
        except OSError:
            self.parsed[rel] = out
            return out
        escaping = [True]
        alias = {}
        for m in _TAG.finditer(src):
            line = src.count("\n", 0, m.start()) + 1
            col = m.start() - (src.rfind("\n", 0, m.start()) + 1) + 1
            tag, rest, expr = m.group(1), m.group(2), m.group(3)
            if tag:
                if tag == "autoescape":
                    escaping.append(rest.strip().lower() not in ("false", "off"))
                elif tag == "endautoescape" and len(escaping) > 1:
                    escaping.pop()
                elif tag == "for":
                    fm = _FOR.match(rest)
                    if fm:
                        for v in fm.group(1).split(","):
                            alias[v.strip()] = alias.get(fm.group(2), fm.group(2))
                elif tag in ("set", "with"):
                    for sm in _SET.finditer(rest):
                        alias[sm.group(1)] = alias.get(sm.group(2), sm.group(2))
                continue
            if expr is None:
                continue
            parts = [x.strip() for x in split_filters(expr)]
            filters = [x.split("(")[0].split(":")[0].strip() for x in parts[1:]]
            if any(f in ("e", "escape", "forceescape", "urlencode", "int", "float", "length", "count", "tojson") for f in filters):
                continue
            unescaped = "safe" in filters or not escaping[-1]
            if not unescaped:
                continue
            im = _IDENT.match(parts[0])
            if not im:
                continue
            root = alias.get(im.group(1), im.group(1))
            out.append((line, col, "{{ " + " ".join(expr.split()) + " }}", root))
        self.parsed[rel] = out
        return out

    def render(self, fr, node, name, context):
        """A render of template name with context (variable -> taint; "*"
        for a context whose keys are not known)."""
        if not isinstance(name, str) or not context:
            return
        rel = self.find(name)
        if rel is None:
            return
        render_step = step_of(fr.mod.path, node.lineno, "render of " + name)
        for line, col, text, root in self.outputs(rel):
            t = context.get(root) or context.get("*")
            if not t:
                continue
            for lab in t.values():
                if "xss" in lab.san:
                    continue
                tr = lab.trace + (render_step,)
                if lab.kind == PARAM:
                    # a helper rendering its parameter: the caller decides
                    continue
                if lab.kind != WEB:
                    continue
                self.p.report_at("xss", (rel, line, col - 1, line, col - 1 + len(text)), tr, lab.kind, text)
                break


def split_filters(expr):
    """expr split on the | of filters (not inside quotes or brackets)."""
    parts, cur, depth, quote = [], [], 0, None
    for ch in expr:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts
