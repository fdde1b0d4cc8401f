# A user name stored in the session only after the program checked it (its
# password verified, its record found): the session holds a checked value.
from accounts import directory
from flask import Flask, abort, request, session

app = Flask(__name__)


def find_hash(name):
    return name, True


def verify(password, stored):
    return password == stored


@app.route("/signin", methods=["POST"])
def signin():
    name = request.form.get("name")
    stored, found = find_hash(name)
    if not found or not verify(request.form.get("password"), stored):
        abort(403)
    session["name"] = name
    return "ok"


@app.route("/signin2", methods=["POST"])
def signin2():
    name = request.form["name"]
    if verify(name, request.form["password"]):
        session["name"] = name
    return "ok"


@app.route("/theme")
def theme():
    session["theme"] = "dark"
    return "ok"


@app.route("/signin3", methods=["POST"])
def signin3():
    name = request.form["name"].strip()
    record, known = directory.fetch(name)
    if not known or record is None:
        abort(403)
    session["name"] = name
    return "ok"
