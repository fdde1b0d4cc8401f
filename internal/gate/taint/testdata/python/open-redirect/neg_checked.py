from urllib.parse import urlparse

from flask import Flask, redirect, request, url_for

app = Flask(__name__)


@app.route("/login")
def login():
    nxt = request.args.get("next", "/")
    if urlparse(nxt).netloc != "":
        return redirect(url_for("index"))
    return redirect(nxt)


@app.route("/profile")
def profile():
    user = request.args["user"]
    return redirect("/users/" + user)


@app.route("/back")
def back():
    return redirect(url_for("show", page=request.args["page"]))
