import requests
from flask import request


def proxy():
    # ruleid: aster.python.ssrf
    return requests.get(request.args["url"], timeout=5).text


def preview():
    target = request.form.get("link")
    # ruleid: aster.python.ssrf
    return requests.post(target, data={}).status_code


async def fetch(request, session):
    # ruleid: aster.python.ssrf
    async with session.get(request.query["next"]) as resp:
        return await resp.text()
