from flask import Flask, make_response

app = Flask(__name__)
app.config["SESSION_COOKIE_SECURE"] = False  # taint: insecure-cookie


@app.route("/login")
def login():
    resp = make_response("ok")
    resp.set_cookie("sid", "abc")  # taint: insecure-cookie
    resp.set_cookie("remember", "1", secure=True, httponly=False)  # taint: insecure-cookie
    return resp
