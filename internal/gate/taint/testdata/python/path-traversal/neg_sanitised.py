import os

from flask import Flask, request, send_from_directory
from werkzeug.utils import secure_filename

app = Flask(__name__)
BASE = "/srv/files"


@app.route("/file")
def file():
    name = os.path.basename(request.args["name"])
    with open(os.path.join(BASE, name)) as f:
        data = f.read()
    up = request.files["up"]
    up.save(os.path.join(BASE, secure_filename(up.filename)))
    return {"data": data}


@app.route("/get")
def get():
    return send_from_directory(BASE, request.args["name"])


@app.route("/safe")
def safe():
    p = os.path.realpath(os.path.join(BASE, request.args["p"]))
    if not p.startswith(BASE + os.sep):
        return {"error": "no"}, 400
    with open(p) as f:
        return {"data": f.read()}
