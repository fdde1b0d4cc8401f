from aiohttp import web
from flask import redirect, request


def after_login():
    # ruleid: aster.python.open-redirect
    return redirect(request.args.get("next"))


def go():
    target = request.values["to"]
    # ruleid: aster.python.open-redirect
    return redirect(target, code=302)


async def handler(request):
    # ruleid: aster.python.open-redirect
    raise web.HTTPFound(request.query["return_to"])
