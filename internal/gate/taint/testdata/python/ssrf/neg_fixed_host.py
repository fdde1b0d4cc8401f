import requests
from flask import Flask, request

app = Flask(__name__)
ALLOWED = {"api.example.com", "cdn.example.com"}


@app.route("/user")
def user():
    uid = request.args["id"]
    r = requests.get("https://api.example.com/users/" + uid, timeout=5)
    r2 = requests.get(f"https://api.example.com/items/{uid}", timeout=5)
    host = request.args["host"]
    if host not in ALLOWED:
        return {"error": "host"}, 400
    r3 = requests.get("https://" + host + "/status", timeout=5)
    return {"a": r.status_code, "b": r2.status_code, "c": r3.status_code}
