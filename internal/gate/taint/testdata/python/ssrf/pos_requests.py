import urllib.request

import requests
from flask import Flask, request

app = Flask(__name__)


@app.route("/fetch")
def fetch():
    url = request.args["url"]
    r = requests.get(url, timeout=5)  # taint: ssrf
    s = requests.Session()
    s.post("http://" + request.args["host"] + "/hook")  # taint: ssrf
    body = urllib.request.urlopen(url).read()  # taint: ssrf
    return {"status": r.status_code, "len": len(body)}
