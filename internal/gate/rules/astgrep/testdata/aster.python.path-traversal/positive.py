import os

from flask import request, send_file

BASE = "/srv/files"


def download():
    # ruleid: aster.python.path-traversal
    return send_file(os.path.join(BASE, request.args["name"]))


def read():
    name = request.args.get("f")
    path = os.path.join(BASE, name)
    # ruleid: aster.python.path-traversal
    with open(os.path.join(BASE, name)) as f:
        return f.read()


async def avatar(request):
    # ruleid: aster.python.path-traversal
    return open("/srv/avatars/" + request.match_info["user"], "rb").read()
