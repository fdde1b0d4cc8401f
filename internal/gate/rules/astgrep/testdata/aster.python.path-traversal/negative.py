import os

from flask import request, send_from_directory

BASE = "/srv/files"


def download():
    return send_from_directory(BASE, request.args["name"])


def config():
    with open(os.path.join(BASE, "config.ini")) as f:
        return f.read()


def upload_name():
    name = request.args.get("name")
    with open("/var/log/uploads.log", "a") as f:
        f.write(name)
