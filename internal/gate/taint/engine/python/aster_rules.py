"""The rule tables of Aster's Python taint engine: categories, sources,
sanitizers and sinks. Everything here is data; aster_flow.py interprets it.

Qualified names are what an expression resolves to through the module's
imports ("flask.redirect", "subprocess.run", "builtins.open"); a method of a
receiver whose type is known from its constructor is "<type>.<method>"
("requests.Session.get")."""

import re

# category -> (CWE numbers, title, level when the source is a web request)
CATEGORIES = {
    "sql-injection": ((89,), "SQL injection", "error"),
    "nosql-injection": ((943,), "NoSQL injection", "error"),
    "command-injection": ((78,), "OS command injection", "error"),
    "code-injection": ((94, 95), "code injection", "error"),
    "path-traversal": ((22,), "path traversal", "error"),
    "open-redirect": ((601,), "open redirect", "error"),
    "xss": ((79,), "cross-site scripting", "error"),
    "template-injection": ((1336,), "server-side template injection", "error"),
    "ldap-injection": ((90,), "LDAP injection", "error"),
    "xpath-injection": ((643,), "XPath injection", "error"),
    "xxe": ((611,), "XML external entities", "error"),
    "insecure-deserialization": ((502,), "deserialization of untrusted data", "error"),
    "ssrf": ((918,), "server-side request forgery", "error"),
    "trust-boundary": ((501,), "trust boundary violation", "error"),
    "insecure-cookie": ((614, 1004), "insecure cookie", "warning"),
    "jwt-unverified": ((347,), "JWT decoded without verifying its signature", "error"),
    "weak-randomness": ((330,), "weak random numbers used for a secret", "warning"),
}

ALL = frozenset(CATEGORIES)

HELP = {
    "sql-injection": "Pass request data as query parameters (cursor.execute(sql, params)); never format it into the SQL text.",
    "nosql-injection": "Never let request data supply query operators or server-side JavaScript ($where).",
    "command-injection": "Run a fixed program with an argument list (no shell); quote with shlex.quote if a shell is unavoidable.",
    "code-injection": "Never evaluate request data as code; parse it (json, ast.literal_eval, int()).",
    "path-traversal": "Resolve the path under a fixed base and check it stays there, or take only a basename / secure_filename.",
    "open-redirect": "Redirect only to internal paths (url_for) or check the host against an allow list.",
    "xss": "Let the template engine escape output; escape request data (markupsafe.escape, html.escape) before building HTML.",
    "template-injection": "Render fixed templates and pass request data as context values, never as template source.",
    "ldap-injection": "Escape request data with escape_filter_chars / escape_rdn before building LDAP filters or DNs.",
    "xpath-injection": "Pass request data as XPath variables (tree.xpath(expr, name=value)), not in the expression text.",
    "xxe": "Parse XML with external entities off (defusedxml, or lxml XMLParser(resolve_entities=False, no_network=True)).",
    "insecure-deserialization": "Never unpickle or yaml.load untrusted data; use json or yaml.safe_load.",
    "ssrf": "Fetch only URLs whose host is fixed or checked against an allow list.",
    "trust-boundary": "Validate request data before storing it in the session, which the rest of the application trusts.",
    "insecure-cookie": "Set secure=True and httponly=True on cookies that carry a session or a secret.",
    "jwt-unverified": "Verify JWT signatures: pass the key and an explicit algorithms list, never verify=False.",
    "weak-randomness": "Use the secrets module (secrets.token_urlsafe, secrets.choice) for tokens, passwords and keys.",
}

# ---------------------------------------------------------------- sources

# Names a web request object goes by, and its attributes and methods that
# carry data the client chose (Flask, Django, aiohttp, Starlette, DRF,
# Bottle, Tornado).
REQUEST_NAMES = {"request", "req", "flask.request", "quart.request", "bottle.request", "self.request"}
REQUEST_ATTRS = {
    "args", "form", "values", "json", "cookies", "headers", "files", "data", "view_args",
    "GET", "POST", "COOKIES", "META", "body", "FILES", "query", "match_info", "rel_url",
    "query_params", "query_string", "path", "full_path", "referrer", "raw_post_data",
    "content", "stream", "path_params", "forms", "params", "path_info", "environ",
}
REQUEST_METHODS = {
    "get_json", "get_data", "post", "json", "text", "read", "multipart", "form",
    "get_full_path", "body", "values",
}
# The request's own URL: the client's text, this server's host.
REQUEST_URL_ATTRS = {"url", "base_url", "url_root", "host_url", "uri", "full_url"}
# Tornado's RequestHandler methods.
HANDLER_METHODS = {"get_argument", "get_arguments", "get_query_argument", "get_query_arguments",
                   "get_body_argument", "get_body_arguments", "get_cookie"}

# Sources outside a web request: the process's command line, environment and
# terminal. Their findings are warnings (the user of a command-line tool is
# usually the one typing).
LOCAL_SOURCES = {"sys.argv", "os.environ", "sys.stdin"}
# Command-line parsers whose parse_args() is the command line, parsed.
ARG_PARSERS = {"argparse.ArgumentParser", "optparse.OptionParser"}
# os.exec*/os.spawn* and the position of the program they run.
OS_EXEC_CALLS = {**{"os." + f: 0 for f in ("execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe")},
                 **{"os." + f: 1 for f in ("spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe")}}
# Standard modules a bare name stands for when nothing in the module binds it.
STDLIB_MODULES = frozenset(getattr(__import__("sys"), "stdlib_module_names", ()))
# Environment variables whose whole purpose is to name a program the user
# wants run (POSIX's EDITOR, VISUAL, PAGER; BROWSER, SHELL; GIT_PAGER,
# MANPAGER and the like): running them is what they are for, not an
# injection into a command.
PROGRAM_ENV = re.compile(r"^(?:[A-Z0-9]+_)?(?:EDITOR|VISUAL|PAGER|BROWSER|SHELL|TERMINAL)$")
LOCAL_SOURCE_CALLS = {"os.getenv", "os.environ.get", "builtins.input", "builtins.raw_input",
                      "os.getenvb", "sys.stdin.read", "sys.stdin.readline"}

# Decorators that make a function a route handler whose parameters come from
# the URL or the query (Flask, FastAPI, Starlette routers, Bottle, Sanic).
ROUTE_DECORATORS = {"route", "get", "post", "put", "delete", "patch", "options", "head",
                    "api_route", "websocket", "view", "add_route"}
# Parameters of a route handler that are not client data.
NON_DATA_ANNOTATIONS = {"Request", "Response", "Session", "BackgroundTasks", "WebSocket",
                        "HTTPConnection", "AsyncSession", "SecurityScopes", "Depends"}
CLEAN_ANNOTATIONS = {"int", "float", "bool", "UUID", "uuid.UUID", "date", "datetime", "Decimal",
                     "conint", "confloat", "PositiveInt", "NonNegativeInt"}
# Django class-based view handlers: the parameters after request are URL parts.
CBV_METHODS = {"get", "post", "put", "patch", "delete", "head", "options", "dispatch"}

# ---------------------------------------------------------------- sanitizers

_INJ = frozenset({"sql-injection", "nosql-injection", "command-injection", "code-injection",
                  "ldap-injection", "xpath-injection", "xss", "template-injection"})

SANITIZERS = {
    "shlex.quote": {"command-injection"},
    "pipes.quote": {"command-injection"},
    "html.escape": {"xss"},
    "cgi.escape": {"xss"},
    "markupsafe.escape": {"xss"},
    "jinja2.escape": {"xss"},
    "flask.escape": {"xss"},
    "django.utils.html.escape": {"xss"},
    "django.utils.html.conditional_escape": {"xss"},
    "django.utils.html.format_html": {"xss"},
    "django.utils.html.strip_tags": {"xss"},
    "bleach.clean": {"xss"},
    "bleach.linkify": {"xss"},
    "xml.sax.saxutils.escape": {"xss", "xpath-injection"},
    "xml.sax.saxutils.quoteattr": {"xss", "xpath-injection"},
    "werkzeug.utils.escape": {"xss"},
    "escape": {"xss"},
    "os.path.basename": {"path-traversal"},
    "posixpath.basename": {"path-traversal"},
    "ntpath.basename": {"path-traversal"},
    "werkzeug.utils.secure_filename": {"path-traversal", "command-injection"},
    "werkzeug.secure_filename": {"path-traversal", "command-injection"},
    "secure_filename": {"path-traversal", "command-injection"},
    "django.utils.text.get_valid_filename": {"path-traversal", "command-injection"},
    "urllib.parse.quote": _INJ,
    "urllib.parse.quote_plus": _INJ,
    "urllib.parse.urlencode": _INJ | {"path-traversal"},
    "urllib.quote": _INJ,
    "ldap.filter.escape_filter_chars": {"ldap-injection"},
    "ldap3.utils.conv.escape_filter_chars": {"ldap-injection"},
    "ldap.dn.escape_dn_chars": {"ldap-injection"},
    "ldap3.utils.dn.escape_rdn": {"ldap-injection"},
    "escape_filter_chars": {"ldap-injection"},
    "escape_rdn": {"ldap-injection"},
    "flask.url_for": {"open-redirect", "ssrf"},
    "django.urls.reverse": {"open-redirect", "ssrf"},
    "django.core.urlresolvers.reverse": {"open-redirect", "ssrf"},
    "django.shortcuts.resolve_url": {"open-redirect", "ssrf"},
    "flask.jsonify": {"xss"},
    "base64.b64encode": _INJ,
    "base64.urlsafe_b64encode": _INJ,
    "binascii.hexlify": _INJ | {"path-traversal"},
    "re.escape": {"sql-injection", "command-injection", "ldap-injection", "xpath-injection", "code-injection"},
}
# Calls whose result carries none of their arguments' data: conversions to
# numbers, digests, lengths, identity tests.
CLEAN_CALLS = {
    "builtins.int", "builtins.float", "builtins.bool", "builtins.len", "builtins.abs", "builtins.round",
    "builtins.ord", "builtins.hash", "builtins.id", "builtins.isinstance", "builtins.type",
    "builtins.callable", "builtins.hasattr", "builtins.min", "builtins.max", "builtins.sum",
    "builtins.any", "builtins.all", "builtins.range", "builtins.print",
    "builtins.complex", "decimal.Decimal", "uuid.UUID", "uuid.uuid4", "uuid.uuid1",
    "os.path.exists", "os.path.isfile", "os.path.isdir", "os.path.getsize", "os.path.islink",
    "hmac.compare_digest", "secrets.compare_digest", "werkzeug.security.check_password_hash",
    "werkzeug.security.generate_password_hash", "bcrypt.hashpw", "bcrypt.checkpw",
    "datetime.datetime.strptime", "datetime.date.fromisoformat", "logging.info", "logging.debug",
    "logging.warning", "logging.error", "time.time", "flask.abort", "django.shortcuts.get_object_or_404",
    "math.floor", "math.ceil", "ipaddress.ip_address", "builtins.setattr", "builtins.delattr",
}
CLEAN_PREFIXES = ("hashlib.", "secrets.", "logging.", "log.", "logger.")
CLEAN_METHODS = {"isdigit", "isnumeric", "isdecimal", "isalnum", "isalpha", "startswith", "endswith",
                 "count", "index", "find", "rfind", "hexdigest", "digest", "exists", "is_file", "is_dir",
                 "__len__", "info", "debug", "warning", "error", "exception", "critical",
                 "check_password", "verify", "commit", "close", "rollback"}

# ---------------------------------------------------------------- sinks

# Sinks by qualified name: category, argument positions, keyword names.
SINK_CALLS = {
    # sql
    "sqlalchemy.text": ("sql-injection", (0,), ("text",)),
    "sqlalchemy.sql.text": ("sql-injection", (0,), ("text",)),
    "sqlalchemy.sql.expression.text": ("sql-injection", (0,), ("text",)),
    "django.db.models.expressions.RawSQL": ("sql-injection", (0,), ("sql",)),
    "django.db.models.RawSQL": ("sql-injection", (0,), ("sql",)),
    # command
    "os.system": ("command-injection", (0,), ("command",)),
    "os.popen": ("command-injection", (0,), ("cmd",)),
    "os.popen2": ("command-injection", (0,), ()),
    "os.popen3": ("command-injection", (0,), ()),
    "os.popen4": ("command-injection", (0,), ()),
    "commands.getoutput": ("command-injection", (0,), ()),
    "commands.getstatusoutput": ("command-injection", (0,), ()),
    "subprocess.getoutput": ("command-injection", (0,), ("cmd",)),
    "subprocess.getstatusoutput": ("command-injection", (0,), ("cmd",)),
    "asyncio.create_subprocess_shell": ("command-injection", (0,), ("cmd",)),
    "asyncio.subprocess.create_subprocess_shell": ("command-injection", (0,), ("cmd",)),
    "asyncio.create_subprocess_exec": ("command-injection", (0,), ("program",)),
    "pty.spawn": ("command-injection", (0,), ()),
    "platform.popen": ("command-injection", (0,), ()),
    "os.execl": ("command-injection", (0,), ()), "os.execle": ("command-injection", (0,), ()),
    "os.execlp": ("command-injection", (0,), ()), "os.execv": ("command-injection", (0,), ()),
    "os.execve": ("command-injection", (0,), ()), "os.execvp": ("command-injection", (0,), ()),
    "os.execvpe": ("command-injection", (0,), ()),
    "os.spawnl": ("command-injection", (1,), ()), "os.spawnle": ("command-injection", (1,), ()),
    "os.spawnlp": ("command-injection", (1,), ()), "os.spawnv": ("command-injection", (1,), ()),
    "os.spawnve": ("command-injection", (1,), ()), "os.spawnvp": ("command-injection", (1,), ()),
    "os.startfile": ("command-injection", (0,), ()),
    # code
    "builtins.eval": ("code-injection", (0,), ()),
    "builtins.exec": ("code-injection", (0,), ()),
    "builtins.execfile": ("code-injection", (0,), ()),
    "builtins.compile": ("code-injection", (0,), ("source",)),
    "builtins.__import__": ("code-injection", (0,), ("name",)),
    "importlib.import_module": ("code-injection", (0,), ("name",)),
    "code.InteractiveInterpreter.runsource": ("code-injection", (0,), ()),
    "PIL.ImageMath.eval": ("code-injection", (0,), ("expression",)),
    "PIL.ImageMath.unsafe_eval": ("code-injection", (0,), ("expression",)),
    # path
    "builtins.open": ("path-traversal", (0,), ("file",)),
    "builtins.file": ("path-traversal", (0,), ()),
    "io.open": ("path-traversal", (0,), ("file",)),
    "io.FileIO": ("path-traversal", (0,), ("file",)),
    "codecs.open": ("path-traversal", (0,), ("filename",)),
    "os.open": ("path-traversal", (0,), ("path",)),
    "os.remove": ("path-traversal", (0,), ("path",)),
    "os.unlink": ("path-traversal", (0,), ("path",)),
    "os.rmdir": ("path-traversal", (0,), ("path",)),
    "os.removedirs": ("path-traversal", (0,), ("name",)),
    "os.rename": ("path-traversal", (0, 1), ("src", "dst")),
    "os.renames": ("path-traversal", (0, 1), ()),
    "os.replace": ("path-traversal", (0, 1), ("src", "dst")),
    "os.mkdir": ("path-traversal", (0,), ("path",)),
    "os.makedirs": ("path-traversal", (0,), ("name",)),
    "os.listdir": ("path-traversal", (0,), ("path",)),
    "os.scandir": ("path-traversal", (0,), ("path",)),
    "os.chmod": ("path-traversal", (0,), ("path",)),
    "os.chown": ("path-traversal", (0,), ("path",)),
    "os.truncate": ("path-traversal", (0,), ("path",)),
    "os.symlink": ("path-traversal", (0, 1), ()),
    "os.link": ("path-traversal", (0, 1), ()),
    "shutil.copy": ("path-traversal", (0, 1), ("src", "dst")),
    "shutil.copy2": ("path-traversal", (0, 1), ("src", "dst")),
    "shutil.copyfile": ("path-traversal", (0, 1), ("src", "dst")),
    "shutil.copytree": ("path-traversal", (0, 1), ("src", "dst")),
    "shutil.move": ("path-traversal", (0, 1), ("src", "dst")),
    "shutil.rmtree": ("path-traversal", (0,), ("path",)),
    "shutil.make_archive": ("path-traversal", (0, 2), ()),
    "shutil.unpack_archive": ("path-traversal", (0, 1), ()),
    "tarfile.open": ("path-traversal", (0,), ("name",)),
    "zipfile.ZipFile": ("path-traversal", (0,), ("file",)),
    "fileinput.input": ("path-traversal", (0,), ("files",)),
    "linecache.getline": ("path-traversal", (0,), ()),
    "flask.send_file": ("path-traversal", (0,), ("path_or_file", "filename_or_fp")),
    "flask.helpers.send_file": ("path-traversal", (0,), ("path_or_file", "filename_or_fp")),
    "django.http.FileResponse": ("path-traversal", (0,), ()),
    "aiohttp.web.FileResponse": ("path-traversal", (0,), ("path",)),
    "starlette.responses.FileResponse": ("path-traversal", (0,), ("path",)),
    "fastapi.responses.FileResponse": ("path-traversal", (0,), ("path",)),
    "pandas.read_csv": ("path-traversal", (0,), ()),
    # redirect
    "flask.redirect": ("open-redirect", (0,), ("location",)),
    "werkzeug.utils.redirect": ("open-redirect", (0,), ("location",)),
    "quart.redirect": ("open-redirect", (0,), ("location",)),
    "bottle.redirect": ("open-redirect", (0,), ("url",)),
    "django.shortcuts.redirect": ("open-redirect", (0,), ("to",)),
    "django.http.HttpResponseRedirect": ("open-redirect", (0,), ("redirect_to",)),
    "django.http.HttpResponsePermanentRedirect": ("open-redirect", (0,), ("redirect_to",)),
    "django.http.response.HttpResponseRedirect": ("open-redirect", (0,), ("redirect_to",)),
    "aiohttp.web.HTTPFound": ("open-redirect", (0,), ("location",)),
    "aiohttp.web.HTTPSeeOther": ("open-redirect", (0,), ("location",)),
    "aiohttp.web.HTTPMovedPermanently": ("open-redirect", (0,), ("location",)),
    "aiohttp.web.HTTPTemporaryRedirect": ("open-redirect", (0,), ("location",)),
    "aiohttp.web.HTTPPermanentRedirect": ("open-redirect", (0,), ("location",)),
    "starlette.responses.RedirectResponse": ("open-redirect", (0,), ("url",)),
    "fastapi.responses.RedirectResponse": ("open-redirect", (0,), ("url",)),
    # xss
    "flask.make_response": ("xss", (0,), ()),
    "markupsafe.Markup": ("xss", (0,), ()),
    "flask.Markup": ("xss", (0,), ()),
    "jinja2.Markup": ("xss", (0,), ()),
    "django.utils.safestring.mark_safe": ("xss", (0,), ("s",)),
    "django.utils.safestring.SafeString": ("xss", (0,), ()),
    "django.utils.safestring.SafeText": ("xss", (0,), ()),
    "starlette.responses.HTMLResponse": ("xss", (0,), ("content",)),
    "fastapi.responses.HTMLResponse": ("xss", (0,), ("content",)),
    # template injection
    "flask.render_template_string": ("template-injection", (0,), ("source",)),
    "quart.render_template_string": ("template-injection", (0,), ("source",)),
    "jinja2.Template": ("template-injection", (0,), ("source",)),
    "django.template.Template": ("template-injection", (0,), ("template_string",)),
    "django.template.base.Template": ("template-injection", (0,), ("template_string",)),
    "mako.template.Template": ("template-injection", (0,), ("text",)),
    "tornado.template.Template": ("template-injection", (0,), ()),
    "jinja2.Environment.from_string": ("template-injection", (0,), ("source",)),
    # xpath
    "lxml.etree.XPath": ("xpath-injection", (0,), ("path",)),
    "lxml.etree.ETXPath": ("xpath-injection", (0,), ("path",)),
    "elementpath.select": ("xpath-injection", (1,), ("path",)),
    # deserialization
    "pickle.loads": ("insecure-deserialization", (0,), ("data",)),
    "pickle.load": ("insecure-deserialization", (0,), ("file",)),
    "pickle.Unpickler": ("insecure-deserialization", (0,), ("file",)),
    "_pickle.loads": ("insecure-deserialization", (0,), ()),
    "cPickle.loads": ("insecure-deserialization", (0,), ()),
    "cPickle.load": ("insecure-deserialization", (0,), ()),
    "dill.loads": ("insecure-deserialization", (0,), ()),
    "dill.load": ("insecure-deserialization", (0,), ()),
    "shelve.open": ("insecure-deserialization", (0,), ("filename",)),
    "marshal.loads": ("insecure-deserialization", (0,), ()),
    "marshal.load": ("insecure-deserialization", (0,), ()),
    "jsonpickle.decode": ("insecure-deserialization", (0,), ("string",)),
    "jsonpickle.loads": ("insecure-deserialization", (0,), ()),
    "yaml.unsafe_load": ("insecure-deserialization", (0,), ("stream",)),
    "yaml.unsafe_load_all": ("insecure-deserialization", (0,), ("stream",)),
    "pandas.read_pickle": ("insecure-deserialization", (0,), ()),
    "joblib.load": ("insecure-deserialization", (0,), ()),
    "torch.load": ("insecure-deserialization", (0,), ()),
    # ssrf
    "requests.get": ("ssrf", (0,), ("url",)),
    "requests.post": ("ssrf", (0,), ("url",)),
    "requests.put": ("ssrf", (0,), ("url",)),
    "requests.patch": ("ssrf", (0,), ("url",)),
    "requests.delete": ("ssrf", (0,), ("url",)),
    "requests.head": ("ssrf", (0,), ("url",)),
    "requests.options": ("ssrf", (0,), ("url",)),
    "requests.request": ("ssrf", (1,), ("url",)),
    "requests.Session.get": ("ssrf", (0,), ("url",)),
    "requests.Session.post": ("ssrf", (0,), ("url",)),
    "requests.Session.put": ("ssrf", (0,), ("url",)),
    "requests.Session.delete": ("ssrf", (0,), ("url",)),
    "requests.Session.request": ("ssrf", (1,), ("url",)),
    "urllib.request.urlopen": ("ssrf", (0,), ("url",)),
    "urllib.request.Request": ("ssrf", (0,), ("url",)),
    "urllib.request.urlretrieve": ("ssrf", (0,), ("url",)),
    "urllib.urlopen": ("ssrf", (0,), ()),
    "urllib2.urlopen": ("ssrf", (0,), ()),
    "urllib2.Request": ("ssrf", (0,), ()),
    "httpx.get": ("ssrf", (0,), ("url",)),
    "httpx.post": ("ssrf", (0,), ("url",)),
    "httpx.put": ("ssrf", (0,), ("url",)),
    "httpx.delete": ("ssrf", (0,), ("url",)),
    "httpx.request": ("ssrf", (1,), ("url",)),
    "httpx.stream": ("ssrf", (1,), ("url",)),
    "httpx.Client.get": ("ssrf", (0,), ("url",)),
    "httpx.Client.post": ("ssrf", (0,), ("url",)),
    "httpx.Client.request": ("ssrf", (1,), ("url",)),
    "httpx.AsyncClient.get": ("ssrf", (0,), ("url",)),
    "httpx.AsyncClient.post": ("ssrf", (0,), ("url",)),
    "httpx.AsyncClient.request": ("ssrf", (1,), ("url",)),
    "aiohttp.ClientSession.get": ("ssrf", (0,), ("url",)),
    "aiohttp.ClientSession.post": ("ssrf", (0,), ("url",)),
    "aiohttp.ClientSession.put": ("ssrf", (0,), ("url",)),
    "aiohttp.ClientSession.request": ("ssrf", (1,), ("url",)),
    "aiohttp.request": ("ssrf", (1,), ("url",)),
    "http.client.HTTPConnection": ("ssrf", (0,), ("host",)),
    "http.client.HTTPSConnection": ("ssrf", (0,), ("host",)),
    "httplib.HTTPConnection": ("ssrf", (0,), ()),
    "socket.create_connection": ("ssrf", (0,), ("address",)),
    "urllib3.PoolManager.request": ("ssrf", (1,), ("url",)),
}

# Constructors whose result's type is remembered, so that their methods are
# known sinks ("requests.Session.get").
TYPE_ALIASES = {
    "requests.session": "requests.Session",
    "requests.sessions.Session": "requests.Session",
    "aiohttp.client.ClientSession": "aiohttp.ClientSession",
    "jinja2.environment.Environment": "jinja2.Environment",
    "jinja2.sandbox.SandboxedEnvironment": "jinja2.sandbox.SandboxedEnvironment",
    "urllib3.poolmanager.PoolManager": "urllib3.PoolManager",
    "pathlib.PurePath": "pathlib.Path", "pathlib.PosixPath": "pathlib.Path",
}

# Sinks by method name on a receiver of unknown type. The gate, when set,
# names a top-level library the module must import for the method to be
# taken as that sink (".search" is LDAP only where ldap or ldap3 is used).
SINK_METHODS = {
    "execute": ("sql-injection", (0,), ("sql", "query", "operation", "statement"), None),
    "executemany": ("sql-injection", (0,), ("sql", "query", "operation"), None),
    "executescript": ("sql-injection", (0,), ("sql_script",), None),
    "exec_driver_sql": ("sql-injection", (0,), ("statement",), None),
    "execute_sql": ("sql-injection", (0,), ("sql",), None),
    "raw": ("sql-injection", (0,), ("raw_query",), ("django", "peewee")),
    "extra": ("sql-injection", (), ("where", "select", "tables", "order_by"), ("django",)),
    "read_sql": ("sql-injection", (0,), ("sql",), ("pandas",)),
    "read_sql_query": ("sql-injection", (0,), ("sql",), ("pandas",)),
    "exec_command": ("command-injection", (0,), ("command",), ("paramiko",)),
    "xpath": ("xpath-injection", (0,), ("_path",), None),
    "search_s": ("ldap-injection", (0, 2), ("base", "filterstr"), ("ldap", "ldap3")),
    "search_st": ("ldap-injection", (0, 2), ("base", "filterstr"), ("ldap", "ldap3")),
    "search_ext": ("ldap-injection", (0, 2), ("base", "filterstr"), ("ldap", "ldap3")),
    "search_ext_s": ("ldap-injection", (0, 2), ("base", "filterstr"), ("ldap", "ldap3")),
    "search": ("ldap-injection", (0, 1, 2), ("search_base", "search_filter", "base", "filterstr"), ("ldap", "ldap3")),
    "from_string": ("template-injection", (0,), ("source",), ("jinja2", "flask")),
}
# ElementTree's path methods are string methods too: a sink only in modules
# that parse XML, with a receiver that is not itself request data.
XPATH_FIND_METHODS = {"find", "findall", "findtext", "iterfind"}
XML_LIBS = ("lxml", "xml", "elementpath", "defusedxml")
# XML parsing calls whose entity handling the engine judges by their options
XML_PARSE_MODULES = ("xml.etree.", "xml.dom.", "xml.sax", "lxml.etree.", "xml.parsers.expat", "lxml.objectify.", "defusedxml.")
XML_PARSE_FUNCS = {"parse", "parseString", "fromstring", "XML", "iterparse", "XMLParser", "XMLPullParser",
                   "make_parser", "ParserCreate", "fromstringlist", "XMLID", "iterwalk", "pulldom"}
# imports whose every call the engine judges (the module as a whole: a rule
# flagging the import itself is superseded by those judgements)
JUDGED_IMPORTS = {"subprocess": "command-injection", "xml": "xxe", "lxml": "xxe"}

# Subprocess functions: command injection when the shell runs request data,
# or when request data chooses the program.
SUBPROCESS_CALLS = {"subprocess.call", "subprocess.run", "subprocess.Popen", "subprocess.check_call",
                    "subprocess.check_output"}
SHELLS = {"sh", "bash", "/bin/sh", "/bin/bash", "zsh", "dash", "cmd", "cmd.exe", "powershell", "pwsh", "ksh"}

# Response constructors that send their body as HTML unless told otherwise.
HTML_RESPONSES = {"flask.Response", "werkzeug.Response", "werkzeug.wrappers.Response",
                  "flask.wrappers.Response", "django.http.HttpResponse", "django.http.response.HttpResponse",
                  "django.http.HttpResponseBadRequest", "django.http.HttpResponseNotFound",
                  "django.http.HttpResponseForbidden", "django.http.HttpResponseServerError",
                  "aiohttp.web.Response", "starlette.responses.Response", "fastapi.Response",
                  "fastapi.responses.Response", "bottle.HTTPResponse", "quart.Response"}

# Calls whose result is safe output (JSON, rendered templates, redirects).
SAFE_RESULT_CALLS = {"flask.jsonify", "flask.render_template", "django.shortcuts.render",
                     "django.http.JsonResponse", "aiohttp.web.json_response", "flask.send_from_directory",
                     "django.template.loader.render_to_string", "starlette.responses.JSONResponse",
                     "fastapi.responses.JSONResponse", "aiohttp_jinja2.render_template", "flask.abort",
                     "json.dumps"}

# Where a template is rendered with a context: qualified name -> (index of the
# template name argument, index of the context argument or None).
RENDER_CALLS = {
    "flask.render_template": (0, None),
    "quart.render_template": (0, None),
    "django.shortcuts.render": (1, 2),
    "django.shortcuts.render_to_response": (0, 1),
    "django.template.loader.render_to_string": (0, 1),
    "django.template.response.TemplateResponse": (1, 2),
    "aiohttp_jinja2.render_template": (0, 2),
    "starlette.templating.Jinja2Templates.TemplateResponse": (0, 1),
}
TEMPLATE_EXTS = (".html", ".htm", ".jinja", ".jinja2", ".j2", ".djhtml", ".tmpl", ".tpl", ".xml", ".txt")

# Session objects: writing request data into one crosses a trust boundary.
SESSION_NAMES = {"flask.session", "quart.session", "session", "request.session", "self.request.session"}

# Names of values that must be unpredictable: tokens, passwords, keys.
SECRET_WORDS = {"token", "secret", "password", "passwd", "pwd", "nonce", "salt", "otp", "csrf", "xsrf",
                "apikey", "key", "sessionid", "sid", "pin", "passcode", "credential", "credentials",
                "auth", "reset", "verification", "activation", "invite", "captcha", "signature", "iv"}
_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


def secret_name(name):
    """Whether an identifier names a secret: one of its words (snake_case or
    camelCase) is a secret word ("reset_token", "apiKey", "SECRET_KEY")."""
    if not name:
        return False
    words = [w.lower() for w in _SPLIT.split(name) if w]
    for w in words:
        if w in SECRET_WORDS or w.endswith("token") or w.endswith("password") or w.endswith("secret"):
            return True
    compact = name.lower().replace("_", "").replace("-", "")
    return any(w in compact for w in ("apikey", "sessionid", "sessid", "secretkey", "authtoken", "csrftoken"))


WEAK_RANDOM_FUNCS = {"random", "randint", "choice", "choices", "randrange", "getrandbits", "sample",
                     "uniform", "shuffle", "randbytes", "triangular", "gauss"}

# Text that names a secret right before a value: "SESSIONID=%s", "token: {}".
SECRET_IN_TEXT = re.compile(r"(?i)\b(session[_-]?id|sessid|sid|token|secret|password|passwd|api[_-]?key|nonce|csrf[_-]?token|otp)\s*[=:]")

# ORM queries: Django managers (Model.objects.get), SQLAlchemy (Model.query,
# session.query): their results are rows, not the arguments' data.
ORM_CALL = re.compile(r"(^|\.)(objects|query)\.|^db\.session\.|\.query\(|(^|\.)objects$")

# Categories a local source (command line, environment, terminal) is
# reported in: what runs as code or commands, or queries a database.
LOCAL_CATEGORIES = {"command-injection", "code-injection", "sql-injection", "insecure-deserialization"}

# Web frameworks: a module that sets response cookies imports one of them.
WEB_FRAMEWORKS = ("flask", "django", "werkzeug", "aiohttp", "starlette", "fastapi", "bottle", "tornado",
                  "pyramid", "falcon", "quart", "sanic", "aiohttp_session", "webob", "cherrypy")
