import ssl

import requests


def fetch(url):
    return requests.get(url, verify=True, timeout=5)


def private_ca(url):
    return requests.get(url, verify="/etc/ssl/private-ca.pem")


def context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def unrelated(form):
    return form.validate(verify=False)
