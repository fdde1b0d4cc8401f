import os

from flask import Flask, request, send_file

app = Flask(__name__)
BASE = "/srv/files"


def read(name):
    with open(os.path.join(BASE, name)) as f:  # taint: path-traversal
        return f.read()


@app.route("/file")
def file():
    return {"data": read(request.args["name"])}


@app.route("/download/<path:name>")
def download(name):
    return send_file(BASE + "/" + name)  # taint: path-traversal


@app.route("/delete", methods=["POST"])
def delete():
    os.remove(os.path.join(BASE, request.form["name"]))  # taint: path-traversal
    return {}
