import ldap
from flask import Flask, request

app = Flask(__name__)


@app.route("/user")
def user():
    uid = request.args["uid"]
    conn = ldap.initialize("ldap://localhost")
    flt = "(&(objectClass=person)(uid=" + uid + "))"
    res = conn.search_s("dc=example,dc=org", ldap.SCOPE_SUBTREE, flt)  # taint: ldap-injection
    return {"n": len(res)}
