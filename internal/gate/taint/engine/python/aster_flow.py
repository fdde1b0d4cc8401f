"""The data-flow core of Aster's Python taint engine.

Each function is interpreted once per pass over its AST, in statement order,
with an environment that maps local names (and one level of attributes,
"obj.attr") to taint: the set of origins whose data a value may carry. An
origin is a source (request data, the command line, a weak random number) or,
while a function is summarised, one of its own parameters. Branches are
interpreted separately and joined; loop bodies twice. A function's summary
says which parameters reach its return value and which reach a sink; calls
to functions of the analysed modules apply the callee's summary, so a helper
that sinks its argument is found at the caller's source. Passes repeat until
the summaries stop changing (or a few times at most).

Everything is deterministic: dictionaries keep insertion order, files and
functions are visited sorted, and the first trace to reach a key is kept."""

import ast
import builtins
import re

import aster_rules as R

MAX_LABELS = 8        # origins kept per value
MAX_TRACE = 24        # steps kept per trace (the Go side shows 16)
MAX_TEXT = 80         # characters of one step's text
MAX_PASSES = 4        # summary passes over a project

WEB, LOCAL, RAND, PARAM = "web", "local", "rand", "param"


class Budget(Exception):
    """Raised when a file's analysis is over its time or node budget."""


class Label:
    """One origin of taint and the path its data took to here."""

    __slots__ = ("kind", "origin", "trace", "san")

    def __init__(self, kind, origin, trace, san=frozenset()):
        self.kind = kind        # web, local, rand or param
        self.origin = origin    # the source's place, or (param name, attribute or None)
        self.trace = trace      # tuple of (path, line, text) from the origin on
        self.san = san          # categories this data has been made safe for

    def key(self):
        return (self.kind, self.origin, self.san)


EMPTY = {}


def taint_of(labels):
    out = {}
    for lab in labels:
        k = lab.key()
        if k not in out and len(out) < MAX_LABELS:
            out[k] = lab
    return out


def union(*ts):
    out = {}
    for t in ts:
        if not t:
            continue
        for k, lab in t.items():
            if k not in out and len(out) < MAX_LABELS:
                out[k] = lab
    return out


def step_of(path, line, text):
    text = " ".join(str(text).split())
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT - 1] + "…"
    return (path, line, text)


def extend(t, step):
    """t with step appended to every trace (not repeated)."""
    if not t:
        return t
    out = {}
    for k, lab in t.items():
        tr = lab.trace
        if tr and tr[-1][1] == step[1] and tr[-1][0] == step[0] and tr[-1][2] == step[2]:
            out[k] = lab
            continue
        if len(tr) >= MAX_TRACE:
            tr = tr[:2] + tr[-(MAX_TRACE - 3):]
        out[k] = Label(lab.kind, lab.origin, tr + (step,), lab.san)
    return out


def sanitize(t, cats):
    if not t or not cats:
        return t
    out = {}
    for lab in t.values():
        nl = Label(lab.kind, lab.origin, lab.trace, lab.san | frozenset(cats))
        if nl.key() not in out:
            out[nl.key()] = nl
    return out


def program_env(node):
    """Whether node is the constant name of an environment variable that
    names a program to run ($EDITOR, $PAGER...: R.PROGRAM_ENV)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        name = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
        return bool(R.PROGRAM_ENV.match(name))
    return False


def only_kind(t, kinds):
    return {k: v for k, v in t.items() if v.kind in kinds}


def without_kind(t, kinds):
    return {k: v for k, v in t.items() if v.kind not in kinds}


def text_of(node):
    """The source text of node, rendered once: every pass asks again for the
    same nodes (the AST is never changed after it is parsed)."""
    try:
        return node._aster_text
    except AttributeError:
        pass
    try:
        s = ast.unparse(node)
    except Exception:  # noqa: BLE001 - any node unparse cannot render
        s = type(node).__name__
    try:
        node._aster_text = s
    except AttributeError:
        pass
    return s


def names_in(node):
    """The ids of the Name nodes under node (node included), found once."""
    try:
        return node._aster_names
    except AttributeError:
        pass
    out = frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
    node._aster_names = out
    return out


def calls_and_names(node):
    """The Call and Name nodes under node (node included), in ast.walk's
    order, found once."""
    try:
        return node._aster_cn
    except AttributeError:
        pass
    out = tuple(n for n in ast.walk(node) if isinstance(n, (ast.Call, ast.Name)))
    node._aster_cn = out
    return out


# ---------------------------------------------------------------- program model

class FuncInfo:
    def __init__(self, mod, node, qual, cls=None):
        self.mod = mod
        self.node = node
        self.qual = qual              # "Class.method" or "func" or "outer.<locals>.inner"
        self.cls = cls                # ClassInfo for methods
        self.kind = "function"
        if cls is not None:
            self.kind = "method"
            for d in node.decorator_list:
                n = d.id if isinstance(d, ast.Name) else (d.attr if isinstance(d, ast.Attribute) else "")
                if n == "staticmethod":
                    self.kind = "static"
                elif n == "classmethod":
                    self.kind = "class"
        a = node.args
        self.params = [p.arg for p in a.posonlyargs + a.args]
        self.vararg = a.vararg.arg if a.vararg else None
        self.kwonly = [p.arg for p in a.kwonlyargs]
        self.kwarg = a.kwarg.arg if a.kwarg else None
        self.summary = Summary()
        self.route = None             # set by Analyzer.route_params
        # bumped when a pass gives the function a summary of another content
        # (Project.one_pass re-analyses only the modules that read a changed one)
        self.version = 0
        self.content = EMPTY_CONTENT


class ClassInfo:
    def __init__(self, mod, node):
        self.mod = mod
        self.node = node
        self.name = node.name
        self.methods = {}
        self.bases = [text_of(b) for b in node.bases]


class Summary:
    def __init__(self):
        self.ret = {}          # taint of the return value (param and concrete labels)
        self.sinks = []        # (param label, category, sink step, level hint, message sink text)
        self.fields = {}       # (param, attr) -> taint stored into a parameter's attribute
        self.mutates = {}      # param -> taint added to the parameter's value

    def content(self):
        """Everything the summary holds, traces and order included: equal
        contents give callers equal results."""
        return (tuple((k, lab.trace) for k, lab in self.ret.items()),
                tuple((s[0].key(), s[0].trace) + tuple(s[1:]) for s in self.sinks),
                tuple((k, taint_content(v)) for k, v in self.fields.items()),
                tuple((k, taint_content(v)) for k, v in self.mutates.items()))

    def signature(self):
        return repr((sorted(map(repr, self.ret)), sorted(repr((s[0].key(), s[1], s[2])) for s in self.sinks),
                     sorted(repr((k, sorted(map(repr, v)))) for k, v in self.fields.items()),
                     sorted(repr((k, sorted(map(repr, v)))) for k, v in self.mutates.items())))


def taint_content(t):
    return tuple((k, lab.trace) for k, lab in t.items())


class Module:
    def __init__(self, path, modname, tree, source):
        self.path = path
        self.modname = modname
        self.tree = tree
        self.lines = source.splitlines()
        self.imports = {}          # local name -> qualified name
        self.star = []             # modules imported with *
        self.libs = set()          # top-level names of imported modules
        self.funcs = {}            # top-level functions
        self.classes = {}
        self.globals = {}          # module-level taint
        self.global_kinds = {}
        self.defined = set()       # names bound at module level
        self.all_funcs = []        # every FuncInfo (nested too), in source order
        self.autoescape_off = []   # lines where a template environment disables escaping


EMPTY_CONTENT = Summary().content()


class Finding:
    __slots__ = ("category", "path", "line", "col", "end_line", "end_col", "message", "trace", "level", "kind")

    def __init__(self, category, path, node, message, trace, level, kind):
        self.category = category
        self.path = path
        self.line = getattr(node, "lineno", 1) or 1
        self.col = (getattr(node, "col_offset", 0) or 0) + 1
        self.end_line = getattr(node, "end_lineno", None) or self.line
        self.end_col = (getattr(node, "end_col_offset", None) or 0) + 1
        self.message = message
        self.trace = trace
        self.level = level
        self.kind = kind


# ---------------------------------------------------------------- the interpreter

class Frame:
    """The state of one function's interpretation."""

    def __init__(self, func, mod, env=None, kinds=None):
        self.func = func
        self.mod = mod
        self.env = dict(env or {})
        self.kinds = dict(kinds or {})
        self.returns = {}
        self.params = set(func.params + func.kwonly + [func.vararg, func.kwarg]) - {None} if func else set()
        self.local_funcs = {}
        self.clean_exprs = {}      # source expression text -> categories a guard proved safe
        self.urlparse_of = {}      # name bound to urlparse(x) -> x's name
        self.realpath_of = {}      # name bound to realpath(x) -> x's name
        self.ctor_of = {}          # local name -> the call whose result it holds
        self.consts = {}           # local name -> the string literal it was last bound to
        self.guard_calls = {}      # name bound to a validating call's result -> the call
        self.check_args = {}       # name bound to a call's result -> the names the call was given
        self.defs = {}             # local name -> lines its value was built on (see Analyzer.judge)


class Analyzer:
    def __init__(self, ctx):
        self.ctx = ctx              # the project: modules, findings, budget tick

    # ------------------------------------------------------------ names

    def qualname(self, fr, node):
        """The qualified name an expression resolves to, or None."""
        if isinstance(node, ast.Name):
            n = node.id
            if n in fr.kinds and fr.kinds[n] not in ("list", "str", "listhead", "built", "session"):
                return fr.kinds[n]
            if n in fr.env or n in fr.params:
                return None
            mod = fr.mod
            if n in mod.imports:
                return mod.imports[n]
            if n in mod.defined or n in mod.funcs or n in mod.classes:
                return None
            for star in mod.star:
                return star + "." + n
            if n in R.STDLIB_MODULES and not hasattr(builtins, n):
                # a standard module used without its import in sight (imported
                # elsewhere, or code quoted to show a rule): the module it names
                return n
            return "builtins." + n
        if isinstance(node, ast.Attribute):
            base = self.qualname(fr, node.value)
            if base is None:
                if isinstance(node.value, ast.Name) and node.value.id in fr.kinds:
                    k = fr.kinds[node.value.id]
                    if k not in ("list", "str", "listhead", "built", "session"):
                        return k + "." + node.attr
                if isinstance(node.value, ast.Call):
                    cq = self.qualname(fr, node.value.func)
                    if cq:
                        return R.TYPE_ALIASES.get(cq, cq) + "." + node.attr
                return None
            return base + "." + node.attr
        if isinstance(node, ast.Call):
            q = self.qualname(fr, node.func)
            return R.TYPE_ALIASES.get(q, q) if q else None
        return None

    def is_request(self, fr, node):
        """Whether node is a web request object."""
        t = text_of(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if t is None:
            return False
        if t in ("request", "req", "self.request"):
            if isinstance(node, ast.Name) and node.id in fr.mod.imports:
                return fr.mod.imports[node.id] in R.REQUEST_NAMES
            return True
        q = self.qualname(fr, node)
        return q in R.REQUEST_NAMES

    # ------------------------------------------------------------ labels

    def source(self, fr, node, kind, text=None):
        path = fr.mod.path
        line = getattr(node, "lineno", 0)
        step = step_of(path, line, text if text is not None else text_of(node))
        lab = Label(kind, (path, line, getattr(node, "col_offset", 0)), (step,))
        return {lab.key(): lab}

    def param_label(self, fr, name, attr=None, node=None):
        line = getattr(node, "lineno", None) or fr.func.node.lineno
        text = name if attr is None else name + "." + attr
        lab = Label(PARAM, (name, attr), (step_of(fr.mod.path, line, text),))
        return {lab.key(): lab}

    # ------------------------------------------------------------ reporting

    def judge(self, fr, category, node, basis="flow"):
        """Record that the engine judged a sink of category at node: the
        call's lines and the lines its arguments' text was built on (through
        local names), so that a rule without data flow flagging one of them
        is superseded by this judgement and by nothing else. basis "call":
        the call is safe by its own arguments (a safe loader, a constant)."""
        lines = set(range(getattr(node, "lineno", 0) or 0, (getattr(node, "end_lineno", 0) or 0) + 1))
        if isinstance(node, ast.Call):
            for a in list(node.args) + [k.value for k in node.keywords]:
                lines |= self.built_lines(fr, a)
        self.ctx.record_judged(fr.mod.path, category, lines, basis)

    @staticmethod
    def deferred(t, category):
        """Whether a sink's data is the function's own parameter: its verdict
        is its callers', which may be out of sight (a framework's handler)."""
        return any(lab.kind == PARAM and category not in lab.san for lab in (t or {}).values())

    def wraps_sink(self, fr, node, category):
        """Whether a sink's argument is itself a sink call of its category
        (execute(text(q))): that inner call gave, or deferred, the verdict."""
        for a in getattr(node, "args", ()):
            if isinstance(a, ast.Call):
                spec = R.SINK_CALLS.get(self.qualname(fr, a.func) or "")
                if spec is not None and spec[0] == category:
                    return True
        return False

    def built_lines(self, fr, node):
        out = set()
        defs = fr.defs
        for name in names_in(node):
            if name in defs:
                out |= defs[name]
        return out

    def sink(self, fr, category, node, t, sink_text, kinds=(WEB, LOCAL)):
        """Data t reaches a sink of category at node."""
        if not self.deferred(t, category) and not self.wraps_sink(fr, node, category):
            self.judge(fr, category, node)
        if not t:
            return
        step = step_of(fr.mod.path, node.lineno, sink_text)
        for lab in t.values():
            if category in lab.san:
                continue
            if category == "trust-boundary" and any(st[2].endswith("()") for st in lab.trace[1:]):
                # what a function returns for request data (a login check's
                # user name) is taken as that function's verdict on it
                continue
            if lab.kind == PARAM:
                if fr.func is not None and fr.func.qual != "<module>":
                    fr.func.summary.sinks.append((Label(PARAM, lab.origin, lab.trace + (step,), lab.san),
                                                  category, (fr.mod.path, node.lineno, getattr(node, "col_offset", 0),
                                                             getattr(node, "end_lineno", node.lineno),
                                                             getattr(node, "end_col_offset", 0)), sink_text,
                                                  getattr(fr, "sink_built", False)))
                continue
            if lab.kind not in kinds:
                continue
            if lab.kind == LOCAL and category not in R.LOCAL_CATEGORIES:
                # a file, URL or page the process's own user names is theirs
                continue
            self.ctx.report(category, fr.mod.path, node, lab.trace + (step,), lab.kind, sink_text)

    def pattern(self, fr, category, node, message, level="warning"):
        self.judge(fr, category, node, "call")
        self.ctx.report_pattern(category, fr.mod.path, node, message, level)

    # ------------------------------------------------------------ expressions

    def expr(self, fr, node):
        self.ctx.tick()
        m = getattr(self, "e_" + type(node).__name__, None)
        if m is None:
            t = {}
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    t = union(t, self.expr(fr, child))
            return t
        return m(fr, node)

    def e_Constant(self, fr, node):
        return EMPTY

    def e_Name(self, fr, node):
        n = node.id
        if n in fr.env:
            return fr.env[n]
        if n in fr.params:
            return self.param_label(fr, n, node=node)
        q = self.qualname(fr, node)
        if q in R.LOCAL_SOURCES:
            return self.source(fr, node, LOCAL)
        if n in fr.mod.globals:
            return fr.mod.globals[n]
        return EMPTY

    def in_http_handler(self, fr):
        """Whether fr is a do_GET-style method of a standard library HTTP
        request handler (http.server), whose self carries the request."""
        f = fr.func
        return f is not None and f.cls is not None and f.node.name.startswith("do_")

    def e_Attribute(self, fr, node):
        base = node.value
        if node.attr in R.REQUEST_ATTRS and self.is_request(fr, base):
            return self.source(fr, node, WEB)
        if node.attr in R.REQUEST_URL_ATTRS and self.is_request(fr, base):
            # the URL the client asked for: its text is the client's, its host
            # is this server's (a redirect or fetch to it stays here)
            return sanitize(self.source(fr, node, WEB), {"open-redirect", "ssrf"})
        if node.attr in ("path", "headers", "rfile", "requestline") and isinstance(base, ast.Name) and base.id == "self" \
                and self.in_http_handler(fr):
            return self.source(fr, node, WEB)
        q = self.qualname(fr, node)
        if q in R.LOCAL_SOURCES:
            return self.source(fr, node, LOCAL)
        if isinstance(base, ast.Name):
            key = base.id + "." + node.attr
            if key in fr.env:
                return fr.env[key]
            if base.id in fr.params and base.id not in fr.env:
                return self.param_label(fr, base.id, node.attr, node)
        if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
            # self.a.b: the field self.a decides
            pass
        return self.expr(fr, base)

    def e_Subscript(self, fr, node):
        t = self.expr(fr, node.value)
        if isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant):
            key = node.value.id + "[" + repr(node.slice.value) + "]"
            if key in fr.env:
                return fr.env[key]
        self.expr(fr, node.slice)
        if t and self.is_source_text(t, node.value):
            # request.args['q']: name the whole subscript as the source
            t = self.retext(t, node, fr)
            if program_env(node.slice) and self.qualname(fr, node.value) == "os.environ":
                t = sanitize(t, {"command-injection"})
            return t
        return t

    def is_source_text(self, t, node):
        return any(lab.kind != PARAM and len(lab.trace) == 1 and lab.trace[0][1] == getattr(node, "lineno", -1)
                   and lab.trace[0][2] == step_of("", 0, text_of(node))[2] for lab in t.values())

    def retext(self, t, node, fr):
        out = {}
        text = text_of(node)
        new = step_of(fr.mod.path, node.lineno, text)
        if text in fr.clean_exprs:
            t = sanitize(t, fr.clean_exprs[text])
        for k, lab in t.items():
            if lab.kind != PARAM and len(lab.trace) == 1:
                lab = Label(lab.kind, lab.origin, (new,), lab.san)
            out[lab.key()] = lab
        return out

    def e_BinOp(self, fr, node):
        left = self.expr(fr, node.left)
        right = self.expr(fr, node.right)
        if isinstance(node.op, ast.Add) and right:
            # what follows a fixed prefix ('/app/' + a + '/' + b) cannot move the URL off it
            right = sanitize(right, self.prefix_safety(fr, node.left))
        t = union(left, right)
        if isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            t = self.secret_in_text(fr, node, node.left.value, t)
            t = sanitize(t, self.const_prefix_safety(node.left.value.split("%", 1)[0]))
        return t

    def secret_in_text(self, fr, node, text, t):
        """A weak random value formatted into text that names a secret
        ("SESSIONID=%s", "token: {}") is a weak secret."""
        if only_kind(t, (RAND,)) and R.SECRET_IN_TEXT.search(text):
            self.sink(fr, "weak-randomness", node, only_kind(t, (RAND,)), R.SECRET_IN_TEXT.search(text).group(0), kinds=(RAND,))
            return sanitize(t, {"weak-randomness"})
        return t

    def prefix_safety(self, fr, node):
        """Categories a constant string prefix makes safe: a fixed host or
        a fixed path fixes where a URL goes."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return self.const_prefix_safety(node.value)
        if isinstance(node, ast.Name) and isinstance(fr.consts.get(node.id), str):
            return self.const_prefix_safety(fr.consts[node.id])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.prefix_safety(fr, node.left)
        return frozenset()

    @staticmethod
    def const_prefix_safety(s):
        s = s.strip()
        if "://" in s:
            rest = s.split("://", 1)[1]
            if "/" in rest and rest.split("/", 1)[0] and "@" not in rest.split("/", 1)[0]:
                return frozenset({"ssrf", "open-redirect"})
            return frozenset()
        if len(s) >= 2 and s[0] == "/" and s[1] not in "/\\":
            return frozenset({"open-redirect", "ssrf"})
        low = s.lower()
        if s and s[0].isalnum() and ":" not in s and not low.startswith(("http", "ftp", "file", "javascript", "data", "ws", "mailto")):
            # a relative path: it stays on this site, and is no URL to fetch
            return frozenset({"ssrf", "open-redirect"})
        return frozenset()

    def e_JoinedStr(self, fr, node):
        t = {}
        prefix = ""
        seen_value = False
        for v in node.values:
            if isinstance(v, ast.Constant):
                if not seen_value:
                    prefix += str(v.value)
                continue
            seen_value = True
            t = union(t, self.expr(fr, v))
        text = "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))
        t = self.secret_in_text(fr, node, text, t)
        return sanitize(t, self.const_prefix_safety(prefix)) if prefix else t

    def e_FormattedValue(self, fr, node):
        t = self.expr(fr, node.value)
        if node.format_spec is not None:
            spec = text_of(node.format_spec)
            if any(c in spec for c in "dfexXob%"):
                return sanitize(t, R.ALL)
        return t

    def e_BoolOp(self, fr, node):
        return union(*[self.expr(fr, v) for v in node.values])

    def e_Compare(self, fr, node):
        self.expr(fr, node.left)
        for c in node.comparators:
            self.expr(fr, c)
        return EMPTY

    def e_UnaryOp(self, fr, node):
        t = self.expr(fr, node.operand)
        return EMPTY if isinstance(node.op, ast.Not) else t

    def e_IfExp(self, fr, node):
        self.expr(fr, node.test)
        return union(self.expr(fr, node.body), self.expr(fr, node.orelse))

    def e_Await(self, fr, node):
        return self.expr(fr, node.value)

    def e_Starred(self, fr, node):
        return self.expr(fr, node.value)

    def e_NamedExpr(self, fr, node):
        t = self.expr(fr, node.value)
        self.bind(fr, node.target, t, node.value, node)
        return t

    def e_List(self, fr, node):
        return union(*[self.expr(fr, e) for e in node.elts])

    e_Tuple = e_List
    e_Set = e_List

    def e_Dict(self, fr, node):
        ts = []
        for k, v in zip(node.keys, node.values):
            if k is not None:
                self.expr(fr, k)
            vt = self.expr(fr, v)
            if k is not None and isinstance(k, ast.Constant) and isinstance(k.value, str) and vt:
                self.weak_random_store(fr, k.value, vt, v)
            ts.append(vt)
        return union(*ts)

    def e_Lambda(self, fr, node):
        return EMPTY

    def comprehension(self, fr, node, elts):
        saved = dict(fr.env)
        for gen in node.generators:
            it = self.expr(fr, gen.iter)
            self.bind(fr, gen.target, it, gen.iter, gen.target)
            for cond in gen.ifs:
                self.expr(fr, cond)
                self.apply_guard(fr, cond, True)
        t = union(*[self.expr(fr, e) for e in elts])
        fr.env = saved
        return t

    def e_ListComp(self, fr, node):
        return self.comprehension(fr, node, [node.elt])

    e_SetComp = e_ListComp
    e_GeneratorExp = e_ListComp

    def e_DictComp(self, fr, node):
        return self.comprehension(fr, node, [node.key, node.value])

    # ------------------------------------------------------------ calls

    def e_Call(self, fr, node):
        func = node.func
        q = self.qualname(fr, func)
        meth = func.attr if isinstance(func, ast.Attribute) else None
        recv = func.value if isinstance(func, ast.Attribute) else None
        args = [self.expr(fr, a) for a in node.args]
        kw = {}
        kwstar = {}
        for k in node.keywords:
            kt = self.expr(fr, k.value)
            if k.arg is None:
                kwstar = union(kwstar, kt)
            else:
                kw[k.arg] = kt
        recv_t = self.expr(fr, recv) if recv is not None else EMPTY
        alla = union(*args, *kw.values(), kwstar)

        # sources
        if recv is not None and meth in R.REQUEST_METHODS and self.is_request(fr, recv):
            return self.source(fr, node, WEB)
        if meth in R.HANDLER_METHODS and isinstance(recv, ast.Name) and recv.id == "self":
            return self.source(fr, node, WEB)
        if q in R.LOCAL_SOURCE_CALLS:
            t = self.source(fr, node, LOCAL)
            if q in ("os.getenv", "os.environ.get", "os.getenvb") and node.args and program_env(node.args[0]):
                t = sanitize(t, {"command-injection"})
            return t
        if meth in ("parse_args", "parse_known_args") and isinstance(recv, ast.Name) and \
                fr.kinds.get(recv.id) in R.ARG_PARSERS:
            # the command line, parsed: as local as sys.argv
            return self.source(fr, node, LOCAL)
        if q and q.startswith("random.") and q.split(".")[-1] in R.WEAK_RANDOM_FUNCS and "SystemRandom" not in q:
            self.judge(fr, "weak-randomness", node)
            return union(self.source(fr, node, RAND), alla)
        if recv_t and meth in ("get", "getlist", "get_all", "getone") and self.is_source_text(recv_t, recv) and not any(args[1:2]):
            return self.retext(recv_t, node, fr)

        # pattern rules that look at the call's shape
        self.pattern_calls(fr, node, q, meth)
        self.render_call(fr, node, q, meth, recv, args, kw, kwstar)

        # sinks
        self.check_sinks(fr, node, q, meth, recv, recv_t, args, kw, kwstar)

        # the call's result
        if q in ("re.sub", "regex.sub") and len(node.args) >= 3 and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[1], ast.Constant) and node.args[1].value == "" \
                and str(node.args[0].value).startswith("[^") and str(node.args[0].value).rstrip("+*").endswith("]") \
                and not any(c in re.sub(r"\\[wdsWDS]", "", str(node.args[0].value)) for c in "./\\'\"<>;|&$`%()"):
            # deleting every character outside a class of word characters
            return sanitize(args[2], R.ALL)
        if q in R.SANITIZERS:
            return sanitize(alla if recv is None or self.qualname(fr, recv) else union(alla, recv_t), R.SANITIZERS[q])
        if meth in ("escape", "quote") and not q:
            return sanitize(union(alla, recv_t), R.SANITIZERS.get("escape"))
        if q in R.CLEAN_CALLS or (q and q.startswith(R.CLEAN_PREFIXES)) or meth in R.CLEAN_METHODS:
            # a number or a digest of a weak random value is still predictable
            return only_kind(union(alla, recv_t), (RAND,))
        if q in R.SAFE_RESULT_CALLS:
            return sanitize(alla, {"xss", "open-redirect"})
        if q in R.SINK_CALLS and R.SINK_CALLS[q][0] in ("xss", "open-redirect", "template-injection"):
            return sanitize(alla, {"xss", "open-redirect"})
        if (q in R.SINK_CALLS and R.SINK_CALLS[q][0] not in ("ssrf",)) or q in R.SUBPROCESS_CALLS or \
                q in ("yaml.load", "yaml.load_all", "numpy.load"):
            # what a command, a query or a file read returns is not the request's data
            return EMPTY
        if q in R.HTML_RESPONSES:
            return sanitize(alla, {"xss"})
        ms = R.SINK_METHODS.get(meth) if meth else None
        if ms is not None and ms[0] != "ssrf" and (ms[3] is None or any(g in fr.mod.libs for g in ms[3])) \
                and not (q and q.startswith(("re.", "regex."))):
            # rows a query returns, entries an LDAP search finds: not the request's data
            return EMPTY
        if meth in R.XPATH_FIND_METHODS and any(l in fr.mod.libs for l in R.XML_LIBS) and not recv_t:
            return EMPTY
        fmt = recv.value if isinstance(recv, ast.Constant) else fr.consts.get(recv.id) if isinstance(recv, ast.Name) else None
        if meth == "format" and isinstance(fmt, str):
            if "{" not in fmt:
                # no replacement field: the arguments are dropped, the text is the constant
                return EMPTY
            return sanitize(alla, self.const_prefix_safety(fmt.split("{", 1)[0]))
        if isinstance(func, ast.Attribute) and R.ORM_CALL.search(text_of(func)):
            # a row an ORM query returns is the database's, not the request's
            return only_kind(alla, (RAND,))
        callee = self.resolve_call(fr, func, q)
        if callee is not None:
            return self.apply_summary(fr, node, callee, recv, recv_t, args, kw, kwstar)
        if q in ("os.path.join", "posixpath.join", "pathlib.Path", "pathlib.PurePath") and node.args:
            # a later absolute part replaces the earlier ones: every part counts
            return alla
        if meth == "join" and isinstance(recv, ast.Constant):
            return alla
        if meth in ("append", "extend", "add", "insert", "update", "setdefault", "appendleft", "put", "write") \
                and isinstance(recv, ast.Name) and alla:
            self.store_name(fr, recv.id, union(fr.env.get(recv.id, EMPTY), alla), node)
            return EMPTY
        # an unknown call carries its receiver's and arguments' data
        return union(recv_t, alla)

    def resolve_call(self, fr, func, q):
        """The FuncInfo a call targets, when it is in the analysed code."""
        if isinstance(func, ast.Name):
            n = func.id
            if n in fr.local_funcs:
                return fr.local_funcs[n]
            if n in fr.mod.funcs and n not in fr.env:
                return fr.mod.funcs[n]
            if n in fr.mod.classes:
                return fr.mod.classes[n].methods.get("__init__") or ("class", fr.mod.classes[n])
            if n in fr.mod.imports:
                return self.ctx.lookup(fr.mod.imports[n])
            return None
        if isinstance(func, ast.Attribute):
            v = func.value
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Name):
                ci = fr.mod.classes.get(v.func.id)
                if ci is None and v.func.id in fr.mod.imports:
                    ref = self.ctx.lookup(fr.mod.imports[v.func.id])
                    ci = ref[1] if isinstance(ref, tuple) else (ref.cls if ref is not None and ref.node.name == "__init__" else None)
                if ci is not None:
                    return self.method_of(ci, func.attr)
            if isinstance(v, ast.Name):
                if v.id in ("self", "cls") and fr.func is not None and fr.func.cls is not None:
                    return self.method_of(fr.func.cls, func.attr)
                if v.id in fr.mod.classes:
                    return self.method_of(fr.mod.classes[v.id], func.attr)
                k = fr.kinds.get(v.id)
                if k and k.startswith("class:"):
                    ci = self.ctx.class_by_key(k[6:])
                    if ci is not None:
                        return self.method_of(ci, func.attr)
            if q:
                return self.ctx.lookup(q)
        return None

    def method_of(self, ci, name, depth=0):
        if name in ci.methods:
            return ci.methods[name]
        if depth > 4:
            return None
        for b in ci.bases:
            base = ci.mod.classes.get(b)
            if base is None and b in ci.mod.imports:
                base = self.ctx.lookup(ci.mod.imports[b])
                base = base[1] if isinstance(base, tuple) else None
            if base is not None and base is not ci:
                m = self.method_of(base, name, depth + 1)
                if m is not None:
                    return m
        return None

    def apply_summary(self, fr, node, callee, recv, recv_t, args, kw, kwstar):
        if isinstance(callee, tuple):  # a class without __init__: an object carrying its arguments
            return union(*args, *kw.values())
        self.ctx.note_read(callee)
        s = callee.summary
        params = callee.params
        bind = {}
        exprs = {}
        offset = 0
        if callee.kind in ("method", "class"):
            if recv is not None and not (isinstance(recv, ast.Name) and recv.id in callee.mod.classes
                                         and callee.kind == "method"):
                if params:
                    bind[params[0]] = recv_t
                    exprs[params[0]] = recv
                offset = 1
            elif isinstance(node.func, ast.Name) or callee.node.name == "__init__":
                offset = 1  # constructor call: self is the new object
            else:
                offset = 0
        rest = []
        for i, a in enumerate(args):
            j = i + offset
            if j < len(params):
                bind[params[j]] = a
                exprs[params[j]] = node.args[i] if i < len(node.args) else None
                if isinstance(exprs[params[j]], ast.Starred):
                    for p in params[j:]:
                        bind[p] = union(bind.get(p, EMPTY), a)
            else:
                rest.append(a)
        if callee.vararg:
            bind[callee.vararg] = union(*rest)
        for k, t in kw.items():
            if k in params or k in callee.kwonly:
                bind[k] = t
                exprs[k] = next((x.value for x in node.keywords if x.arg == k), None)
            elif callee.kwarg:
                bind[callee.kwarg] = union(bind.get(callee.kwarg, EMPTY), t)
        if kwstar:
            for p in params[offset:] + callee.kwonly:
                if p not in bind:
                    bind[p] = kwstar
        call_step = step_of(fr.mod.path, node.lineno, text_of(node.func) + "()")

        def arg_taint(origin):
            pname, attr = origin
            if attr is not None:
                e = exprs.get(pname)
                if isinstance(e, ast.Name):
                    key = e.id + "." + attr
                    if key in fr.env:
                        return fr.env[key]
                    if e.id in fr.params and e.id not in fr.env:
                        return self.param_label(fr, e.id, attr, node)
            return bind.get(pname, EMPTY)

        def through(lab, inner):
            """Caller label lab continued by the callee's trace inner."""
            out = {}
            for a in arg_taint(lab.origin).values():
                san = a.san | lab.san
                tr = a.trace + (call_step,) + inner.trace[0:]
                if len(tr) > MAX_TRACE:
                    tr = tr[:2] + tr[-(MAX_TRACE - 2):]
                nl = Label(a.kind, a.origin, tr, san)
                out[nl.key()] = nl
            return out

        self.ctx.called.add(id(callee))
        private = callee.node.name.startswith("_") and not callee.node.name.endswith("__")
        for lab, category, loc, sink_text, built in list(s.sinks):
            via = through(lab, lab)
            if private and not self.deferred(via, category):
                # this call gave the sink of a private helper (_name: its
                # callers are the module's own, in sight) its verdict: a
                # finding, or data clean or sanitized for the category. A
                # public function's callers may be out of sight: no verdict.
                self.ctx.record_judged(loc[0], category, range(loc[1], (loc[3] or loc[1]) + 1), "flow")
            for a in via.values():
                if category in a.san:
                    continue
                if a.kind == PARAM:
                    if fr.func is not None and fr.func.qual != "<module>":
                        entry = (a, category, loc, sink_text, built)
                        if not any(e[0].key() == a.key() and e[1] == category and e[2] == loc for e in fr.func.summary.sinks):
                            fr.func.summary.sinks.append(entry)
                    continue
                if category == "weak-randomness" and a.kind != RAND:
                    continue
                if category != "weak-randomness" and a.kind == RAND:
                    continue
                self.ctx.report_at(category, loc, a.trace, a.kind, sink_text)
        # parameters' attributes and values the callee changed
        for (pname, attr), ft in s.fields.items():
            e = exprs.get(pname)
            val = self.resolve_labels(ft, arg_taint, call_step)
            if isinstance(e, ast.Name) and val:
                self.store_name(fr, e.id + "." + attr, val, node)
        for pname, mt in s.mutates.items():
            e = exprs.get(pname)
            val = self.resolve_labels(mt, arg_taint, call_step)
            if isinstance(e, ast.Name) and val:
                self.store_name(fr, e.id, union(fr.env.get(e.id, EMPTY), val), node)
        ret = self.resolve_labels(s.ret, arg_taint, call_step)
        if callee.node.name == "__init__":
            fields = {}
            for (pname, attr), ft in s.fields.items():
                if params and pname == params[0]:
                    fields[attr] = self.resolve_labels(ft, arg_taint, call_step)
            fr.pending_fields = fields
            return EMPTY
        return ret

    def resolve_labels(self, t, arg_taint, call_step):
        out = {}
        for lab in t.values():
            if lab.kind != PARAM:
                nl = lab
                out.setdefault(nl.key(), nl)
                continue
            for a in arg_taint(lab.origin).values():
                tr = a.trace + (call_step,) + lab.trace
                if len(tr) > MAX_TRACE:
                    tr = tr[:2] + tr[-(MAX_TRACE - 2):]
                nl = Label(a.kind, a.origin, tr, a.san | lab.san)
                out.setdefault(nl.key(), nl)
        return taint_of(out.values())

    # ------------------------------------------------------------ templates

    def render_call(self, fr, node, q, meth, recv, args, kw, kwstar):
        spec = R.RENDER_CALLS.get(q) if q else None
        name_node = ctx_node = None
        context = {}
        if spec is not None:
            ni, ci = spec
            name_node = node.args[ni] if ni < len(node.args) else next(
                (k.value for k in node.keywords if k.arg in ("template_name", "name", "template_name_or_list")), None)
            if ci is not None:
                ctx_node = node.args[ci] if ci < len(node.args) else next(
                    (k.value for k in node.keywords if k.arg == "context"), None)
            else:
                context = {k: v for k, v in kw.items() if v}
        elif meth == "render" and isinstance(recv, ast.Call) and isinstance(recv.func, ast.Attribute) \
                and recv.func.attr == "get_template" and recv.args:
            name_node = recv.args[0]
            context = {k: v for k, v in kw.items() if v}
            if node.args:
                ctx_node = node.args[0]
        else:
            return
        for k in node.keywords:
            if k.arg is None:
                if isinstance(k.value, ast.Dict):
                    context.update(self.dict_context(fr, k.value))
                elif kwstar:
                    context["*"] = kwstar
        if ctx_node is not None:
            if isinstance(ctx_node, ast.Dict):
                context.update(self.dict_context(fr, ctx_node))
            else:
                t = self.expr(fr, ctx_node)
                if isinstance(ctx_node, ast.Name):
                    prefix = ctx_node.id + "["
                    for key, v in fr.env.items():
                        if key.startswith(prefix) and v:
                            context[key[len(prefix):-1].strip("'\"")] = v
                if t:
                    context.setdefault("*", t)
        if isinstance(name_node, ast.Constant) and isinstance(name_node.value, str):
            self.ctx.templates.render(fr, node, name_node.value, context)

    def dict_context(self, fr, d):
        out = {}
        for k, v in zip(d.keys, d.values):
            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                t = self.expr(fr, v)
                if t:
                    out[k.value] = t
        return out

    # ------------------------------------------------------------ sinks

    def is_built(self, fr, node):
        """Whether an argument is text built from pieces (concatenation,
        %-formatting, an f-string, str.format), directly or through a name
        bound to such text in this function."""
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "join", "replace"):
            return True
        if isinstance(node, ast.Call) and self.qualname(fr, node.func) in ("sqlalchemy.text", "sqlalchemy.sql.text") and node.args:
            return self.is_built(fr, node.args[0])
        if isinstance(node, ast.Name):
            return fr.kinds.get(node.id) == "built"
        return False

    def check_sinks(self, fr, node, q, meth, recv, recv_t, args, kw, kwstar):
        first = node.args[0] if node.args else (node.keywords[0].value if node.keywords else None)
        fr.sink_built = first is not None and self.is_built(fr, first)
        if q in ("builtins.eval", "builtins.exec") or (q in R.SINK_CALLS and R.SINK_CALLS[q][0] == "insecure-deserialization") \
                or q in ("yaml.load", "yaml.load_all"):
            fr.sink_built = True
        spec = R.SINK_CALLS.get(q) if q else None
        if spec is not None and not self.deferred(union(*[args[i] for i in spec[1] if i < len(args)],
                                                         *[kw[n] for n in spec[2] if n in kw]), spec[0]):
            self.judge(fr, spec[0], node)
        elif isinstance(node.func, ast.Name) and R.SINK_CALLS.get("builtins." + node.func.id, ("",))[0] == "code-injection":
            # a name like eval that this module binds to something else: judged not to be Python's
            self.judge(fr, "code-injection", node)
        if spec is not None and spec[0] == "insecure-deserialization" and first is not None and self.is_constant(fr, first):
            self.judge(fr, spec[0], node, "call")
        if meth in ("load", "load_all") and isinstance(recv, ast.Name) and recv.id in fr.ctor_of \
                and self.qualname(fr, fr.ctor_of[recv.id].func) in ("ruamel.yaml.YAML", "ruamel.yaml.main.YAML"):
            typ = next((k.value for k in fr.ctor_of[recv.id].keywords if k.arg == "typ"), None)
            if typ is None or (isinstance(typ, ast.Constant) and typ.value in ("rt", "safe", "base")):
                # ruamel's round-trip, safe and base loaders build no arbitrary objects
                self.judge(fr, "insecure-deserialization", node, "call")
            else:
                self.sink(fr, "insecure-deserialization", node, union(*args), text_of(node.func))
            return
        if q in R.OS_EXEC_CALLS and self.shell_script_sink(fr, node, q):
            return
        if q in R.SUBPROCESS_CALLS:
            self.subprocess_sink(fr, node, q, args, kw)
            return
        if q in ("yaml.load", "yaml.load_all"):
            loader = kw.get("Loader")
            lnode = next((k.value for k in node.keywords if k.arg == "Loader"), node.args[1] if len(node.args) > 1 else None)
            if (lnode is not None and ("Safe" in text_of(lnode) or "BaseLoader" in text_of(lnode))) or \
                    (first is not None and self.is_constant(fr, first)):
                # a loader that builds no Python objects, or the program's own document
                self.judge(fr, "insecure-deserialization", node, "call")
            else:
                self.sink(fr, "insecure-deserialization", node, args[0] if args else kw.get("stream", EMPTY), q)
            del loader
            return
        if q in ("numpy.load",):
            self.judge(fr, "insecure-deserialization", node, "call")
            if any(k.arg == "allow_pickle" and not (isinstance(k.value, ast.Constant) and not k.value.value) for k in node.keywords):
                self.sink(fr, "insecure-deserialization", node, args[0] if args else EMPTY, q)
            return
        if q in R.HTML_RESPONSES:
            self.response_sink(fr, node, q, args, kw)
            return
        if spec is not None:
            cat, pos, names = spec
            t = union(*[args[i] for i in pos if i < len(args)], *[kw[n] for n in names if n in kw])
            if cat == "code-injection" and q == "builtins.compile" and not t:
                return
            self.sink(fr, cat, node, t, text_of(node.func))
            return
        if meth is None:
            return
        if meth == "write" and isinstance(recv, ast.Attribute) and recv.attr == "wfile" and self.in_http_handler(fr):
            self.sink(fr, "xss", node, union(*args), text_of(node.func))
            return
        # receiver-typed: pathlib.Path(x).read_text()
        if meth in ("open", "read_text", "read_bytes", "write_text", "write_bytes", "unlink", "rmdir",
                    "mkdir", "touch", "iterdir", "rename", "replace") and recv is not None:
            rq = self.qualname(fr, recv)
            is_path = (isinstance(recv, ast.Call) and rq in ("pathlib.Path", "pathlib.PurePath")) or \
                (isinstance(recv, ast.Name) and fr.kinds.get(recv.id) == "pathlib.Path") or \
                (isinstance(recv, ast.BinOp) and isinstance(recv.op, ast.Div))
            if is_path:
                self.sink(fr, "path-traversal", node, recv_t, text_of(node.func))
                return
        if meth in R.XPATH_FIND_METHODS and args and any(l in fr.mod.libs for l in R.XML_LIBS) \
                and not (q and q.startswith(("re.", "regex."))):
            if not recv_t and not isinstance(recv, ast.Constant) and self.looks_like_xpath(node.args[0]):
                self.sink(fr, "xpath-injection", node, args[0], text_of(node.func))
            return
        ms = R.SINK_METHODS.get(meth)
        if ms is None:
            return
        cat, pos, names, gate = ms
        if gate is not None and not any(g in fr.mod.libs for g in gate):
            return
        if meth == "search" and q and q.startswith(("re.", "regex.")):
            return
        if meth == "raw" and recv is not None and "objects" not in text_of(recv) and "django" in fr.mod.libs:
            if not isinstance(recv, ast.Name) or recv.id not in fr.mod.classes:
                return
        t = union(*[args[i] for i in pos if i < len(args)], *[kw[n] for n in names if n in kw])
        if meth == "extra":
            t = union(*kw.values())
        if meth == "execute" and q and q.startswith(("concurrent.", "asyncio.")):
            return
        self.sink(fr, cat, node, t, text_of(node.func))

    def is_constant(self, fr, node):
        """Whether an argument is text the program wrote itself: a literal,
        an f-string of literals, or a name only ever bound to a literal here."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (str, bytes))
        if isinstance(node, ast.JoinedStr):
            return all(isinstance(v, ast.Constant) for v in node.values)
        if isinstance(node, ast.Name):
            return node.id in fr.consts
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("read", "read_bytes", "read_text") \
                and not node.args:
            return self.is_constant(fr, node.func.value)
        if isinstance(node, ast.Call) and self.qualname(fr, node.func) in ("builtins.open", "io.open", "pathlib.Path") and node.args:
            # the program's own file, named by a constant path
            return self.is_constant(fr, node.args[0])
        return False

    @staticmethod
    def looks_like_xpath(arg):
        consts = []
        for n in ast.walk(arg):
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                consts.append(n.value)
        s = "".join(consts)
        return any(c in s for c in "/[@=") or not consts

    def shell_script_sink(self, fr, node, q):
        """os.exec*/os.spawn* of a shell with -c: the argument after -c is a
        script, a sink as much as the program is. True when it ran a shell."""
        at = R.OS_EXEC_CALLS[q]
        if len(node.args) <= at:
            return False
        prog = node.args[at]
        if not (isinstance(prog, ast.Constant) and str(prog.value).split("/")[-1] in R.SHELLS):
            return False
        rest = list(node.args[at + 1:])
        flat = []
        for a in rest:
            flat.extend(a.elts if isinstance(a, (ast.List, ast.Tuple)) else [a])
        for i, e in enumerate(flat):
            if isinstance(e, ast.Constant) and str(e.value) in ("-c", "-lc", "/c"):
                t = union(*[self.expr(fr, x) for x in flat[i + 1:i + 2]])
                self.sink(fr, "command-injection", node, t, text_of(node.func))
                break
        else:
            self.judge(fr, "command-injection", node)
        return True

    def subprocess_sink(self, fr, node, q, args, kw):
        shell = next((k.value for k in node.keywords if k.arg == "shell"), None)
        shell_on = shell is not None and not (isinstance(shell, ast.Constant) and not shell.value)
        cmd_node = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "args"), None)
        cmd_t = args[0] if args else kw.get("args", EMPTY)
        sink_text = text_of(node.func)
        if "executable" in kw and kw["executable"]:
            self.sink(fr, "command-injection", node, kw["executable"], sink_text)
            return
        if shell_on:
            self.sink(fr, "command-injection", node, cmd_t, sink_text)
            return
        if isinstance(cmd_node, (ast.List, ast.Tuple)):
            if not cmd_node.elts:
                self.judge(fr, "command-injection", node)
                return
            head = cmd_node.elts[0]
            # a command-line tool runs the program its own user names: only
            # a web request choosing the program counts
            head_t = only_kind(self.expr(fr, head), (WEB, PARAM))
            if head_t:
                self.sink(fr, "command-injection", node, head_t, sink_text)
                return
            if isinstance(head, ast.Constant) and str(head.value).split("/")[-1] in R.SHELLS:
                rest = cmd_node.elts[1:]
                for i, e in enumerate(rest):
                    if isinstance(e, ast.Constant) and str(e.value) in ("-c", "/c", "-Command"):
                        self.sink(fr, "command-injection", node, union(*[self.expr(fr, x) for x in rest[i + 1:]]), sink_text)
                        return
            # a program the code names, its arguments as a list: no shell parses them
            self.judge(fr, "command-injection", node)
            return
        if isinstance(cmd_node, ast.Name):
            k = fr.kinds.get(cmd_node.id)
            if k == "list":
                self.judge(fr, "command-injection", node)
                return
        # a string command run without a shell: request data names the program
        self.sink(fr, "command-injection", node, cmd_t, sink_text)

    def response_sink(self, fr, node, q, args, kw):
        ctype = None
        for k in node.keywords:
            if k.arg in ("mimetype", "content_type", "media_type"):
                ctype = k.value
        body_t = union(args[0] if args else EMPTY, kw.get("response", EMPTY), kw.get("content", EMPTY),
                       kw.get("body", EMPTY), kw.get("text", EMPTY))
        if q == "aiohttp.web.Response":
            # aiohttp sends text= as text/plain unless told otherwise
            if ctype is None or not (isinstance(ctype, ast.Constant) and "html" in str(ctype.value)):
                self.judge(fr, "xss", node)
                return
        elif ctype is not None:
            if isinstance(ctype, ast.Constant) and "html" not in str(ctype.value):
                self.judge(fr, "xss", node)
                return
        self.sink(fr, "xss", node, body_t, text_of(node.func))

    # ------------------------------------------------------------ pattern rules

    def pattern_calls(self, fr, node, q, meth):
        kws = {k.arg: k.value for k in node.keywords if k.arg}

        def false(n):
            return isinstance(n, ast.Constant) and n.value in (False, 0, None) and n.value is not None or \
                isinstance(n, ast.Constant) and n.value is False

        def true(n):
            return isinstance(n, ast.Constant) and n.value in (True, 1) and n.value is not False

        # cookies
        if meth == "set_cookie" or (q and q.endswith(".set_cookie")):
            recv_text = text_of(node.func.value) if isinstance(node.func, ast.Attribute) else ""
            framework = any(l in fr.mod.libs for l in R.WEB_FRAMEWORKS)
            if any(k.arg is None for k in node.keywords) or "jar" in recv_text.lower() or "cookies" in recv_text.lower() \
                    or (len(node.args) <= 1 and "value" not in kws and "key" not in kws) \
                    or (not framework and recv_text == "self"):
                return  # a client's cookie jar (requests, http.cookiejar) is no response
            value = node.args[1] if len(node.args) > 1 else kws.get("value")
            if (isinstance(value, ast.Constant) and value.value in ("", None)) or \
                    any(k in kws and isinstance(kws[k], ast.Constant) and kws[k].value == 0 for k in ("expires", "max_age")):
                return  # deleting a cookie carries nothing
            miss = []
            if "secure" not in kws or false(kws["secure"]):
                miss.append("secure")
            if "httponly" not in kws or false(kws["httponly"]):
                miss.append("httponly")
            if miss:
                self.pattern(fr, "insecure-cookie", node,
                             "cookie set without " + " and ".join(m + "=True" for m in miss), "warning")
            return
        fname = (meth or (q or "").split(".")[-1] or "")
        low = fname.lower()
        if ("cookie" in low or "storage" in low or "session" in low) and \
                (("httponly" in kws and false(kws["httponly"])) or ("secure" in kws and false(kws["secure"]))):
            which = [k for k in ("secure", "httponly") if k in kws and false(kws[k])]
            self.pattern(fr, "insecure-cookie", node, text_of(node.func) + " sets " + ", ".join(w + "=False" for w in which), "warning")
            return
        if meth == "update" and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "config":
            for k, v in kws.items():
                if k in ("SESSION_COOKIE_SECURE", "SESSION_COOKIE_HTTPONLY", "REMEMBER_COOKIE_SECURE",
                         "REMEMBER_COOKIE_HTTPONLY", "CSRF_COOKIE_SECURE") and false(v):
                    self.pattern(fr, "insecure-cookie", node, k + " is False", "warning")
        # JWT
        if q and (q.endswith("jwt.decode") or q in ("jose.jwt.decode", "jwt.api_jwt.decode")):
            why = None
            if "verify" in kws and false(kws["verify"]):
                why = "verify=False"
            opts = kws.get("options")
            if isinstance(opts, ast.Dict):
                for k, v in zip(opts.keys, opts.values):
                    if isinstance(k, ast.Constant) and k.value in ("verify_signature", "verify") and false(v):
                        why = "options disable signature verification"
            algs = kws.get("algorithms")
            if algs is not None and "none" in text_of(algs).lower() and "'none'" in text_of(algs).lower():
                why = "the 'none' algorithm is accepted"
            if why:
                self.pattern(fr, "jwt-unverified", node, "jwt.decode with " + why, "error")
            return
        if q in ("jwt.get_unverified_claims", "jose.jwt.get_unverified_claims"):
            self.pattern(fr, "jwt-unverified", node, q + " reads claims without verifying the signature", "warning")
            return
        # XXE
        if q in ("lxml.etree.XMLParser", "lxml.etree.XMLPullParser", "lxml.etree.XSLTAccessControl_") or \
                (q and q.endswith("etree.XMLParser")):
            if ("resolve_entities" in kws and true(kws["resolve_entities"])) or \
                    ("no_network" in kws and false(kws["no_network"])):
                self.pattern(fr, "xxe", node, "XML parser resolves external entities", "error")
            return
        if q and q.startswith(R.XML_PARSE_MODULES) and q.rsplit(".", 1)[-1] in R.XML_PARSE_FUNCS:
            # a parser's defaults are judged here: only the options above enable entities
            self.judge(fr, "xxe", node, "call")
        if meth == "setFeature" and len(node.args) >= 2:
            feat = text_of(node.args[0])
            if ("external_ges" in feat or "external_pes" in feat or "external-general-entities" in feat) and \
                    not false(node.args[1]):
                self.pattern(fr, "xxe", node, "XML parser set to load external entities (" + feat + ")", "error")
            return
        if q == "xmltodict.parse" and "disable_entities" in kws and false(kws["disable_entities"]):
            self.pattern(fr, "xxe", node, "xmltodict.parse with disable_entities=False", "error")
            return
        # template environments that do not escape
        if q in ("jinja2.Environment", "aiohttp_jinja2.setup", "jinja2.environment.Environment") or \
                (q and q.endswith("jinja2.Environment")):
            ae = kws.get("autoescape")
            if ae is not None and false(ae):
                self.pattern(fr, "xss", node, "templates are rendered with autoescape off", "warning")
                fr.mod.autoescape_off.append(node.lineno)

    # ------------------------------------------------------------ statements

    def body(self, fr, stmts):
        for s in stmts:
            self.stmt(fr, s)

    def stmt(self, fr, node):
        self.ctx.tick()
        m = getattr(self, "s_" + type(node).__name__, None)
        if m is not None:
            m(fr, node)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(fr, child)

    def s_Expr(self, fr, node):
        self.expr(fr, node.value)

    def s_Assign(self, fr, node):
        fr.pending_fields = None
        t = self.expr(fr, node.value)
        fields = getattr(fr, "pending_fields", None)
        fr.pending_fields = None
        for target in node.targets:
            self.bind(fr, target, t, node.value, node, fields)

    def s_AnnAssign(self, fr, node):
        if node.value is not None:
            t = self.expr(fr, node.value)
            self.bind(fr, node.target, t, node.value, node)

    def s_AugAssign(self, fr, node):
        t = self.expr(fr, node.value)
        if isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name) and isinstance(fr.consts.get(node.target.id), str):
            # url = "https://host/"; url += x: x follows a fixed prefix
            t = sanitize(t, self.const_prefix_safety(fr.consts[node.target.id]))
        cur = self.expr(fr, node.target)
        self.bind(fr, node.target, union(cur, t), node.value, node, augment=True)

    def bind(self, fr, target, t, value, node, fields=None, augment=False):
        """Assign taint t (from expression value) to target."""
        line = getattr(node, "lineno", 0)
        if isinstance(target, ast.Name):
            n = target.id
            t = self.weak_random_store(fr, n, t, node)
            self.set_kind(fr, n, value, augment)
            if fields:
                for attr, ft in fields.items():
                    self.store_name(fr, n + "." + attr, ft, node)
            if isinstance(value, ast.Call):
                vq = self.qualname(fr, value.func)
                if vq in ("urllib.parse.urlparse", "urllib.parse.urlsplit", "urlparse.urlparse") and value.args \
                        and isinstance(value.args[0], ast.Name):
                    fr.urlparse_of[n] = value.args[0].id
                if vq in ("os.path.realpath", "os.path.abspath", "os.path.normpath") and value.args:
                    inner = value.args[0]
                    fr.realpath_of[n] = [x.id for x in ast.walk(inner) if isinstance(x, ast.Name)]
            self.store_name(fr, n, extend(t, step_of(fr.mod.path, line, n)) if t else EMPTY, node)
            vl = set(range(getattr(value, "lineno", line) or line, (getattr(value, "end_lineno", line) or line) + 1))
            vl |= self.built_lines(fr, value)
            if augment:
                vl |= fr.defs.get(n, set())
            fr.defs[n] = vl if len(vl) <= 64 else set(sorted(vl)[-64:])
            if not augment and isinstance(value, ast.Constant) and isinstance(value.value, (str, bytes)):
                fr.consts[n] = value.value
            else:
                fr.consts.pop(n, None)
            self.note_check(fr, [n], value)
            if isinstance(value, ast.Call):
                fr.ctor_of[n] = value
            else:
                fr.ctor_of.pop(n, None)
            fname = (value.func.attr if isinstance(value.func, ast.Attribute) else value.func.id
                     if isinstance(value.func, ast.Name) else "") if isinstance(value, ast.Call) else ""
            if fname and any(w in fname.lower() for w in ("safe", "allowed", "valid", "whitelist", "allowlist",
                                                           "permitted", "trusted")):
                fr.guard_calls[n] = value
            else:
                fr.guard_calls.pop(n, None)
            # a fresh value replaces what the name's attributes held
            if not augment:
                under = (n + ".", n + "[")
                for k in [k for k in fr.env if k.startswith(under)]:
                    if not fields or k[len(n) + 1:] not in fields:
                        del fr.env[k]
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            self.note_check(fr, [e.id for e in target.elts if isinstance(e, ast.Name)], value)
            vals = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) else None
            for i, e in enumerate(target.elts):
                if vals is not None:
                    et = self.expr(fr, vals[i])
                    self.bind(fr, e, et, vals[i], node)
                else:
                    self.bind(fr, e.value if isinstance(e, ast.Starred) else e, t, value, node)
            return
        if isinstance(target, ast.Starred):
            self.bind(fr, target.value, t, value, node)
            return
        if isinstance(target, ast.Attribute):
            text = text_of(target)
            t = self.weak_random_store(fr, target.attr, t, node)
            base = target.value
            if isinstance(base, ast.Name):
                key = base.id + "." + target.attr
                self.store_name(fr, key, extend(t, step_of(fr.mod.path, line, text)) if t else EMPTY, node)
            else:
                self.expr(fr, base)
            self.config_assign(fr, target.attr, value, node)
            return
        if isinstance(target, ast.Subscript):
            self.expr(fr, target.slice)
            base = target.value
            keyname = target.slice.value if isinstance(target.slice, ast.Constant) else None
            if isinstance(keyname, str):
                self.weak_random_store(fr, keyname, t, node)
                self.config_assign(fr, keyname, value, node)
            btext = text_of(base)
            bq = self.qualname(fr, base)
            if t and (btext in R.SESSION_NAMES or bq in R.SESSION_NAMES or
                      (isinstance(base, ast.Name) and fr.kinds.get(base.id) == "session")):
                if btext != "session" or bq in R.SESSION_NAMES or fr.kinds.get("session") == "session" \
                        or "flask" in fr.mod.libs or "aiohttp_session" in fr.mod.libs:
                    self.sink(fr, "trust-boundary", node, t, btext + "[...]")
            if isinstance(keyname, str) and keyname.lower() == "location" and \
                    (isinstance(base, ast.Attribute) and base.attr == "headers" or isinstance(base, ast.Name)):
                self.sink(fr, "open-redirect", node, t, btext + "['Location']")
            if isinstance(base, ast.Name) and t:
                if isinstance(keyname, str):
                    self.store_name(fr, base.id + "[" + repr(keyname) + "]", extend(t, step_of(fr.mod.path, line, text_of(target))), node)
                self.store_name(fr, base.id, union(fr.env.get(base.id, EMPTY), extend(t, step_of(fr.mod.path, line, text_of(target)))), node)
            return

    def note_check(self, fr, names, value):
        """Remember the names a call was given when its result is bound:
        a later branch on that result is the program checking them."""
        if isinstance(value, ast.Await):
            value = value.value
        given = []
        if isinstance(value, ast.Call) and not self.is_plain_check(fr, value):
            given = [a.id for a in list(value.args) + [k.value for k in value.keywords] if isinstance(a, ast.Name)]
        for n in names:
            if given:
                fr.check_args[n] = given
            else:
                fr.check_args.pop(n, None)

    def config_assign(self, fr, name, value, node):
        if name in ("SESSION_COOKIE_SECURE", "SESSION_COOKIE_HTTPONLY", "CSRF_COOKIE_SECURE",
                    "REMEMBER_COOKIE_SECURE", "REMEMBER_COOKIE_HTTPONLY", "CSRF_COOKIE_HTTPONLY_") and \
                isinstance(value, ast.Constant) and value.value is False:
            self.pattern(fr, "insecure-cookie", node, name + " is False", "warning")

    def store_name(self, fr, key, t, node):
        fr.env[key] = t

    def set_kind(self, fr, n, value, augment):
        if augment:
            return
        k = None
        if isinstance(value, ast.Call):
            q = self.qualname(fr, value.func)
            if q:
                q = R.TYPE_ALIASES.get(q, q)
                k = q
                if q in ("flask.session",):
                    k = "session"
                if q.endswith("get_session") or q.endswith("new_session"):
                    k = "session"
                if q in ("shlex.split",):
                    k = "listhead"
            elif isinstance(value.func, ast.Name) and value.func.id in fr.mod.classes:
                k = "class:" + fr.mod.path + ":" + value.func.id
            elif isinstance(value.func, ast.Name) and value.func.id in fr.mod.imports:
                ref = self.ctx.lookup(fr.mod.imports[value.func.id])
                if isinstance(ref, tuple):
                    k = "class:" + ref[1].mod.path + ":" + ref[1].name
                elif ref is not None and ref.node.name == "__init__" and ref.cls is not None:
                    k = "class:" + ref.cls.mod.path + ":" + ref.cls.name
            if isinstance(value.func, ast.Attribute) and value.func.attr == "split":
                k = "listhead"
            if isinstance(value.func, ast.Attribute) and value.func.attr == "format":
                k = "built"
        elif isinstance(value, ast.Await) and isinstance(value.value, ast.Call):
            q = self.qualname(fr, value.value.func)
            if q and (q.endswith("get_session") or q.endswith("new_session")):
                k = "session"
        elif isinstance(value, (ast.List, ast.Tuple)):
            k = "list"
        elif isinstance(value, ast.JoinedStr) or (isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Add, ast.Mod))):
            k = "built"
        elif isinstance(value, ast.Constant) or isinstance(value, ast.BinOp):
            k = "str"
        if k is None:
            fr.kinds.pop(n, None)
        else:
            fr.kinds[n] = k

    def weak_random_store(self, fr, name, t, node):
        """A weak random value stored under a secret's name is reported once,
        here; the stored value is then marked, so its later uses are not."""
        if not t or not isinstance(name, str) or not R.secret_name(name):
            return t
        rt = only_kind(t, (RAND,))
        if rt:
            self.sink(fr, "weak-randomness", node, rt, name, kinds=(RAND,))
        pt = only_kind(t, (PARAM,))
        if pt:
            self.sink(fr, "weak-randomness", node, pt, name, kinds=(RAND,))
        return sanitize(t, {"weak-randomness"}) if rt else t

    def s_Return(self, fr, node):
        if node.value is None:
            return
        t = self.expr(fr, node.value)
        f = fr.func
        if f is not None and t and R.secret_name(f.node.name) and f.qual != "<module>":
            t = self.weak_random_store(fr, f.node.name, t, node)
        fr.returns = union(fr.returns, extend(t, step_of(fr.mod.path, node.lineno, "return " + text_of(node.value))) if t else t)
        tmpl = getattr(f, "template", None) if f is not None else None
        if tmpl and isinstance(node.value, ast.Dict):
            self.ctx.templates.render(fr, node, tmpl, self.dict_context(fr, node.value))
        if f is not None and f.route == "flask" and t:
            body = node.value
            if isinstance(body, ast.Tuple) and body.elts:
                body = body.elts[0]
                t = self.expr(fr, body)
            if isinstance(body, (ast.Dict, ast.List, ast.ListComp, ast.DictComp, ast.Set, ast.Tuple)):
                return
            if isinstance(body, ast.Call) and self.qualname(fr, body.func) in (
                    "builtins.list", "builtins.dict", "builtins.tuple", "builtins.set", "builtins.sorted"):
                return
            # a JSON body returned whole is a dict or a list: Flask sends JSON
            t = {k: lab for k, lab in t.items()
                 if not lab.trace[0][2].endswith(("get_json()", ".json", ".json()", "get_json(silent=True)"))}
            self.sink(fr, "xss", node, t, "return from view " + f.node.name)

    def s_If(self, fr, node):
        self.expr(fr, node.test)
        saved_env, saved_kinds = dict(fr.env), dict(fr.kinds)
        self.apply_guard(fr, node.test, True)
        self.body(fr, node.body)
        body_env, body_end = fr.env, terminates(node.body)
        fr.env, fr.kinds = dict(saved_env), saved_kinds
        self.apply_guard(fr, node.test, False)
        self.body(fr, node.orelse)
        else_env, else_end = fr.env, terminates(node.orelse) if node.orelse else False
        if body_end and else_end:
            fr.env = join(body_env, else_env)
        elif body_end:
            fr.env = else_env
        elif else_end:
            fr.env = body_env
        else:
            fr.env = join(body_env, else_env)

    def s_While(self, fr, node):
        self.expr(fr, node.test)
        before = dict(fr.env)
        for _ in range(2):
            self.body(fr, node.body)
        self.body(fr, node.orelse)
        fr.env = join(before, fr.env)

    def s_For(self, fr, node):
        it = self.expr(fr, node.iter)
        before = dict(fr.env)
        for _ in range(2):
            self.bind(fr, node.target, it, node.iter, node)
            self.body(fr, node.body)
        self.body(fr, node.orelse)
        fr.env = join(before, fr.env)

    s_AsyncFor = s_For

    def s_With(self, fr, node):
        for item in node.items:
            t = self.expr(fr, item.context_expr)
            if item.optional_vars is not None:
                self.bind(fr, item.optional_vars, t, item.context_expr, node)
        self.body(fr, node.body)

    s_AsyncWith = s_With

    def s_Try(self, fr, node):
        before = dict(fr.env)
        self.body(fr, node.body)
        after = join(before, fr.env)
        envs = [fr.env]
        for h in node.handlers:
            fr.env = dict(after)
            if h.name:
                fr.env[h.name] = EMPTY
            self.body(fr, h.body)
            if not terminates(h.body):
                envs.append(fr.env)
        fr.env = envs[0]
        for e in envs[1:]:
            fr.env = join(fr.env, e)
        self.body(fr, node.orelse)
        self.body(fr, node.finalbody)

    s_TryStar = s_Try

    def s_Assert(self, fr, node):
        self.expr(fr, node.test)
        self.apply_guard(fr, node.test, True)

    def s_Match(self, fr, node):
        self.expr(fr, node.subject)
        before = dict(fr.env)
        envs = []
        for case in node.cases:
            fr.env = dict(before)
            self.body(fr, case.body)
            envs.append(fr.env)
        fr.env = before
        for e in envs:
            fr.env = join(fr.env, e)

    def s_FunctionDef(self, fr, node):
        # a nested function sees the enclosing function's names
        if fr.func is None or fr.func.qual == "<module>":
            return
        fi = self.ctx.nested.get(id(node))
        if fi is None:
            return
        fr.local_funcs[node.name] = fi
        self.ctx.analyze_function(fi, outer=fr)

    s_AsyncFunctionDef = s_FunctionDef

    def s_ClassDef(self, fr, node):
        return

    def s_Global(self, fr, node):
        return

    s_Nonlocal = s_Global
    s_Import = s_Global
    s_ImportFrom = s_Global
    s_Pass = s_Global

    def s_Delete(self, fr, node):
        for t in node.targets:
            if isinstance(t, ast.Name):
                fr.env.pop(t.id, None)

    # ------------------------------------------------------------ guards

    def is_plain_check(self, fr, call):
        """Whether a call is Python's own (len, str, a regex): it checks a
        value's shape, not who its sender is."""
        q = self.qualname(fr, call.func) or ""
        return q.startswith("re.") or (q.startswith("builtins.") and hasattr(builtins, q.split(".", 1)[1]))

    def checked_names(self, fr, test):
        """Names a condition checks through a call: given to a call in it, or
        to the call whose result it tests (user, ok = lookup(name))."""
        out = []
        for n in calls_and_names(test):
            if isinstance(n, ast.Call) and not self.is_plain_check(fr, n):
                out += [a.id for a in list(n.args) + [k.value for k in n.keywords] if isinstance(a, ast.Name)]
            elif isinstance(n, ast.Name) and n.id in fr.check_args:
                out += fr.check_args[n.id]
        return out

    def apply_guard(self, fr, test, truth):
        facts = dict(self.guard_facts(fr, test, truth))
        for n in self.checked_names(fr, test):
            # a session keeps what the program checked before storing it (a
            # user name whose password was verified): the trust boundary holds
            facts[n] = frozenset(facts.get(n, frozenset()) | {"trust-boundary"})
        for name, cats in facts.items():
            if "[" in name or "(" in name:
                fr.clean_exprs[name] = frozenset(fr.clean_exprs.get(name, frozenset()) | cats)
                continue
            under = (name + ".", name + "[")
            for key in list(fr.env):
                if key == name or key.startswith(under):
                    fr.env[key] = sanitize(fr.env[key], cats)
            if name not in fr.env and name in fr.params:
                fr.env[name] = sanitize(self.param_label(fr, name), cats)

    def guard_facts(self, fr, test, truth):
        """Names a condition proves safe when it evaluates to truth, and for
        which categories."""
        facts = {}

        def add(names, cats):
            for n in names:
                facts[n] = frozenset(facts.get(n, frozenset()) | frozenset(cats))

        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.guard_facts(fr, test.operand, not truth)
        if isinstance(test, ast.BoolOp):
            if (isinstance(test.op, ast.And) and truth) or (isinstance(test.op, ast.Or) and not truth):
                for v in test.values:
                    for n, c in self.guard_facts(fr, v, truth).items():
                        add([n], c)
            else:
                # one of the operands decided: what every one of them proves
                each = [self.guard_facts(fr, v, truth) for v in test.values]
                for n in set.intersection(*[set(f) for f in each]) if each else ():
                    add([n], frozenset.intersection(*[f[n] for f in each]))
            return facts
        if isinstance(test, ast.Name):
            if not truth and test.id in fr.env:
                # a falsy value is empty: nothing reaches a sink through it
                add([test.id], R.ALL)
            call = fr.guard_calls.get(test.id)
            if call is not None:
                for n, c in self.guard_facts(fr, call, truth).items():
                    add([n], c)
            return facts
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, left, right = test.ops[0], test.left, test.comparators[0]
            lname = name_of(left)
            positive = isinstance(op, (ast.In, ast.Eq, ast.Is))
            negative = isinstance(op, (ast.NotIn, ast.NotEq, ast.IsNot))
            # x in ALLOWED / x == "const"
            if lname and (positive and truth or negative and not truth):
                if isinstance(op, (ast.In, ast.NotIn)) and not self.expr(fr, right) and not isinstance(right, ast.Constant):
                    add([lname], R.ALL)
                if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
                    add([lname], R.ALL)
            # '..' in x: x is a safe path when false
            if isinstance(left, ast.Constant) and isinstance(left.value, str) and ".." in left.value:
                rname = name_of(right)
                if rname and (isinstance(op, ast.In) and not truth or isinstance(op, ast.NotIn) and truth):
                    add([rname], {"path-traversal"})
            # urlparse(x).netloc / .hostname compared with an allowed host
            host = self.url_host_of(fr, left)
            if host and (positive and truth or negative and not truth):
                add([host], {"open-redirect", "ssrf"})
            return facts
        if isinstance(test, ast.Call):
            q = self.qualname(fr, test.func)
            fname = (test.func.attr if isinstance(test.func, ast.Attribute) else
                     test.func.id if isinstance(test.func, ast.Name) else "")
            argnames = [name_of(a) for a in list(test.args) + [k.value for k in test.keywords if k.arg not in ("allowed_hosts", "require_https")]]
            argnames = [a for a in argnames if a]
            if not truth:
                return facts
            if q in ("re.fullmatch", "regex.fullmatch") or fname == "fullmatch":
                add(argnames[-1:] if q else argnames, R.ALL)
            elif q in ("re.match", "regex.match") and test.args and isinstance(test.args[0], ast.Constant) \
                    and str(test.args[0].value).endswith(("$", "\\Z", "\\z")):
                add(argnames[-1:], R.ALL)
            elif fname == "match" and isinstance(test.func, ast.Attribute) and not q:
                add(argnames, R.ALL)
            elif fname in ("isdigit", "isnumeric", "isdecimal", "isalnum", "isalpha", "isidentifier") and \
                    isinstance(test.func, ast.Attribute):
                n = name_of(test.func.value)
                if n:
                    add([n], R.ALL)
            elif q == "builtins.isinstance" and len(test.args) == 2 and text_of(test.args[1]) in ("int", "float", "bool", "(int, float)"):
                add(argnames[:1], R.ALL)
            elif fname == "startswith" and isinstance(test.func, ast.Attribute):
                n = name_of(test.func.value)
                if n in fr.realpath_of:
                    add([n] + fr.realpath_of[n], {"path-traversal"})
                inner = test.func.value
                if isinstance(inner, ast.Call) and self.qualname(fr, inner.func) in ("os.path.realpath", "os.path.abspath", "os.path.normpath"):
                    add([x.id for x in ast.walk(inner) if isinstance(x, ast.Name) and x.id not in ("os", "path")], {"path-traversal"})
                if test.args and isinstance(test.args[0], ast.Constant) and isinstance(n, str):
                    add([n], self.const_prefix_safety(str(test.args[0].value)) & {"open-redirect", "ssrf"})
            elif fname in ("is_relative_to",) and isinstance(test.func, ast.Attribute):
                n = name_of(test.func.value)
                if n:
                    add([n] + fr.realpath_of.get(n, []), {"path-traversal"})
            else:
                low = fname.lower()
                if any(w in low for w in ("safe", "allowed", "valid", "whitelist", "allowlist", "permitted", "trusted")):
                    add(argnames, R.ALL)
            return facts
        return facts

    def url_host_of(self, fr, node):
        """x when node is urlparse(x).netloc (or a name bound to urlparse(x))."""
        if isinstance(node, ast.Attribute) and node.attr in ("netloc", "hostname", "scheme", "host"):
            v = node.value
            if isinstance(v, ast.Name) and v.id in fr.urlparse_of:
                return fr.urlparse_of[v.id]
            if isinstance(v, ast.Call) and self.qualname(fr, v.func) in ("urllib.parse.urlparse", "urllib.parse.urlsplit", "urlparse.urlparse"):
                if v.args:
                    return name_of(v.args[0])
        return None


def name_of(node):
    if isinstance(node, (ast.Subscript, ast.Call)) and len(text_of(node)) < 120 and \
            any(isinstance(n, ast.Name) and n.id in ("request", "req") for n in ast.walk(node)) and \
            not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("lower", "strip", "upper", "casefold")):
        return text_of(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id + "." + node.attr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("lower", "strip", "upper", "casefold"):
        return name_of(node.func.value)
    return None


def join(a, b):
    out = {}
    for k in a.keys() | b.keys() if False else list(a.keys()) + [k for k in b.keys() if k not in a]:
        out[k] = union(a.get(k, EMPTY), b.get(k, EMPTY))
    return out


_EXITS = {"abort", "exit", "_exit", "fail", "redirect_"}


def terminates(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
        f = last.value.func
        n = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
        return n in _EXITS
    if isinstance(last, ast.If):
        return terminates(last.body) and terminates(last.orelse)
    return False
