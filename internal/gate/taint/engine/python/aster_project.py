"""The project side of Aster's Python taint engine: which files are read,
how modules and their functions are found, the passes that compute summaries,
the per-file budget, and the findings."""

import ast
import os
import sys
import time

import aster_rules as R
import aster_templates as T
from aster_flow import (EMPTY, LOCAL, PARAM, RAND, WEB, Analyzer, Budget, ClassInfo, Frame, FuncInfo,
                        Label, MAX_PASSES, Module, step_of, text_of, union)

SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", "env", ".tox", ".mypy_cache",
             "site-packages", "dist", "build", ".eggs"}
MAX_INDEX_FILES = 20000      # Python files indexed for import resolution
MAX_EXTRA_MODULES = 400      # imported modules read for their summaries only
TICK_EVERY = 1024
# The per-file budget is CPU time of the engine's thread, not wall time: on a
# busy machine a file gets the same budget as on an idle one, and the same
# files are left out. (The analyzer's sandbox timeout bounds the wall time.)
budget_clock = time.thread_time
MAX_NODES = 400000           # AST nodes of one file
RUN_BUDGET_PASSES = 0.6      # share of the run's budget the summary passes may use


class Skip(Exception):
    """A file left out, with the reason."""


FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def scan(tree):
    """One walk of a module's tree, in ast.walk's breadth-first order, for
    what collection needs: the import statements, and for each function
    collect_nested starts from (a module-level function, a method of a
    module-level class) the functions defined anywhere under it. A
    breadth-first walk from the root keeps, within each subtree, the order a
    walk from that subtree's root has. Past MAX_NODES nodes the file is
    left out."""
    owners = set()
    for node in tree.body:
        if isinstance(node, FUNCTION_DEFS):
            owners.add(id(node))
        elif isinstance(node, ast.ClassDef):
            owners.update(id(item) for item in node.body if isinstance(item, FUNCTION_DEFS))
    imports = []
    nested = {}
    todo = [(tree, None)]
    AST, Import, ImportFrom = ast.AST, ast.Import, ast.ImportFrom
    i = 0
    while i < len(todo):
        node, owner = todo[i]
        i += 1
        if i > MAX_NODES:
            raise Skip("over the per-file budget (%d syntax nodes)" % MAX_NODES)
        if isinstance(node, (Import, ImportFrom)):
            imports.append(node)
        elif isinstance(node, FUNCTION_DEFS):
            if owner is not None:
                nested[owner].append(node)
            elif id(node) in owners:
                owner = id(node)
                nested[owner] = []
        for name in node._fields:
            v = getattr(node, name, None)
            if isinstance(v, AST):
                todo.append((v, owner))
            elif isinstance(v, list):
                for x in v:
                    if isinstance(x, AST):
                        todo.append((x, owner))
    return imports, nested


class Project:
    def __init__(self, root, targets, max_file_bytes, budget_ms, max_results, run_budget_ms=0, run_deadline_ms=0):
        self.root = root
        self.targets = targets                  # repository-relative paths to report on
        self.target_set = set(targets)
        self.max_file_bytes = max_file_bytes
        self.budget = budget_ms / 1000.0
        self.max_results = max_results
        self.modules = {}                       # path -> Module
        self.by_name = {}                       # dotted module name -> Module
        self.index = None                       # dotted name -> path, for files not loaded yet
        self.spent = {}                         # path -> seconds of analysis
        self.skipped = {}                       # path -> reason
        self.findings = {}                      # (path, line, category) -> finding dict
        self.nested = {}                        # id(FunctionDef) -> FuncInfo
        self.siblings = {}                      # (directory, dotted name) -> what sibling answers
        self.dir_files = {}                     # directory -> names of its regular files
        self.classes_by_key = {}
        self.analyzer = Analyzer(self)
        self.ticks = 0
        self.deadline = None
        self.current = None
        self.file_ms = {}
        self.templates = T.Templates(self)
        self.final = False
        self.called = set()                     # id(FuncInfo) of every function a call reached
        self.judged = {}                        # path -> {(line, category): basis} of sinks judged
        self.judged_n = 0
        # Summary passes re-analyse a module only when what its last analysis
        # read may have changed: the summaries it applied (FuncInfo, version
        # read), or its own functions or globals changed in that analysis.
        self.reads = None                       # id(FuncInfo) -> (FuncInfo, version) of the analysis running
        self.deps = {}                          # path -> reads of its last analysis
        self.changed = set()                    # paths whose last analysis changed a summary or globals
        self.skipped_passes = 0                 # module analyses a summary pass left out as unchanged
        # The run's budget: CPU seconds of the whole process (0: none). Past
        # RUN_BUDGET_PASSES of it no further summary pass starts; past all of
        # it the report pass reads no further module, and names each target
        # it did not reach.
        self.run_budget = run_budget_ms / 1000.0
        # and a wall-clock deadline from the start, below the sandbox's
        # timeout: on a busy machine the CPU budget alone would come after it
        self.run_deadline = run_deadline_ms / 1000.0
        self.t_start = time.monotonic()
        self.unreached = 0

    # ------------------------------------------------------------ files

    def rel(self, path):
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    def read_source(self, rel):
        full = os.path.join(self.root, rel)
        try:
            st = os.lstat(full)
        except OSError as e:
            raise Skip("cannot be read: " + e.strerror) from None
        if not os.path.isfile(full) or os.path.islink(full):
            raise Skip("not a regular file")
        if st.st_size > self.max_file_bytes:
            raise Skip("larger than %d bytes" % self.max_file_bytes)
        with open(full, "rb") as f:
            data = f.read(self.max_file_bytes + 1)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data.decode("latin-1")

    def load(self, rel, target):
        if rel in self.modules:
            return self.modules[rel]
        if rel in self.skipped:
            return None
        t0 = budget_clock()
        try:
            src = self.read_source(rel)
            try:
                tree = ast.parse(src, filename=rel)
            except SyntaxError as e:
                raise Skip("does not parse as Python 3 (line %s)" % (e.lineno,)) from None
            except (RecursionError, MemoryError):
                raise Skip("is nested too deeply to parse") from None
            imports, nested = scan(tree)
        except Skip as e:
            if target:
                self.skipped[rel] = str(e)
            else:
                self.skipped[rel] = None
            return None
        except RecursionError:
            self.skipped[rel] = "is nested too deeply to parse" if target else None
            return None
        mod = Module(rel, module_name(rel), tree, src)
        mod.import_nodes, mod.nested_defs = imports, nested
        self.modules[rel] = mod
        self.spent[rel] = budget_clock() - t0
        self.collect(mod)
        for name in module_names(rel):
            self.by_name.setdefault(name, mod)
        return mod

    def build_index(self):
        if self.index is not None:
            return
        self.index = {}
        count = 0
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            for fn in sorted(filenames):
                if not fn.endswith(".py"):
                    continue
                count += 1
                if count > MAX_INDEX_FILES:
                    return
                rel = self.rel(os.path.join(dirpath, fn))
                for name in module_names(rel):
                    self.index.setdefault(name, rel)

    def module_for(self, dotted):
        """The module named dotted (loaded on demand), or None."""
        if dotted in self.by_name:
            return self.by_name[dotted]
        self.build_index()
        rel = self.index.get(dotted)
        if rel is None:
            return None
        extra = len(self.modules) - len(self.target_set)
        if extra > MAX_EXTRA_MODULES and rel not in self.target_set:
            return None
        return self.load(rel, rel in self.target_set)

    # ------------------------------------------------------------ collection

    def collect(self, mod):
        pkg = mod.modname.rsplit(".", 1)[0] if "." in mod.modname else ""
        if mod.path.endswith("__init__.py"):
            pkg = mod.modname
        for node in mod.import_nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    mod.libs.add(a.name.split(".")[0])
                    if a.asname:
                        mod.imports[a.asname] = self.sibling(mod, a.name)
                    else:
                        top = a.name.split(".")[0]
                        mod.imports[top] = self.sibling(mod, top)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if not node.level and base:
                    base = self.sibling(mod, base)
                if node.level:
                    parts = pkg.split(".") if pkg else []
                    if node.level > 1:
                        parts = parts[:len(parts) - (node.level - 1)]
                    base = ".".join([p for p in parts if p] + ([node.module] if node.module else []))
                if base:
                    mod.libs.add(base.split(".")[0])
                for a in node.names:
                    if a.name == "*":
                        mod.star.append(base)
                        continue
                    mod.imports[a.asname or a.name] = (base + "." + a.name) if base else a.name
        for node in mod.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fi = FuncInfo(mod, node, node.name)
                mod.funcs[node.name] = fi
                mod.all_funcs.append(fi)
                self.collect_nested(mod, fi)
            elif isinstance(node, ast.ClassDef):
                self.collect_class(mod, node, node.name)
            for t in assigned_names(node):
                mod.defined.add(t)
        for fi in mod.all_funcs:
            self.route_params(mod, fi)

    def sibling(self, mod, dotted):
        """A module imported by a script run from its own directory ("import
        libuser" beside libuser.py) is that file: its full dotted name."""
        d = os.path.dirname(mod.path)
        if not d:
            return dotted
        key = (d, dotted)
        if key not in self.siblings:
            self.siblings[key] = self.find_sibling(d, dotted)
        return self.siblings[key]

    def find_sibling(self, d, dotted):
        rel = d + "/" + dotted.replace(".", "/")
        for cand in (rel + ".py", rel + "/__init__.py"):
            if self.regular_file(cand):
                return module_name(cand)
        return dotted

    def regular_file(self, rel):
        """Whether rel is a regular file, not a symbolic link (as isfile and
        not islink), from its directory's listing, read once."""
        parent, name = os.path.split(os.path.join(self.root, rel))
        names = self.dir_files.get(parent)
        if names is None:
            try:
                with os.scandir(parent) as it:
                    names = {e.name for e in it if e.is_file(follow_symlinks=False)}
            except OSError:
                names = set()
            self.dir_files[parent] = names
        return name in names

    def collect_class(self, mod, node, qual):
        ci = ClassInfo(mod, node)
        mod.classes.setdefault(node.name, ci)
        self.classes_by_key[mod.path + ":" + node.name] = ci
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fi = FuncInfo(mod, item, qual + "." + item.name, ci)
                ci.methods[item.name] = fi
                mod.all_funcs.append(fi)
                self.collect_nested(mod, fi)

    def collect_nested(self, mod, fi):
        for node in mod.nested_defs.get(id(fi.node), ()):
            if id(node) not in self.nested:
                inner = FuncInfo(mod, node, fi.qual + ".<locals>." + node.name)
                self.nested[id(node)] = inner
                mod.all_funcs.append(inner)

    def class_by_key(self, key):
        return self.classes_by_key.get(key)

    def lookup(self, dotted):
        """A FuncInfo, or ("class", ClassInfo), for a qualified name."""
        if not dotted or dotted.startswith("builtins."):
            return None
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            head = ".".join(parts[:cut])
            if head.split(".")[0] in ("os", "sys", "re", "json", "flask", "django", "subprocess", "requests"):
                return None
            mod = self.module_for(head)
            if mod is None:
                continue
            rest = parts[cut:]
            if len(rest) == 1:
                if rest[0] in mod.funcs:
                    return mod.funcs[rest[0]]
                if rest[0] in mod.classes:
                    ci = mod.classes[rest[0]]
                    return ci.methods.get("__init__") or ("class", ci)
                if rest[0] in mod.imports and mod.imports[rest[0]] != dotted:
                    return self.lookup(mod.imports[rest[0]])
            elif len(rest) == 2 and rest[0] in mod.classes:
                return self.analyzer.method_of(mod.classes[rest[0]], rest[1])
            return None
        return None

    # ------------------------------------------------------------ routes

    def route_params(self, mod, fi):
        """Marks a web handler's parameters that carry client data."""
        node = fi.node
        tainted = {}
        web = False
        for d in node.decorator_list:
            call = d if isinstance(d, ast.Call) else None
            f = call.func if call is not None else d
            name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
            if name == "template" and call is not None and call.args and isinstance(call.args[0], ast.Constant):
                fi.template = str(call.args[0].value)
            if name not in R.ROUTE_DECORATORS or not isinstance(f, ast.Attribute):
                continue
            web = True
            route = ""
            if call is not None and call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                route = call.args[0].value
            fast = "fastapi" in mod.libs or "starlette" in mod.libs
            clean = set()
            for seg in route.split("<")[1:]:
                seg = seg.split(">")[0]
                if ":" in seg:
                    conv, pname = seg.split(":", 1)
                    if conv in ("int", "float", "uuid"):
                        clean.add(pname)
            for a in all_args(node):
                if a.arg in ("self", "cls") or a.arg in clean:
                    continue
                if fast:
                    ann = text_of(a.annotation) if a.annotation is not None else ""
                    if ann.split("[")[0].split(".")[-1] in R.NON_DATA_ANNOTATIONS or ann in R.CLEAN_ANNOTATIONS:
                        continue
                    if "Depends" in default_text(node, a.arg):
                        continue
                    tainted[a.arg] = True
                elif "{" + a.arg in route or "<" in route and (":" + a.arg + ">" in route or "<" + a.arg + ">" in route):
                    tainted[a.arg] = True
            if not fast and any(l in mod.libs for l in ("flask", "quart", "bottle")):
                fi.route = "flask"
        params = [a.arg for a in all_args(node)]
        # GraphQL resolvers (graphene, Ariadne, Strawberry's info argument):
        # resolve_x(parent, info, **args) and Mutation.mutate(root, info,
        # **args) get the query's arguments after info
        if "info" in params[:2] and (node.name.startswith("resolve_") or node.name in ("mutate", "mutate_and_get_payload")):
            for p in params[params.index("info") + 1:]:
                tainted[p] = True
        if not web and params and ("django" in mod.libs or "rest_framework" in mod.libs):
            if fi.cls is None and params[0] == "request":
                for p in params[1:]:
                    tainted[p] = True
            elif fi.cls is not None and node.name in R.CBV_METHODS and len(params) > 1 and params[1] == "request":
                for p in params[2:]:
                    tainted[p] = True
        for a in all_args(node):
            if a.arg in tainted and a.annotation is not None and text_of(a.annotation) in R.CLEAN_ANNOTATIONS:
                del tainted[a.arg]
        fi.tainted_params = tainted

    # ------------------------------------------------------------ budget

    def tick(self):
        self.ticks += 1
        if self.ticks % TICK_EVERY == 0 and self.deadline is not None and budget_clock() > self.deadline:
            raise Budget()

    # ------------------------------------------------------------ analysis

    def analyze_function(self, fi, outer=None):
        mod = fi.mod
        an = self.analyzer
        fi.summary = type(fi.summary)()
        fr = Frame(fi, mod, env=outer.env if outer else None, kinds=outer.kinds if outer else None)
        fr.pending_fields = None
        if outer is not None:
            fr.local_funcs = dict(outer.local_funcs)
            fr.params = fr.params | (outer.params - set(outer.env))
            for p in fi.params + fi.kwonly:
                fr.env.pop(p, None)
            fr.params = set(fi.params + fi.kwonly + [fi.vararg, fi.kwarg]) - {None}
        for p, _ in getattr(fi, "tainted_params", {}).items():
            fr.env[p] = an.source(fr, fi.node, WEB, p)
        an.body(fr, fi.node.body)
        s = fi.summary
        s.ret = {k: v for k, v in fr.returns.items()}
        for key, t in fr.env.items():
            if "." in key:
                p, attr = key.split(".", 1)
                if p in fr.params and "." not in attr and "[" not in attr:
                    own = (PARAM, (p, attr))
                    v = {k: lab for k, lab in t.items() if (lab.kind, lab.origin) != own}
                    if v:
                        s.fields[(p, attr)] = v
            elif key in fr.params:
                own = (PARAM, (key, None))
                v = {k: lab for k, lab in t.items() if (lab.kind, lab.origin) != own and lab.kind != WEB or
                     (lab.kind == WEB and key not in getattr(fi, "tainted_params", {}))}
                v = {k: lab for k, lab in v.items() if (lab.kind, lab.origin) != own}
                if v and key not in getattr(fi, "tainted_params", {}):
                    s.mutates[key] = v
        if outer is not None or fi.qual != "<module>":
            self.settle(fi)
        return fr

    def settle(self, fi):
        """Bumps fi's version when its summary's content changed."""
        c = fi.summary.content()
        if c != fi.content:
            fi.content = c
            fi.version += 1
            self.changed.add(fi.mod.path)

    def note_read(self, fi):
        """The running analysis applies fi's summary."""
        r = self.reads
        if r is not None and id(fi) not in r:
            r[id(fi)] = (fi, fi.version)

    def unchanged(self, rel):
        """Whether analysing rel again would give what its last analysis
        gave: nothing it read has changed since, and that analysis changed
        none of its own summaries or globals."""
        deps = self.deps.get(rel)
        if deps is None or rel in self.changed:
            return False
        return all(fi.version == v for fi, v in deps.values())

    def analyze_module(self, mod):
        fi = FuncInfo(mod, ast.FunctionDef(name="<module>", args=ast.arguments(
            posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
            body=[], decorator_list=[], lineno=1), "<module>")
        fi.node.body = [s for s in mod.tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        fi.tainted_params = {}
        fr = self.analyze_function(fi)
        if self.final:
            for n in mod.import_nodes:
                names = [a.name for a in n.names] if isinstance(n, ast.Import) else \
                    [n.module] if isinstance(n, ast.ImportFrom) and n.module and not n.level else []
                for name in names:
                    cat = R.JUDGED_IMPORTS.get(name.split(".")[0])
                    if cat:
                        self.record_judged(mod.path, cat, (n.lineno,), "flow")
        old = mod.globals
        mod.globals = {k: v for k, v in fr.env.items() if "." not in k and v and any(l.kind != PARAM for l in v.values())}
        if globals_content(old) != globals_content(mod.globals):
            self.changed.add(mod.path)

    def run(self):
        t_start = time.monotonic()
        for rel in self.targets:
            if rel.endswith(".py"):
                self.load(rel, True)
        # imported project modules, for their summaries
        for rel in list(self.targets):
            mod = self.modules.get(rel)
            if mod is None:
                continue
            for q in sorted(set(mod.imports.values()) | set(mod.star)):
                parts = q.split(".")
                for cut in range(len(parts), 0, -1):
                    if self.module_for(".".join(parts[:cut])) is not None:
                        break
        if self.templates.needed():
            self.build_index()
            for rel in sorted(set(self.index.values()))[:MAX_EXTRA_MODULES]:
                self.load(rel, False)
        prev = None
        passes = 0
        while True:
            passes += 1
            self.final = False
            sig = self.one_pass(report=False)
            if sig == prev or passes >= MAX_PASSES or self.over_run_budget(RUN_BUDGET_PASSES):
                break
            prev = sig
        self.findings = {}
        self.final = True
        self.one_pass(report=True)
        self.report_uncalled()
        self.wall = time.monotonic() - t_start
        self.passes = passes

    def one_pass(self, report):
        sigs = []
        for rel in sorted(self.modules):
            mod = self.modules[rel]
            if rel in self.skipped:
                continue
            if self.over_run_budget(1.0 if report else RUN_BUDGET_PASSES):
                if not report:
                    break  # to the report pass, with the summaries so far
                self.skipped[rel] = "not reached: " + self.budget_text() if rel in self.target_set else None
                self.unreached += rel in self.target_set
                continue
            if not report and self.unchanged(rel):
                self.skipped_passes += 1
                for fi in mod.all_funcs:
                    sigs.append((rel, fi.qual, fi.summary.signature()))
                continue
            self.changed.discard(rel)
            self.reads = {}
            self.current = rel
            used = self.spent.get(rel, 0.0)
            t0 = budget_clock()
            self.deadline = t0 + max(self.budget - used, 0.0)
            try:
                self.analyze_module(mod)
                for fi in mod.all_funcs:
                    if fi.node.name in ("<module>",) or fi.qual.count("<locals>"):
                        continue
                    self.analyze_function(fi)
            except Budget:
                self.drop(rel, "over the per-file budget (%d ms)" % int(self.budget * 1000))
            except RecursionError:
                self.drop(rel, "is nested too deeply to analyse")
            finally:
                self.spent[rel] = used + (budget_clock() - t0)
                self.deadline = None
                self.deps[rel] = self.reads
                self.reads = None
            for fi in mod.all_funcs:
                sigs.append((rel, fi.qual, fi.summary.signature()))
        return tuple(sigs)

    def over_run_budget(self, share):
        return (self.run_budget > 0 and time.process_time() > self.run_budget * share) or \
            (self.run_deadline > 0 and time.monotonic() - self.t_start > self.run_deadline * share)

    def budget_text(self):
        if self.run_deadline > 0 and time.monotonic() - self.t_start > self.run_deadline:
            return "the run's time (%g s) was spent" % self.run_deadline
        return "the run's CPU budget (%g s) was spent" % self.run_budget

    def drop(self, rel, why):
        self.skipped[rel] = why if rel in self.target_set else None
        for k in [k for k in self.findings if k[0] == rel]:
            del self.findings[k]
        self.judged.pop(rel, None)
        mod = self.modules.get(rel)
        if mod is not None:
            for fi in mod.all_funcs:
                fi.summary = type(fi.summary)()
                self.settle(fi)

    # Categories where a function that builds its parameter into the sink's
    # text is a finding by itself when nothing in the analysed code calls it
    # (an API whose callers are elsewhere): SQL text, a shell command, code;
    # and one that unpickles (or yaml.loads) its parameter as it is.
    UNCALLED_CATEGORIES = ("sql-injection", "command-injection", "code-injection", "insecure-deserialization")

    def report_uncalled(self):
        for rel in sorted(self.modules):
            if rel not in self.target_set or rel in self.skipped:
                continue
            for fi in self.modules[rel].all_funcs:
                if id(fi) in self.called or fi.qual.count("<locals>") or getattr(fi, "tainted_params", None):
                    continue
                if fi.node.name.startswith("test") or fi.node.name in ("__init__",):
                    continue
                for lab, category, loc, sink_text, built in fi.summary.sinks:
                    pname, attr = lab.origin
                    if category not in self.UNCALLED_CATEGORIES or not built or attr is not None or pname in ("self", "cls"):
                        continue
                    path, line = loc[0], loc[1]
                    key = (path, line, category)
                    if key in self.findings or path != rel:
                        continue
                    first = lab.trace[0]
                    trace = ((first[0], first[1], "%s (parameter of %s)" % (pname, fi.qual)),) + lab.trace[1:]
                    self.report_at(category, loc, trace, PARAM, sink_text)

    # ------------------------------------------------------------ findings

    def wanted(self, path, trace):
        if path in self.target_set:
            return True
        return bool(trace) and trace[0][0] in self.target_set

    MAX_JUDGED = 100000

    def record_judged(self, path, category, lines, basis):
        """Sinks the report pass judged in a target file (see Analyzer.judge);
        "call" (safe by the call's own arguments) wins over "flow"."""
        if not self.final or path not in self.target_set:
            return
        m = self.judged.setdefault(path, {})
        for ln in lines:
            if ln <= 0:
                continue
            k = (ln, category)
            if k not in m:
                if self.judged_n >= self.MAX_JUDGED:
                    return
                self.judged_n += 1
                m[k] = basis
            elif basis == "call":
                m[k] = basis

    def report(self, category, path, node, trace, kind, sink_text):
        loc = (path, node.lineno, getattr(node, "col_offset", 0), getattr(node, "end_lineno", node.lineno) or node.lineno,
               getattr(node, "end_col_offset", 0) or 0)
        self.report_at(category, loc, trace, kind, sink_text)

    def report_at(self, category, loc, trace, kind, sink_text):
        if not self.final:
            return
        path, line, col, end_line, end_col = loc
        if not self.wanted(path, trace):
            return
        if kind == LOCAL and category not in R.LOCAL_CATEGORIES:
            return  # a file, URL or page the process's own user names is theirs
        if trace and (trace[-1][0] != path or trace[-1][1] != line):
            trace = trace + (step_of(path, line, sink_text),)
        key = (path, line, category)
        if key in self.findings:
            return
        if len(self.findings) >= self.max_results:
            self.dropped = getattr(self, "dropped", 0) + 1
            return
        level = R.CATEGORIES[category][2]
        if kind in (LOCAL, RAND, PARAM):
            level = "warning"
        title = R.CATEGORIES[category][1]
        src = trace[0][2] if trace else "input"
        if kind == RAND:
            msg = "a weak random value (%s) is used for %s (%s)" % (src, sink_text, title)
        elif kind == PARAM:
            msg = "%s reaches %s (%s); no caller in the analysed code checks it" % (src, sink_text, title)
        else:
            msg = "%s reaches %s (%s)" % (src, sink_text, title)
        self.findings[key] = {"category": category, "path": path, "line": line, "col": col + 1,
                              "end_line": end_line, "end_col": end_col + 1, "message": msg,
                              "trace": trace, "level": level}

    def report_pattern(self, category, path, node, message, level):
        if not self.final or path not in self.target_set:
            return
        key = (path, node.lineno, category)
        if key in self.findings:
            return
        if len(self.findings) >= self.max_results:
            self.dropped = getattr(self, "dropped", 0) + 1
            return
        self.findings[key] = {"category": category, "path": path, "line": node.lineno,
                              "col": node.col_offset + 1, "end_line": node.end_lineno or node.lineno,
                              "end_col": (node.end_col_offset or 0) + 1, "message": message + " (" + R.CATEGORIES[category][1] + ")",
                              "trace": (), "level": level}

    def sorted_findings(self):
        return [self.findings[k] for k in sorted(self.findings)]


def globals_content(g):
    return tuple((k, tuple((lk, lab.trace) for lk, lab in t.items())) for k, t in g.items())


def all_args(node):
    a = node.args
    out = list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs)
    if a.vararg:
        out.append(a.vararg)
    if a.kwarg:
        out.append(a.kwarg)
    return out


def default_text(node, name):
    a = node.args
    pos = list(a.posonlyargs) + list(a.args)
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for p, d in zip(pos, defaults):
        if p.arg == name and d is not None:
            return text_of(d)
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        if p.arg == name and d is not None:
            return text_of(d)
    for p in pos + list(a.kwonlyargs):
        if p.arg == name and p.annotation is not None:
            return text_of(p.annotation)
    return ""


def assigned_names(node):
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    yield n.id
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name


def module_name(rel):
    p = rel[:-3] if rel.endswith(".py") else rel
    if p.endswith("/__init__"):
        p = p[: -len("/__init__")]
    return p.replace("/", ".")


def module_names(rel):
    """Every dotted name rel may be imported as: its full path, and each
    suffix (for src/ layouts and scripts run from a subdirectory)."""
    full = module_name(rel).split(".")
    return [".".join(full[i:]) for i in range(len(full))]
