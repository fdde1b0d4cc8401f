"""Aster's Python taint engine: reads the Python files (and Jinja2/Django
templates) of a snapshot and writes SARIF 2.1.0 on stdout.

    python3 -I main.py [--root /work] [--files-from FILE|-] [--max-file-bytes N]
                       [--file-budget-ms N] [--run-budget-ms N] [--run-deadline-ms N]
                       [--max-results N]

Standard library only. It never writes under --root, exits 0 with SARIF
whenever it ran (findings or not), and names every file it left out (too
large, not Python 3, over its per-file budget, not reached within the run's
CPU budget) in the run's
toolExecutionNotifications."""

import argparse
import json
import os
import resource
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import aster_rules as R  # noqa: E402
from aster_project import Project  # noqa: E402

MAX_TRACE_OUT = 16
MAX_FILES = 100000


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="aster-taint-python")
    ap.add_argument("--root", default="/work")
    ap.add_argument("--files-from", default=None, help="file of paths (NUL- or newline-separated), - for stdin")
    ap.add_argument("--max-file-bytes", type=int, default=1 << 20)
    ap.add_argument("--file-budget-ms", type=int, default=5000)
    ap.add_argument("--max-results", type=int, default=2000)
    ap.add_argument("--run-budget-ms", type=int, default=0,
                    help="CPU time of the whole run; the files it leaves out are named (0: none)")
    ap.add_argument("--run-deadline-ms", type=int, default=0,
                    help="wall time of the whole run, the same way (0: none)")
    ap.add_argument("files", nargs="*")
    return ap.parse_args(argv)


def read_list(src):
    data = sys.stdin.buffer.read() if src == "-" else open(src, "rb").read()
    sep = b"\0" if b"\0" in data else b"\n"
    return [p.decode("utf-8", "surrogateescape") for p in data.split(sep) if p.strip()]


def clean(root, p):
    p = p.replace("\\", "/")
    if p.startswith("./"):
        p = p[2:]
    if os.path.isabs(p):
        p = os.path.relpath(p, root).replace(os.sep, "/")
    p = os.path.normpath(p).replace(os.sep, "/")
    if p.startswith("../") or p == "..":
        return None
    return p


def targets_of(args):
    files = list(args.files)
    if args.files_from:
        files += read_list(args.files_from)
    if not files:
        for dirpath, dirnames, filenames in os.walk(args.root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "__pycache__"))
            for fn in sorted(filenames):
                files.append(os.path.relpath(os.path.join(dirpath, fn), args.root))
    out = []
    seen = set()
    for f in files[:MAX_FILES]:
        c = clean(args.root, f)
        if c and c not in seen and (c.endswith(".py") or c.endswith(R.TEMPLATE_EXTS)):
            seen.add(c)
            out.append(c)
    return sorted(out)


def sarif(project, targets, ms):
    cats = sorted(R.CATEGORIES)
    rules = []
    index = {}
    for c in cats:
        cwes, title, level = R.CATEGORIES[c]
        index[c] = len(rules)
        rules.append({
            "id": "aster.taint." + c,
            "name": "".join(w.capitalize() for w in c.split("-")),
            "shortDescription": {"text": title[0].upper() + title[1:] + "."},
            "help": {"text": R.HELP[c]},
            "defaultConfiguration": {"level": level},
            "properties": {"tags": ["security"] + ["external/cwe/cwe-%d" % n for n in cwes]},
        })
    results = []
    for f in project.sorted_findings():
        res = {
            "ruleId": "aster.taint." + f["category"],
            "ruleIndex": index[f["category"]],
            "level": f["level"],
            "message": {"text": f["message"]},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": f["path"]},
                "region": {"startLine": f["line"], "startColumn": f["col"],
                           "endLine": f["end_line"], "endColumn": f["end_col"]}}}],
        }
        trace = list(f["trace"])
        if trace:
            if len(trace) > MAX_TRACE_OUT:
                trace = trace[:MAX_TRACE_OUT // 2] + trace[-(MAX_TRACE_OUT // 2):]
            steps = []
            for path, line, text in trace:
                steps.append({"location": {
                    "physicalLocation": {"artifactLocation": {"uri": path}, "region": {"startLine": max(int(line), 1)}},
                    "message": {"text": text}}})
            res["codeFlows"] = [{"threadFlows": [{"locations": steps}]}]
        results.append(res)
    notes = []
    for path in sorted(p for p, why in project.skipped.items() if why and p in project.target_set):
        notes.append({"level": "warning",
                      "message": {"text": "taint: %s skipped: %s" % (path, project.skipped[path])},
                      "locations": [{"physicalLocation": {"artifactLocation": {"uri": path}}}]})
    if project.unreached:
        # first, so that a reader keeping only the first notices still has
        # the count; at the first file not reached
        first = min(p for p, why in project.skipped.items() if why and why.startswith("not reached"))
        notes.insert(0, {"level": "warning",
                         "message": {"text": "taint: %d files not reached, from %s on: %s" % (
                             project.unreached, first, project.skipped[first][len("not reached: "):])},
                         "locations": [{"physicalLocation": {"artifactLocation": {"uri": first}}}]})
    if getattr(project, "dropped", 0):
        notes.append({"level": "warning", "message": {"text": "taint: %d more findings not reported (--max-results)" % project.dropped}})
    slow = sorted(((int(v * 1000), p) for p, v in project.spent.items() if p in project.target_set), reverse=True)[:5]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    props = {"files": len([t for t in targets if t in project.modules or t.endswith(R.TEMPLATE_EXTS)]),
             "ms": ms, "max_rss_kb": rss, "passes": getattr(project, "passes", 0),
             "modules_unchanged": project.skipped_passes,
             "cpu_ms": int(time.process_time() * 1000),
             "slowest": [{"path": p, "ms": m} for m, p in slow],
             # the sinks the engine judged, flagged or not, by file: [line,
             # category, basis]; rules without data flow are superseded there only
             "judged": {p: [[ln, c, b] for (ln, c), b in sorted(m.items())]
                        for p, m in sorted(project.judged.items()) if p not in project.skipped}}
    return {
        "$schema": "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "aster-taint", "informationUri": "https://github.com/asterhq/aster",
                                "rules": rules}},
            "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notes,
                             "properties": props}],
            "results": results,
            "columnKind": "unicodeCodePoints",
        }],
    }


def main(argv):
    args = parse_args(argv)
    args.root = os.path.abspath(args.root)
    t0 = time.monotonic()
    targets = targets_of(args)
    project = Project(args.root, targets, args.max_file_bytes, args.file_budget_ms, args.max_results,
                      args.run_budget_ms, args.run_deadline_ms)
    failure = []

    def work():
        try:
            project.run()
        except BaseException as e:  # noqa: BLE001 - reported, never a crash without SARIF
            failure.append(e)

    # Deeply nested code recurses deeply: a big thread stack and a raised
    # limit, with RecursionError still caught per file.
    sys.setrecursionlimit(12000)
    threading.stack_size(512 << 20)
    th = threading.Thread(target=work, name="taint")
    th.start()
    th.join()
    if failure:
        raise failure[0]
    ms = int((time.monotonic() - t0) * 1000)
    out = sarif(project, targets, ms)
    sys.stdout.write(json.dumps(out, ensure_ascii=False, separators=(",", ":")))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
