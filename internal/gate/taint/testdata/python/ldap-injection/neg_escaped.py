import ldap
from ldap.filter import escape_filter_chars
from flask import Flask, request

app = Flask(__name__)


@app.route("/user")
def user():
    uid = escape_filter_chars(request.args["uid"])
    conn = ldap.initialize("ldap://localhost")
    res = conn.search_s("dc=example,dc=org", ldap.SCOPE_SUBTREE, "(uid=" + uid + ")")
    return {"n": len(res)}
