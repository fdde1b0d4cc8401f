# Request data stored in the session with no check of it: a length test is
# no verification, and a check of another value does not count.
from flask import Flask, request, session

app = Flask(__name__)


def verify(password):
    return password == "x"


@app.route("/nick", methods=["POST"])
def nick():
    nickname = request.form["nick"]
    if len(nickname) > 2:
        session["nick"] = nickname  # taint: trust-boundary
    return "ok"


@app.route("/as", methods=["POST"])
def act_as():
    who = request.form["who"]
    if verify(request.form["password"]):
        session["who"] = who  # taint: trust-boundary
    return "ok"
