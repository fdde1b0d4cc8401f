import ssl

import httpx
import requests


def fetch(url):
    # ruleid: aster.python.tls-verify-disabled
    return requests.get(url, verify=False, timeout=5)


def post(session, url, body):
    # ruleid: aster.python.tls-verify-disabled
    return session.post(url, json=body, verify=False)


def client():
    # ruleid: aster.python.tls-verify-disabled
    return httpx.Client(verify=False)


def context():
    ctx = ssl.create_default_context()
    # ruleid: aster.python.tls-verify-disabled
    ctx.check_hostname = False
    # ruleid: aster.python.tls-verify-disabled
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def legacy():
    # ruleid: aster.python.tls-verify-disabled
    return ssl._create_unverified_context()
